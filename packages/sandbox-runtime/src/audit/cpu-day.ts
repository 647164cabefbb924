import { SandboxError, type HostLogger } from '@berth/core';
import type { SandboxEntry } from '../lifecycle/sandbox-entry.js';
import type { SandboxSettings } from '../sandbox-settings.js';

/** Reads a sandbox's CPU seconds since its cgroup was made; undefined when it cannot (lifecycle/cpu-usage.ts). */
export type CpuReader = (containerId: string) => Promise<number | undefined>;

/** The CPU time per day of `terminal.user_cpu_seconds_per_day`, per user (scope), days in UTC. */
export interface CpuDay {
  /** Refuses a command of `key` with a `SandboxError` (`USER_CPU_LIMIT`) once its user used the day's CPU time. */
  check(key: string): void;
  /** Before a command: a reading of its sandbox to count from, when there is none yet. */
  before(entry: SandboxEntry): Promise<void>;
  /** After a command: adds what its sandbox used since the last reading (its background jobs too) to its user's day. */
  after(entry: SandboxEntry): Promise<void>;
}

const DAY_MS = 86_400_000;

/**
 * Counts each user's CPU seconds of the current UTC day from their sandbox's cgroup, read before
 * and after each command, so what a background job burns between commands counts at the next
 * one. A command is never stopped halfway: the limit refuses the next. The counts are this
 * process's (a restarted gateway starts the day again from its first reading); where the
 * cgroups cannot be read it says so once and counts nothing.
 */
export function createCpuDay(options: {
  readonly settings: Pick<SandboxSettings, 'user_cpu_seconds_per_day'>;
  readonly read: () => Promise<CpuReader | string>;
  readonly logger?: HostLogger | undefined;
  readonly now?: () => number;
}): CpuDay {
  const limit = options.settings.user_cpu_seconds_per_day;
  const now = options.now ?? Date.now;
  let day = Math.floor(now() / DAY_MS);
  const used = new Map<string, number>();
  /** Scope key → the last reading of its sandbox. */
  const readings = new Map<string, { containerId: string; seconds: number }>();
  let said = false;

  const reader = async (): Promise<CpuReader | undefined> => {
    const found = await options.read().catch((error: unknown) => (error instanceof Error ? error.message : String(error)));
    if (typeof found !== 'string') return found;
    if (!said) options.logger?.warn(`berth: terminal.user_cpu_seconds_per_day is not enforced: ${found}`);
    said = true;
    return undefined;
  };
  const today = (): void => {
    const current = Math.floor(now() / DAY_MS);
    if (current === day) return;
    day = current;
    used.clear();
  };
  const read = async (entry: SandboxEntry): Promise<{ containerId: string; seconds: number } | undefined> => {
    const containerId = entry.containerId;
    const readCpu = containerId === undefined ? undefined : await reader();
    const seconds = containerId === undefined || !readCpu ? undefined : await readCpu(containerId);
    return seconds === undefined ? undefined : { containerId: containerId!, seconds };
  };

  if (limit <= 0) return { check() {}, before: async () => {}, after: async () => {} };
  return {
    check(key) {
      today();
      const spent = used.get(key) ?? 0;
      if (spent < limit) return;
      const left = (day + 1) * DAY_MS - now();
      const hours = Math.floor(left / 3_600_000);
      const minutes = Math.ceil((left % 3_600_000) / 60_000);
      throw new SandboxError(
        'USER_CPU_LIMIT',
        `you used ${Math.round(spent)} s of CPU time today (UTC), the most terminal.user_cpu_seconds_per_day (${limit}) allows; ` +
          `retry after 00:00 UTC, in ${hours} h ${minutes} min`,
      );
    },
    async before(entry) {
      if (readings.get(entry.scopeKey)?.containerId === entry.containerId) return;
      const reading = await read(entry);
      if (reading) readings.set(entry.scopeKey, reading);
    },
    async after(entry) {
      const reading = await read(entry);
      if (!reading) return;
      const last = readings.get(entry.scopeKey);
      readings.set(entry.scopeKey, reading);
      let spent: number;
      if (last?.containerId === reading.containerId) {
        // Less than before: the sandbox restarted, and its counter with it.
        spent = reading.seconds >= last.seconds ? reading.seconds - last.seconds : reading.seconds;
      } else if ((entry.starts ?? 0) > 0) {
        // Made or started by this process since the last reading: all it used is this user's, now.
        spent = reading.seconds;
      } else {
        // Adopted from an earlier process: counted from here on.
        return;
      }
      today();
      used.set(entry.scopeKey, (used.get(entry.scopeKey) ?? 0) + spent);
    },
  };
}
