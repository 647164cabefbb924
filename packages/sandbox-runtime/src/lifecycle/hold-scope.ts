import path from 'node:path';
import { SandboxError, type HostLogger, type SandboxPaths } from '@berth/core';
import { finishInterruptedPurge, isBeingPurged } from '../host-files/purge-scope.js';
import { lockScope } from '../host-files/scope-lock.js';

/** How long starting a sandbox waits for another process that works on its files (a big first copy onto a new disk takes a while). */
export const SCOPE_LOCK_WAIT_MS = 600_000;

/**
 * Runs `task` holding the scope's lock (scope-lock.ts), which every Berth process honours, when
 * the driver has host folders; refuses at once while the scope is being purged, and finishes a
 * purge that was interrupted before anything is made again.
 */
export function scopeHolder(options: { hostFolders: boolean; logger?: HostLogger | undefined }) {
  return async <T>(paths: SandboxPaths, purpose: string, task: () => Promise<T>): Promise<T> => {
    if (!options.hostFolders) return task();
    const purging = (): SandboxError | undefined =>
      isBeingPurged(paths)
        ? new SandboxError(
            'SANDBOX_PURGING',
            `the files of ${path.basename(paths.folder)} are being deleted (berth rm --purge), so Berth did not ${purpose}; send the command ` +
              `again once the purge is done`,
          )
        : undefined;
    const lock = await lockScope(paths, { waitMs: SCOPE_LOCK_WAIT_MS, purpose, giveUp: purging });
    try {
      await finishInterruptedPurge(paths, options.logger);
      return await task();
    } finally {
      lock.release();
    }
  };
}
