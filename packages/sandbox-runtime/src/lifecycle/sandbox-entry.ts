import type { SandboxInfo, SandboxPaths } from '@berth/core';
import type { KillerShell } from '../shell/killer-shell.js';
import type { ShellSession } from '../shell/shell-session.js';

/** What the runtime knows of one scope's sandbox, for as long as the process lives. */
export interface SandboxEntry {
  readonly scopeKey: string;
  /** The sandbox's opaque name; empty until the first command names it. */
  name: string;
  containerId: string | undefined;
  running: boolean;
  session: ShellSession | undefined;
  /** The session retired for a process it left behind; the next one takes over its state. */
  retired?: ShellSession | undefined;
  killer: KillerShell | undefined;
  killerOpening: Promise<KillerShell | undefined> | undefined;
  /** Decided at the first session attempt: `exec` when the image's shell cannot hold a session. */
  mode: 'session' | 'exec' | undefined;
  /** The scope's queue: the last task's completion. */
  tail: Promise<unknown>;
  /** Tasks queued or running. */
  pending: number;
  /** When the last task ended, ms. */
  lastUsed: number;
  /** When the last use was last recorded beside the folders (at most every few seconds). */
  lastRecorded: number;
  paths: SandboxPaths | undefined;
  /** The workspace its label names, for a sandbox adopted before any request gave its paths: where its last use is recorded. */
  recordedAt?: string | undefined;
  /** The sandbox's settings differ from ours but it was busy: recreate it once idle. */
  stale: boolean;
  /** The sandbox's launcher did not answer: its shells are engine execs until it is started again. */
  shellsByExec?: boolean;
  /** When the reaper froze the idle sandbox (`docker_freeze_seconds`); the next command thaws it. */
  frozenAt?: number | undefined;
  /** How many times this process created or started the sandbox. */
  starts?: number;
  /** A shell came from the sandbox's launcher since it was last started. */
  launcherAnswered?: boolean;
  /** Why the fair-share guard stopped the sandbox: said to its user with the next result, once. */
  reclaimed?: string | undefined;
  /** The engine's stop of a sandbox that gave way, while it is under way (it never rejects). */
  givingWay?: Promise<void> | undefined;
  /** Digest of the environment the fallback mode last sent. */
  environmentKey: string | undefined;
  /** Whose sandbox it is, for `list()`. */
  readonly owner: Pick<SandboxInfo, 'kind' | 'platform' | 'userId' | 'taskId' | 'profile'>;
}

/** A fresh entry; `known` fills in what an adopted sandbox already has. */
export function newEntry(
  scopeKey: string,
  owner: SandboxEntry['owner'],
  known: Partial<Pick<SandboxEntry, 'name' | 'containerId' | 'running' | 'lastUsed' | 'mode' | 'paths'>> = {},
): SandboxEntry {
  return {
    scopeKey,
    name: known.name ?? '',
    containerId: known.containerId,
    running: known.running ?? false,
    session: undefined,
    killer: undefined,
    killerOpening: undefined,
    mode: known.mode,
    tail: Promise.resolve(),
    pending: 0,
    lastUsed: known.lastUsed ?? Date.now(),
    lastRecorded: 0,
    paths: known.paths,
    stale: false,
    environmentKey: undefined,
    owner,
  };
}

/**
 * Runs `task` after every earlier task of the same sandbox, so commands of one scope never
 * overlap, and calls `settled` when it ended (whatever it did). `use: false` for what the
 * gateway does on its own (stopping it for room): its last use stays its user's.
 */
export function enqueue<T>(entry: SandboxEntry, task: () => Promise<T>, settled: () => void, options: { use?: boolean } = {}): Promise<T> {
  entry.pending++;
  const run = entry.tail.then(task, task);
  entry.tail = run.then(
    () => undefined,
    () => undefined,
  );
  return run.finally(() => {
    entry.pending--;
    if (options.use ?? true) entry.lastUsed = Date.now();
    settled();
  });
}

/** Runs at most `size` tasks at once; the rest wait their turn. */
export type Limiter = <T>(task: () => Promise<T>) => Promise<T>;

/** A small counting semaphore. */
export function createLimiter(size: number): Limiter {
  let active = 0;
  const waiting: Array<() => void> = [];
  return async (task) => {
    if (active >= size) await new Promise<void>((resolve) => waiting.push(resolve));
    active++;
    try {
      return await task();
    } finally {
      active--;
      waiting.shift()?.();
    }
  };
}
