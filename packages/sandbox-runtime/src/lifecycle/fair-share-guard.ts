import { promises as fs } from 'node:fs';
import path from 'node:path';
import type { HostLogger } from '@berth/core';
import { killSandboxTasks } from './sandbox-tasks.js';
import { boundFolders, CHILD_NAME, chooseHog, readHoldings, sharesOf, type SandboxHolding, type Shares } from './fair-share.js';
import { writeValue, type SharedBound } from './shared-bound.js';
import { asCount, numberIn, readText, returnOomDecision, shortOfMemory } from './bound-memory.js';
import { waitAtMost } from '../wait-at-most.js';

export { returnOomDecision, takeOomDecision } from './bound-memory.js';

// Berth, not the kernel, decides who gives way when the shared bound runs short. Left to itself
// the kernel's OOM killer picks the largest process under the bound: a light user's one big
// command, while the user who filled the bound with many small processes, or with a file in its
// tmpfs that no kill frees, loses nothing. So, in the manner of systemd-oomd and earlyoom:
// - cgroup v1: the bound's own OOM killer is off (`memory.oom_control`), so a page fault that
//   meets the bound waits instead of killing; this guard sees `under_oom` and stops the sandbox
//   holding the most (its processes killed at once from the host, sandbox-tasks.ts; the engine's
//   stop takes its tmpfs, which no kill frees), and the waiting command goes on. A sandbox's own
//   limit still kills inside that sandbox (its own OOM killer, which it took from the bound as it
//   was made, is turned back on: `enableOwnKillers`). The kernel makes only a page fault wait: a
//   write that meets the full bound (a file in a tmpfs) fails at once with ENOMEM, so the largest
//   over its share gives way before (`NEARLY_FULL`), and the guard looks four times as often near it.
//   (Steering the kernel's own killer instead, every process over its share at oom_score_adj
//   1000, was tried: the kernel still took a light user's command, on Podman every other round.)
// - cgroup v2: `memory.high` a little under the bound throttles whoever charges past it, and the
//   guard reclaims from the sandbox furthest over its share while the bound is past it; each
//   sandbox's `memory.oom.group` makes a kill take the whole sandbox, never a part of a neighbour.
//   (Written and unit-tested against a fake cgroupfs; this project's machines have v1 only.)
// - pids, either version: when the bound's pids are nearly all taken, the sandbox furthest over
//   its pids share gives way before anyone else's fork fails.

/** How often the guard reads the bound, ms. */
export const GUARD_INTERVAL_MS = 200;
/** The share of the bound's memory in use from which the guard looks four times as often. */
export const NEAR = 0.85;
/** The share of the bound's pids in use from which the sandbox furthest over its pids share gives way. */
export const PIDS_SHORT = 0.9;
/** How long after a sandbox's cgroup appears its pids limit is read back at every look, ms. */
const CAP_YOUNG_MS = 10_000;
/** How often every sandbox's pids limit is read back (another writer: `docker update`), ms. */
const CAP_READ_BACK_MS = 2_000;
/** After a sandbox gave way, nobody else does for this long: what it freed takes effect first. */
const RECLAIM_QUIET_MS = 1_000;
/**
 * While the engine stops a sandbox that gave way, nobody else does for up to this long: its /tmp
 * goes only with the stop. A stop that takes longer may be waiting for the very memory the bound
 * lacks (Podman's conmon lives under it): then the next gives way. (A choice: long enough for a
 * stop on a busy machine, short enough that a user waiting at the bound is answered in seconds.)
 */
const STOP_WAIT_MS = 3_000;
/** What a sandbox that gave way must still hold for its stop to be waited for (its /tmp): less is freed by nothing more. */
const STOP_FREES_BYTES = 8 * 2 ** 20;
/** How long closing waits for the stops the guard asked for, ms. */
const CLOSE_WAIT_MS = 30_000;
/** How long a start waits for the memory a sandbox that gave way frees (killed processes free it in well under that). */
const ROOM_WAIT_MS = 3_000;

