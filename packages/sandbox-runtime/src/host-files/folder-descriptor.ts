import { spawn } from 'node:child_process';
import { chmodSync, closeSync, constants, existsSync, fchmodSync, fstatSync, lstatSync, mkdirSync, openSync, readFileSync, type Stats } from 'node:fs';
import { PathEscapeError, SandboxError } from '@berth/core';

/**
 * Work inside a scope's folder through directory descriptors, never through path strings a user
 * could swap underneath. Node has no `openat`, `unlinkat` or `mkdirat`, but Linux resolves
 * `/proc/self/fd/N` to the very folder descriptor N was opened on (not to the path it once had),
 * so `/proc/self/fd/N/name` names `name` inside that folder whatever happened to the path since.
 * Every folder is opened with `O_NOFOLLOW | O_DIRECTORY` from its parent's descriptor, so a link
 * planted anywhere is refused rather than followed, and every call on a last component that could
 * be a link is one that does not follow it (`lstat`, `unlink`, `rmdir`, `rename`, `mkdir`, and
 * `open` with `O_NOFOLLOW`). See docs/sandbox-runtime.md ("Files the user controls").
 */

/** `O_PATH` on Linux (the same value on x86-64, arm64 and the other common architectures; Node does not export it). */
const O_PATH = 0o10000000;
const FOLDER_FLAGS = constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW;

let procChecked = false;

/** Throws once, clearly, where `/proc/self/fd` is missing (not Linux, or no /proc mounted). */
export function assertDescriptorPaths(): void {
  if (procChecked) return;
  if (!existsSync('/proc/self/fd')) {
    throw new SandboxError(
      'HOST_UNSUPPORTED',
      "Berth works in a sandbox's host folders only through descriptors (/proc/self/fd), which this host lacks; run the gateway on Linux with /proc mounted",
    );
  }
  procChecked = true;
}

/** Whether `name` is one plain entry name: no separator, not `.` or `..`, no NUL. */
export function isPlainName(name: string): boolean {
  return name !== '' && name !== '.' && name !== '..' && !name.includes('/') && !name.includes('\0');
}

/** The path that names descriptor `fd` itself, or the entry `name` inside the folder it is open on. */
export function descriptorPath(fd: number, name?: string): string {
  if (name === undefined) return `/proc/self/fd/${fd}`;
  if (!isPlainName(name)) throw new PathEscapeError(`${JSON.stringify(name.slice(0, 60))} is not a plain file name; refused`);
  return `/proc/self/fd/${fd}/${name}`;
}

/** Closes a descriptor, ignoring one already closed. */
export function closeQuietly(fd: number | undefined): void {
  if (fd === undefined) return;
  try {
    closeSync(fd);
  } catch {
    // Already closed.
  }
}

function errorCode(error: unknown): string | undefined {
  return (error as NodeJS.ErrnoException | null)?.code;
}

function notAFolder(location: string, what: string, stats: Stats | undefined): PathEscapeError {
  return stats?.isSymbolicLink()
    ? new PathEscapeError(`${what} ${location} is a symbolic link; Berth never mounts, writes or deletes through links — replace it with a real folder`)
    : new PathEscapeError(`${what} ${location} is not a folder; move it away`);
}

function lstatQuietly(location: string): Stats | undefined {
  try {
    return lstatSync(location);
  } catch {
    return undefined;
  }
}

/**
 * Opens the folder at an absolute path (the sandbox root, say: the operator's, so the path above
 * it is trusted), refusing a link or anything else at its last component.
 */
export function openFolder(location: string, what: string): number {
  assertDescriptorPaths();
  try {
    return openSync(location, FOLDER_FLAGS);
  } catch (error) {
    if (errorCode(error) === 'ENOTDIR' || errorCode(error) === 'ELOOP') throw notAFolder(location, what, lstatQuietly(location));
    throw error;
  }
}

/** Options of {@link openChildFolder}. */
export interface OpenChildFolderOptions {
  /** Create the folder with this mode when it is missing. */
  readonly create?: number;
  /**
   * When the folder cannot be opened for want of permission and this process owns it (a gateway
   * that is not root, whose sandbox ran `chmod 000` on a folder), give the owner its rights back
   * through a descriptor first.
   */
  readonly unlock?: boolean;
  /** For messages: the full path the folder has, and what it is. */
  readonly location?: string;
  readonly what?: string;
}

/**
 * Opens the folder `name` inside the folder descriptor `parent` is open on, without following a
 * link there; creates it first when asked. Throws `PathEscapeError` when something else is there.
 */
export function openChildFolder(parent: number, name: string, options: OpenChildFolderOptions = {}): number {
  const location = descriptorPath(parent, name);
  if (options.create !== undefined) {
    try {
      mkdirSync(location, { mode: options.create });
    } catch (error) {
      if (errorCode(error) !== 'EEXIST') throw error;
    }
  }
  try {
    return openSync(location, FOLDER_FLAGS);
  } catch (error) {
    const code = errorCode(error);
    if (code === 'ENOTDIR' || code === 'ELOOP') throw notAFolder(options.location ?? name, options.what ?? 'the folder', lstatQuietly(location));
    if (code === 'EACCES' && options.unlock) return unlockAndOpen(location);
    throw error;
  }
}

/** Opens a folder this process may not read: by an `O_PATH` descriptor, made 0700 through it when ours, opened again. */
function unlockAndOpen(location: string): number {
  const handle = openSync(location, O_PATH | constants.O_DIRECTORY | constants.O_NOFOLLOW);
  try {
    const stats = fstatSync(handle);
    if (stats.uid !== process.getuid?.()) throw Object.assign(new Error(`permission denied: ${location}`), { code: 'EACCES' });
    // Through the descriptor: the magic link names exactly the folder opened above.
    chmodSync(descriptorPath(handle), 0o700);
    return openSync(descriptorPath(handle), constants.O_RDONLY | constants.O_DIRECTORY);
  } finally {
    closeQuietly(handle);
  }
}

/** Gives the owner read, write and search rights on a folder it owns, through its descriptor (a gateway that is not root). */
export function unlockFolder(fd: number): void {
  if (process.getuid?.() === 0) return;
  const stats = fstatSync(fd);
  if (stats.uid === process.getuid?.() && (stats.mode & 0o700) !== 0o700) fchmodSync(fd, (stats.mode & 0o7777) | 0o700);
}

/** The id of the mount a descriptor's file lies on (`mnt_id` of `/proc/self/fdinfo`), which tells a mount point even of the same file system. */
export function mountIdOf(fd: number): string {
  const match = /^mnt_id:\s*(\d+)$/m.exec(readFileSync(`/proc/self/fdinfo/${fd}`, 'utf8'));
  return match?.[1] ?? '';
}

/**
 * Makes FIFOs (mode 0600) named `names` inside the folder descriptor `folder` is open on, with
 * coreutils' `mkfifo` (Node has no call of its own for it): the folder is handed to it as its
 * descriptor 3, so it makes them exactly there.
 */
export function makeFifosIn(folder: number, names: readonly string[]): Promise<void> {
  const targets = names.map((name) => descriptorPath(3, name));
  return new Promise((resolve, reject) => {
    const child = spawn('mkfifo', ['-m', '600', '--', ...targets], { stdio: ['ignore', 'ignore', 'pipe', folder] });
    let stderr = '';
    child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
    child.on('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.on('close', (status) => {
      clearTimeout(timer);
      if (status === 0) resolve();
      else reject(new Error(`mkfifo: ${stderr.trim().split('\n').pop() ?? `exit status ${status}`}`));
    });
  });
}
