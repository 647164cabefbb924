import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { SandboxFileError, secretForms, truncateForMessage, type ExecResult, type SandboxRequest } from '@berth/core';
import { ChunkedReadError, FILE_EXIT, FILE_PROGRAMS, FILE_ROOTS, helperScriptCommand, readInChunks, SANDBOX_LAYOUT } from '@berth/sandbox-runtime';
import type { Berth } from '../create-berth.js';

// Files between a chat and a user's sandbox: an attachment put in, a file the agent names for
// delivery taken out. Every file operation runs inside the scope's own sandbox, through the
// same warm shell as its commands: the sandbox's view is the only one a path is read in, so
// another user's folder is not there to be named, and a link planted in the sandbox can lead
// only to that sandbox's own files. What may leave is checked on the descriptor the shell
// opened (its real location, its type, its links), not on the path string.

/** Where an attachment lands in the sandbox when the host names no other place (core's request protocol, which the Python bridge reads too). */
export { ATTACHMENTS_FOLDER } from '@berth/core/request-protocol';

/** The sandbox folders a file may be put in or taken from: the user's own, and the sandbox's /tmp (the file kit's, in sandbox-runtime). */
export { FILE_ROOTS };

/** Seconds one step of a transfer may take in the sandbox (a FIFO swapped in blocks until then). */
const STEP_TIMEOUT_SECONDS = 60;

const { NOT_FOUND, IS_FOLDER, EXISTS, TOO_LARGE, NOT_REGULAR, OUTSIDE, LINKED } = FILE_EXIT;

function isInsideRoots(sandboxPath: string): boolean {
  return FILE_ROOTS.some((root) => sandboxPath === root || sandboxPath.startsWith(`${root}/`));
}

/**
 * The sandbox path of a path an agent or a host named: absolute in `/workspace`, `/root` or
 * `/tmp`; `~` and `~/…` in `/root`; relative in `/workspace`. Refuses, in one line, an empty
 * path, NUL, a `..` component and every other absolute path (a host path among them): the
 * sandbox's own files are the only ones a chat may be sent.
 */
export function sandboxPathOf(named: string): string {
  const raw = named.trim();
  const shown = truncateForMessage(raw, 200);
  if (raw === '' || raw.includes('\u0000'))
    throw new SandboxFileError('FILE_REFUSED', shown, 'an empty path or one with a NUL byte names no file in the sandbox');
  if (raw.split('/').includes('..')) {
    throw new SandboxFileError('FILE_REFUSED', shown, `${shown} has a ".." component; name the file by its own path in /workspace or /root`);
  }
  let absolute: string;
  if (raw === '~' || raw.startsWith('~/')) absolute = `${SANDBOX_LAYOUT.home}${raw.slice(1)}`;
  else if (raw.startsWith('/')) absolute = raw;
  else absolute = `${SANDBOX_LAYOUT.workspace}/${raw}`;
  const normalized = path.posix.normalize(absolute).replace(/(.)\/+$/, '$1');
  if (!isInsideRoots(normalized)) {
    throw new SandboxFileError('FILE_REFUSED', shown, `${shown} is not in the sandbox's /workspace, /root or /tmp; only the sandbox's own files can be sent`);
  }
  if (FILE_ROOTS.includes(normalized as (typeof FILE_ROOTS)[number])) {
    throw new SandboxFileError('FILE_REFUSED', shown, `${shown} is a folder; name a file in it`);
  }
  return normalized;
}

/** The bytes a transfer may carry: `terminal.docker_file_limit` megabytes. */
export function fileLimitOf(berth: Pick<Berth, 'config'>): number {
  return berth.config.docker_file_limit * 1024 * 1024;
}

/** One step in the sandbox, through `helperScriptCommand` (the image's own `/bin/sh`, not the session's `PATH`). */
async function runScript(berth: Berth, request: SandboxRequest, script: string, args: readonly string[], stdin?: string): Promise<ExecResult> {
  // No cwd: the paths are absolute, and a cwd would become the session's folder after the command.
  const command = helperScriptCommand(script, 'berth-file', args);
  return berth.executeRequest(request, command, { timeout: STEP_TIMEOUT_SECONDS, ...(stdin !== undefined ? { stdin } : {}) });
}

