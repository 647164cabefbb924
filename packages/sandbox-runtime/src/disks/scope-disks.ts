import { existsSync, statfsSync, statSync } from 'node:fs';
import { chmod, lstat, mkdir, rename, rm, rmdir, stat } from 'node:fs/promises';
import path from 'node:path';
import { SandboxError, type HostLogger, type SandboxPaths } from '@berth/core';
import { diskUnenforcedReason, findTool, MB, run, tool } from './disk-tools.js';
import {
  attachedDevice,
  backingFile,
  detached,
  diskMountsUnder,
  holdersOf,
  isMountedAnywhere,
  type MountTable,
  mountsOn,
  unmount,
  unmountedLoopsUnder,
} from './loop-mounts.js';
import { createImage, diskLayout, isEmpty, mountOnFolder, removeUnder, resize, type DiskLayout } from './scope-disk-image.js';
import { createSpareDisks } from './spare-disk.js';

export { diskUnenforcedReason } from './disk-tools.js';

/**
 * `container_disk` as a hard limit: each scope's folder (its workspace and home together) is an
 * ext4 file system of its own, in a sparse image file under `{sandbox_dir}/disks/{engine}/`,
 * loop-mounted on the scope folder before its sandbox starts. A user who fills it gets "No space
 * left on device" while everyone else keeps writing, and nothing of theirs is lost. Mounting
 * needs root (and util-linux, e2fsprogs and loop devices); where they are missing the limit is
 * not enforced and `unenforced` says why, for the start-up warning and `berth doctor`.
 *
 * Why an image per scope rather than project quotas: quotas need the host's file system mounted
 * with `prjquota`, which an operator rarely has; loop devices work on any file system.
 */
export interface ScopeDisks {
  /** Why the limit is not enforced on this host, or `undefined` when it is. */
  readonly unenforced: string | undefined;
  /**
   * Mounts the scope's disk on its folder (creating, moving existing files in, or resizing it
   * first); unmounts first what an interrupted copy left. Call it holding the scope's lock.
   */
  ensure(paths: SandboxPaths): Promise<void>;
  /** Unmounts the scope's disk; its files stay in the image. Call it holding the scope's lock. */
  release(paths: SandboxPaths): Promise<void>;
  /**
   * Unmounts the scope's disk (never lazily), waits for its loop device to be detached, and
   * deletes its image; throws `PURGE_INCOMPLETE`, having deleted nothing, when the disk stays in
   * use. Call it holding the scope's lock, after the scope's sandboxes are removed.
   */
  purge(paths: SandboxPaths): Promise<void>;
  /** Use and size of the scope's disk in MB, when it has one. */
  usage(folder: string, mounts?: MountTable): { usedMb: number; limitMb: number } | undefined;
}

/** How long a purge tries again to unmount a disk that is busy, before it gives up. */
const PURGE_BUSY_WAIT_MS = 15_000;
/** How long a purge waits for an unmounted disk's loop device to be let go by the mount namespaces that still hold it. */
const DETACH_WAIT_MS = 60_000;

/**
 * Unmounts every scope disk under a sandbox root, the staging mounts of interrupted copies
 * included, and detaches loop devices of its images that nothing mounts: for tools and tests that
 * delete a whole root (the files stay in the images). The sandboxes using them should be removed first.
 */
export async function releaseDisksUnder(sandboxDir: string): Promise<void> {
  const umount = findTool('umount') ?? 'umount';
  for (const where of diskMountsUnder(sandboxDir)) {
    await run(umount, [where]).catch(() => run(umount, ['--lazy', where]).catch(() => undefined));
  }
  for (const device of unmountedLoopsUnder(sandboxDir)) await run(findTool('losetup') ?? 'losetup', ['-d', device]).catch(() => undefined);
}

