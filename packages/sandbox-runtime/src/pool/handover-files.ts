import { lstatSync } from 'node:fs';
import { mkdir, rename, rmdir } from 'node:fs/promises';
import path from 'node:path';
import type { SandboxPaths } from '@berth/core';
import { POOL_SLOT_PREFIX } from '@berth/core/driver';
import { run, tool } from '../disks/disk-tools.js';
import { backingFile, mountsOn, unmount } from '../disks/loop-mounts.js';
import { diskLayout } from '../disks/scope-disk-image.js';

// A pooled sandbox's folders become its user's by moving them, never by copying: the engine
// mounted them into the sandbox when it was made, and those mounts follow the folders (the same
// inodes, the same file system), wherever the host's names for them go.

/** The folders of a pool slot: `{root}/pool~{slot}`, laid out as a scope's. */
export function slotPaths(root: string, slot: string): SandboxPaths {
  const folder = path.join(root, `${POOL_SLOT_PREFIX}${slot}`);
  return { sandboxDir: path.dirname(root), root, folder, workspace: path.join(folder, 'workspace'), home: path.join(folder, 'home') };
}

const absent = (where: string): boolean => {
  try {
    lstatSync(where);
    return false;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return true;
    throw error;
  }
};

/**
 * Whether `paths` belongs to someone new: no folder, and no disk image (nor one being made or
 * moved aside). Only such a user may get a pooled sandbox: anyone with files keeps them where
 * they are, and their sandbox is made for them.
 */
export function isNewScope(paths: SandboxPaths): boolean {
  const disk = diskLayout(paths);
  return [paths.folder, disk.image, disk.fresh, disk.moved, disk.staging].every(absent);
}

/** Whether the slot's folder is its own disk, mounted (`container_disk`). */
const onOwnDisk = (slot: SandboxPaths): boolean => {
  const image = diskLayout(slot).image;
  return mountsOn(slot.folder).some((mount) => backingFile(mount.source) === image);
};

/**
 * Makes the slot's folder the user's. Without a disk of its own: one rename of the folder. On
 * its own disk: its image renamed to the user's, the disk mounted on the user's new folder (a
 * bind of the slot's mount, so the same loop device, never a second one), and the slot's mount
 * taken away. Call it holding both scopes' locks, with {@link isNewScope} true for the user.
 * Throws what failed, after putting back what it had moved.
 */
export async function moveSlotFiles(slot: SandboxPaths, user: SandboxPaths): Promise<void> {
  if (!onOwnDisk(slot)) {
    await rename(slot.folder, user.folder);
    return;
  }
  const from = diskLayout(slot);
  const to = diskLayout(user);
  await rename(from.image, to.image);
  try {
    await mkdir(user.folder, { mode: 0o700 });
    try {
      await run(tool('mount'), ['--bind', slot.folder, user.folder]);
    } catch (error) {
      await rmdir(user.folder).catch(() => undefined);
      throw error;
    }
  } catch (error) {
    await rename(to.image, from.image).catch(() => undefined);
    throw error;
  }
  // The user's mount is whole: the slot's name for the disk goes (a host process in it: lazily).
  await unmount(slot.folder).catch(() => undefined);
  await rmdir(slot.folder).catch(() => undefined);
}