/**
 * Makes a sandbox give way: resolves once its processes are killed (`killNow`), with the engine's
 * stop still under way in `stopped`, or with false when it is no sandbox of this installation's (a
 * container an operator put under the same parent: the next one gives way instead). The guard
 * never waits for the stop: on Podman the engine's own monitor (conmon) lives under the bound, and
 * a stop that needs it waits for memory while the bound is full — seen: the guard stuck 60 s
 * behind one stop while two more hogs kept the bound full and every user's answer waited.
 */
export type Reclaim = (id: string, why: string, killNow: () => Promise<void>) => Promise<false | { readonly stopped: Promise<void> }>;

/** Options of {@link startFairShareGuard}. */
export interface FairShareGuardOptions {
  readonly bound: SharedBound;
  /** The floors of a share (`docker_share_floor`, and of pids). */
  readonly floors: { readonly memoryBytes: number; readonly pids: number };
  /** One sandbox's own pids limit (`docker_pids_limit`): a pids share never raises it. */
  readonly sandboxPids: number;
  /** Stops the sandbox whose container id is `id`; `why` is the one line its user gets. See {@link Reclaim}. */
  readonly reclaim: Reclaim;
  /** Whether the sandbox of this container id is frozen (idle): such a one gives way first. */
  readonly isFrozen?: ((id: string) => boolean) | undefined;
  readonly logger?: HostLogger | undefined;
  /** @default GUARD_INTERVAL_MS; 0: no timer (tests call `check`). */
  readonly intervalMs?: number;
}

/** A running guard over one bound. */
export interface FairShareGuard {
  /** One look at the bound, reclaiming if it is short; resolves when done. */
  check(): Promise<void>;
  /** The next look reads every sandbox's limits back, not only new names' (a sandbox just started: its cgroup may be new under an old name). */
  readEveryChild(): void;
  /**
   * Before another sandbox starts: when the bound's free pids are fewer than the newcomer's share,
   * the sandbox furthest over its pids share gives way first, so the start and its forks succeed.
   */
  roomForStart(): Promise<void>;
  /** Stops looking; with `lastHolder`, gives the bound's OOM decision back to the kernel. */
  close(lastHolder: boolean): Promise<void>;
}

const mb = (bytes: number): number => Math.round(bytes / 2 ** 20);

/**
 * Starts the guard over a bound that Berth enforces (a bound with `unenforced` set, or made
 * elsewhere, has none). A failed look is logged once and tried again at the next tick.
 */
