import { lstatSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { PathEscapeError, type SandboxPaths } from '@berth/core';
import { CHANNELS_FOLDER } from '@berth/core/driver';
import { channelsFolderOf, LAUNCH_FIFO } from '../shell/fifo-channel.js';
import { closeQuietly, descriptorPath, makeFifosIn, openChildFolder, openFolder } from './folder-descriptor.js';

/** Checks that `paths.folder` is exactly one level below `paths.root`, lexically. */
export function assertScopeFolder(paths: SandboxPaths): void {
  const root = path.resolve(paths.root);
  const folder = path.resolve(paths.folder);
  const name = path.basename(folder);
  if (path.dirname(folder) !== root || name === '' || name === '.' || name === '..' || name.startsWith('.')) {
    throw new PathEscapeError(`${paths.folder} is not directly inside the sandbox root ${paths.root}; refused`);
  }
  if (path.resolve(paths.workspace) !== path.join(folder, 'workspace') || path.resolve(paths.home) !== path.join(folder, 'home')) {
    throw new PathEscapeError(`the workspace and home of ${paths.folder} must be its workspace and home subfolders; refused`);
  }
}

/**
 * Creates the scope's folders, owner-only (0700) — the workspace, the home and the channel
 * folder — and refuses when the root, the scope folder, the workspace, the home or the channel
 * folder is a symbolic link or not a folder: a link planted there would otherwise mount (and
 * later purge) a folder outside the sandbox root. Each folder is made and opened from its
 * parent's descriptor, never by a path a user could swap underneath (see folder-descriptor.ts).
 * Call it holding the scope's lock (scope-lock.ts).
 */
export async function prepareHostFolders(paths: SandboxPaths, mountDisk?: (paths: SandboxPaths) => Promise<void>): Promise<void> {
  assertScopeFolder(paths);
  mkdirSync(paths.root, { recursive: true, mode: 0o700 });
  const root = openFolder(paths.root, 'the sandbox root');
  const opened: number[] = [];
  try {
    const name = path.basename(paths.folder);
    const openScope = (): number => openChildFolder(root, name, { create: 0o700, location: paths.folder, what: 'the sandbox folder' });
    let folder = openScope();
    // The scope's own disk goes on its folder once the folder is known to be a real one; the
    // folder is opened again afterwards, so the descriptor is the disk's root, not what it covers.
    if (mountDisk) {
      closeQuietly(folder);
      await mountDisk(paths);
      folder = openScope();
    }
    opened.push(folder);
    opened.push(openChildFolder(folder, 'workspace', { create: 0o700, location: paths.workspace, what: 'the workspace' }));
    opened.push(openChildFolder(folder, 'home', { create: 0o700, location: paths.home, what: 'the home folder' }));
    // The channel folder (mounted read-only at /run/berth) and its launch FIFO: the sandbox's
    // shells start through them, without an engine exec. Without mkfifo on the host, shells are execs.
    const channels = openChildFolder(folder, CHANNELS_FOLDER, { create: 0o700, location: channelsFolderOf(paths.folder), what: 'the channel folder' });
    opened.push(channels);
    // Made when missing; anything else at its name (not a FIFO) leaves the launcher idle and the
    // shells to the engine's exec.
    try {
      lstatSync(descriptorPath(channels, LAUNCH_FIFO));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
      await makeFifosIn(channels, [LAUNCH_FIFO]).catch(() => undefined);
    }
  } finally {
    for (const fd of opened) closeQuietly(fd);
    closeQuietly(root);
  }
}
