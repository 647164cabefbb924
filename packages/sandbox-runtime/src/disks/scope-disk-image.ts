import { existsSync } from 'node:fs';
import { chmod, mkdir, open, readdir, rename, rm, rmdir, stat } from 'node:fs/promises';
import path from 'node:path';
import { SandboxError, type HostLogger, type SandboxPaths } from '@berth/core';
import { disksFolderOf } from '@berth/core/driver';
import { copyTree } from '../host-files/copy-tree.js';
import { makeFileSystem, MB, run, tool } from './disk-tools.js';
import { closeQuietly, openFolder } from '../host-files/folder-descriptor.js';
import { attachedDevice, detached, mountImage, unmount } from './loop-mounts.js';
import { removeTree } from '../host-files/remove-tree.js';
import type { SpareDisks } from './spare-disk.js';

// A scope's disk image: where its files are, how a new one is made (holding the folder's files),
// put on the folder, and brought to `container_disk`.

/** The files of a scope's disk: its image, one being made, the staging folder of a copy-in, the old files moved aside. */
export function diskLayout(paths: Pick<SandboxPaths, 'folder'>) {
  const folder = path.resolve(paths.folder);
  const root = path.dirname(folder);
  const disks = disksFolderOf(root);
  const base = path.join(disks, path.basename(folder));
  return { root, folder, disks, image: `${base}.ext4`, fresh: `${base}.ext4.new`, staging: `${base}.mnt`, moved: `${base}.old` };
}
export type DiskLayout = ReturnType<typeof diskLayout>;

/** Deletes `name` inside the folder `folder` (one of Berth's own) through descriptors: it holds a user's files. */
export async function removeUnder(folder: string, name: string): Promise<void> {
  let fd: number;
  try {
    fd = openFolder(folder, "Berth's disk folder");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw error;
  }
  try {
    const report = await removeTree(fd, name);
    if (report.leftCount > 0)
      throw new SandboxError('DISK_CLEANUP', `${report.leftCount} files of ${path.join(folder, name)} could not be deleted (${report.left.join('; ')})`);
  } finally {
    closeQuietly(fd);
  }
}

export async function isEmpty(folder: string): Promise<boolean> {
  try {
    return (await readdir(folder)).length === 0;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return true;
    throw error;
  }
}

/** Makes a new image holding the folder's current files; refuses (removing the image) when they do not fit. */
export async function createImage(files: DiskLayout, limitMb: number, spare: SpareDisks): Promise<void> {
  await rm(files.fresh, { force: true });
  const empty = await isEmpty(files.folder);
  if (empty && (await spare.take(files.disks, files.fresh))) {
    spare.makeSoon(files.disks);
    return;
  }
  try {
    await makeFileSystem(files.fresh, limitMb);
    // A new user (nothing to copy in): the image goes straight onto the folder (see ensure),
    // without a mount on a staging folder and the wait for its loop device to go.
    if (empty) {
      spare.makeSoon(files.disks);
      return;
    }
    await mkdir(files.staging, { recursive: true, mode: 0o700 });
    await mountImage(files.fresh, files.staging);
    try {
      await rmdir(path.join(files.staging, 'lost+found')).catch(() => undefined);
      await chmod(files.staging, 0o700);
      if (!(await isEmpty(files.folder))) {
        // Files from before the limit (or a lowered limit): copied in whole, ownership and modes kept.
        try {
          // At any depth: cp alone stops at PATH_MAX (copy-tree.ts).
          await copyTree(files.folder, files.staging);
        } catch (error) {
          const full = /No space left/i.test(String((error as { stderr?: string }).stderr ?? (error as Error).message));
          if (!full) throw error;
          throw new SandboxError(
            'DISK_TOO_SMALL',
            `the files of ${path.basename(files.folder)} do not fit in terminal.container_disk (${limitMb} MB); raise container_disk, or remove ` +
              `files from ${files.folder} — nothing was changed`,
          );
        }
      }
    } finally {
      await unmount(files.staging);
      // Renamed while its device lingers, the image would seem attached to a device on its way out.
      await detached(files.fresh);
    }
  } catch (error) {
    await rm(files.fresh, { force: true });
    throw error;
  } finally {
    await rmdir(files.staging).catch(() => undefined);
  }
}

/** Swaps the folder for the mounted image: the old files move aside first and go only once the image is on. */
export async function mountOnFolder(files: DiskLayout, logger: HostLogger | undefined): Promise<void> {
  const hadFolder = existsSync(files.folder);
  if (hadFolder && !(await isEmpty(files.folder))) {
    await removeUnder(files.disks, path.basename(files.moved));
    await rename(files.folder, files.moved);
  }
  await mkdir(files.folder, { recursive: true, mode: 0o700 });
  await mountImage(files.image, files.folder);
  await removeUnder(files.disks, path.basename(files.moved)).catch((error: unknown) =>
    logger?.warn(`berth: ${error instanceof Error ? error.message : String(error)}`),
  );
}

/**
 * Brings the image to `container_disk`, offline (online resizing is not allowed everywhere):
 * only while nothing else holds the disk, and shrinking only when the files fit; otherwise the
 * old size stays, with a warning.
 */
export async function resize(files: DiskLayout, mounted: boolean, limitMb: number, logger: HostLogger | undefined): Promise<void> {
  const size = (await stat(files.image)).size;
  const wanted = limitMb * MB;
  if (size === wanted) return;
  const name = path.basename(files.folder);
  try {
    if (mounted) await run(tool('umount'), [files.folder]);
    // The kernel frees an unmounted loop device a moment later; one still attached after that is in use.
    if (!(await detached(files.image))) throw new Error(`${attachedDevice(files.image)} still holds it (a running sandbox)`);
    // 1: it corrected something (free-block counts, say); 2 and up: it could not.
    await run(tool('e2fsck'), ['-f', '-p', files.image], [0, 1]);
    if (wanted > size) {
      const handle = await open(files.image, 'r+');
      await handle.truncate(wanted);
      await handle.close();
      await run(tool('resize2fs'), [files.image]);
    } else {
      await run(tool('resize2fs'), [files.image, `${limitMb}M`]);
      const handle = await open(files.image, 'r+');
      await handle.truncate(wanted);
      await handle.close();
    }
    logger?.info(`berth: the disk of ${name} is now ${limitMb} MB (was ${Math.round(size / MB)} MB)`);
  } catch (error) {
    logger?.warn(
      `berth: the disk of ${name} stays at ${Math.round(size / MB)} MB, not terminal.container_disk (${limitMb} MB): ` +
        `${error instanceof Error ? error.message : String(error)}`,
    );
  }
}
