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

/** How long a listing's reading of a sandbox's disk serves the next listings of the same runtime, ms. */
export const DISK_REREAD_MS = 5_000;

/** A sandbox's own disk: its use and size, MB. */
export interface DiskUsage {
  readonly usedMb: number;
  readonly limitMb: number;
}

/**
 * A reader of sandboxes' own disks by their workspace, for one listing or one scrape: the mount
 * table is read once, at the first disk, for all of them (once each, it cost `berth top` most of
 * its time). `undefined` where the driver has no host folders or the sandbox has no disk.
 */
export function createDiskReader(context: Pick<RuntimeContext, 'driver' | 'disks'>): (workspace: string | undefined) => DiskUsage | undefined {
  let table: MountTable | undefined;
  return (workspace) => {
    if (!context.driver.capabilities.hostFolders || !workspace) return undefined;
    table ??= readMountTable();
    return context.disks.usage(path.dirname(workspace), table);
  };
}

/** Builds the inventory over the lifecycle's view of the engine. */
export function createInventory(context: RuntimeContext, lifecycle: SandboxLifecycle): Inventory {
  const { driver, settings } = context;
  // The last use an earlier process recorded beside the folders, where the driver has them.
  const recordedUse = (workspace: string | undefined): number | undefined => (driver.capabilities.hostFolders ? readLastUsed(workspace) : undefined);

  // Each sandbox's disk as last read, by workspace: a listing again within DISK_REREAD_MS (`berth
  // top` lists every 2 s) reads only the disks it has not read lately.
  let disks = new Map<string, { at: number; usage: DiskUsage | undefined }>();

  return {
    async list() {
      const read = createDiskReader(context);
      const now = Date.now();
      const kept = new Map<string, { at: number; usage: DiskUsage | undefined }>();
      const diskOf = (workspace: string | undefined): DiskUsage | undefined => {
        if (!workspace) return undefined;
        const known = disks.get(workspace);
        const fresh = known && now - known.at < DISK_REREAD_MS ? known : { at: now, usage: read(workspace) };
        kept.set(workspace, fresh);
        return fresh.usage;
      };
      const listed = (await lifecycle.find()).map((sandbox): SandboxInfo => {
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
          ...((disk) => (disk ? { disk } : {}))(diskOf(sandbox.labels[LABELS.workspace])),
        };
      });
      disks = kept;
      return listed;
    },

    async adoptExisting() {
      for (const sandbox of await lifecycle.find()) {
        const scopeKey = sandbox.labels[LABELS.scope];
        if (!scopeKey || context.entries.has(scopeKey)) continue;
        const entry = newEntry(scopeKey, ownerOf(sandbox.labels), {
          name: sandbox.name,
          containerId: sandbox.id,
          // Frozen by an earlier gateway (or by hand): running, thawed by its next command.
          running: sandbox.state === 'running' || sandbox.state === 'paused',
          ...(settings.docker_exec_mode === 'exec' ? { mode: 'exec' as const } : {}),
          // A full lifetime from now when no earlier use was recorded.
          lastUsed: recordedUse(sandbox.labels[LABELS.workspace]) ?? Date.now(),
        });
        entry.recordedAt = sandbox.labels[LABELS.workspace];
        if (sandbox.state === 'paused') entry.frozenAt = entry.lastUsed;
        context.entries.set(scopeKey, entry);
        context.observer.event(entry, 'adopted', 'found on the engine at start');
      }
    },
  };
}
