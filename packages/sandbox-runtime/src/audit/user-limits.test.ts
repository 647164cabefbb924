import { SandboxError } from '@berth/core';
import { describe, expect, it } from 'vitest';
import { createUserLimits } from './user-limits.js';

const refusalOf = (run: () => unknown): SandboxError => {
  try {
    run();
  } catch (error) {
    if (error instanceof SandboxError) return error;
    throw error;
  }
  throw new Error('expected a refusal');
};

describe('createUserLimits', () => {
  it('refuses a burst past the per-minute limit in one line naming the limit, its value and when to retry; another user goes through', () => {
    let now = 1_000_000;
    const limits = createUserLimits({ user_commands_per_minute: 3, user_concurrent_commands: 0 }, () => now);
    for (let n = 0; n < 3; n++) {
      limits.admit('telegram:1').release();
      now += 1_000;
    }
    const refusal = refusalOf(() => limits.admit('telegram:1'));
    expect(refusal.code).toBe('USER_RATE_LIMIT');
    expect(refusal.message).toBe('you ran 3 commands in the last minute, the most terminal.user_commands_per_minute (3) allows; retry in 57 s');
    expect(refusal.message).not.toContain('\n');
    expect(() => limits.admit('telegram:2').release()).not.toThrow();
    // A refused command does not count: once the first start is a minute old, one more goes through.
    now = 1_000_000 + 60_000;
    expect(() => limits.admit('telegram:1').release()).not.toThrow();
    expect(refusalOf(() => limits.admit('telegram:1')).code).toBe('USER_RATE_LIMIT');
  });

  it('refuses a command past the concurrency limit until one of the user’s commands ends', () => {
    const limits = createUserLimits({ user_commands_per_minute: 0, user_concurrent_commands: 2 });
    const first = limits.admit('a');
    limits.admit('a');
    const refusal = refusalOf(() => limits.admit('a'));
    expect(refusal.code).toBe('USER_CONCURRENCY_LIMIT');
    expect(refusal.message).toBe(
      'you already have 2 commands running or waiting, the most terminal.user_concurrent_commands (2) allows; retry once one of them has ended',
    );
    expect(() => limits.admit('b')).not.toThrow();
    first.release();
    first.release(); // twice counts once
    expect(() => limits.admit('a')).not.toThrow();
    expect(refusalOf(() => limits.admit('a')).code).toBe('USER_CONCURRENCY_LIMIT');
  });

  it('lets everything through when both limits are 0 (the default)', () => {
    const limits = createUserLimits({ user_commands_per_minute: 0, user_concurrent_commands: 0 });
    for (let n = 0; n < 10_000; n++) limits.admit('a');
  });
});
