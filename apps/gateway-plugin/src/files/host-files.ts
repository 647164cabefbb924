import { createHash, randomBytes } from 'node:crypto';
import { constants, promises as fs } from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { SandboxFileError, truncateForMessage, type SandboxRequest } from '@berth/core';
import type { Berth } from '../create-berth.js';
import { fileLimitOf, readSandboxFile, writeSandboxFile } from './sandbox-files.js';

// The host's side of a file between a chat and a sandbox: a host that keeps attachments in a
// folder of its own (Hermes' cache) hands Berth that file's path, and a host that sends files
// by path (Hermes' delivery) gets a new private copy. These host folders are the gateway's own:
// no sandbox mounts them. The user's own folder is never opened here (see sandbox-files.ts).

/** A file put into a sandbox. */
export interface PutFileResult {
  /** Where it is in the sandbox. */
  readonly path: string;
  readonly bytes: number;
}

/**
 * Copies the host file `source` (an attachment the host saved) into the request's sandbox at
 * `named` (a path in `/workspace` or `/root`). The source is opened without following a link,
 * and must be a regular file within `terminal.docker_file_limit`; it is read through that one
 * descriptor.
 */
export async function putHostFile(berth: Berth, request: SandboxRequest, source: string, named: string): Promise<PutFileResult> {
  const shown = truncateForMessage(source, 200);
  if (!path.isAbsolute(source)) throw new SandboxFileError('FILE_REFUSED', shown, `the attachment's host path ${shown} is not absolute`);
  const limit = fileLimitOf(berth);
  let handle: FileHandle;
  try {
    // O_NONBLOCK: a FIFO put there opens at once, and is refused below instead of blocking.
    handle = await fs.open(source, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') throw new SandboxFileError('FILE_NOT_FOUND', shown, `the attachment ${shown} does not exist on the gateway's host`);
    if (code === 'ELOOP')
      throw new SandboxFileError('FILE_REFUSED', shown, `the attachment ${shown} is a symbolic link; only a regular file is put in a sandbox`);
    throw new SandboxFileError('FILE_REFUSED', shown, `cannot open the attachment ${shown}: ${code ?? (error as Error).message}`);
  }
  let bytes: Buffer;
  try {
    const status = await handle.stat();
    if (!status.isFile()) throw new SandboxFileError('FILE_REFUSED', shown, `the attachment ${shown} is not a regular file`);
    if (status.size > limit) {
      throw new SandboxFileError(
        'FILE_TOO_LARGE',
        shown,
        `the attachment ${path.basename(shown)} is ${Math.ceil(status.size / 1024 / 1024)} MB, ` +
          `more than terminal.docker_file_limit (${berth.config.docker_file_limit} MB)`,
      );
    }
    // Read to one byte past the limit, so a file that grew since fstat is refused, not cut.
    const buffer = Buffer.alloc(Math.min(limit + 1, status.size + 1));
    let length = 0;
    for (;;) {
      const { bytesRead } = await handle.read(buffer, length, buffer.length - length, length);
      if (bytesRead === 0) break;
      length += bytesRead;
      if (length === buffer.length) break;
    }
    if (length > status.size || length > limit) throw new SandboxFileError('FILE_CHANGED', shown, `the attachment ${shown} grew while it was read`);
    bytes = buffer.subarray(0, length);
  } finally {
    await handle.close();
  }
  const written = await writeSandboxFile(berth, request, named, bytes);
  return { path: written, bytes: bytes.length };
}

/** A file taken out of a sandbox onto the host. */
export interface GetFileResult {
  /** Its path in the sandbox. */
  readonly path: string;
  /** The new private copy on the host. */
  readonly hostPath: string;
  readonly bytes: number;
}

/** A file name a host can send under: the sandbox file's own name, without what a chat would misread. */
function deliveryName(sandboxPath: string): string {
  const name = path.posix
    .basename(sandboxPath)
    .replace(/[^\w.\- ]/g, '_')
    .slice(0, 128);
  return name === '' || /^\.+$/.test(name) ? 'file' : name;
}

/** How long a copy waits on the host for the host to send it (Hermes' bridge sweeps its outbox on the same clock). */
export const OUTBOX_MAX_AGE_MS = 3600_000;

/** A copy younger than this may not have been sent yet: it is never evicted to make room. */
const OUTBOX_PENDING_MS = 60_000;

/** How many files of the limit's size one user's copies waiting on the host may hold: their share of the host's disk. */
export const OUTBOX_FILES_PER_USER = 4;

/** The bytes one user's copies waiting to be sent may hold: {@link OUTBOX_FILES_PER_USER} × `terminal.docker_file_limit`. */
export function outboxBudgetOf(berth: Pick<Berth, 'config'>): number {
  return OUTBOX_FILES_PER_USER * fileLimitOf(berth);
}

const digest = (...parts: Array<string | Buffer>): string => {
  const hash = createHash('sha256');
  for (const part of parts) hash.update(part).update('\0');
  return hash.digest('hex');
};

/** The copies of one scope in `target` (folders named by its tag), oldest first, with their bytes and age. */
async function copiesOf(target: string, scopeTag: string): Promise<Array<{ folder: string; bytes: number; modified: number }>> {
  const copies = [];
  for (const name of await fs.readdir(target)) {
    if (!name.startsWith(scopeTag) || !/^[0-9a-f]{32}$/.test(name)) continue;
    const folder = path.join(target, name);
    let bytes = 0;
    let modified = 0;
    for (const file of await fs.readdir(folder).catch(() => [] as string[])) {
      const status = await fs.lstat(path.join(folder, file)).catch(() => undefined);
      if (status?.isFile()) {
        bytes += status.size;
        modified = Math.max(modified, status.mtimeMs);
      }
    }
    copies.push({ folder, bytes, modified: modified || (await fs.lstat(folder)).mtimeMs });
  }
  return copies.sort((a, b) => a.modified - b.modified);
}

/**
 * Room for `bytes` more among the scope's copies: those older than {@link OUTBOX_MAX_AGE_MS} go,
 * then the oldest already sent (older than a minute) while the scope is over its budget; when
 * that is not enough, a one-line refusal. One user's deliveries never fill the host's disk.
 */
async function makeRoom(target: string, scopeTag: string, bytes: number, budget: number, shown: string): Promise<void> {
  const now = Date.now();
  let held = 0;
  const sent: Array<{ folder: string; bytes: number }> = [];
  for (const copy of await copiesOf(target, scopeTag)) {
    if (now - copy.modified > OUTBOX_MAX_AGE_MS) {
      await fs.rm(copy.folder, { recursive: true, force: true });
      continue;
    }
    held += copy.bytes;
    if (now - copy.modified > OUTBOX_PENDING_MS) sent.push(copy);
  }
  for (const copy of sent) {
    if (held + bytes <= budget) break;
    await fs.rm(copy.folder, { recursive: true, force: true });
    held -= copy.bytes;
  }
  if (held + bytes > budget) {
    throw new SandboxFileError(
      'FILE_REFUSED',
      shown,
      `${Math.ceil(held / 1024 / 1024)} MB of this user's files are still waiting to be sent, ` +
        `their share of the host (${OUTBOX_FILES_PER_USER} × terminal.docker_file_limit); send ${shown} again in a minute`,
    );
  }
}

