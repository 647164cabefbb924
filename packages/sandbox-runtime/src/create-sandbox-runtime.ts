import path from 'node:path';
import { SandboxError, type BackendCapabilities, type SandboxBackendV1, type SandboxRequest } from '@berth/core';
import { assertSandboxDriver, type SandboxDriverV1 } from '@berth/core/driver';
import { createStoppingPolicies } from './lifecycle/stopping-policies.js';
import { createDiskReader, createInventory } from './lifecycle/inventory.js';
import { touchLastUsed } from './lifecycle/last-used-file.js';
import { sandboxIsBusy } from './lifecycle/is-sandbox-busy.js';
import { containerName } from './container-name.js';
import { createCommandRunner } from './run-command.js';
import { createAuditedExec } from './audit/audited-exec.js';
import { createUserLimits } from './audit/user-limits.js';
import { createCpuDay } from './audit/cpu-day.js';
import { readSandboxCpuSeconds } from './lifecycle/cpu-usage.js';
import { buildRuntimeContext, entryFor, serveRoot } from './build-runtime-context.js';
import { BRIEFLY, createRuntimeDescriptions } from './runtime-description.js';
import { createRuntimeEgress } from './runtime-egress.js';
import { removeScope } from './remove-scope.js';
import { enqueue, type SandboxEntry } from './lifecycle/sandbox-entry.js';
import { createSandboxLifecycle } from './lifecycle/sandbox-lifecycle.js';
import type { SandboxRuntimeOptions } from './sandbox-runtime-options.js';
import { createShellSessions, dropShells } from './shell/shell-sessions.js';
import { createBoundKeeper } from './lifecycle/bound-keeper.js';
import { SHARE_FLOOR_PIDS } from './lifecycle/fair-share.js';
import { createReclaim } from './lifecycle/give-way.js';
import { createWarmPool } from './pool/warm-pool.js';
import { createPoolRoom } from './pool/pool-room.js';

/** How often, at most, the last use is written beside a sandbox's folders. */
const RECORD_USE_EVERY_MS = 5_000;

/** A backend made of the runtime's policies over a driver, with what tests and tools also use. */
export interface SandboxRuntime extends SandboxBackendV1 {
  /** Makes sure the scope's sandbox exists and runs (its shell too); returns its id. */
  doAcquire(request: SandboxRequest): Promise<string>;
  /** Stops a scope's sandbox; it restarts on the next command. */
  stop(scopeKey: string): Promise<void>;
  /** Stops sandboxes idle for longer than `lifetime_seconds`; returns the scope keys stopped. */
  reap(): Promise<string[]>;
  /** The opaque name a request's sandbox gets. */
  containerName(request: SandboxRequest): string;
  /** Whether the running sandbox `id` is busy, as the runtime decides it (unknown is busy): for tests and tools. */
  isBusy(id: string): Promise<boolean>;
  /**
   * Keeps `docker_pool_size` started sandboxes ready for new users under the sandbox root, from
   * now until `close()` (a serving process calls it; a CLI command does not); resolves once the
   * pool is full or cannot be filled now. `root`: the sandbox root, for a runtime made without one.
   */
  warm(root?: string): Promise<void>;
  /** The driver underneath. */
  readonly driver: SandboxDriverV1;
}

/**
 * The sandbox runtime: every policy Berth applies to sandboxes, once, over a small driver — one sandbox per scope, commands of
 * a scope queued, creation single-flight and bounded, adoption by name and labels, recreation when the settings changed (once
 * idle) or the sandbox went away, a persistent shell per sandbox with a kill shell for timeouts, idle and least-recently-used
 * stopping, secrets masked in every result, inventory and purge.
 */