export function startFairShareGuard(options: FairShareGuardOptions): FairShareGuard {
  const { bound, logger } = options;
  const folders = boundFolders(bound);
  // Containers under the bound that are not Berth's sandboxes: never chosen again.
  const notOurs = new Set<string>();
  let quietUntil = 0;
  // Sandboxes whose stop is under way: never chosen again meanwhile; closing waits for them.
  const givingWay = new Map<string, { readonly since: number; readonly done: Promise<void> }>();
  let failing = false;
  let running: Promise<void> | undefined;
  let closed = false;
  let near = false;

  // Frozen (idle, docker_freeze_seconds) and holding memory its stop would free: gives way first,
  // whatever its share, as nobody is waiting for anything it does; its user pays a start later.
  const frozenHog = (holdings: readonly SandboxHolding[]): SandboxHolding | undefined =>
    chooseHog(
      holdings.filter((holding) => holding.memoryBytes >= STOP_FREES_BYTES && options.isFrozen?.(holding.id)),
      'memory',
    );

  const giveWay = async (holding: SandboxHolding, shares: Shares, resource: 'memory' | 'pids', frozen = false): Promise<boolean> => {
    const why = frozen
      ? `berth: this sandbox was stopped while frozen (idle) because the sandboxes' shared memory ran short and it held ${mb(holding.memoryBytes)} MB; ` +
        'its files in /workspace and /root are kept, /tmp and its processes are not'
      : resource === 'memory'
        ? `berth: this sandbox was stopped because the sandboxes' shared memory ran out while it held ${mb(holding.memoryBytes)} MB, more than ` +
          // Over its share, or (the floors of all running sandboxes add up to more than the bound) the most of anyone's.
          (holding.memoryBytes > shares.memoryBytes
            ? `any other and more than its fair share (${mb(shares.memoryBytes)} MB)`
            : `any other (the bound could not hold every sandbox's fair share of ${mb(shares.memoryBytes)} MB at once)`) +
          '; its files in /workspace and /root are kept, /tmp and its processes are not'
        : `berth: this sandbox was stopped because the sandboxes' shared process count ran out while it had ${holding.pids} processes, more ` +
          `than any other and more than its fair share (${shares.pids}); its files in /workspace and /root are kept, /tmp and its processes ` +
          `are not`;
    const reclaimed = await options.reclaim(holding.id, why, () => killSandboxTasks(bound, holding.id));
    if (!reclaimed) {
      // Not Berth's to stop: left out of every later choice.
      notOurs.add(holding.id);
      return false;
    }
    const done = reclaimed.stopped.catch(() => undefined).finally(() => givingWay.delete(holding.id));
    givingWay.set(holding.id, { since: Date.now(), done });
    quietUntil = Date.now() + RECLAIM_QUIET_MS;
    logger?.warn(`berth: sandbox ${holding.id.slice(0, 12)} gave way: ${why.slice('berth: this sandbox was stopped because '.length)}`);
    return true;
  };

  // cgroup v2: each sandbox's processes are killed together or not at all.
  const grouped = new Set<string>();
  const groupKills = async (folder: string): Promise<void> => {
    for (const name of await fs.readdir(folder, { withFileTypes: true }).catch(() => [])) {
      if (!name.isDirectory() || grouped.has(name.name)) continue;
      grouped.add(name.name);
      await writeValue(path.join(folder, name.name, 'memory.oom.group'), '1').catch(() => undefined);
    }
  };

  // Each sandbox's pids limit is its pids share while others run, never above its own limit: no
  // one forks past a share and leaves another none. The engine writes its own limit into a new
  // sandbox's cgroup as it starts, which can land after the guard's (seen on Docker and Podman):
  // so a young sandbox's limit is read back at every look, everyone's once in CAP_READ_BACK_MS.
  const firstSeen = new Map<string, number>();
  const capsWritten = new Map<string, number>();
  const capPids = async (folder: string, pidsLimit: number, readAll: boolean): Promise<void> => {
    const now = Date.now();
    const names = (await fs.readdir(folder, { withFileTypes: true }).catch(() => []))
      .filter((name) => name.isDirectory() && CHILD_NAME.test(name.name))
      .map((name) => name.name);
    const cap = Math.min(options.sandboxPids, sharesOf({ memoryLimit: 1, pidsLimit }, names.length, options.floors).pids);
    for (const name of names) {
      const file = path.join(folder, name, 'pids.max');
      const seen = firstSeen.get(name) ?? now;
      firstSeen.set(name, seen);
      const young = now - seen < CAP_YOUNG_MS;
      if (!young && !readAll && capsWritten.get(name) === cap) continue;
      if ((await readText(file).catch(() => '')) === String(cap)) {
        capsWritten.set(name, cap);
        continue;
      }
      await writeValue(file, String(cap)).then(
        () => capsWritten.set(name, cap),
        () => capsWritten.delete(name),
      );
    }
    for (const name of firstSeen.keys()) if (!names.includes(name)) firstSeen.delete(name);
    for (const name of capsWritten.keys()) if (!names.includes(name)) capsWritten.delete(name);
  };
  // cgroup v1: a new cgroup takes its parent's `oom_kill_disable` as the kernel makes it, so every
  // sandbox started under the bound would wait at its own limit too, for good, instead of its own
  // OOM killer acting inside it (seen: a command over its own limit held past its timeout, which
  // could not kill it either, and then the sandbox restarted). Each child's is set back to 0 as
  // the guard first sees its name (the kernel then wakes what waits there), and every child's is
  // read again every CAP_READ_BACK_MS and after each start (`readEveryChild`): a restarted
  // sandbox's cgroup is made anew under the same name. (A stat of every child at every look, to
  // tell a new cgroup by its inode, cost 3 % of a core with 100 sandboxes on a loaded machine.)
  const killersOn = new Set<string>();
  const enableOwnKillers = async (folder: string, readAll: boolean): Promise<void> => {
    const names = (await fs.readdir(folder, { withFileTypes: true }).catch(() => [])).filter((name) => name.isDirectory()).map((name) => name.name);
    for (const name of names) {
      if (!readAll && killersOn.has(name)) continue;
      const file = path.join(folder, name, 'memory.oom_control');
      const control = await readText(file).catch(() => undefined);
      if (control === undefined) continue;
      const on =
        numberIn(control, 'oom_kill_disable') === 0 ||
        (await writeValue(file, '0').then(
          () => true,
          () => false,
        ));
      if (on) killersOn.add(name);
      else killersOn.delete(name);
    }
    for (const name of killersOn) if (!names.includes(name)) killersOn.delete(name);
  };
  const pidsOf = async (): Promise<{ now: number; max: number }> => {
    const [now, max] = await Promise.all([readText(path.join(folders!.pids, 'pids.current')), readText(path.join(folders!.pids, 'pids.max'))]);
    return { now: asCount(now), max: asCount(max) };
  };

  /** Asks the sandbox holding the most of `resource`, then the next, until one of Berth's gives way. */
  const reclaimFrom = async (holdings: readonly SandboxHolding[], shares: Shares, resource: 'memory' | 'pids'): Promise<void> => {
    for (let left = [...holdings]; left.length > 0; ) {
      const frozen = resource === 'memory' ? frozenHog(left) : undefined;
      const hog = frozen ?? chooseHog(left, resource)!;
      // Pids are taken from others only by a sandbox over its pids share.
      if (resource === 'pids' && hog.pids <= shares.pids) return;
      if (await giveWay(hog, shares, resource, frozen !== undefined)) return;
      left = left.filter((holding) => holding !== hog);
    }
  };

  /**
   * Who may give way, and whether a stop under way may still free memory: one that gave way
   * less than STOP_WAIT_MS ago and still holds at least STOP_FREES_BYTES (its /tmp, which goes
   * only with the stop). One whose killed processes left it next to nothing frees nothing more
   * by its stop: waiting for it held everyone at a full bound for 3 s (seen on Podman, whose
   * stop of it waited for memory itself).
   */
  const candidates = async (): Promise<{ holdings: SandboxHolding[]; freeing: boolean }> => {
    const all = await readHoldings(bound);
    const freeing = [...givingWay].some(
      ([id, stop]) => Date.now() - stop.since < STOP_WAIT_MS && (all.find((holding) => holding.id === id)?.memoryBytes ?? 0) >= STOP_FREES_BYTES,
    );
    return { holdings: all.filter((holding) => !notOurs.has(holding.id) && !givingWay.has(holding.id)), freeing };
  };

  const roomForStart = async (): Promise<void> => {
    if (!folders || closed) return;
    const pids = await pidsOf().catch(() => undefined);
    if (!pids) return;
    const { holdings, freeing } = await candidates();
    const shares = sharesOf({ memoryLimit: bound.memoryMb * 2 ** 20, pidsLimit: pids.max }, holdings.length + 1, options.floors);
    if (pids.max - pids.now < Math.min(shares.pids, options.sandboxPids)) await reclaimFrom(holdings, shares, 'pids');
    // Memory: the engine makes the sandbox's cgroup as it starts, and v1 charges that to the bound,
    // so a start under a full bound fails ("mkdir …: cannot allocate memory", seen on Docker when a
    // sandbox that gave way was started again while two hogs still filled the bound). Room first:
    // the largest gives way as the guard's look would (on a nearly full bound only if over its
    // share with the newcomer counted), then the start waits for the bound to leave its OOM.
    let { short } = await shortOfMemory(bound, folders.memory);
    if (short === false) return;
    if (!freeing && (short === 'short' || frozenHog(holdings) || (chooseHog(holdings, 'memory')?.memoryBytes ?? 0) > shares.memoryBytes)) {
      await reclaimFrom(holdings, shares, 'memory');
    }
    // Its processes are killed: what they held is free in a moment.
    for (const until = Date.now() + ROOM_WAIT_MS; short === 'short' && givingWay.size > 0 && Date.now() < until; ) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      ({ short } = await shortOfMemory(bound, folders.memory));
    }
  };

  // Every sandbox's limits are read back once in CAP_READ_BACK_MS, and at the look after a start;
  // decided before any listing, so a listing after a start's request sees that sandbox.
  let readAllAt = 0;
  const look = async (): Promise<void> => {
    if (!folders) return;
    const readAll = Date.now() - readAllAt >= CAP_READ_BACK_MS;
    if (readAll) readAllAt = Date.now();
    if (bound.version === 2) await groupKills(folders.memory);
    else await enableOwnKillers(folders.memory, readAll);
    const { short: memory, used } = await shortOfMemory(bound, folders.memory);
    near = used >= NEAR;
    const pids = await pidsOf();
    await capPids(folders.pids, pids.max, readAll);
    const pidsShort = pids.now >= pids.max * PIDS_SHORT;
    if ((!memory && !pidsShort) || Date.now() < quietUntil) return;
    const { holdings, freeing } = await candidates();
    if (freeing) return;
    const shares = sharesOf({ memoryLimit: bound.memoryMb * 2 ** 20, pidsLimit: pids.max }, holdings.length, options.floors);
    // Nearly full only: a frozen one, or the largest if it is over its share, gives way before
    // anyone meets the limit, if no stop is under way (what that one still holds, its /tmp, goes with it).
    const over = frozenHog(holdings) !== undefined || (chooseHog(holdings, 'memory')?.memoryBytes ?? 0) > shares.memoryBytes;
    if (memory === 'nearly' && !pidsShort && (givingWay.size > 0 || !over)) return;
    await reclaimFrom(holdings, shares, memory ? 'memory' : 'pids');
  };

  const check = (): Promise<void> => {
    running ??= look()
      .then(
        () => {
          failing = false;
        },
        (error: unknown) => {
          if (!failing) logger?.warn(`berth: could not read the sandboxes' shared bound: ${(error as Error).message}`);
          failing = true;
        },
      )
      .finally(() => {
        running = undefined;
      });
    return running;
  };

  // Four times as often while the bound is near full: the window in which a write meets it is shorter.
  const interval = options.intervalMs ?? GUARD_INTERVAL_MS;
  let ticks = 0;
  const timer = interval > 0 && folders ? setInterval(() => (near || ++ticks % 4 === 0) && void check(), interval / 4) : undefined;
  timer?.unref();

  return {
    check,
    readEveryChild: () => {
      readAllAt = 0;
    },
    roomForStart: () => roomForStart().catch((error: unknown) => logger?.warn(`berth: could not make room in the shared bound: ${(error as Error).message}`)),
    close: async (lastHolder) => {
      if (closed) return;
      closed = true;
      clearInterval(timer);
      await running;
      // The stops it asked for, for a while: an engine that never answers must not hold a close for good.
      await waitAtMost(Promise.all([...givingWay.values()].map((stop) => stop.done)), CLOSE_WAIT_MS);
      if (lastHolder) await returnOomDecision(bound);
    },
  };
}
