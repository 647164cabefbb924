import { lstat, mkdir, rm } from 'node:fs/promises';
import path from 'node:path';
import { PathEscapeError, type SandboxPaths } from '@berth/core';
import { channelsFolderOf, LAUNCH_FIFO, makeFifos } from './fifo-channel.js';

async function assertRealFolder(folder: string, what: string): Promise<void> {
  const stats = await lstat(folder);
  if (stats.isSymbolicLink()) throw new PathEscapeError(`${what} ${folder} is a symbolic link; Berth never mounts or deletes through links — replace it with a real folder`);
  if (!stats.isDirectory()) throw new PathEscapeError(`${what} ${folder} is not a folder; move it away`);
}

async function makeFolder(folder: string, what: string): Promise<void> {
  try {
    await mkdir(folder, { mode: 0o700 });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  }
  await assertRealFolder(folder, what);
}

/** Checks that `paths.folder` is exactly one level below `paths.root`, lexically. */
export function assertScopeFolder(paths: SandboxPaths): void {
  const root = path.resolve(paths.root);
  const folder = path.resolve(paths.folder);
  const name = path.basename(folder);
  if (path.dirname(folder) !== root || name === '' || name === '.' || name === '..') {
    throw new PathEscapeError(`${paths.folder} is not directly inside the sandbox root ${paths.root}; refused`);
  }
  if (path.resolve(paths.workspace) !== path.join(folder, 'workspace') || path.resolve(paths.home) !== path.join(folder, 'home')) {
    throw new PathEscapeError(`the workspace and home of ${paths.folder} must be its workspace and home subfolders; refused`);
  }
}

/**
 * Creates the scope's folders, owner-only (0700) — the workspace, the home and the channel
 * folder — and refuses when the root, the scope folder, the workspace, the home or the channel
 * folder is a symbolic link: a link planted there would otherwise mount (and later purge) a
 * folder outside the sandbox root.
 */
export async function prepareHostFolders(paths: SandboxPaths, mountDisk?: (paths: SandboxPaths) => Promise<void>): Promise<void> {
  assertScopeFolder(paths);
  await mkdir(paths.root, { recursive: true, mode: 0o700 });
  await assertRealFolder(paths.root, 'the sandbox root');
  await makeFolder(paths.folder, 'the sandbox folder');
  // The scope's own disk goes on its folder once the folder is known to be a real one.
  if (mountDisk) {
    await mountDisk(paths);
    await assertRealFolder(paths.folder, 'the sandbox folder');
  }
  await makeFolder(paths.workspace, 'the workspace');
  await makeFolder(paths.home, 'the home folder');
  // The channel folder (mounted read-only at /run/berth) and its launch FIFO: the sandbox's shells
  // start through them, without an engine exec. Without mkfifo on the host, shells are execs.
  const channels = channelsFolderOf(paths.folder);
  await makeFolder(channels, 'the channel folder');
  // Made when missing; anything else at its name (not a FIFO) leaves the launcher idle and the
  // shells to the engine's exec.
  const launch = path.join(channels, LAUNCH_FIFO);
  await lstat(launch).catch(async (error: NodeJS.ErrnoException) => {
    if (error.code !== 'ENOENT') throw error;
    await makeFifos([launch]).catch(() => undefined);
  });
}

/**
 * Deletes one scope's folder (workspace, home, and the folder itself) and nothing else.
 * `fs.rm` removes links found inside, never what they point to; a scope folder that is itself
 * a link is unlinked, not followed. Refused unless the folder is directly inside the root.
 */
export async function purgeHostFolders(paths: SandboxPaths): Promise<void> {
  assertScopeFolder(paths);
  try {
    const rootStats = await lstat(paths.root);
    if (rootStats.isSymbolicLink()) throw new PathEscapeError(`the sandbox root ${paths.root} is a symbolic link; refusing to purge through it`);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw error;
  }
  await rm(paths.folder, { recursive: true, force: true });
}