/** Builds the per-scope disks of one runtime. */
export function createScopeDisks(options: { limitMb: number; engine: string; hostFolders: boolean; logger?: HostLogger | undefined }): ScopeDisks {
  const { limitMb, logger } = options;
  const unenforced = diskUnenforcedReason(limitMb, options.hostFolders);
  const enforced = options.hostFolders && limitMb > 0 && unenforced === undefined;
  const spare = createSpareDisks({ limitMb, logger });
  const warnedForeign = new Set<string>();

  /** `mine`: our image is mounted there; `foreign`: something else is; `none`. */
  const mountState = (where: string, image: string, table?: MountTable): 'mine' | 'foreign' | 'none' => {
    const mounts = mountsOn(where, table);
    if (mounts.length === 0) return 'none';
    return mounts.some((mount) => backingFile(mount.source) === image) ? 'mine' : 'foreign';
  };

  /**
   * Unmounts what a process killed during a copy-in left on the scope's staging folder (the
   * caller holds the scope's lock, so no live process uses it): the image's loop device goes with it.
   */
  const unmountLeftStaging = async (files: DiskLayout): Promise<void> => {
    let guard = 0;
    while (mountsOn(files.staging).length > 0 && guard++ < 8) {
      logger?.info(`berth: unmounting the staging mount an interrupted copy left at ${files.staging}`);
      await unmount(files.staging);
    }
    await detached(files.fresh);
    await rmdir(files.staging).catch(() => undefined);
  };

  /** Waits for the image's loop device to go, detaching it when it is not mounted anywhere; false when it stays. */
  const detachImage = async (image: string): Promise<boolean> => {
    if (await detached(image)) return true;
    // Its file system unmounted here, a loop device is freed once no mount namespace holds it:
    // that of a sandbox just removed goes a moment later (seconds on a busy machine; with both
    // cores taken by other work, more than 15 s was seen). Asked to detach again each time, so
    // that a device whose last holder went meanwhile is let go.
    const until = Date.now() + DETACH_WAIT_MS;
    while (Date.now() < until) {
      const device = attachedDevice(image);
      if (!device) return true;
      if (!isMountedAnywhere(device)) await run(tool('losetup'), ['-d', device]).catch(() => undefined);
      if (await detached(image)) return true;
    }
    return false;
  };

  const ensure: ScopeDisks['ensure'] = async (paths) => {
    if (!enforced) return;
    const files = diskLayout(paths);
    const quick = mountState(files.folder, files.image);
    if (quick === 'mine' && (await stat(files.image)).size === limitMb * MB) return;
    if (quick === 'foreign') {
      if (!warnedForeign.has(files.folder))
        logger?.warn(`berth: ${files.folder} is a mount point of the operator's; Berth leaves it and applies no container_disk there`);
      warnedForeign.add(files.folder);
      return;
    }
    await mkdir(files.disks, { recursive: true, mode: 0o700 });
    await unmountLeftStaging(files);
    let state = mountState(files.folder, files.image);
    // A move that a crash interrupted: the image is whole (it is renamed only when complete).
    if (state === 'none' && existsSync(files.moved) && !existsSync(files.image)) {
      if (!existsSync(files.folder) || (await isEmpty(files.folder))) {
        await rmdir(files.folder).catch((error: NodeJS.ErrnoException) => {
          if (error.code !== 'ENOENT') throw error;
        });
        await rename(files.moved, files.folder);
      }
    }
    let made = false;
    if (state === 'none' && !existsSync(files.image)) {
      await createImage(files, limitMb, spare);
      await rename(files.fresh, files.image);
      made = true;
      logger?.info(`berth: made a ${limitMb} MB disk for ${path.basename(files.folder)}`);
    }
    if (!made && (state === 'mine' || existsSync(files.image))) await resize(files, state === 'mine', limitMb, logger);
    state = mountState(files.folder, files.image);
    if (state === 'none') await mountOnFolder(files, logger);
    // A new file system's own folder for fsck's finds: the user's disk starts empty.
    if (made) await rmdir(path.join(files.folder, 'lost+found')).catch(() => undefined);
    const folderStats = await lstat(files.folder);
    if ((folderStats.mode & 0o777) !== 0o700) await chmod(files.folder, 0o700);
  };

  const release: ScopeDisks['release'] = async (paths) => {
    if (!enforced) return;
    const files = diskLayout(paths);
    while (mountState(files.folder, files.image) === 'mine') await unmount(files.folder);
  };

  const purge: ScopeDisks['purge'] = async (paths) => {
    const files = diskLayout(paths);
    const name = path.basename(files.folder);
    const mounted = mountState(files.folder, files.image) === 'mine' || mountsOn(files.staging).length > 0;
    if (!mounted && !existsSync(files.image) && !existsSync(files.fresh) && !existsSync(files.moved)) return;
    await unmountLeftStaging(files);
    // Never lazily: a disk still mounted somewhere keeps its files readable after its image is
    // deleted, and the purge would say it removed them.
    // The engine says a removed sandbox is gone a moment before the kernel has torn down its
    // mount namespace (its last processes still exiting), which keeps the disk busy meanwhile: a
    // busy disk is tried again for a few seconds before the purge gives up.
    const busyUntil = Date.now() + PURGE_BUSY_WAIT_MS;
    while (mountState(files.folder, files.image) === 'mine') {
      try {
        await run(tool('umount'), [files.folder]);
      } catch (error) {
        if (Date.now() < busyUntil) {
          await new Promise((resolve) => setTimeout(resolve, 200));
          continue;
        }
        const reason = error instanceof Error ? error.message : String(error);
        throw new SandboxError(
          'PURGE_INCOMPLETE',
          `the disk of ${name} is still in use on the host (${reason}), so nothing was deleted; stop what uses ${files.folder} and run berth rm --purge again`,
        );
      }
    }
    for (const image of [files.image, files.fresh]) {
      if (await detachImage(image)) continue;
      const device = attachedDevice(image);
      const holders = device ? holdersOf(device) : [];
      throw new SandboxError(
        'PURGE_INCOMPLETE',
        `the disk image of ${name} is still attached to ${device ?? 'a loop device'} ` +
          `(${holders.length > 0 ? `mounted in the mount namespace of process ${holders.join(', ')}` : 'a sandbox or process elsewhere still uses it'}), ` +
          `so nothing was deleted; stop it and run berth rm --purge again`,
      );
    }
    await rm(files.image, { force: true });
    await rm(files.fresh, { force: true });
    await removeUnder(files.disks, path.basename(files.moved));
  };

  const usage: ScopeDisks['usage'] = (folder, mounts) => {
    const files = diskLayout({ folder });
    try {
      const image = statSync(files.image);
      if (mountState(files.folder, files.image, mounts) === 'mine') {
        const stats = statfsSync(files.folder);
        return { usedMb: Math.round(((stats.blocks - stats.bfree) * stats.bsize) / MB), limitMb: Math.round(image.size / MB) };
      }
      // Not mounted (after a reboot, say): the image's allocated blocks, a close upper bound.
      return { usedMb: Math.round((image.blocks * 512) / MB), limitMb: Math.round(image.size / MB) };
    } catch {
      return undefined;
    }
  };

  return { unenforced, ensure, release, purge, usage };
}