/**
 * Reads `named` from the request's sandbox (with every refusal of `readSandboxFile`) and writes
 * it into a folder of its own (mode 0700) under the host folder `target`, as a file of mode 0600
 * created anew, never through a link. `target` is created when missing; a `target` that is a
 * link is refused. The folder is named by the scope and the file's name and content, so the same
 * file asked for again is the copy already waiting (its clock restarted); a scope's copies hold
 * at most {@link outboxBudgetOf} bytes, and go after {@link OUTBOX_MAX_AGE_MS} (docs/files.md).
 */
export async function getSandboxFile(
  berth: Berth,
  request: SandboxRequest,
  named: string,
  target: string,
  options: { readonly signal?: AbortSignal } = {},
): Promise<GetFileResult> {
  const shown = truncateForMessage(target, 200);
  if (!path.isAbsolute(target)) throw new SandboxFileError('FILE_REFUSED', shown, `the host folder ${shown} for delivered files is not absolute`);
  const file = await readSandboxFile(berth, request, named, options.signal ? { signal: options.signal } : {});
  await fs.mkdir(target, { recursive: true, mode: 0o700 });
  const status = await fs.lstat(target);
  if (!status.isDirectory()) throw new SandboxFileError('FILE_REFUSED', shown, `the host folder ${shown} for delivered files is not a folder (a link?)`);
  // One folder per scope and content: the same file asked for again is the copy already waiting.
  const scopeTag = digest('berth-outbox', request.scope.key).slice(0, 8);
  const name = deliveryName(file.path);
  const folder = path.join(target, scopeTag + digest(scopeTag, name, file.bytes).slice(0, 24));
  const hostPath = path.join(folder, name);
  const waiting = await fs.lstat(hostPath).catch(() => undefined);
  if (waiting?.isFile() && waiting.size === file.bytes.length) {
    const now = new Date();
    await fs.utimes(hostPath, now, now);
    return { path: file.path, hostPath, bytes: file.bytes.length };
  }
  await makeRoom(target, scopeTag, file.bytes.length, outboxBudgetOf(berth), file.path);
  await fs.mkdir(folder, { mode: 0o700 }).catch((error: NodeJS.ErrnoException) => (error.code === 'EEXIST' ? undefined : Promise.reject(error)));
  if (!(await fs.lstat(folder)).isDirectory()) throw new SandboxFileError('FILE_REFUSED', shown, `the host folder for ${file.path} is not a folder (a link?)`);
  const temporary = path.join(folder, `.berth-${randomBytes(8).toString('hex')}`);
  const handle = await fs.open(temporary, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
  try {
    await handle.writeFile(file.bytes);
  } finally {
    await handle.close();
  }
  await fs.rename(temporary, hostPath);
  return { path: file.path, hostPath, bytes: file.bytes.length };
}
