import path from 'node:path';
import type { SandboxInfo } from '@berth/core';
import { readMountTable, type MountTable } from '../disks/loop-mounts.js';
import { readLastUsed } from './last-used-file.js';
import type { RuntimeContext } from '../runtime-context.js';
import { newEntry } from './sandbox-entry.js';
import type { SandboxLifecycle } from './sandbox-lifecycle.js';
import { LABELS, ownerOf } from '../sandbox-spec.js';

/** What the runtime owns on the engine, and adopting what it has not seen yet. */
export interface Inventory {
  /** Every sandbox of this runtime on the engine, as `berth ls` shows it. */
  list(): Promise<SandboxInfo[]>;
  /** Tracks the labelled sandboxes this process has not seen, so they are reaped too. */
  adoptExisting(): Promise<void>;
}

/** Builds the inventory over the lifecycle's view of the engine. */
export function createInventory(context: RuntimeContext, lifecycle: SandboxLifecycle): Inventory {
  const { driver, settings } = context;
  // The last use an earlier process recorded beside the folders, where the driver has them.
  const recordedUse = (workspace: string | undefined): number | undefined => (driver.capabilities.hostFolders ? readLastUsed(workspace) : undefined);

  const diskOf = (workspace: string | undefined, mounts: () => MountTable): { disk?: { usedMb: number; limitMb: number } } => {
    if (!driver.capabilities.hostFolders || !workspace) return {};
    const disk = context.disks.usage(path.dirname(workspace), mounts());
    return disk ? { disk } : {};
  };

  return {
    async list() {
      // The mount table is read once for every sandbox's disk (once each, it cost `berth top` most of its time).
      let table: MountTable | undefined;
      const mounts = (): MountTable => {
        table ??= readMountTable();
        return table;
      };
      return (await lifecycle.find()).map((sandbox): SandboxInfo => {
        const scopeKey = sandbox.labels[LABELS.scope] ?? '';
        const lastUsed = context.entries.get(scopeKey)?.lastUsed ?? recordedUse(sandbox.labels[LABELS.workspace]);
        return {
          scopeKey,
          ...ownerOf(sandbox.labels),
          containerId: sandbox.id,
          containerName: sandbox.name,
          state: sandbox.state,
          workspace: sandbox.labels[LABELS.workspace] ?? '',
          home: sandbox.labels[LABELS.home] ?? '',
          ...(lastUsed === undefined ? {} : { lastUsed: new Date(lastUsed).toISOString() }),
          ...diskOf(sandbox.labels[LABELS.workspace], mounts),
        };
      });
    },

    async adoptExisting() {
      for (const sandbox of await lifecycle.find()) {
        const scopeKey = sandbox.labels[LABELS.scope];
        if (!scopeKey || context.entries.has(scopeKey)) continue;
        const entry = newEntry(scopeKey, ownerOf(sandbox.labels), {
          name: sandbox.name,
          containerId: sandbox.id,
          running: sandbox.state === 'running',
          ...(settings.docker_exec_mode === 'exec' ? { mode: 'exec' as const } : {}),
          // A full lifetime from now when no earlier use was recorded.
          lastUsed: recordedUse(sandbox.labels[LABELS.workspace]) ?? Date.now(),
        });
        entry.recordedAt = sandbox.labels[LABELS.workspace];
        context.entries.set(scopeKey, entry);
        context.observer.event(entry, 'adopted', 'found on the engine at start');
      }
    },
  };
}
