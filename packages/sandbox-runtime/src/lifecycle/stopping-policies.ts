import { localHostSize, maxRunningOf, PRESSURE_HIGH, type HostSize } from './capacity.js';
import { messageOf, type RuntimeContext } from '../runtime-context.js';
import { enqueue, type SandboxEntry } from './sandbox-entry.js';
import { sandboxIsBusy } from './is-sandbox-busy.js';
import { readLastUsed } from './last-used-file.js';
import { readBoundPressure, readSandboxUsage } from './shared-bound.js';
import { beyondShares, readHoldings, SHARE_FLOOR_PIDS, sharesOf } from './fair-share.js';

/**
 * After the capacity policy stops a user's sandbox, it does not stop that user's again for this
 * long: however often others open sessions, one user loses their running state at most once in it.
 */
export const CAPACITY_STOP_COOL_DOWN_MS = 10 * 60_000;

/**
 * The stopping policies: idle sandboxes after `lifetime_seconds` (frozen first where the driver
 * can, then stopped after `docker_freeze_seconds` more); the least recently used idle
 * ones while the shared bound is filling up (`docker_max_running: auto`), or beyond a fixed
 * `docker_max_running`.
 */
export interface StoppingPolicies {
  /** Stops sandboxes idle for longer than the lifetime; returns the scope keys stopped. */
  reap(): Promise<string[]>;
  /**
   * Before `current` starts: stops the least recently used idle sandboxes while more than
   * `docker_max_running` run, or while the shared bound is filling up (`auto`).
   */
  enforceMaxRunning(current: SandboxEntry): Promise<void>;
  /** The cap on running sandboxes the settings mean on the engine's host, 0 none (`auto` asks the engine's size once). */
  runningCap(): Promise<number>;
  /** Stops the automatic reaper. */
  close(): void;
}

/**
 * `entry` with its last use brought up to the one recorded beside its folders, when that is
 * later: another process of the installation (a second gateway, `berth serve`, `berth exec`)
 * records its uses there, and this process's own view of a sandbox it adopted, or used less
 * lately, would otherwise stop a sandbox someone else is using.
 */
function withRecordedUse(context: RuntimeContext, entry: SandboxEntry): SandboxEntry {
  if (!context.driver.capabilities.hostFolders) return entry;
  const recorded = readLastUsed(entry.paths?.workspace ?? entry.recordedAt);
  if (recorded !== undefined && recorded > entry.lastUsed) entry.lastUsed = recorded;
  return entry;
}

/**
 * Builds the policies. `adopt` runs before the first reap, so sandboxes a previous gateway left
 * running are reaped too; `settled` is the queue's bookkeeping after each task; `stop` stops one.
 * The runtime's own (create-sandbox-runtime.ts): neither entry of the package exports it.
 */
