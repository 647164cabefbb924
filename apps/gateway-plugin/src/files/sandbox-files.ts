import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { SandboxFileError, secretForms, truncateForMessage, type ExecResult, type SandboxRequest } from '@berth/core';
import { helperScriptCommand } from '@berth/sandbox-runtime';
import type { Berth } from '../create-berth.js';

// Files between a chat and a user's sandbox: an attachment put in, a file the agent names for
// delivery taken out. Every file operation runs inside the scope's own sandbox, through the
// same warm shell as its commands: the sandbox's view is the only one a path is read in, so
// another user's folder is not there to be named, and a link planted in the sandbox can lead
// only to that sandbox's own files. What may leave is checked on the descriptor the shell
// opened (its real location, its type, its links), not on the path string.

/** Where an attachment lands in the sandbox when the host names no other place (core's request protocol, which the Python bridge reads too). */
export { ATTACHMENTS_FOLDER } from '@berth/core/request-protocol';

/** The sandbox folders a file may be put in or taken from: the user's own, and the sandbox's /tmp. */
export const FILE_ROOTS = ['/workspace', '/root', '/tmp'] as const;

/** Seconds one step of a transfer may take in the sandbox (a FIFO swapped in blocks until then). */
const STEP_TIMEOUT_SECONDS = 60;

// Exit statuses the scripts use for what they refuse.
const NOT_FOUND = 44;
const IS_FOLDER = 45;
const EXISTS = 47;
const TOO_LARGE = 48;
const NOT_REGULAR = 49;
const OUTSIDE = 50;
const LINKED = 51;

const ROOT_CASE = `/workspace|/workspace/*|/root|/root/*|/tmp|/tmp/*`;

/**
 * $1 file, $2 block size, $3 blocks to skip, $4 blocks to read, $5 the most bytes it may have.
 * Opens the file once, then decides on what was opened: its real path (through
 * /proc/self/fd), its type and its link count; prints "SIZE" and the chunk in base64.
 */
// (A failed redirection of exec ends a POSIX shell at once, so what would fail it is checked first.)
const READ_SCRIPT = `if [ ! -e "$1" ]; then exit ${NOT_FOUND}; fi
if [ -d "$1" ]; then exit ${IS_FOLDER}; fi
if [ -p "$1" ] || [ -S "$1" ] || [ -c "$1" ] || [ -b "$1" ]; then exit ${NOT_REGULAR}; fi
[ -r "$1" ] || { echo "permission denied" >&2; exit 1; }
exec 3< "$1"
real=$(readlink "/proc/$$/fd/3") || exit 1
case "$real" in ${ROOT_CASE}) ;; *) printf '%s\\n' "$real" >&2; exit ${OUTSIDE} ;; esac
[ -f "/proc/$$/fd/3" ] || exit ${NOT_REGULAR}
set -- "$@" "$(stat -L -c '%h %s' "/proc/$$/fd/3")"
[ "\${6% *}" = 1 ] || exit ${LINKED}
echo "\${6#* }"
[ "\${6#* }" -le "$5" ] || exit ${TOO_LARGE}
dd bs="$2" skip="$3" count="$4" 2>/dev/null <&3 | base64`;

/** $1 final path, $2 temporary name in its folder: creates the folder and the empty temporary file, refusing what is already at $1. */
const BEGIN_WRITE_SCRIPT = `parent=\${1%/*}
mkdir -p -- "$parent" || exit 1
real=$(cd -P -- "$parent" && pwd -P) || exit 1
case "$real" in ${ROOT_CASE}) ;; *) printf '%s\\n' "$real" >&2; exit ${OUTSIDE} ;; esac
if [ -e "$1" ] || [ -L "$1" ]; then exit ${EXISTS}; fi
(set -C; : > "$parent/$2") || exit 1`;

/** $1 final path, $2 temporary name: appends stdin (base64) to the temporary file. */
const APPEND_SCRIPT = `base64 -d >> "\${1%/*}/$2"`;

/** $1 final path, $2 temporary name, $3 the size it must have: moves the whole file into place. */
const FINISH_WRITE_SCRIPT = `tmp="\${1%/*}/$2"
[ "$(stat -c %s -- "$tmp")" = "$3" ] || { rm -f -- "$tmp"; exit 1; }
if [ -e "$1" ] || [ -L "$1" ]; then rm -f -- "$tmp"; exit ${EXISTS}; fi
mv -- "$tmp" "$1"`;

/** $1 final path, $2 temporary name: removes what a failed write left. */
const ABANDON_WRITE_SCRIPT = `rm -f -- "\${1%/*}/$2"`;

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
  if (raw === '~' || raw.startsWith('~/')) absolute = `/root${raw.slice(1)}`;
  else if (raw.startsWith('/')) absolute = raw;
  else absolute = `/workspace/${raw}`;
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

