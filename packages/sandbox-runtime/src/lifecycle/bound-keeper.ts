import { promises as fs } from 'node:fs';
import path from 'node:path';
import type { HostLogger } from '@berth/core';
import { BOUND_HOLDERS_FOLDER } from '@berth/core/driver';
import { isProcessIdentityGone, processIdentity } from './process-identity.js';
import { startFairShareGuard, takeOomDecision, type FairShareGuard, type Reclaim } from './fair-share-guard.js';
import { boundFolders } from './fair-share.js';
import { releaseSharedBound, type SharedBound } from './shared-bound.js';
import { sweepStaleBounds } from './stale-bounds.js';
import { createOrphanWatch, ORPHAN_LOOK_MS } from './orphan-bounds.js';

// The shared bound belongs to the installation, not to a process: every process of it that
// starts sandboxes (a gateway, `berth serve`, `berth exec`) holds the bound while it runs, by a
// file of its own under the sandbox root; the last one out may remove the bound. A process that
// finds the bound gone or changed (another installation's process, an operator, a reboot) makes
// it again before its next sandbox starts, and says so: left alone, the engine would make the
// missing parent itself, with no limits, and every sandbox would silently share nothing.

/** What the runtime does with its bound before a start and at close. */
export interface BoundKeeper {
  /** Before a sandbox starts: the bound as made (made again, and logged, when gone or changed), its guard running. */
  beforeStart(): Promise<void>;
  /** Once a sandbox runs, before its first command: one look of the guard (the new sandbox's share). */
  afterStart(): Promise<void>;
  /** What the kernel enforces now, read back: `undefined` when it is as made, else one line saying what is not. */
  readBack(): Promise<string | undefined>;
  /** Leaves the bound: the last holder gives its OOM decision back and removes it when empty. */
  close(): Promise<void>;
}

/** Options of {@link createBoundKeeper}. */
export interface BoundKeeperOptions {
  /** The bound, made on first use (runtime-description.ts). */
  readonly bound: () => Promise<SharedBound>;
  /** Makes the bound again, as it was first made. */
  readonly remake: () => Promise<SharedBound>;
  /** The sandbox root, where the holders are kept; without it the bound is never removed. */
  readonly sandboxRoot: string | undefined;
  readonly floors: { readonly memoryBytes: number; readonly pids: number };
  /** One sandbox's own pids limit. */
  readonly sandboxPids: number;
  readonly reclaim: Reclaim;
  /** Whether a sandbox is frozen (the guard's `isFrozen`). */
  readonly isFrozen?: ((id: string) => boolean) | undefined;
  readonly logger?: HostLogger | undefined;
  /** The guard's interval (`startFairShareGuard`); 0 for none. */
  readonly guardIntervalMs?: number;
  /** How other installations' stale bounds are told (tests). */
  readonly sweep?: { readonly olderThanMs?: number; readonly now?: number };
}

async function readLimit(file: string): Promise<number | undefined> {
  try {
    const text = (await fs.readFile(file, 'utf8')).trim();
    return text === 'max' ? Number.POSITIVE_INFINITY : Number(text);
  } catch {
    return undefined;
  }
}

/** One line saying how the bound on the host differs from what was made, or `undefined` when it does not. */
export async function boundDrift(bound: SharedBound): Promise<string | undefined> {
  const folders = boundFolders(bound);
  if (!folders || bound.unenforced !== undefined) return undefined;
  const memoryFile = path.join(folders.memory, bound.version === 2 ? 'memory.max' : 'memory.limit_in_bytes');
  const [memory, pids] = await Promise.all([readLimit(memoryFile), readLimit(path.join(folders.pids, 'pids.max'))]);
  const name = bound.parent ?? folders.memory;
  if (memory === undefined || pids === undefined) return `the sandboxes' shared bound ${name} is gone from the host`;
  const parts: string[] = [];
  if (memory !== bound.memoryMb * 2 ** 20)
    parts.push(`its memory limit is ${Number.isFinite(memory) ? `${Math.round(memory / 2 ** 20)} MB` : 'none'}, not ${bound.memoryMb} MB`);
  if (pids !== bound.pids) parts.push(`its pids limit is ${Number.isFinite(pids) ? pids : 'none'}, not ${bound.pids}`);
  return parts.length === 0 ? undefined : `the sandboxes' shared bound ${name} was changed: ${parts.join('; ')}`;
}

