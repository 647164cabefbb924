import { describe, expect, it } from 'vitest';
import { exitCodeOf } from './kubernetes-exec-channel.js';
import { podEnded } from './pod-watch.js';

describe('when a channel is over', () => {
  const watched = { uid: 'u1', restarts: 0 };
  const pod = (patch: object = {}) => ({
    metadata: { name: 'p', uid: 'u1' },
    status: { containerStatuses: [{ name: 'sandbox', image: 'i', imageID: '', ready: true, restartCount: 0, state: { running: {} } }] },
    ...patch,
  });

  it('a pod deleted, being deleted, replaced, restarted or ended ends its channels; a live one does not', () => {
    expect(podEnded(pod() as never, watched)).toBeUndefined();
    expect(podEnded(undefined, watched)).toBe('the pod is gone');
    expect(podEnded(pod() as never, watched, true)).toBe('the pod was deleted');
    expect(podEnded(pod({ metadata: { name: 'p', uid: 'u1', deletionTimestamp: new Date() } }) as never, watched)).toBe('the pod is being deleted');
    expect(podEnded(pod({ metadata: { name: 'p', uid: 'u2' } }) as never, watched)).toBe('the pod was replaced');
    expect(podEnded(pod({ status: { containerStatuses: [{ restartCount: 1, state: { running: {} } }] } }) as never, watched)).toBe('its container restarted');
  });

  it('reads the exit code from the exec status channel', () => {
    expect(exitCodeOf({ status: 'Success' })).toBe(0);
    expect(exitCodeOf({ status: 'Failure', reason: 'NonZeroExitCode', details: { causes: [{ reason: 'ExitCode', message: '7' }] } })).toBe(7);
    expect(exitCodeOf({ status: 'Failure', reason: 'InternalError', message: 'x' })).toBeUndefined();
    expect(exitCodeOf(undefined)).toBeUndefined();
  });
});