function refusal(result: ExecResult, sandboxPath: string, limit: number, action: 'send' | 'put'): SandboxFileError {
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
 * The host holds at most `limit` bytes of it whatever the sandbox says: a size over the limit
 * is refused on the host, no chunk adds more than the size allows, and the reading stops after
 * the chunks the limit needs, or as soon as `signal` aborts (the client left).
 */
export async function readSandboxFile(
  berth: Berth,
  request: SandboxRequest,
  named: string,
  options: { readonly maxBytes?: number; readonly signal?: AbortSignal } = {},
): Promise<SandboxFile> {
  const sandboxPath = sandboxPathOf(named);
  const limit = Math.min(options.maxBytes ?? fileLimitOf(berth), fileLimitOf(berth));
  const blockSize = 4096;
  // Chunks whose base64 form fits the output limit (4 characters per 3 bytes, with room for line ends).
  const blocksPerChunk = Math.max(1, Math.floor((berth.config.docker_output_limit * 0.7) / blockSize));
  const mostChunks = Math.ceil(limit / (blockSize * blocksPerChunk)) + 1;
  const chunks: Buffer[] = [];
  let total = 0;
  let size: number | undefined;
  for (let chunk = 0; size === undefined || total < size; chunk++) {
    if (options.signal?.aborted) {
      throw new SandboxFileError('FILE_REFUSED', sandboxPath, `reading ${sandboxPath} stopped: the client that asked for it left`);
    }
    if (chunk >= mostChunks) throw refusal({ exitCode: TOO_LARGE } as ExecResult, sandboxPath, limit, 'send');
    const result = await runScript(berth, request, READ_SCRIPT, [
      sandboxPath,
      String(blockSize),
      String(chunk * blocksPerChunk),
      String(blocksPerChunk),
      String(limit),
    ]);
    if (result.exitCode !== 0) throw refusal(result, sandboxPath, limit, 'send');
    const newline = result.stdout.indexOf('\n');
    const now = Number(result.stdout.slice(0, newline));
    const encoded = result.stdout.slice(newline + 1);
    // Masking replaces a secret's value with ***, which is not base64: the bytes would come back
    // wrong, so the file is refused rather than sent altered.
    if (result.truncated || !Number.isSafeInteger(now) || now < 0 || !/^[A-Za-z0-9+/=\n]*$/.test(encoded)) {
      throw new SandboxFileError('FILE_REFUSED', sandboxPath, `${sandboxPath} could not be read exactly from the sandbox; it was not sent`);
    }
    if (size !== undefined && now !== size) {
      throw new SandboxFileError(
        'FILE_CHANGED',
        sandboxPath,
        `${sandboxPath} changed while it was read (${size} then ${now} bytes); send it again once it is written`,
      );
    }
    // The sandbox's own check of the limit is its word only: the host's is this one.
    if (now > limit) throw refusal({ exitCode: TOO_LARGE } as ExecResult, sandboxPath, limit, 'send');
    size = now;
    const part = Buffer.from(encoded, 'base64');
    const wanted = Math.min(part.length, size - total);
    chunks.push(part.subarray(0, wanted));
    total += wanted;
    if (total < size && part.length < blockSize * blocksPerChunk) {
      throw new SandboxFileError('FILE_CHANGED', sandboxPath, `${sandboxPath} changed while it was read; send it again once it is written`);
    }
  }
  const bytes = Buffer.concat(chunks);
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
  const begun = await runScript(berth, request, BEGIN_WRITE_SCRIPT, [sandboxPath, temporary]);
  if (begun.exitCode !== 0) throw refusal(begun, sandboxPath, limit, 'put');
  try {
    // Raw bytes per step: their base64 form stays well inside one request's stdin.
    const step = 512 * 1024;
    for (let offset = 0; offset < bytes.length; offset += step) {
      const appended = await runScript(berth, request, APPEND_SCRIPT, [sandboxPath, temporary], bytes.subarray(offset, offset + step).toString('base64'));
      if (appended.exitCode !== 0) throw refusal(appended, sandboxPath, limit, 'put');
    }
    const finished = await runScript(berth, request, FINISH_WRITE_SCRIPT, [sandboxPath, temporary, String(bytes.length)]);
    if (finished.exitCode !== 0) throw refusal(finished, sandboxPath, limit, 'put');
  } catch (error) {
    await runScript(berth, request, ABANDON_WRITE_SCRIPT, [sandboxPath, temporary]).catch(() => undefined);
    throw error;
  }
  return sandboxPath;
}
