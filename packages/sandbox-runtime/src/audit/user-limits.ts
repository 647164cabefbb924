import { SandboxError } from '@berth/core';
import type { SandboxSettings } from '../sandbox-settings.js';

/** The window of `terminal.user_commands_per_minute`, ms. */
const MINUTE_MS = 60_000;

/** A command let through: `release()` once it ended, whatever it did. */
export interface UserLimitSlot {
  release(): void;
}

/** The per-user limits of one runtime: commands per minute and commands at once, each user apart. */
export interface UserLimits {
  /**
   * Lets a command of `key` (its scope: a user, or a conversation's sandbox) through, or refuses
   * it with a `SandboxError` (`USER_RATE_LIMIT`, `USER_CONCURRENCY_LIMIT`) whose one line names
   * the limit, its value and when to retry. Only commands let through count.
   */
  admit(key: string): UserLimitSlot;
}

/**
 * The limits of `terminal.user_commands_per_minute` (a sliding minute) and
 * `terminal.user_concurrent_commands` (running or waiting for their sandbox), each off at 0.
 * What one user does never changes what another may: every count is per key, and a key's
 * state goes once it holds nothing.
 */
export function createUserLimits(
  settings: Pick<SandboxSettings, 'user_commands_per_minute' | 'user_concurrent_commands'>,
  now: () => number = Date.now,
): UserLimits {
  const perMinute = settings.user_commands_per_minute;
  const atOnce = settings.user_concurrent_commands;
  /** Key → when its commands in the last minute started (oldest first), and how many run. */
  const users = new Map<string, { starts: number[]; running: number }>();
  const forget = (key: string, state: { starts: number[]; running: number }): void => {
    if (state.running === 0 && state.starts.length === 0) users.delete(key);
  };
  let swept = 0;
  /** Users who ran nothing for a minute are forgotten, at most once a minute. */
  const sweep = (at: number): void => {
    if (at - swept < MINUTE_MS) return;
    swept = at;
    for (const [key, state] of users) if (state.running === 0 && (state.starts.at(-1) ?? 0) <= at - MINUTE_MS) users.delete(key);
  };

  return {
    admit(key) {
      if (perMinute <= 0 && atOnce <= 0) return { release() {} };
      const at = now();
      sweep(at);
      const state = users.get(key) ?? { starts: [], running: 0 };
      while (state.starts.length > 0 && state.starts[0]! <= at - MINUTE_MS) state.starts.shift();
      if (atOnce > 0 && state.running >= atOnce) {
        forget(key, state);
        throw new SandboxError(
          'USER_CONCURRENCY_LIMIT',
          `you already have ${state.running} commands running or waiting, the most terminal.user_concurrent_commands (${atOnce}) allows; ` +
            'retry once one of them has ended',
        );
      }
      if (perMinute > 0 && state.starts.length >= perMinute) {
        const seconds = Math.max(1, Math.ceil((state.starts[0]! + MINUTE_MS - at) / 1000));
        forget(key, state);
        throw new SandboxError(
          'USER_RATE_LIMIT',
          `you ran ${state.starts.length} commands in the last minute, the most terminal.user_commands_per_minute (${perMinute}) allows; ` +
            `retry in ${seconds} s`,
        );
      }
      if (perMinute > 0) state.starts.push(at);
      state.running++;
      users.set(key, state);
      let released = false;
      return {
        release() {
          if (released) return;
          released = true;
          state.running--;
          // Its minute's starts stay until they age out (the next admit drops them).
          if (state.running === 0 && perMinute <= 0) forget(key, state);
        },
      };
    },
  };
}
