import path from 'node:path';
import { SandboxError, type BackendCapabilities, type BackendDescription, type SandboxBackendV1, type SandboxPaths, type SandboxRequest } from '@berth/core';
import { assertSandboxDriver, type DriverDescription, type SandboxDriverV1 } from '@berth/core/driver';
import { madeOnce } from './made-once.js';
import { backendDescription } from './backend-description.js';
import { scopeHolder } from './lifecycle/hold-scope.js';
import { createEgressBroker } from './egress/egress-broker.js';
import { createEgressFirewall, ENFORCED_BY_ENGINE, type EgressFirewall } from './egress/egress-firewall.js';
import { createScopeDisks } from './disks/scope-disks.js';
import { createStoppingPolicies } from './lifecycle/stopping-policies.js';
import { createInventory } from './lifecycle/inventory.js';
import { touchLastUsed } from './lifecycle/last-used-file.js';
import { sandboxIsBusy } from './lifecycle/is-sandbox-busy.js';
import { containerName } from './container-name.js';
import { createCommandRunner } from './run-command.js';
import type { RuntimeContext } from './runtime-context.js';
import { createLimiter, enqueue, newEntry, type SandboxEntry } from './lifecycle/sandbox-entry.js';
import { createSandboxLifecycle } from './lifecycle/sandbox-lifecycle.js';
import type { SandboxRuntimeOptions } from './sandbox-runtime-options.js';
import { createShellSessions, dropShells } from './shell/shell-sessions.js';
import { SHELL_READY_TIMEOUT_MS } from './shell/shell-session.js';
import { purgeScope } from './host-files/purge-scope.js';
import { prepareSharedBound, releaseSharedBound } from './lifecycle/shared-bound.js';
import { runtimeFacts } from './oci-runtime.js';
import { existingInstallationTag, installationTag } from './egress/egress-names.js';

