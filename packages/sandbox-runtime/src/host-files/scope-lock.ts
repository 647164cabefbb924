import { spawn } from 'node:child_process';
import { constants, fstatSync, lstatSync, mkdirSync, openSync, unlinkSync } from 'node:fs';
import path from 'node:path';
import { LOCKS_FOLDER, SandboxError, type SandboxPaths } from '@berth/core';
import { closeQuietly, descriptorPath, openChildFolder, openFolder } from './folder-descriptor.js';

/**
 * One lock per scope that every Berth process honours — the gateway's `acquire`, `berth rm` in
 * the CLI's own process, the idle reaper — held across every long operation on the scope's host
 * files (making and starting its sandbox, its disk, a purge). It is `flock(2)` on a descriptor of
 * a file in `{sandbox_dir}/docker/.berth-locks/`, so the kernel releases it when its holder dies,
 * however it dies: no pid in a file to go stale or be reused. Node has no `flock`, and Berth
 * takes no native addon for it: the lock is taken by util-linux's `flock(1)` on the descriptor
 * this process opened, handed to it as its descriptor 3. `flock` locks belong to the open file
 * description, which the child shares, so the lock stays with this process's descriptor after
 * the child exits, and goes when this process closes it or dies.
 */

// The lock files are in core's LOCKS_FOLDER, directly inside the sandbox root (no scope folder's
// name starts with a dot); purges in progress leave their tombstones in core's PURGE_FOLDER.

/** A held scope lock. */
export interface ScopeLock {
  /** Releases the lock (closes its descriptor); safe to call twice. */
  release(): void;
  /** Deletes the lock file, then releases it: for a scope that is gone (purged). */
  discard(): void;
}

/** Options of {@link lockScope}. */
export interface LockScopeOptions {
  /** How long to wait for another holder. */
  readonly waitMs: number;
  /** What the lock is taken for, for the message of a lock that stays busy (`purge it`, say). */
  readonly purpose: string;
  /** Asked while waiting: an error to give up with at once (the scope is being purged, say). */
  readonly giveUp?: () => Error | undefined;
}

/** Runs `flock(1)` on descriptor `fd`: true once locked, false when busy past the wait. */
function flockDescriptor(fd: number, waitSeconds: number): Promise<boolean> {
  const args = ['--exclusive', ...(waitSeconds > 0 ? ['--wait', String(waitSeconds)] : ['--nonblock']), '3'];
  return new Promise((resolve, reject) => {
    const child = spawn('flock', args, { stdio: ['ignore', 'ignore', 'pipe', fd] });
    let stderr = '';
    child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    child.on('error', (error: NodeJS.ErrnoException) => {
      reject(
        error.code === 'ENOENT'
          ? new SandboxError(
              'LOCK_UNAVAILABLE',
              "flock (util-linux) is not installed, and Berth locks a sandbox's host files with it so that no two processes change them at once; " +
                'install util-linux',
            )
          : error,
      );
    });
    child.on('close', (status) => {
      if (status === 0) resolve(true);
      else if (status === 1) resolve(false);
      else reject(new SandboxError('LOCK_FAILED', `flock could not lock a sandbox's lock file: ${stderr.trim().split('\n').pop() ?? `exit status ${status}`}`));
    });
  });
}

/** The lock file of a scope: `{root}/.berth-locks/{folder}.lock`. */
export function lockFileOf(paths: Pick<SandboxPaths, 'root' | 'folder'>): string {
  return path.join(paths.root, LOCKS_FOLDER, `${path.basename(paths.folder)}.lock`);
}

/** Opens (making them when missing, 0700) the sandbox root and one of Berth's folders in it. */
export function openRootFolder(root: string, name: string): { root: number; folder: number } {
  mkdirSync(root, { recursive: true, mode: 0o700 });
  const rootFd = openFolder(root, 'the sandbox root');
  try {
    return { root: rootFd, folder: openChildFolder(rootFd, name, { create: 0o700, location: path.join(root, name), what: "Berth's folder" }) };
  } catch (error) {
    closeQuietly(rootFd);
    throw error;
  }
}

