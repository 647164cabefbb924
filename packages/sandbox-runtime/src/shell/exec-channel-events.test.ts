import { describe, expect, it } from 'vitest';
import { createExecChannelEvents, writableTo } from './exec-channel-events.js';

describe('createExecChannelEvents', () => {
  it('hands each stream to its own listeners, and closes once: what the channel holds first, then its listeners', async () => {
    const seen: string[] = [];
    const events = createExecChannelEvents(() => seen.push('released'));
    events.listeners.onStdout((chunk) => seen.push(`out:${chunk.toString()}`));
    events.listeners.onStderr((chunk) => seen.push(`err:${chunk.toString()}`));
    events.listeners.onClose(() => seen.push('closed'));
    events.stdout(Buffer.from('a'));
    await new Promise<void>((resolve) => writableTo(events.stderr).write(Buffer.from('b'), () => resolve()));
    expect(events.closed).toBe(false);
    events.close();
    events.close();
    expect(events.closed).toBe(true);
    // A listener that comes after the close is called at once.
    events.listeners.onClose(() => seen.push('late'));
    expect(seen).toEqual(['out:a', 'err:b', 'released', 'closed', 'late']);
  });
});