function firstLine(text: string): string {
  return truncateForMessage(text.trim().split('\n')[0] ?? '', 200);
}

function refusal(result: Pick<ExecResult, 'exitCode' | 'stderr' | 'timedOut'>, sandboxPath: string, limit: number, action: 'send' | 'put'): SandboxFileError {
  const megabytes = Math.round(limit / 1024 / 1024);
  switch (result.exitCode) {
    case NOT_FOUND:
      return new SandboxFileError('FILE_NOT_FOUND', sandboxPath, `${sandboxPath} does not exist in the sandbox; check the path the file was written to`);
    case IS_FOLDER:
      return new SandboxFileError('FILE_REFUSED', sandboxPath, `${sandboxPath} is a folder; name a file in it (or pack the folder into an archive first)`);
    case NOT_REGULAR:
      return new SandboxFileError(
        'FILE_REFUSED',
        sandboxPath,
        `${sandboxPath} is not a regular file (a FIFO, socket or device); only regular files can be sent`,
      );
    case OUTSIDE:
      return new SandboxFileError(
        'FILE_REFUSED',
        sandboxPath,
        `${sandboxPath} leads outside the sandbox's /workspace, /root and /tmp (to ${firstLine(result.stderr)}); ` +
          'a link cannot be sent, copy the file itself there',
      );
    case LINKED:
      return new SandboxFileError('FILE_REFUSED', sandboxPath, `${sandboxPath} has more than one hard link; copy it to a new file to ${action} it`);
    case TOO_LARGE:
      return new SandboxFileError(
        'FILE_TOO_LARGE',
        sandboxPath,
        `${sandboxPath} is larger than ${megabytes} MB (terminal.docker_file_limit); send a smaller file`,
      );
    case EXISTS:
      return new SandboxFileError('FILE_EXISTS', sandboxPath, `${sandboxPath} already exists in the sandbox; nothing was written over it`);
    default:
      if (result.timedOut) {
        return new SandboxFileError(
          'FILE_REFUSED',
          sandboxPath,
          `${sandboxPath} could not be opened within ${STEP_TIMEOUT_SECONDS} s (a FIFO waits for a writer); only regular files can be sent`,
        );
      }
      return new SandboxFileError(
        'FILE_REFUSED',
        sandboxPath,
        `cannot ${action} ${sandboxPath}: ${firstLine(result.stderr) || `the sandbox's shell exited with status ${result.exitCode}`}`,
      );
  }
}

/** The one line a read the host refused is answered with. */
function readRefusal(error: ChunkedReadError, sandboxPath: string, limit: number): SandboxFileError {
  const why = error.refusal;
  switch (why.reason) {
    case 'exit':
      return refusal(why.result, sandboxPath, limit, 'send');
    case 'too-large':
      return refusal({ exitCode: TOO_LARGE } as ExecResult, sandboxPath, limit, 'send');
    case 'aborted':
      return new SandboxFileError('FILE_REFUSED', sandboxPath, `reading ${sandboxPath} stopped: the client that asked for it left`);
    case 'changed':
      return new SandboxFileError(
        'FILE_CHANGED',
        sandboxPath,
        `${sandboxPath} changed while it was read (${why.before} then ${why.now} bytes); send it again once it is written`,
      );
    case 'more-than-claimed':
      return new SandboxFileError(
        'FILE_REFUSED',
        sandboxPath,
        `${sandboxPath} could not be read exactly from the sandbox (it said ${why.size} bytes and sent more); it was not sent`,
      );
    case 'malformed':
      // Masking replaces a secret's value with ***, which is not base64: the file is refused rather than sent altered.
      return new SandboxFileError('FILE_REFUSED', sandboxPath, `${sandboxPath} could not be read exactly from the sandbox; it was not sent`);
  }
}

/** A file read out of a sandbox. */
export interface SandboxFile {
  /** Its path in the sandbox. */
  readonly path: string;
  /** Its bytes, exactly. */
  readonly bytes: Buffer;
}