/** Builds the keeper; nothing is done until the first start. */
export function createBoundKeeper(options: BoundKeeperOptions): BoundKeeper {
  const { logger } = options;
  const holders = options.sandboxRoot === undefined ? undefined : path.join(options.sandboxRoot, BOUND_HOLDERS_FOLDER);
  const me = processIdentity();
  let guard: FairShareGuard | undefined;
  let current: SharedBound | undefined;
  let checking: Promise<void> | undefined;
  // cgroup v1: other installations' bounds left full with nobody deciding (orphan-bounds.ts).
  let orphanTimer: NodeJS.Timeout | undefined;
  const watchOrphans = (bound: SharedBound): void => {
    const folders = boundFolders(bound);
    if (orphanTimer || bound.version !== 1 || !folders || !bound.parent || options.guardIntervalMs === 0) return;
    const watch = createOrphanWatch({ memoryRoot: path.dirname(folders.memory), own: bound.parent.replace(/^\//, ''), logger });
    let looking = false;
    orphanTimer = setInterval(() => {
      if (looking) return;
      looking = true;
      void watch
        .look()
        .catch(() => undefined)
        .finally(() => {
          looking = false;
        });
    }, ORPHAN_LOOK_MS);
    orphanTimer.unref();
  };

  const hold = async (bound: SharedBound): Promise<void> => {
    // A bound Berth does not enforce (none, the engine's, systemd's) is nobody's to remove.
    if (!holders || !bound.version || bound.unenforced !== undefined) return;
    try {
      await fs.mkdir(holders, { recursive: true, mode: 0o700 });
      // An empty file named by this process; its name is all it says.
      await fs.writeFile(path.join(holders, me), '', { mode: 0o600 });
    } catch (error) {
      logger?.warn(`berth: could not record this process as a user of the shared bound ${bound.parent ?? ''}: ${(error as Error).message}`);
    }
  };

  const guardIt = async (bound: SharedBound): Promise<void> => {
    if (!bound.version || bound.unenforced !== undefined) return;
    try {
      await takeOomDecision(bound);
    } catch (error) {
      logger?.warn(`berth: could not take the shared bound's out-of-memory decision from the kernel: ${(error as Error).message}`);
    }
    await guard?.close(false);
    guard = startFairShareGuard({
      bound,
      floors: options.floors,
      sandboxPids: options.sandboxPids,
      reclaim: options.reclaim,
      isFrozen: options.isFrozen,
      logger,
      ...(options.guardIntervalMs !== undefined ? { intervalMs: options.guardIntervalMs } : {}),
    });
  };

  const sweep = (bound: SharedBound): void => {
    const folders = boundFolders(bound);
    if (!folders || !bound.version || bound.unenforced !== undefined || !bound.parent) return;
    const cgroupRoot = bound.version === 2 ? path.dirname(folders.memory) : path.dirname(path.dirname(folders.memory));
    void sweepStaleBounds({ cgroupRoot, version: bound.version, own: bound.parent.replace(/^\//, ''), ...(options.sweep ?? {}) }).then(
      (names) => {
        if (names.length > 0) logger?.info(`berth: removed ${names.length} empty shared bounds of other installations, unused for over an hour`);
      },
      () => undefined,
    );
  };

  /** Makes the bound again where it is gone or changed, and says so; `when` ends the log line. */
  const keep = async (bound: SharedBound, when: string): Promise<void> => {
    const drift = await boundDrift(bound);
    if (drift === undefined) return;
    const again = await options.remake();
    logger?.warn(`berth: ${drift}; made it again (${again.memoryMb} MB, ${again.pids} pids) ${when}`);
    current = again;
    await guardIt(again);
  };

  const check = async (): Promise<void> => {
    if (!current) {
      current = await options.bound();
      await hold(current);
      await guardIt(current);
      sweep(current);
      watchOrphans(current);
    } else {
      await keep(current, 'before starting a sandbox');
    }
    await guard?.roomForStart();
  };

  return {
    beforeStart: () => {
      checking ??= check().finally(() => {
        checking = undefined;
      });
      return checking;
    },
    afterStart: async () => {
      // Another installation's sweep (stale-bounds.ts) may have removed the bound between the look
      // before the start and the engine's making of the sandbox under it: read it back.
      if (current) await keep(current, 'as a sandbox started under it');
      // A look under way may have listed the bound before this sandbox was in it: one more after
      // it, which reads every sandbox's limits back (a restarted one's cgroup is new, its name not).
      guard?.readEveryChild();
      await guard?.check();
      await guard?.check();
    },
    readBack: async () => (current ? boundDrift(current) : undefined),
    close: async () => {
      clearInterval(orphanTimer);
      if (!current) return;
      const bound = current;
      let last = false;
      if (holders) {
        await fs.rm(path.join(holders, me), { force: true });
        const others = (await fs.readdir(holders).catch(() => [] as string[])).filter((name) => name !== me);
        const live = others.filter((name) => !isProcessIdentityGone(name));
        for (const gone of others.filter((name) => !live.includes(name))) await fs.rm(path.join(holders, gone), { force: true });
        last = live.length === 0;
      }
      await guard?.close(last);
      // The cgroups go only when no sandbox is left in them (a running one keeps them).
      if (last) await releaseSharedBound(bound);
    },
  };
}
