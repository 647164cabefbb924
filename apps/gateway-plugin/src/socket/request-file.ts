import { randomBytes } from 'node:crypto';
import { closeSync, constants, fstatSync, mkdirSync, openSync, readdirSync, readSync, unlinkSync, writeSync, lstatSync } from 'node:fs';
import path from 'node:path';
import { MAX_SANDBOX_SOCKET_REQUEST_BYTES, type SandboxSocketRequest } from './protocol.js';

// Loaded by the spawned Node client too: Node's own modules only (see request-sandbox-exec.ts).

/**
 * A spawned client's request travels in a private file, never in its argv: every local user can
 * read any process's `/proc/<pid>/cmdline`, and the request names the user (the session key) and
 * carries the command. The host writes it (mode 0600, a random name, in a folder of its own
 * user's beside the socket) and passes only the file's name; the client checks that the file is
 * its own user's and private, reads it and deletes it before it connects.
 */
export const REQUEST_FOLDER = '.berth-requests';

/** How old a request file nobody took must be before it is swept away. */
const STALE_REQUEST_MS = 10 * 60_000;
let lastSweep = 0;

/** A request file could not be written or read; `code` says which and why. */
export class RequestFileError extends Error {
  readonly code: string;

  constructor(code: string, message: string) {
    super(message);
    this.name = 'RequestFileError';
    this.code = code;
  }
}

/** The folder of the request files of a socket: `{the socket's folder}/.berth-requests`. */
export function requestFolderOf(socket: string): string {
  return path.join(path.dirname(path.resolve(socket)), REQUEST_FOLDER);
}

/**
 * Writes one request to a new private file beside `socket`'s folder and returns its path. The
 * folder is made 0700 and opened without following links; it must be this user's and private.
 */
export function writeRequestFile(socket: string, request: SandboxSocketRequest): string {
  const line = JSON.stringify(request);
  if (Buffer.byteLength(line) > MAX_SANDBOX_SOCKET_REQUEST_BYTES) {
    throw new RequestFileError('REQUEST_TOO_LARGE', `the request is larger than ${MAX_SANDBOX_SOCKET_REQUEST_BYTES} bytes; send less with it`);
  }
  const folder = requestFolderOf(socket);
  mkdirSync(path.dirname(folder), { recursive: true, mode: 0o700 });
  try {
    mkdirSync(folder, { mode: 0o700 });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  }
  let folderFd: number;
  try {
    folderFd = openSync(folder, constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW);
  } catch (error) {
    throw new RequestFileError(
      'REQUEST_FOLDER',
      `${folder} is not a folder of its own (${(error as NodeJS.ErrnoException).code ?? 'error'}); remove it, or serve the socket from another folder`,
    );
  }
  try {
    const stats = fstatSync(folderFd);
    if (stats.uid !== process.getuid?.() || (stats.mode & 0o077) !== 0) {
      throw new RequestFileError(
        'REQUEST_FOLDER',
        `${folder} is not private to this user (owner uid ${stats.uid}, mode ${(stats.mode & 0o777).toString(8)}); ` +
          'remove it, and Berth makes it again with mode 0700',
      );
    }
    sweep(folderFd);
    const name = `${randomBytes(16).toString('hex')}.json`;
    const fd = openSync(`/proc/self/fd/${folderFd}/${name}`, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
    try {
      writeSync(fd, line);
    } finally {
      closeSync(fd);
    }
    return path.join(folder, name);
  } finally {
    closeSync(folderFd);
  }
}

/** Deletes request files that no client took (a spawn that failed), at most once a minute. */
function sweep(folderFd: number): void {
  if (Date.now() - lastSweep < 60_000) return;
  lastSweep = Date.now();
  try {
    for (const entry of readdirSync(`/proc/self/fd/${folderFd}`)) {
      if (!/^[0-9a-f]{32}\.json$/.test(entry)) continue;
      const file = `/proc/self/fd/${folderFd}/${entry}`;
      if (Date.now() - lstatSync(file).mtimeMs > STALE_REQUEST_MS) unlinkSync(file);
    }
  } catch {
    // Taken meanwhile.
  }
}

/** Deletes a request file if its client has not (the host's clean-up after the spawned process ended). */
export function discardRequestFile(file: string): void {
  try {
    if (path.basename(path.dirname(file)) === REQUEST_FOLDER && /^[0-9a-f]{32}\.json$/.test(path.basename(file))) unlinkSync(file);
  } catch {
    // Taken by its client.
  }
}

/**
 * The client's side: reads the request file, checks that it is a regular file of this user's
 * that nobody else may read, deletes it, and returns the request line.
 */
export function takeRequestFile(file: string): string {
  let fd: number;
  try {
    fd = openSync(file, constants.O_RDONLY | constants.O_NOFOLLOW);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw new RequestFileError(
      'REQUEST_FILE',
      code === 'ENOENT'
        ? `the request file ${file} is gone (a request is read once); the host must build a new argv for each command`
        : `cannot open the request file ${file} (${code ?? 'error'})`,
    );
  }
  try {
    const stats = fstatSync(fd);
    if (!stats.isFile() || stats.uid !== process.getuid?.() || (stats.mode & 0o077) !== 0) {
      throw new RequestFileError('REQUEST_FILE', `the request file ${file} is not a private file of this user's; refusing it`);
    }
    if (stats.size > MAX_SANDBOX_SOCKET_REQUEST_BYTES)
      throw new RequestFileError('REQUEST_TOO_LARGE', `the request file ${file} is larger than ${MAX_SANDBOX_SOCKET_REQUEST_BYTES} bytes`);
    const buffer = Buffer.alloc(stats.size);
    let offset = 0;
    while (offset < buffer.length) {
      const read = readSync(fd, buffer, offset, buffer.length - offset, offset);
      if (read === 0) break;
      offset += read;
    }
    unlinkSync(file);
    return buffer.subarray(0, offset).toString('utf8');
  } finally {
    closeSync(fd);
  }
}
