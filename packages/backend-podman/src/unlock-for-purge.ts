import { chmod, lstat, readdir } from 'node:fs/promises';
import path from 'node:path';
import { assertScopeFolder } from '@berth/sandbox-runtime';
import type { SandboxPaths } from '@berth/core';

async function unlock(folder: string): Promise<void> {
  let stats;
  try {
    stats = await lstat(folder);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw error;
  }
  // Links are never followed: only real folders of the scope get their mode changed.
  if (!stats.isDirectory() || stats.isSymbolicLink()) return;
  if ((stats.mode & 0o700) !== 0o700) await chmod(folder, 0o700);
  for (const entry of await readdir(folder, { withFileTypes: true })) {
    if (entry.isDirectory()) await unlock(path.join(folder, entry.name));
  }
}

/**
 * Gives the owner back write and search permission on every real folder of a scope, so that a
 * purge by a gateway that is not root (rootless Podman) cannot be blocked by a command that
 * ran `chmod 500` on a folder. Call it only after the scope's container is removed, so no
 * process in the sandbox can swap a folder for a link meanwhile.
 */
export async function unlockForPurge(paths: SandboxPaths): Promise<void> {
  assertScopeFolder(paths);
  const root = await lstat(paths.root).catch(() => undefined);
  if (!root || root.isSymbolicLink()) return;
  await unlock(paths.folder);
}
