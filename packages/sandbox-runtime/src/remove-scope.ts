import type { SandboxBackendV1 } from '@berth/core';
import { purgeScope } from './host-files/purge-scope.js';
import { newEntry, type SandboxEntry } from './lifecycle/sandbox-entry.js';
import { ownerOf } from './sandbox-spec.js';
import type { SandboxLifecycle } from './lifecycle/sandbox-lifecycle.js';
import type { RuntimeContext } from './runtime-context.js';
import type { ShellSessions } from './shell/shell-sessions.js';

/**
 * Removes a scope's sandboxes, and with `purge` its files (create-sandbox-runtime.ts runs it in
 * the scope's queue when the runtime knows the scope); `removed` is told once they are gone.
 */
export async function removeScope(
  parts: { readonly context: RuntimeContext; readonly lifecycle: SandboxLifecycle; readonly shells: ShellSessions; readonly removed: () => Promise<void> },
  scopeKey: string,
  /** The scope's entry, as it was when the removal was asked for. */
  entry: SandboxEntry | undefined,
  removeOptions: NonNullable<Parameters<SandboxBackendV1['remove']>[1]>,
): Promise<void> {
  const { context, lifecycle, shells } = parts;
  const { driver } = context;
  // Whose sandbox went, for the audit trail: the entry, else what the engine's labels say (berth rm in its own process).
  let audited = entry;
  const removeSandboxes = async (): Promise<void> => {
    if (entry) {
      shells.drop(entry);
      await context.egress.detach(entry);
    }
    for (const sandbox of await lifecycle.find(scopeKey)) {
      audited ??= newEntry(scopeKey, ownerOf(sandbox.labels), { name: sandbox.name, ...(removeOptions.paths ? { paths: removeOptions.paths } : {}) });
      await driver.remove(sandbox.id);
    }
  };
  if (removeOptions.purge && removeOptions.paths && driver.capabilities.hostFolders) {
    // The sandboxes go once the scope is locked and its tombstone is down, so that nothing
    // makes them again (and fills the folders) while the files are deleted.
    await purgeScope({
      paths: removeOptions.paths,
      disks: context.disks,
      removeSandboxes,
      beforePurge: driver.beforePurge?.bind(driver),
      logger: context.logger,
    });
  } else {
    await removeSandboxes();
    if (removeOptions.purge) await driver.purgeStorage?.(scopeKey);
  }
  context.entries.delete(scopeKey);
  if (audited) context.observer.event(audited, removeOptions.purge ? 'purged' : 'removed', 'asked');
  context.logger?.info(`berth: removed sandbox of ${scopeKey}${removeOptions.purge ? ' and its files' : ''}`);
  await parts.removed();
}
