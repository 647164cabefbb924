import { randomBytes } from 'node:crypto';
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
        `the attachment ${path.basename(shown)} is ${Math.ceil(status.size / 1024 / 1024)} MB, more than terminal.docker_file_limit (${berth.config.docker_file_limit} MB)`,
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

/**
 * Reads `named` from the request's sandbox (with every refusal of `readSandboxFile`) and writes
 * it into a new folder (mode 0700, a random name) under the host folder `target`, as a file of
 * mode 0600 created anew, never through a link. `target` is created when missing; a `target`
 * that is a link is refused.
 */
export async function getSandboxFile(berth: Berth, request: SandboxRequest, named: string, target: string): Promise<GetFileResult> {
  const shown = truncateForMessage(target, 200);
  if (!path.isAbsolute(target)) throw new SandboxFileError('FILE_REFUSED', shown, `the host folder ${shown} for delivered files is not absolute`);
  const file = await readSandboxFile(berth, request, named);
  await fs.mkdir(target, { recursive: true, mode: 0o700 });
  const status = await fs.lstat(target);
  if (!status.isDirectory()) throw new SandboxFileError('FILE_REFUSED', shown, `the host folder ${shown} for delivered files is not a folder (a link?)`);
  const folder = path.join(target, randomBytes(16).toString('hex'));
  await fs.mkdir(folder, { mode: 0o700 });
  const hostPath = path.join(folder, deliveryName(file.path));
  const handle = await fs.open(hostPath, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
  try {
    await handle.writeFile(file.bytes);
  } finally {
    await handle.close();
  }
  return { path: file.path, hostPath, bytes: file.bytes.length };
}