/** How often, at most, the last use is written beside a sandbox's folders. */
const RECORD_USE_EVERY_MS = 5_000;
const BRIEFLY = { runtimeVersions: false } as const; // describe(): only runtimeFacts needs the runtimes' versions (a process each)

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
  // Brokered variables and the egress proxy, which applies the firewall's exceptions too (its
  // closures read what is made below, once the first sandbox needs them).
  let firewallInForce: EgressFirewall | undefined;
  const broker = createEgressBroker({
    settings,
    driver,
    describe: () => driver.describe(BRIEFLY),
    exceptions: () => firewallInForce?.exceptions() ?? [],
    unenforced: async () => (await egressFirewall()).unenforced,
    logger: options.logger,
    proxy: options.egressProxy,
  });
  const context: RuntimeContext = {
    driver,
    settings,
    image: options.image ?? settings.docker_image,
    namePrefix: options.namePrefix ?? 'berth-',
    extraLabels: options.labels ?? {},
    ...(options.sandboxRoot ? { sandboxRoot: path.resolve(options.sandboxRoot) } : {}),
    servedRoots: new Set(options.sandboxRoot ? [path.resolve(options.sandboxRoot)] : []),
    logger: options.logger,
    onProgress: options.onProgress,
    entries: new Map(),
    limitCreate: createLimiter(options.createConcurrency ?? 4),
    shellReadyTimeoutMs: options.shellReadyTimeoutMs ?? SHELL_READY_TIMEOUT_MS,
    firstLaunchWaitMs: options.firstLaunchWaitMs ?? 5_000,
    disks: createScopeDisks({ limitMb: settings.container_disk, engine: driver.engine, hostFolders: driver.capabilities.hostFolders, logger: options.logger }),
    holdScope: scopeHolder({ hostFolders: driver.capabilities.hostFolders, logger: options.logger }),
    prepareNetwork: async (root) => {
      if (!settings.docker_network) return;
      await (await egressFirewall()).ensure();
      await broker.prepare(root);
    },
    confirmNetwork: async () => {
      if (settings.docker_network) await (await egressFirewall()).confirm();
    },
    egress: broker,
    egressUnenforced: async () => (await egressFirewall()).unenforced,
    sharedBound: () => sharedBound(),
    ociRuntime: () => ociRuntime.get().catch(() => undefined),
  };
  /** With `existing`, the tag only if the installation has its key (describing creates nothing). */
  const boundOptions = (description: Awaited<ReturnType<SandboxDriverV1['describe']>>, existing = false) => ({
    settings,
    description,
    installationTag: (existing ? existingInstallationTag : installationTag)({ sandboxRoot: context.sandboxRoot, pool: settings.docker_network_pool }),
    ...(options.cgroupRoot ? { cgroupRoot: options.cgroupRoot } : {}),
  });
  if (context.disks.unenforced) options.logger?.warn(`berth: ${context.disks.unenforced}`);
  let closed = false;
  let removed = false; // a sandbox, by this process: close() then looks whether the egress table may go
  // What depends on the engine's description, made once; asked again after a failure. (`BRIEFLY` but for the runtime's facts.)
  const onceDescribed = <T>(make: (description: DriverDescription) => Promise<T> | T, full?: 'with runtime versions') =>
    madeOnce(() => driver.describe(full ? undefined : BRIEFLY).then(make));
  // The egress policy, once the engine has said where its sandbox networks are.
  const egress = onceDescribed((description) => {
    const firewall: EgressFirewall = description.egressEnforcedBy
      ? ENFORCED_BY_ENGINE
      : createEgressFirewall({
          pool: description.networkPool ?? settings.docker_network_pool,
          allow: settings.docker_egress_allow,
          network: settings.docker_network,
          poolNetworks: description.networkPool !== undefined,
          engine: driver.engine,
          sandboxRoot: context.sandboxRoot,
          logger: options.logger,
          allowlist: settings.docker_egress === 'allowlist',
        });
    if (firewall.unenforced) options.logger?.warn(`berth: ${firewall.unenforced}`);
    firewallInForce = firewall;
    return firewall;
  });
  const egressFirewall = egress.get;

  // The one bound all sandboxes share, written before the first sandbox starts.
  const bound = onceDescribed(async (description) => {
    const prepared = await prepareSharedBound(boundOptions(description));
    if (prepared.unenforced) options.logger?.warn(`berth: ${prepared.unenforced}`);
    return prepared;
  });
  const sharedBound = bound.get;
  // The runtime sandboxes run under (gVisor or not), once the engine has said.
  const ociRuntime = onceDescribed((description) => runtimeFacts(description, settings.docker_runtime), 'with runtime versions');

  const lifecycle = createSandboxLifecycle(context);
  const inventory = createInventory(context, lifecycle);
  // Stopping a sandbox ends its shells (dropShells needs only the entry), and the capacity policy
  // runs after each acquire of the shells: built in that order, nothing is bound late.
  const stopEntry = async (entry: SandboxEntry): Promise<void> => {
    await lifecycle.stop(entry, () => dropShells(entry));
    await broker.detach(entry);
  };
  const settled = (entry: SandboxEntry): void => {
    if (!driver.capabilities.hostFolders || !entry.paths || entry.lastUsed - entry.lastRecorded <= RECORD_USE_EVERY_MS) return;
    entry.lastRecorded = entry.lastUsed;
    touchLastUsed(entry.paths.workspace);
  };
  const policies = createStoppingPolicies(context, {
    adopt: inventory.adoptExisting,
    stop: stopEntry,
    settled,
    ...(options.reapIntervalMs !== undefined ? { reapIntervalMs: options.reapIntervalMs } : {}),
  });
  const shells = createShellSessions(context, lifecycle, policies.enforceMaxRunning);
  /** Whether the installation has a sandbox on the engine (its egress table stays while it has). */
  const hasSandboxes = async (): Promise<boolean> => (await lifecycle.find()).length > 0;
  const runCommand = createCommandRunner(context, shells);

  const assertOpen = (): void => {
    if (closed) throw new SandboxError('BACKEND_CLOSED', `the ${driver.engine} backend was closed; create a new one`);
  };

  /** Without a root given, a request's root is the runtime's own from then on (RuntimeContext.servedRoots). */
  const serve = (paths: SandboxPaths): void => {
    // As given: the sandboxes' workspace labels are these paths as given too.
    if (context.sandboxRoot === undefined) context.servedRoots.add(paths.root);
  };

  const entryFor = (request: SandboxRequest): SandboxEntry => {
    serve(request.paths);
    const { scope } = request;
    let entry = context.entries.get(scope.key);
    if (!entry) {
      const owner =
        scope.kind === 'user'
          ? { kind: 'user' as const, platform: scope.primary.platform, userId: scope.primary.id }
          : { kind: 'task' as const, taskId: scope.taskId };
      entry = newEntry(scope.key, owner, settings.docker_exec_mode === 'exec' ? { mode: 'exec' } : {});
      context.entries.set(scope.key, entry);
    }
    entry.paths = request.paths;
    return entry;
  };

  const inQueue = <T>(entry: SandboxEntry, task: () => Promise<T>): Promise<T> => enqueue(entry, task, () => settled(entry));
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
      const entry = entryFor(request);
      return inQueue(entry, () => runCommand(entry, request, exec));
    },

    async doAcquire(request) {
      assertOpen();
      const entry = entryFor(request);
      return inQueue(entry, async () => {
        await runCommand(entry, request, { command: 'true' });
        return entry.containerId!;
      });
    },

    list: () => inventory.list(),

    async stop(scopeKey) {
      const entry = context.entries.get(scopeKey);
      if (entry) {
        await inQueue(entry, () => stopEntry(entry));
        return;
      }
      for (const sandbox of await lifecycle.find(scopeKey)) await driver.stop(sandbox.id, 3);
    },

    async remove(scopeKey, removeOptions = {}) {
      if (removeOptions.purge && !removeOptions.paths) {
        throw new SandboxError('PURGE_NEEDS_PATHS', `purging ${scopeKey} needs its paths (resolve them with the sandbox resolver); nothing was removed`);
      }
      if (removeOptions.paths) serve(removeOptions.paths);
      const entry = context.entries.get(scopeKey);
      const removeSandboxes = async (): Promise<void> => {
        if (entry) {
          shells.drop(entry);
          await broker.detach(entry);
        }
        for (const sandbox of await lifecycle.find(scopeKey)) await driver.remove(sandbox.id);
      };
      const work = async (): Promise<void> => {
        if (removeOptions.purge && removeOptions.paths && driver.capabilities.hostFolders) {
          // The sandboxes go once the scope is locked and its tombstone is down, so that nothing
          // makes them again (and fills the folders) while the files are deleted.
          await purgeScope({
            paths: removeOptions.paths,
            disks: context.disks,
            removeSandboxes,
            beforePurge: driver.beforePurge?.bind(driver),
            logger: options.logger,
          });
        } else {
          await removeSandboxes();
          if (removeOptions.purge) await driver.purgeStorage?.(scopeKey);
        }
        context.entries.delete(scopeKey);
        options.logger?.info(`berth: removed sandbox of ${scopeKey}${removeOptions.purge ? ' and its files' : ''}`);
        // The installation's last sandbox takes its egress table with it (a CLI leaves none behind).
        removed = true;
        if (settings.docker_network) await (await egressFirewall()).retire(hasSandboxes).catch(() => false);
      };
      if (entry) await inQueue(entry, work);
      else await work();
    },

    reap: () => policies.reap(),

    async describe(describeOptions = {}): Promise<BackendDescription> {
      // The image is looked up beside the engine's description (berth doctor waits for both).
      const image = describeOptions.image;
      const present = image === undefined ? undefined : driver.hasImage(image);
      present?.catch(() => undefined);
      const driverDescription = await driver.describe(describeOptions.runtimeVersions === false ? BRIEFLY : undefined);
      // Described, not made: the bound is written before the first sandbox starts, not by a status.
      const shared = await (bound.made() ?? prepareSharedBound({ ...boundOptions(driverDescription, true), dryRun: true }));
      const notEnforced = [context.disks.unenforced, await context.egressUnenforced(), shared.unenforced].filter((line): line is string => line !== undefined);
      const description = backendDescription({ driver: driverDescription, settings, shared, notEnforced, egress: await broker.status() });
      return image === undefined || !present ? description : { ...description, image: { name: image, present: await present } };
    },

    async close() {
      closed = true;
      policies.close();
      for (const entry of context.entries.values()) shells.drop(entry);
      await broker.close();
      // The bound's cgroups go only when no sandbox is left in them (a running one keeps them).
      await bound.made()?.then(releaseSharedBound, () => undefined);
      // After a removal, the egress table goes once the spare network (its bridge kept it) is gone.
      const left = !removed || (await hasSandboxes().catch(() => true));
      await driver.close?.();
      const firewall = await egress.made()?.catch(() => undefined);
      if (!left) await firewall?.retire(async () => false).catch(() => false);
      firewall?.close();
    },
  };
}