/**
 * Takes the scope's lock, waiting up to `waitMs` for another holder (in one-second slices, asking
 * `giveUp` in between). Throws `SCOPE_BUSY` when it stays busy.
 */
export async function lockScope(paths: Pick<SandboxPaths, 'root' | 'folder'>, options: LockScopeOptions): Promise<ScopeLock> {
  const name = `${path.basename(paths.folder)}.lock`;
  const folders = openRootFolder(paths.root, LOCKS_FOLDER);
  closeQuietly(folders.root);
  const deadline = Date.now() + options.waitMs;
  try {
    for (let attempt = 0; ; attempt++) {
      const fd = openLockFile(folders.folder, name, path.join(paths.root, LOCKS_FOLDER, name));
      let locked = false;
      try {
        const reason = attempt > 0 ? options.giveUp?.() : undefined;
        if (reason) throw reason;
        const remaining = deadline - Date.now();
        locked = await flockDescriptor(fd, attempt === 0 || remaining <= 0 ? 0 : Math.min(1, Math.ceil(remaining / 1000)));
        if (locked && isCurrent(fd, descriptorPath(folders.folder, name))) {
          return heldLock(fd, folders.folder, name);
        }
      } catch (error) {
        closeQuietly(fd);
        throw error;
      }
      closeQuietly(fd);
      // Locked but deleted meanwhile (its holder purged the scope): lock the new file instead.
      if (locked) continue;
      const reason = options.giveUp?.();
      if (reason) throw reason;
      if (Date.now() >= deadline) {
        throw new SandboxError(
          'SCOPE_BUSY',
          `another Berth process still works on the files of ${path.basename(paths.folder)} after ${Math.round(options.waitMs / 1000)} s, so ` +
            `Berth could not ${options.purpose}; retry in a moment`,
        );
      }
    }
  } catch (error) {
    closeQuietly(folders.folder);
    throw error;
  }
}

/**
 * Opens (making it when missing) a lock file in the locks folder open on `folder`. `flock` needs
 * no write access, so on a read-only sandbox root an existing lock file is opened for reading;
 * a missing one cannot be made, which is one clear line naming the real path, never the
 * descriptor path it was opened through.
 */
function openLockFile(folder: number, name: string, location: string): number {
  const at = descriptorPath(folder, name);
  try {
    return openSync(at, constants.O_RDWR | constants.O_CREAT | constants.O_NOFOLLOW, 0o600);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'EROFS') {
      try {
        return openSync(at, constants.O_RDONLY | constants.O_NOFOLLOW);
      } catch {
        // Missing: it cannot be made on a read-only file system.
      }
    }
    const why =
      code === 'EROFS'
        ? 'the file system is read-only (EROFS); remount it read-write'
        : code === 'ENOSPC'
          ? 'no space is left on the device (ENOSPC); free some space'
          : code === 'ELOOP'
            ? 'it is a symbolic link; move it away'
            : `${code ?? 'error'}; check the folder's owner and permissions`;
    throw new SandboxError('LOCK_FAILED', `Berth could not open the lock file ${location}: ${why}`);
  }
}

/** Whether the locked descriptor is still the file at the lock's name (not one deleted since). */
function isCurrent(fd: number, location: string): boolean {
  try {
    const held = fstatSync(fd);
    const current = lstatSync(location);
    return held.nlink > 0 && held.ino === current.ino && held.dev === current.dev;
  } catch {
    return false;
  }
}

function heldLock(fd: number, folder: number, name: string): ScopeLock {
  let held = true;
  const release = (): void => {
    if (!held) return;
    held = false;
    closeQuietly(fd);
    closeQuietly(folder);
  };
  return {
    release,
    discard() {
      if (!held) return;
      try {
        unlinkSync(descriptorPath(folder, name));
      } catch {
        // Already gone.
      }
      release();
    },
  };
}
