import path from 'node:path';
import { ImageNotFoundError, isSandboxConflict, isSandboxGone, SandboxError, type SandboxRequest } from '@berth/core';
import type { SandboxSpec } from '@berth/core/driver';
import { channelsFolderOf } from '../shell/fifo-channel.js';
import { prepareHostFolders } from '../host-files/host-folders.js';
import type { RuntimeContext } from '../runtime-context.js';
import type { SandboxEntry } from './sandbox-entry.js';
import { sandboxIsBusy } from './is-sandbox-busy.js';
import { buildSandboxSpec, LABELS, MANAGED_BY } from '../sandbox-spec.js';
import { waitAtMost } from '../wait-at-most.js';
import { isPooled, POOL_KIND } from '../pool/handover-records.js';

/** How many times acquiring looks again at a sandbox that keeps changing under it. */
const ACQUIRE_ATTEMPTS = 12;

/** The sandbox-level steps: make, adopt, recreate, start, freeze, thaw, stop. */
export interface SandboxLifecycle {
  /** Makes sure the scope's sandbox exists and runs: adopts, restarts, recreates or creates it. Returns its id. */
  acquire(entry: SandboxEntry, request: SandboxRequest): Promise<string>;
  /** Unpauses a sandbox someone paused from outside; never throws. */
  thawIfPaused(entry: SandboxEntry): Promise<void>;
  /**
   * Freezes the idle sandbox (the driver's `pause`): its processes stop where they are, its memory
   * stays. False where the driver cannot; throws what the engine said.
   */
  freeze(entry: SandboxEntry, reason: string): Promise<boolean>;
  /** Thaws a sandbox this process froze, before its next command; never throws (a sandbox gone is the command's own path's to find). */
  thaw(entry: SandboxEntry): Promise<void>;
  /** Stops the sandbox; it starts again on the next command. */
  stop(entry: SandboxEntry, dropSessions: () => void): Promise<void>;
  /** Every sandbox of this runtime (with the run's labels), or those of one scope; pooled ones not yet handed over are no one's. */
  find(scopeKey?: string): ReturnType<RuntimeContext['driver']['list']>;
  /** Makes sure the image is on the engine, pulled once. */
  ensureImage(): Promise<void>;
}

/** How long a start waits for the room its `beforeStart` makes; the stops go on after it. */
const ROOM_WAIT_MS = 5_000;
/** An engine's answer when the kernel could not allocate what a start needs (runc: "mkdir …: cannot allocate memory"). */
const OUT_OF_MEMORY = /cannot allocate memory|\bENOMEM\b/i;

/**
 * Builds the lifecycle steps over the context's driver. `beforeStart` runs each time a sandbox is
 * about to be started (made, or started again), and only then: the bound's check and the capacity
 * policy (create-sandbox-runtime.ts); `afterStart` once it runs, before its first command (the
 * shares). A session opening in a running sandbox runs neither.
 */
