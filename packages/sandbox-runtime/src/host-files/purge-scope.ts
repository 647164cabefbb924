import { randomBytes } from 'node:crypto';
import { existsSync, lstatSync, renameSync } from 'node:fs';
import path from 'node:path';
import { PURGE_FOLDER, SandboxError, type HostLogger, type SandboxPaths } from '@berth/core';
import { closeQuietly, descriptorPath, openChildFolder, openFolder } from './folder-descriptor.js';
import { assertScopeFolder } from './host-folders.js';
import { removeTree } from './remove-tree.js';
import { lockScope } from './scope-lock.js';
import type { ScopeDisks } from '../disks/scope-disks.js';

/** How long a purge waits for another process that works on the scope's files (starting its sandbox, say). */
const PURGE_LOCK_WAIT_MS = 120_000;

/** The tombstone of a scope whose purge has begun: `{root}/.berth-purge/{folder}`. */
export function tombstoneOf(paths: Pick<SandboxPaths, 'root' | 'folder'>): string {
  return path.join(paths.root, PURGE_FOLDER, path.basename(paths.folder));
}

/** Whether a purge of the scope has begun and not finished (in progress, or interrupted). */
export function isBeingPurged(paths: Pick<SandboxPaths, 'root' | 'folder'>): boolean {
  try {
    lstatSync(tombstoneOf(paths));
    return true;
  } catch {
    return false;
  }
}

/** Options of {@link purgeScope}. */
export interface PurgeScopeOptions {
  readonly paths: SandboxPaths;
  readonly disks: ScopeDisks;
  /** Removes the scope's sandboxes (and ends their shells); runs once the tombstone is down. */
  readonly removeSandboxes: () => Promise<void>;
  /** The driver's last word before the files go (`SandboxDriverV1.beforePurge`). */
  readonly beforePurge?: ((paths: SandboxPaths) => Promise<void>) | undefined;
  readonly logger?: HostLogger | undefined;
}

function incomplete(message: string): SandboxError {
  return new SandboxError('PURGE_INCOMPLETE', message);
}

/**
 * Purges one scope: its sandboxes, its disk and every file of its folder, and says what it could
 * not do rather than report a success that is not one. In order, holding the scope's lock (which
 * `acquire` in every process honours, scope-lock.ts): the tombstone goes down, so a command
 * arriving meanwhile is refused at once instead of re-creating the sandbox; the sandboxes are
 * removed; the disk is unmounted and its loop device detached (or nothing is deleted, and the
 * error says what still holds it); the scope folder is renamed into its tombstone, out of every
 * sandbox's reach, in one `rename`; then it is deleted by a walk over descriptors that never
 * follows a link or crosses a mount, at any depth (remove-tree.ts). A purge that was interrupted
 * (a killed CLI) is finished by the next purge of the scope, or by the next `acquire`.
 */
export async function purgeScope(options: PurgeScopeOptions): Promise<void> {
  const { paths, disks } = options;
  assertScopeFolder(paths);
  if (!existsSync(paths.root)) {
    await options.removeSandboxes();
    return;
  }
  const lock = await lockScope(paths, { waitMs: PURGE_LOCK_WAIT_MS, purpose: `purge ${path.basename(paths.folder)}` });
  let rootFd: number | undefined;
  let purgeFd: number | undefined;
  let tombFd: number | undefined;
  let discard = false;
  try {
    rootFd = openFolder(paths.root, 'the sandbox root');
    purgeFd = openChildFolder(rootFd, PURGE_FOLDER, { create: 0o700, location: path.join(paths.root, PURGE_FOLDER), what: "Berth's purge folder" });
    const name = path.basename(paths.folder);
    tombFd = openChildFolder(purgeFd, name, { create: 0o700, location: tombstoneOf(paths), what: 'the tombstone' });
    await options.removeSandboxes();
    await options.beforePurge?.(paths);
    try {
      await disks.purge(paths);
    } catch (error) {
      // Nothing of the files was deleted: the scope is as it was, minus its sandbox.
      await removeTree(purgeFd, name).catch(() => undefined);
      throw error;
    }
    try {
      renameSync(descriptorPath(rootFd, name), descriptorPath(tombFd, `files-${randomBytes(4).toString('hex')}`));
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code !== 'ENOENT') {
        await removeTree(purgeFd, name).catch(() => undefined);
        throw incomplete(
          code === 'EBUSY'
            ? `${paths.folder} is a mount point that is not Berth's, so nothing was deleted; unmount it and run berth rm --purge again`
            : `cannot move ${paths.folder} out of reach before deleting it (${code ?? (error as Error).message}); nothing was deleted`,
        );
      }
    }
    closeQuietly(tombFd);
    tombFd = undefined;
    // The tombstone holds this purge's files and whatever an interrupted one left.
    const report = await removeTree(purgeFd, name);
    if (report.leftCount > 0) {
      throw incomplete(
        `purged the sandbox of ${name}, but ${report.leftCount} of its files could not be deleted (${report.left.join('; ')}); they are in ` +
          `${tombstoneOf(paths)}, out of any sandbox's reach — fix that and run berth rm --purge again`,
      );
    }
    discard = true;
  } finally {
    closeQuietly(tombFd);
    closeQuietly(purgeFd);
    closeQuietly(rootFd);
    if (discard) lock.discard();
    else lock.release();
  }
}

/**
 * Finishes an interrupted purge of the scope (its tombstone is still there, its lock is free):
 * called with the scope's lock held, before its folder is made again. Throws when files remain.
 */
export async function finishInterruptedPurge(paths: SandboxPaths, logger?: HostLogger): Promise<void> {
  if (!isBeingPurged(paths)) return;
  const rootFd = openFolder(paths.root, 'the sandbox root');
  let purgeFd: number | undefined;
  try {
    purgeFd = openChildFolder(rootFd, PURGE_FOLDER, { location: path.join(paths.root, PURGE_FOLDER), what: "Berth's purge folder" });
    const name = path.basename(paths.folder);
    logger?.info(`berth: finishing the interrupted purge of ${name} before its sandbox starts again`);
    const report = await removeTree(purgeFd, name);
    if (report.leftCount > 0) {
      throw incomplete(
        `an interrupted purge of ${name} left ${report.leftCount} files that cannot be deleted (${report.left.join('; ')}); fix that and run ` +
          `berth rm --purge again`,
      );
    }
  } finally {
    closeQuietly(purgeFd);
    closeQuietly(rootFd);
  }
}