/**
 * Reads a file a chat is to be sent from the request's sandbox, as the sandbox sees it (see
 * {@link sandboxPathOf} for the paths it takes). Refused with a {@link SandboxFileError}, before
 * any of it reaches the host: a path that leads (through links) outside `/workspace`, `/root`
 * and `/tmp`, a FIFO, socket, device or folder, a file with more than one hard link, one over
 * the limit, one that changed while it was read, and one that holds the value of one of the
 * scope's secrets (a file is not masked: it is not sent at all).
 *
 * The host holds at most `limit` bytes of it whatever the sandbox says (the file kit's
 * readInChunks): a size over the limit, or one that differs from the bytes the sandbox sent, is
 * refused on the host with nothing kept, and the reading stops after the chunks the limit
 * needs, or as soon as `signal` aborts (the client left).
 */
export async function readSandboxFile(
  berth: Berth,
  request: SandboxRequest,
  named: string,
  options: { readonly maxBytes?: number; readonly signal?: AbortSignal } = {},
): Promise<SandboxFile> {
  const sandboxPath = sandboxPathOf(named);
  const limit = Math.min(options.maxBytes ?? fileLimitOf(berth), fileLimitOf(berth));
  let bytes: Buffer;
  try {
    bytes = await readInChunks({
      path: sandboxPath,
      roots: FILE_ROOTS,
      limit,
      outputLimit: berth.config.docker_output_limit,
      run: (program, args) => runScript(berth, request, program, args),
      signal: options.signal,
    });
  } catch (error) {
    if (error instanceof ChunkedReadError) throw readRefusal(error, sandboxPath, limit);
    throw error;
  }
  // Each value masking would hide, as it is or as shells, JSON, URLs and base64 write it (Berth's own
  // session state in /tmp holds the values shell-quoted): core's secretForms decides which.
  const forms = request.environment.secrets.flatMap((value) => secretForms(value));
  if (forms.some((form) => bytes.includes(Buffer.from(form, 'utf8')))) {
    throw new SandboxFileError(
      'FILE_REFUSED',
      sandboxPath,
      `${sandboxPath} holds the value of one of the sandbox's credentials; a file with a secret in it is not sent to the chat`,
    );
  }
  return { path: sandboxPath, bytes };
}

/**
 * Writes `bytes` at `named` in the request's sandbox (see {@link sandboxPathOf}), creating its
 * folder: into a temporary file of that folder, moved into place once whole, so nothing
 * half-written is ever at the path. Something already there is refused (`FILE_EXISTS`), as is a
 * folder that leads outside `/workspace`, `/root` and `/tmp` and a file over the limit.
 */
export async function writeSandboxFile(berth: Berth, request: SandboxRequest, named: string, bytes: Buffer): Promise<string> {
  const sandboxPath = sandboxPathOf(named);
  const limit = fileLimitOf(berth);
  if (bytes.length > limit) throw refusal({ exitCode: TOO_LARGE } as ExecResult, sandboxPath, limit, 'put');
  const temporary = `.berth-incoming-${randomBytes(8).toString('hex')}`;
  const begun = await runScript(berth, request, FILE_PROGRAMS.beginWrite, [sandboxPath, temporary, ...FILE_ROOTS]);
  if (begun.exitCode !== 0) throw refusal(begun, sandboxPath, limit, 'put');
  try {
    // Raw bytes per step: their base64 form stays well inside one request's stdin.
    const step = 512 * 1024;
    for (let offset = 0; offset < bytes.length; offset += step) {
      const appended = await runScript(
        berth,
        request,
        FILE_PROGRAMS.appendWrite,
        [sandboxPath, temporary],
        bytes.subarray(offset, offset + step).toString('base64'),
      );
      if (appended.exitCode !== 0) throw refusal(appended, sandboxPath, limit, 'put');
    }
    const finished = await runScript(berth, request, FILE_PROGRAMS.finishWrite, [sandboxPath, temporary, String(bytes.length)]);
    if (finished.exitCode !== 0) throw refusal(finished, sandboxPath, limit, 'put');
  } catch (error) {
    await runScript(berth, request, FILE_PROGRAMS.abandonWrite, [sandboxPath, temporary]).catch(() => undefined);
    throw error;
  }
  return sandboxPath;
}