export function createStoppingPolicies(
  context: RuntimeContext,
  options: {
    adopt: () => Promise<void>;
    stop: (entry: SandboxEntry, reason: string) => Promise<void>;
    /** Freezes an idle sandbox instead of stopping it (`docker_freeze_seconds`); false where the driver cannot. */
    freeze?: (entry: SandboxEntry, reason: string) => Promise<boolean>;
    settled: (entry: SandboxEntry) => void;
    reapIntervalMs?: number;
  },
): StoppingPolicies {
  const { settings, logger } = context;
  let adopted = false;
  // The engine host's size (the engine says; else this machine's), asked once.
  let hostSize: Promise<HostSize> | undefined;
  const sizeOfHost = (): Promise<HostSize> => {
    hostSize ??= context.driver
      .describe({ runtimeVersions: false })
      .then((description) => ({ ...localHostSize(), ...(description.host ?? {}) }))
      .catch(() => localHostSize());
    return hostSize;
  };

  const reap: StoppingPolicies['reap'] = async () => {
    if (!adopted) {
      await options.adopt();
      adopted = true;
    }
    const stopped: string[] = [];
    await removeLongStopped();
    if (settings.lifetime_seconds <= 0) return stopped;
    const deadline = Date.now() - settings.lifetime_seconds * 1000;
    const freezeMs = settings.docker_freeze_seconds * 1000;
    for (const entry of [...context.entries.values()]) {
      if (!entry.running || entry.pending > 0 || withRecordedUse(context, entry).lastUsed > deadline) continue;
      // Used since it was frozen (by another process of the installation, which thawed it): not frozen now.
      if (entry.frozenAt !== undefined && entry.lastUsed > entry.frozenAt) entry.frozenAt = undefined;
      if (entry.frozenAt !== undefined && Date.now() - entry.frozenAt < freezeMs) continue;
      await enqueue(
        entry,
        async () => {
          // Looked at again inside the queue: a command may have come in meanwhile.
          if (!entry.running || withRecordedUse(context, entry).lastUsed > deadline) return;
          const idle = `idle for more than ${settings.lifetime_seconds} s`;
          if (entry.frozenAt === undefined && freezeMs > 0 && (await freezeOrNot(entry, idle))) return;
          const why = entry.frozenAt === undefined ? idle : `frozen for more than ${settings.docker_freeze_seconds} s`;
          await options.stop(entry, why);
          stopped.push(entry.scopeKey);
          logger?.info(`berth: stopped ${entry.name}, ${why}`);
        },
        () => options.settled(entry),
        { use: false },
      ).catch((error: unknown) => logger?.warn(`berth: could not stop idle sandbox ${entry.name}: ${messageOf(error)}`));
    }
    return stopped;
  };

  let freezeRefused = false;
  /** Freezes an idle sandbox where the driver can; false (and a warning, when it failed) to stop it instead. */
  const freezeOrNot = async (entry: SandboxEntry, idle: string): Promise<boolean> => {
    if (!options.freeze) return false;
    try {
      if (!(await options.freeze(entry, idle))) return false;
      logger?.info(`berth: froze ${entry.name}, ${idle}; its next command thaws it, and it stops after ${settings.docker_freeze_seconds} s more`);
      return true;
    } catch (error) {
      // Once per process as a warning (an engine that cannot freeze, rootless Podman on cgroup v1, refuses every time).
      const line = `berth: could not freeze ${entry.name} (${messageOf(error)}); stopping it instead`;
      if (freezeRefused) logger?.info(line);
      else logger?.warn(line);
      freezeRefused = true;
      return false;
    }
  };

  /** Removes the sandboxes of users unseen for `docker_remove_after_seconds`; their files stay. */
  const removeLongStopped = async (): Promise<void> => {
    if (settings.docker_remove_after_seconds <= 0) return;
    const deadline = Date.now() - settings.docker_remove_after_seconds * 1000;
    for (const entry of [...context.entries.values()]) {
      if (entry.running || entry.pending > 0 || entry.lastUsed > deadline || !entry.containerId) continue;
      await enqueue(
        entry,
        async () => {
          if (entry.running || entry.lastUsed > deadline || !entry.containerId) return;
          await context.driver.remove(entry.containerId);
          // Its disk is unmounted too (a loop device each); the files stay in its image.
          const paths = entry.paths;
          if (paths) {
            await context
              .holdScope(paths, `unmount the disk of ${entry.name}`, () => context.disks.release(paths))
              .catch((error: unknown) => logger?.warn(`berth: could not unmount the disk of ${entry.name}: ${messageOf(error)}`));
          }
          context.entries.delete(entry.scopeKey);
          context.observer.event(entry, 'removed', `unused for more than ${settings.docker_remove_after_seconds} s, files kept`);
          logger?.info(`berth: removed ${entry.name}, unused for more than ${settings.docker_remove_after_seconds} s (its files are kept)`);
        },
        () => options.settled(entry),
      ).catch((error: unknown) => logger?.warn(`berth: could not remove unused sandbox ${entry.name}: ${messageOf(error)}`));
    }
  };

  /** Stops one idle sandbox (its queue empty), least recently used first, in its own queue. */
  const stopIdle = async (entry: SandboxEntry, why: string): Promise<void> => {
    logger?.info(`berth: stopping ${entry.name}, least recently used, ${why}`);
    // In the sandbox's own queue, as the reaper stops one: a command of its user that comes in
    // while the engine stops it waits, then starts it again, instead of finding a sandbox that
    // is still running for the engine but stopping under it (two failed tries: an error, seen
    // with 50 users). Its queue is empty (pending is 0), so the stop starts at once; a stop is
    // not a use of the sandbox.
    await enqueue(
      entry,
      async () => {
        if (entry.running) await options.stop(entry, `least recently used, ${why}`);
      },
      () => options.settled(entry),
      { use: false },
    ).catch((error: unknown) => logger?.warn(`berth: could not stop ${entry.name}: ${messageOf(error)}`));
  };

  // The pressure policy's own stops, by scope: each user's sandbox at most once in a cool-down.
  // (A fixed docker_max_running is the operator's hard cap and keeps no cool-down.)
  const stoppedAt = new Map<string, number>();
  const coolingDown = (entry: SandboxEntry): boolean => Date.now() - (stoppedAt.get(entry.scopeKey) ?? -Infinity) < CAPACITY_STOP_COOL_DOWN_MS;
  const idleByAge = (current: SandboxEntry): SandboxEntry[] =>
    [...context.entries.values()]
      .filter((entry) => entry.running && entry !== current)
      .map((entry) => withRecordedUse(context, entry))
      .sort((a, b) => a.lastUsed - b.lastUsed);

  const enforceMaxRunning: StoppingPolicies['enforceMaxRunning'] = async (current) => {
    if (settings.docker_max_running === 0) return;
    if (settings.docker_max_running === 'auto') {
      // With the one bound all sandboxes share in force, memory limits are ceilings under it, not
      // reservations: sandboxes stop because the bound is filling up, never because their limits
      // add up. Without it (a rootless or remote engine), the count that fits the host stays.
      const bound = await context.sharedBound();
      const pressure = await readBoundPressure(bound);
      if (pressure) {
        // What is in use once the stops so far take effect, each sandbox counted for no more than
        // its fair share (fair-share.ts): a user pinning the bound fills it for nobody but
        // themselves, and the fair-share guard, not this policy, makes them give way. A sandbox
        // that holds next to nothing is not stopped, since stopping it would free nothing (its
        // user would only lose their background jobs and wait for a restart).
        const holdings = await readHoldings(bound);
        const beyond = beyondShares(
          holdings,
          sharesOf(pressure, holdings.length + 1, {
            memoryBytes: settings.docker_share_floor * 2 ** 20,
            pids: Math.min(SHARE_FLOOR_PIDS, settings.docker_pids_limit),
          }),
        );
        let memory = pressure.memoryBytes - beyond.memoryBytes;
        let pids = pressure.pids - beyond.pids;
        const full = (): boolean => memory >= pressure.memoryLimit * PRESSURE_HIGH || pids >= pressure.pidsLimit * PRESSURE_HIGH;
        for (const entry of idleByAge(current)) {
          if (!full()) return;
          if (entry.pending > 0 || !entry.containerId || coolingDown(entry)) continue;
          const usage = await readSandboxUsage(bound, entry.containerId);
          if (!usage || (usage.memoryBytes < pressure.memoryLimit * 0.01 && usage.pids < pressure.pidsLimit * 0.01)) continue;
          // Never a busy one: a job of its user still running (a server, a build) is theirs to keep.
          // A frozen one runs nothing (and where processes are listed from inside, cannot be asked).
          if (entry.frozenAt === undefined && context.driver.capabilities.processList && (await sandboxIsBusy(context.driver, entry.containerId))) continue;
          const which =
            memory / pressure.memoryLimit >= pids / pressure.pidsLimit
              ? `memory ${Math.round((memory / pressure.memoryLimit) * 100)} %`
              : `pids ${Math.round((pids / pressure.pidsLimit) * 100)} %`;
          stoppedAt.set(entry.scopeKey, Date.now());
          await stopIdle(
            entry,
            `because the sandboxes' shared bound is filling up (${which} of it in use; it held ${Math.round(usage.memoryBytes / 2 ** 20)} MB)`,
          );
          memory -= usage.memoryBytes;
          pids -= usage.pids;
        }
        return;
      }
    }
    const limit = maxRunningOf(settings, await sizeOfHost());
    const running = idleByAge(current);
    let excess = running.length + 1 - limit;
    for (const entry of running) {
      if (excess <= 0) break;
      if (entry.pending > 0) continue;
      await stopIdle(entry, `to stay within terminal.docker_max_running=${limit}`);
      excess--;
    }
  };

  let timer: NodeJS.Timeout | undefined;
  if ((settings.lifetime_seconds > 0 || settings.docker_remove_after_seconds > 0) && options.reapIntervalMs !== 0) {
    const period = options.reapIntervalMs ?? Math.min(60_000, Math.max(1_000, ((settings.lifetime_seconds || 240) * 1000) / 4));
    timer = setInterval(() => {
      reap().catch((error: unknown) => logger?.warn(`berth: reaping idle sandboxes failed: ${messageOf(error)}`));
    }, period);
    timer.unref();
  }

  const runningCap = async (): Promise<number> =>
    settings.docker_max_running === 'auto' ? maxRunningOf(settings, await sizeOfHost()) : settings.docker_max_running;
  return { reap, enforceMaxRunning, runningCap, close: () => clearInterval(timer) };
}
