import type { ExecChannel } from '@berth/core/driver';
import { describe, expect, it } from 'vitest';
import { createExecChannelEvents } from './exec-channel-events.js';
import { KILLER_STRAY_LIMIT, KillerShell } from './killer-shell.js';

/** A kill shell's channel whose output the test writes, standing in for a user writing into its FIFOs. */
function fakeChannel() {
  let destroyed = false;
  const written: string[] = [];
  const events = createExecChannelEvents(() => (destroyed = true));
  const channel: ExecChannel = {
    write: (data) => void written.push(String(data)),
    end: () => undefined,
    destroy: () => events.close(),
    ...events.listeners,
    exitCode: async () => undefined,
  };
  return { channel, events, written, destroyed: () => destroyed };
}

describe('the kill shell', () => {
  it('is retired, its channel closed, once more than a few KiB arrive that it never prints, and stops watching first', async () => {
    const { channel, events, written, destroyed } = fakeChannel();
    const killer = new KillerShell(channel);
    events.stdout(Buffer.from('__BERTH_KILLER_READY__\n'));
    await killer.ready;
    expect(killer.alive).toBe(true);
    // What a user writing /dev/zero into its FIFOs under /run/berth sends.
    events.stdout(Buffer.alloc(KILLER_STRAY_LIMIT / 2));
    expect(killer.alive).toBe(true);
    events.stderr(Buffer.alloc(KILLER_STRAY_LIMIT));
    expect(killer.alive).toBe(false);
    expect(destroyed()).toBe(true);
    // Its end would otherwise kill the running command, as when the gateway dies; then it is
    // told to exit, which an engine that keeps stdin open after the connection ends still delivers.
    expect(written.slice(-2)).toEqual(["__berth_session=''\n", 'exit\n']);
  });

  it('counts what comes in the same chunk as its ready answer', async () => {
    const { channel, events } = fakeChannel();
    const killer = new KillerShell(channel);
    events.stdout(Buffer.concat([Buffer.from('__BERTH_KILLER_READY__\n'), Buffer.alloc(KILLER_STRAY_LIMIT + 1)]));
    await killer.ready;
    expect(killer.alive).toBe(false);
  });
});
