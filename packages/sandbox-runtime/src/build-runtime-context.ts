import path from 'node:path';
import type { SandboxPaths, SandboxRequest } from '@berth/core';
import { createAuditTrail } from './audit/audit-trail.js';
import { createScopeDisks } from './disks/scope-disks.js';
import { scopeHolder } from './lifecycle/hold-scope.js';
import { createLimiter, newEntry, type SandboxEntry } from './lifecycle/sandbox-entry.js';
import type { RuntimeContext } from './runtime-context.js';
import { observeAll } from './runtime-observer.js';
import type { SandboxRuntimeOptions } from './sandbox-runtime-options.js';
import { SHELL_READY_TIMEOUT_MS } from './shell/shell-session.js';
import { withHandovers } from './pool/handover-records.js';

/** The parts of the context made over the engine's description (runtime-egress.ts, runtime-description.ts). */
type DescribedParts = Pick<RuntimeContext, 'prepareNetwork' | 'confirmNetwork' | 'egress' | 'egressUnenforced' | 'sharedBound' | 'ociRuntime'>;

/** What every part of one runtime shares (runtime-context.ts), from its options and its described parts. */
export function buildRuntimeContext(options: SandboxRuntimeOptions, described: DescribedParts): RuntimeContext {
  const { driver, settings } = options;
  const namePrefix = options.namePrefix ?? 'berth-';
  const audit = createAuditTrail({ settings, logger: options.logger, namePrefix });
  return {
    // Handed-over pooled sandboxes read with their records' labels (pool/handover-records.ts).
    driver: withHandovers(driver),
    settings,
    image: options.image ?? settings.docker_image,
    namePrefix,
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
    audit,
    observer: observeAll([audit, options.observer], options.logger),
    holdScope: scopeHolder({ hostFolders: driver.capabilities.hostFolders, logger: options.logger }),
    ...described,
  };
}

/** Without a root given, a request's root is the runtime's own from then on (RuntimeContext.servedRoots). */
export function serveRoot(context: RuntimeContext, paths: SandboxPaths): void {
  // As given: the sandboxes' workspace labels are these paths as given too.
  if (context.sandboxRoot === undefined) context.servedRoots.add(paths.root);
}

/** The entry of a request's scope, made on its first request; its paths are the request's. */
export function entryFor(context: RuntimeContext, request: SandboxRequest): SandboxEntry {
  serveRoot(context, request.paths);
  const { scope } = request;
  let entry = context.entries.get(scope.key);
  if (!entry) {
    const inProfile = scope.profile !== undefined ? { profile: scope.profile } : {};
    const owner =
      scope.kind === 'user'
        ? { kind: 'user' as const, platform: scope.primary.platform, userId: scope.primary.id, ...inProfile }
        : { kind: 'task' as const, taskId: scope.taskId, ...inProfile };
    entry = newEntry(scope.key, owner, context.settings.docker_exec_mode === 'exec' ? { mode: 'exec' } : {});
    context.entries.set(scope.key, entry);
  }
  entry.paths = request.paths;
  return entry;
}
