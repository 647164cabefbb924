import { SandboxError } from '@berth/core';
import { describe, expect, it } from 'vitest';
import { newEntry } from '../lifecycle/sandbox-entry.js';
import { createCpuDay } from './cpu-day.js';

const userEntry = (id: string, containerId: string, starts = 1) => {
  const entry = newEntry(`user:telegram:${id}`, { kind: 'user', platform: 'telegram', userId: id }, { containerId });
  entry.starts = starts;
  return entry;
};

function setUp(limit: number) {
  const cpu = new Map<string, number>();
  let now = Date.UTC(2026, 11, 6, 20, 0, 0);
  const logged: string[] = [];
  const day = createCpuDay({
    settings: { user_cpu_seconds_per_day: limit },
    read: async () => async (id) => cpu.get(id),
    now: () => now,
    logger: { info: (line) => logged.push(line), warn: (line) => logged.push(line), error: (line) => logged.push(line) },
  });
  return { cpu, day, logged, advance: (ms: number) => (now += ms) };
}

describe('createCpuDay', () => {
  it('refuses a user whose sandbox used the day’s CPU seconds, in one line saying when to retry, while another user goes on', async () => {
    const { cpu, day } = setUp(10);
    const alice = userEntry('1', 'c-alice');
    const bob = userEntry('2', 'c-bob');
    // A sandbox this process made during the command (no reading before it): all it used counts.
    cpu.set('c-alice', 12);
    await day.after(alice);
    expect(() => day.check(alice.scopeKey)).toThrow(SandboxError);
    try {
      day.check(alice.scopeKey);
    } catch (error) {
      expect((error as SandboxError).code).toBe('USER_CPU_LIMIT');
      expect((error as SandboxError).message).toBe(
        'you used 12 s of CPU time today (UTC), the most terminal.user_cpu_seconds_per_day (10) allows; retry after 00:00 UTC, in 4 h 0 min',
      );
    }
    cpu.set('c-bob', 3);
    await day.before(bob);
    await day.after(bob);
    expect(() => day.check(bob.scopeKey)).not.toThrow();
  });

  it('counts what a sandbox used between commands, a restart’s reset counter, and starts again each UTC day', async () => {
    const { cpu, day, advance } = setUp(10);
    const alice = userEntry('1', 'c-alice');
    cpu.set('c-alice', 2);
    await day.after(alice); // 2 s: the whole life of a sandbox this process made
    await day.before(alice); // a reading is there: nothing to do
    cpu.set('c-alice', 5); // a background job, between commands
    await day.before(alice);
    await day.after(alice); // 5 s
    cpu.set('c-alice', 4); // restarted: the counter began again
    await day.after(alice); // 9 s
    expect(() => day.check(alice.scopeKey)).not.toThrow();
    cpu.set('c-alice', 5);
    await day.after(alice); // 10 s
    expect(() => day.check(alice.scopeKey)).toThrow(/user_cpu_seconds_per_day \(10\)/);
    advance(4 * 3_600_000);
    expect(() => day.check(alice.scopeKey)).not.toThrow();
  });

  it('counts an adopted sandbox only from its first reading, and says once where it cannot read', async () => {
    const { cpu, day } = setUp(10);
    const adopted = userEntry('3', 'c-old', 0);
    cpu.set('c-old', 5_000);
    await day.after(adopted);
    expect(() => day.check(adopted.scopeKey)).not.toThrow();
    cpu.set('c-old', 5_004);
    await day.after(adopted);
    expect(() => day.check(adopted.scopeKey)).not.toThrow();

    const logged: string[] = [];
    const blind = createCpuDay({
      settings: { user_cpu_seconds_per_day: 1 },
      read: async () => 'the sandboxes’ cgroups cannot be read here',
      logger: { info: () => {}, warn: (line) => logged.push(line), error: () => {} },
    });
    for (let n = 0; n < 3; n++) await blind.after(userEntry('4', 'c-4'));
    expect(() => blind.check('user:telegram:4')).not.toThrow();
    expect(logged).toEqual(['berth: terminal.user_cpu_seconds_per_day is not enforced: the sandboxes’ cgroups cannot be read here']);
  });
});