export function createSandboxLifecycle(
  context: RuntimeContext,
  hooks: {
    beforeStart?: (entry: SandboxEntry) => Promise<void>;
    afterStart?: () => Promise<void>;
    /** A new user's sandbox from the warm pool (pool/warm-pool.ts), or undefined to make one. */
    handOver?: (entry: SandboxEntry, request: SandboxRequest, spec: SandboxSpec) => Promise<string | undefined>;
  } = {},
): SandboxLifecycle {
  const { driver, settings, logger } = context;
  let imageReady: Promise<void> | undefined;

  const ownLabels = (scopeKey?: string): Record<string, string> => ({
    ...context.extraLabels,
    [LABELS.managedBy]: MANAGED_BY,
    ...(scopeKey ? { [LABELS.scope]: scopeKey } : {}),
  });
  // This installation's sandboxes only: another gateway on the engine labels its own the same way,
  // for the same users, and its workspaces are elsewhere. Without a root given, the roots of the
  // requests served (seen: a test backend without one reaped every other gateway's sandboxes).
  const find: SandboxLifecycle['find'] = async (scopeKey) => {
    const sandboxes = await driver.list(ownLabels(scopeKey));
    const roots = [...context.servedRoots].map((root) => `${root}${path.sep}`);
    return sandboxes.filter((sandbox) => {
      if (sandbox.labels[LABELS.kind] === POOL_KIND) return false;
      const workspace = sandbox.labels[LABELS.workspace] ?? '';
      return roots.some((root) => workspace.startsWith(root));
    });
  };

  const ensureImage = (): Promise<void> => {
    imageReady ??= (async () => {
      if (await driver.hasImage(context.image)) return;
      context.onProgress?.({ phase: 'pull', message: `pulling ${context.image}` });
      logger?.info(`berth: image ${context.image} is absent on the ${driver.engine} engine; pulling it`);
      await driver.prepareImage(context.image, (message) => context.onProgress?.({ phase: 'pull', message }));
    })().catch((error: unknown) => {
      imageReady = undefined;
      throw error;
    });
    return imageReady;
  };

  /** What must hold on the host before a sandbox starts: its folders (on its own disk) and the egress policy. */
  const prepareFolders = async (request: SandboxRequest): Promise<void> => {
    if (driver.capabilities.hostFolders) await prepareHostFolders(request.paths, context.disks.ensure);
    await context.prepareNetwork(request.paths.root);
  };

  const start = async (entry: SandboxEntry, id: string, justCreated = false): Promise<void> => {
    context.onProgress?.({ phase: 'start', message: `starting ${entry.name}` });
    // Room for it first, waited for a while: a stop queued behind another user's long command
    // must not hold this start (it goes on, and frees its room when it can).
    const makeRoom = async (): Promise<void> => {
      if (hooks.beforeStart)
        await waitAtMost(
          hooks.beforeStart(entry).catch(() => undefined),
          ROOM_WAIT_MS,
        );
    };
    const startIt = () => driver.start(id, justCreated ? { justCreated } : undefined);
    await makeRoom();
    try {
      await startIt();
    } catch (error) {
      // The shared bound filled between the room made and the engine making the sandbox's cgroup
      // (cgroup v1 charges it to the bound): room once more, then one line, not runc's.
      if (!hooks.beforeStart || !OUT_OF_MEMORY.test(String((error as Error)?.message))) throw error;
      await makeRoom();
      try {
        await startIt();
      } catch (again) {
        if (!OUT_OF_MEMORY.test(String((again as Error)?.message))) throw again;
        context.observer.event(entry, 'refused', 'SANDBOX_LIMIT');
        throw new SandboxError(
          'SANDBOX_LIMIT',
          `sandbox ${entry.name} could not start: the kernel had no memory for it (the sandboxes' shared bound, ` +
            'terminal.docker_total_memory, or the host is full right now); try again in a moment, or raise terminal.docker_total_memory',
        );
      }
    }
    // Before its first command: the bound's guard gives the new sandbox its share (its pids cap).
    await hooks.afterStart?.();
    entry.starts = (entry.starts ?? 0) + 1;
  };

  /** Creates and starts the sandbox; `''` when another process holds the name. */
  const create = async (entry: SandboxEntry, request: SandboxRequest, spec: Parameters<typeof driver.create>[0]): Promise<string> => {
    // Independent steps at once: the host's folders and disk, the image, the engine's network.
    // All are done before the container exists, so a failure leaves no container behind; each is
    // waited for even when another failed, so that no step is still making something (a disk
    // being mounted) when the caller cleans up after the failure.
    const steps = await Promise.allSettled([prepareFolders(request), ensureImage(), driver.prepare?.(spec)]);
    const failed = steps.find((step): step is PromiseRejectedResult => step.status === 'rejected');
    if (failed) throw failed.reason;
    context.onProgress?.({ phase: 'create', message: `creating ${entry.name}` });
    let id: string | undefined;
    try {
      id = await driver.create(spec);
    } catch (error) {
      // The image vanished between the check and the create: look again next time.
      if (error instanceof ImageNotFoundError) imageReady = undefined;
      throw error;
    }
    if (id === undefined) return '';
    try {
      // Its network's bridge exists now: a table another process retired before it did is back before the start.
      await context.confirmNetwork();
      await start(entry, id, true);
    } catch (error) {
      // Nothing half-created: a sandbox that cannot start is removed again.
      await driver.remove(id).catch(() => undefined);
      throw error;
    }
    logger?.info(`berth: created sandbox ${entry.name} for ${entry.scopeKey}`);
    return id;
  };

  /**
   * A sandbox of this scope that an earlier release named after its user (or that an operator
   * renamed) is renamed to the opaque name, so the loop adopts it — and recreates it once idle,
   * files kept, since its settings differ — instead of making a duplicate. Only a sandbox with
   * this installation's folders: another gateway on the engine may serve the same scope key.
   */
  const adoptRenamed = async (entry: SandboxEntry, request: SandboxRequest, sandboxes: Awaited<ReturnType<typeof find>>): Promise<boolean> => {
    const other = sandboxes.find(
      (sandbox) =>
        sandbox.labels[LABELS.scope] === entry.scopeKey && sandbox.labels[LABELS.workspace] === request.paths.workspace && sandbox.name !== entry.name,
    );
    if (!other) return false;
    try {
      await driver.rename(other.id, entry.name);
    } catch (error) {
      // Another process renamed it first, or it went: the loop looks again either way.
      if (!isSandboxConflict(error) && !isSandboxGone(error)) throw error;
    }
    logger?.info(`berth: renamed the sandbox ${other.name} to ${entry.name}; it is recreated once idle, files kept`);
    return true;
  };

  /** A new user past `docker_max_sandboxes` is refused in one line, before anything is made. */
  const assertRoomForAnother = (entry: SandboxEntry, request: SandboxRequest, sandboxes: Awaited<ReturnType<typeof find>>): void => {
    const limit = settings.docker_max_sandboxes;
    if (limit <= 0) return;
    const root = `${request.paths.root}/`;
    // This installation's sandboxes (its folders), whatever else shares the engine.
    const existing = sandboxes.filter((sandbox) => (sandbox.labels[LABELS.workspace] ?? '').startsWith(root)).length;
    if (existing >= limit) {
      context.observer.event(entry, 'refused', 'SANDBOX_LIMIT');
      throw new SandboxError(
        'SANDBOX_LIMIT',
        `this gateway already has ${existing} sandboxes, the most terminal.docker_max_sandboxes (${limit}) allows; remove unused ones (berth rm), ` +
          `or raise terminal.docker_max_sandboxes`,
      );
    }
  };

  const thawIfPaused: SandboxLifecycle['thawIfPaused'] = async (entry) => {
    if (!entry.containerId) return;
    try {
      const found = await driver.inspect(entry.containerId);
      if (found?.state !== 'paused') return;
      logger?.warn(
        `berth: sandbox ${entry.name} was paused (by hand, or frozen by another process of this installation); unpausing it so its command can answer`,
      );
      await driver.unpause(entry.containerId);
    } catch {
      // Gone or unreachable: the command's own path reports that.
    }
  };

  const acquire: SandboxLifecycle['acquire'] = async (entry, request) => {
    // It gave way to the fair-share guard a moment ago: started again once the engine's stop is
    // done, never during it (give-way.ts); a stop that hangs holds the command for 30 s at most.
    if (entry.givingWay) await waitAtMost(entry.givingWay, 30_000);
    const bound = await context.sharedBound();
    const runtimeMounts = await context.egress.mounts(request.paths.root);
    const { spec, configHash } = buildSandboxSpec({
      ...(runtimeMounts.length > 0 ? { runtimeMounts } : {}),
      ...(bound.parent ? { cgroupParent: bound.parent } : {}),
      settings,
      image: context.image,
      name: entry.name,
      scope: request.scope,
      paths: request.paths,
      engine: driver.engine,
      specRevision: driver.specRevision,
      extraLabels: context.extraLabels,
      ...(driver.capabilities.hostFolders ? { channels: channelsFolderOf(request.paths.folder) } : {}),
    });
    // Why a sandbox made below replaces one (the audit trail's `recreated`): its settings, or it was gone.
    let replaced = entry.containerId === undefined ? undefined : 'the sandbox was gone';
    for (let attempt = 0; attempt < ACQUIRE_ATTEMPTS; attempt++) {
      // One list of this runtime's sandboxes answers both questions of a new one; asked at once
      // with the inspect, as acquiring is mostly for new and restarted sandboxes.
      const listing = find();
      listing.catch(() => undefined);
      const found = await driver.inspect(entry.name);
      const sandboxes = found ? [] : await listing;
      if (!found && (await adoptRenamed(entry, request, sandboxes))) continue;
      if (!found) {
        assertRoomForAnother(entry, request, sandboxes);
        // The scope's lock from its folders to its start: a purge in another process waits for
        // it, then finds (and removes) the sandbox; one under way is never re-populated.
        let pooled = false;
        const id = await context.holdScope(request.paths, `start the sandbox of ${request.scope.key}`, async () => {
          const given = await hooks.handOver?.(entry, request, spec);
          pooled = given !== undefined;
          return given ?? context.limitCreate(() => create(entry, request, spec));
        });
        if (id === '') {
          // Another process holds the name; the engine may not show it until its create completes.
          await new Promise((resolve) => setTimeout(resolve, 50 * (attempt + 1)));
          continue;
        }
        entry.containerId = id;
        entry.running = true;
        context.observer.event(entry, replaced ? 'recreated' : 'created', replaced ?? (pooled ? 'from the warm pool' : undefined));
        return id;
      }
      if (found.labels[LABELS.managedBy] !== MANAGED_BY || found.labels[LABELS.scope] !== request.scope.key) {
        throw new SandboxError(
          'SANDBOX_NAME_TAKEN',
          `sandbox ${entry.name} exists but is not Berth's sandbox for ${request.scope.key}; rename or remove it, or set another name prefix`,
        );
      }
      // A pooled sandbox's mounts name its slot's folders, which its hand-over renamed: started
      // again, it would mount nothing of its user's. Once stopped, it goes, and theirs is made.
      if (isPooled(found) && found.state !== 'running' && found.state !== 'paused') {
        await driver.remove(found.id);
        replaced = 'a pooled sandbox is never started again';
        continue;
      }
      if (found.labels[LABELS.configHash] !== configHash) {
        if (found.state === 'running' && (await sandboxIsBusy(driver, found.id))) {
          if (!entry.stale) logger?.warn(`berth: the settings of ${entry.name} changed, but it is busy; it keeps its old settings until it is idle`);
          entry.stale = true;
        } else {
          logger?.info(`berth: the settings of ${entry.name} changed; recreating it (files are kept)`);
          await driver.remove(found.id);
          replaced = 'its settings changed';
          continue;
        }
      } else {
        entry.stale = false;
      }
      if (found.state === 'paused') {
        await driver.unpause(found.id);
      } else if (found.state !== 'running') {
        await context.holdScope(request.paths, `start the sandbox of ${request.scope.key}`, async () => {
          await prepareFolders(request);
          await context.limitCreate(() => start(entry, found.id));
        });
        logger?.info(`berth: restarted sandbox ${entry.name} for ${entry.scopeKey}`);
        context.observer.event(entry, 'started', entry.containerId === undefined ? 'found stopped on the engine' : 'was stopped');
      } else if (entry.containerId === undefined) {
        context.observer.event(entry, 'adopted', 'found running on the engine');
      }
      entry.containerId = found.id;
      entry.running = true;
      return found.id;
    }
    throw new SandboxError('SANDBOX_CONFLICT', `sandbox ${entry.name} kept changing while Berth acquired it; retry the command`);
  };

  const freeze: SandboxLifecycle['freeze'] = async (entry, reason) => {
    const id = entry.containerId;
    if (!driver.pause || !id || !entry.running) return false;
    // An exec that is still starting when the sandbox freezes would hold the engine's lock on it
    // until thawed (shell-sessions.ts): the kill shell a command replaced is let finish first.
    await entry.killerOpening;
    await driver.pause(id);
    entry.frozenAt = Date.now();
    context.observer.event(entry, 'frozen', reason);
    return true;
  };

  const thaw: SandboxLifecycle['thaw'] = async (entry) => {
    const id = entry.containerId;
    if (entry.frozenAt === undefined || !id) return;
    entry.frozenAt = undefined;
    try {
      await driver.unpause(id);
      context.observer.event(entry, 'thawed', 'a command came');
    } catch {
      // Thawed by another process of the installation, stopped by an engine restart, or gone:
      // the command's own path finds out (a dead session, then acquire) and says so.
    }
  };

  const stop: SandboxLifecycle['stop'] = async (entry, dropSessions) => {
    // A paused sandbox's processes cannot receive the stop's signals; bounded, because an
    // inspect can be slow while a fork bomb fills the sandbox.
    await waitAtMost(thawIfPaused(entry), 2_000);
    entry.frozenAt = undefined;
    dropSessions();
    entry.running = false;
    const ids = entry.containerId ? [entry.containerId] : (await find(entry.scopeKey)).map((sandbox) => sandbox.id);
    for (const id of ids) await driver.stop(id, 3);
  };

  return { acquire, thawIfPaused, freeze, thaw, stop, find, ensureImage };
}