export function createSandboxRuntime(options: SandboxRuntimeOptions): SandboxRuntime {
  const { driver, settings } = options;
  assertSandboxDriver(driver);
  // The egress policy, and the brokered variables and proxy, which apply its exceptions too (runtime-egress.ts).
  const egress = createRuntimeEgress({
    settings,
    driver,
    describe: () => driver.describe(BRIEFLY),
    sandboxRoot: options.sandboxRoot ? path.resolve(options.sandboxRoot) : undefined,
    logger: options.logger,
    proxy: options.egressProxy,
  });
  const { broker } = egress;
  // What every part shares (build-runtime-context.ts); the described parts are read once asked for.
  const context = buildRuntimeContext(options, {
    prepareNetwork: egress.prepareNetwork,
    confirmNetwork: egress.confirmNetwork,
    egress: broker,
    egressUnenforced: egress.unenforced,
    sharedBound: () => descriptions.bound.get(),
    ociRuntime: () => descriptions.ociRuntime.get().catch(() => undefined),
  });
  // The shared bound and the OCI runtime, once the engine has said, and describe() (runtime-description.ts).
  const descriptions = createRuntimeDescriptions({
    settings,
    driver,
    sandboxRoot: context.sandboxRoot,
    cgroupRoot: options.cgroupRoot,
    logger: options.logger,
    disksUnenforced: context.disks.unenforced,
    egressUnenforced: context.egressUnenforced,
    egressStatus: () => broker.status(),
  });
  if (context.disks.unenforced) options.logger?.warn(`berth: ${context.disks.unenforced}`);
  let closed = false;
  let removed = false; // a sandbox, by this process: close() then looks whether the egress table may go

  // The bound is the installation's (bound-keeper.ts): checked, and its fair-share guard running,
  // before each start; a sandbox the guard chooses stops at once, under its running command.
  const keeper = createBoundKeeper({
    bound: () => descriptions.bound.get(),
    remake: () => descriptions.remakeBound(),
    sandboxRoot: context.sandboxRoot,
    floors: { memoryBytes: settings.docker_share_floor * 2 ** 20, pids: Math.min(SHARE_FLOOR_PIDS, settings.docker_pids_limit) },
    sandboxPids: settings.docker_pids_limit,
    // Frozen by this process (another's frozen ones count as running): they give way first.
    isFrozen: (id) => [...context.entries.values()].some((entry) => entry.containerId === id && entry.frozenAt !== undefined),
    reclaim: createReclaim({
      driver,
      entries: () => context.entries.values(),
      dropShells,
      stopped: async (entry) => {
        await broker.detach(entry);
        context.observer.event(entry, 'stopped', 'gave way: it held the most when the shared bound ran short');
      },
      logger: options.logger,
    }),
    logger: options.logger,
    ...(options.guardIntervalMs !== undefined ? { guardIntervalMs: options.guardIntervalMs } : {}),
  });
  // The capacity policy runs before each start, and only then (sandbox-lifecycle.ts); it is built
  // below, over the lifecycle's stop, and asked only once a command runs.
  const lifecycle = createSandboxLifecycle(context, {
    beforeStart: async (entry) => {
      await keeper.beforeStart();
      await policies.enforceMaxRunning(entry);
    },
    afterStart: () => keeper.afterStart(),
    handOver: (entry, request, spec) => pool.handOver(entry, request, spec),
  });
  // New users' sandboxes made ahead (pool/warm-pool.ts), within the caps every sandbox counts in.
  const pool = createWarmPool(context, {
    engine: driver,
    ensureImage: () => lifecycle.ensureImage(),
    afterStart: () => keeper.afterStart(),
    hasRoom: createPoolRoom(context, {
      installed: async () => (await lifecycle.find()).length,
      ready: () => pool.ready(),
      runningCap: () => policies.runningCap(),
    }),
  });
  const inventory = createInventory(context, lifecycle);
  // Stopping a sandbox ends its shells (dropShells needs only the entry).
  const stopEntry = async (entry: SandboxEntry, reason: string): Promise<void> => {
    await lifecycle.stop(entry, () => dropShells(entry));
    await broker.detach(entry);
    context.observer.event(entry, 'stopped', reason);
  };
  const settled = (entry: SandboxEntry): void => {
    if (!driver.capabilities.hostFolders || !entry.paths || entry.lastUsed - entry.lastRecorded <= RECORD_USE_EVERY_MS) return;
    entry.lastRecorded = entry.lastUsed;
    touchLastUsed(entry.paths.workspace);
  };
  const policies = createStoppingPolicies(context, {
    adopt: inventory.adoptExisting,
    stop: stopEntry,
    freeze: (entry, reason) => lifecycle.freeze(entry, reason),
    settled,
    ...(options.reapIntervalMs !== undefined ? { reapIntervalMs: options.reapIntervalMs } : {}),
  });
  // What the metrics read at scrape time: memory, the cap, and the bound once made (runtime-observer.ts).
  context.observer.attach?.({
    settings,
    sandboxes: () => context.entries.values(),
    runningCap: () => policies.runningCap(),
    bound: async () => descriptions.bound.made()?.catch(() => undefined),
    disks: () => {
      const read = createDiskReader(context);
      return (entry) => read(entry.paths?.workspace ?? entry.recordedAt);
    },
  });
  const shells = createShellSessions(context, lifecycle);
  /** Whether the installation has a sandbox on the engine (its egress table stays while it has). */
  const hasSandboxes = async (): Promise<boolean> => (await lifecycle.find()).length > 0;
  const runCommand = createCommandRunner(context, shells);

  const assertOpen = (): void => {
    if (closed) throw new SandboxError('BACKEND_CLOSED', `the ${driver.engine} backend was closed; create a new one`);
  };

  const inQueue = <T>(entry: SandboxEntry, task: () => Promise<T>): Promise<T> => enqueue(entry, task, () => settled(entry));
  // CPU time per day, read from each sandbox's cgroup before and after each command, in its queue.
  const cpu = createCpuDay({
    settings,
    logger: options.logger,
    read: async () => {
      const bound = await context.sharedBound();
      if (!bound.version || bound.unenforced !== undefined) return `the sandboxes' cgroups cannot be read here (${bound.unenforced ?? 'no shared bound'})`;
      return (containerId) => readSandboxCpuSeconds(bound, containerId);
    },
  });
  // Every command: the per-user limits first (before the queue and the engine), then the audit trail.
  const runAudited = createAuditedExec({
    observer: context.observer,
    limits: createUserLimits(settings),
    cpu,
    run: (entry, request, exec, usage) =>
      inQueue(entry, async () => {
        await cpu.before(entry);
        try {
          return await runCommand(entry, request, exec, usage);
        } finally {
          await cpu.after(entry);
        }
      }),
  });
  const capabilities: BackendCapabilities = {
    persistentSession: settings.docker_exec_mode !== 'exec',
    networkIsolation: driver.capabilities.networkIsolation,
    idleStop: true,
    adoption: true,
    hostFolders: driver.capabilities.hostFolders,
    networkNone: driver.capabilities.networkNone ?? true,
  };

  return {
    specificationVersion: 'v1',
    name: driver.engine,
    capabilities,
    driver,
    containerName: (request) => containerName(request, context.namePrefix),
    isBusy: (id) => sandboxIsBusy(driver, id),

    async doExec(request, exec) {
      assertOpen();
      return runAudited(entryFor(context, request), request, exec);
    },

    async doAcquire(request) {
      assertOpen();
      const entry = entryFor(context, request);
      return inQueue(entry, async () => {
        await runCommand(entry, request, { command: 'true' });
        return entry.containerId!;
      });
    },

    list: () => inventory.list(),
    ...(driver.usage ? { usage: () => driver.usage!() } : {}),

    async stop(scopeKey) {
      const entry = context.entries.get(scopeKey);
      if (entry) {
        await inQueue(entry, () => stopEntry(entry, 'asked'));
        return;
      }
      for (const sandbox of await lifecycle.find(scopeKey)) await driver.stop(sandbox.id, 3);
    },

    async remove(scopeKey, removeOptions = {}) {
      if (removeOptions.purge && !removeOptions.paths) {
        throw new SandboxError('PURGE_NEEDS_PATHS', `purging ${scopeKey} needs its paths (resolve them with the sandbox resolver); nothing was removed`);
      }
      if (removeOptions.paths) serveRoot(context, removeOptions.paths);
      const entry = context.entries.get(scopeKey);
      // The installation's last sandbox takes its egress table with it (a CLI leaves none behind).
      const removedAll = async (): Promise<void> => {
        removed = true;
        if (settings.docker_network) await (await egress.firewall.get()).retire(hasSandboxes).catch(() => false);
      };
      const work = () => removeScope({ context, lifecycle, shells, removed: removedAll }, scopeKey, entry, removeOptions);
      if (entry) await inQueue(entry, work);
      else await work();
    },

    reap: () => policies.reap(),

    async warm(root) {
      assertOpen();
      const where = context.sandboxRoot ?? (root === undefined ? undefined : path.resolve(root));
      if (where === undefined) return;
      context.servedRoots.add(where);
      await pool.serve(where);
    },

    describe: (describeOptions) => descriptions.describe(describeOptions),

    async close() {
      closed = true;
      policies.close();
      await pool.close().catch(() => undefined);
      for (const entry of context.entries.values()) shells.drop(entry);
      await broker.close();
      // The last process of the installation out gives the bound back, and removes it when empty.
      await keeper.close().catch(() => undefined);
      await context.audit.close();
      // After a removal, the egress table goes once the spare network (its bridge kept it) is gone.
      const left = !removed || (await hasSandboxes().catch(() => true));
      await driver.close?.();
      const firewall = await egress.firewall.made()?.catch(() => undefined);
      if (!left) await firewall?.retire(async () => false).catch(() => false);
      firewall?.close();
    },
  };
}
