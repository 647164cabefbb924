import path from 'node:path';
import type { OpenClawDirectoryEntry, OpenClawSandboxFsBridge, OpenClawSandboxFsStat, OpenClawSandboxResolvedPath } from './openclaw-sdk-types.js';
import type { SandboxShell, SandboxScriptResult } from './create-sandbox-shell.js';

/** The sandbox folder OpenClaw's file tools work in: the user's workspace. */
export const SANDBOX_WORKSPACE = '/workspace';

// Exit statuses the scripts below use for the failures a file tool reports by errno code.
const EXIT_CODES: Record<number, string> = { 44: 'ENOENT', 45: 'EISDIR', 46: 'ENOTDIR', 47: 'EEXIST', 48: 'EFBIG' };

// Every script is POSIX sh (dash, busybox ash) with its paths as positional arguments, so a
// file name is never parsed as shell text. They run inside the sandbox, where a symbolic link
// can only lead to the sandbox's own files.
const PARENT = `case "$1" in */*) parent=\${1%/*}; parent=\${parent:-/} ;; *) parent=. ;; esac`;

/** $1 file: prints "type|size|mtime seconds", or exits 44 when nothing is there. */
const STAT_SCRIPT = `if [ ! -e "$1" ] && [ ! -L "$1" ]; then exit 44; fi
if [ -d "$1" ]; then type=directory; elif [ -f "$1" ]; then type=file; else type=other; fi
set -- "$1" "$(stat -L -c '%s %Y' -- "$1" 2>/dev/null || stat -c '%s %Y' -- "$1")"
printf '%s|%s|%s\\n' "$type" "\${2% *}" "\${2#* }"`;

/**
 * $1 file, $2 block size, $3 blocks to skip, $4 blocks to read, $5 the most bytes it may have:
 * prints the size, then the chunk in base64; exits 48 (EFBIG) before reading a larger file. The
 * size comes from stat (busybox's wc reads the whole file to count it), so a huge sparse file
 * is refused at once.
 */
const READ_SCRIPT = `[ -e "$1" ] || exit 44
[ -d "$1" ] && exit 45
[ -f "$1" ] || { echo "not a regular file: $1" >&2; exit 1; }
[ -r "$1" ] || { echo "permission denied: $1" >&2; exit 1; }
size=$(stat -L -c %s -- "$1" 2>/dev/null) || size=$(wc -c < "$1" | tr -d ' ')
echo "$size"
[ "$size" -le "$5" ] || exit 48
dd if="$1" bs="$2" skip="$3" count="$4" 2>/dev/null | base64`;

/** Refuses (exit 1, naming it) a file that exists and is not a regular file: a FIFO or a device would block the writer or reader. */
const REGULAR_OR_ABSENT = (argument: string) =>
  `if [ -e "${argument}" ] && [ ! -f "${argument}" ] && [ ! -d "${argument}" ]; then echo "not a regular file: ${argument}" >&2; exit 1; fi`;

/** $1 file, $2 "1" to create missing parents; stdin is the content. Writes in place, keeping an existing file's mode. */
const WRITE_SCRIPT = `${PARENT}
if [ "$2" = 1 ]; then mkdir -p -- "$parent" || exit 1; fi
[ -d "$parent" ] || exit 44
[ -d "$1" ] && exit 45
${REGULAR_OR_ABSENT('$1')}
cat > "$1"`;

/** $1 file, $2 "1" to create missing parents; stdin is the content; exits 47 when something is there. */
const CREATE_SCRIPT = `${PARENT}
if [ "$2" = 1 ]; then mkdir -p -- "$parent" || exit 1; fi
[ -d "$parent" ] || exit 44
if [ -e "$1" ] || [ -L "$1" ]; then exit 47; fi
if (set -C; cat > "$1") 2>/dev/null; then exit 0; fi
if [ -e "$1" ] || [ -L "$1" ]; then exit 47; fi
exit 1`;

/** $1 folder. */
const MKDIR_SCRIPT = `[ -e "$1" ] && [ ! -d "$1" ] && exit 46
mkdir -p -- "$1"`;

/** $1 path, $2 "1" recursive, $3 "1" force. */
const REMOVE_SCRIPT = `if [ ! -e "$1" ] && [ ! -L "$1" ]; then [ "$3" = 1 ] && exit 0; exit 44; fi
if [ -d "$1" ] && [ ! -L "$1" ]; then
  if [ "$2" = 1 ]; then rm -rf -- "$1"; else rmdir -- "$1"; fi
else
  rm -f -- "$1"
fi`;

/** $1 from, $2 to: creates the destination's folder. */
const RENAME_SCRIPT = `if [ ! -e "$1" ] && [ ! -L "$1" ]; then exit 44; fi
case "$2" in */*) parent=\${2%/*}; parent=\${parent:-/} ;; *) parent=. ;; esac
mkdir -p -- "$parent" && mv -f -- "$1" "$2"`;

/** $1 source file, $2 destination, $3 "1" to create the destination's folder. */
const COPY_SCRIPT = `[ -e "$1" ] || exit 44
[ -d "$1" ] && exit 45
[ -f "$1" ] || { echo "not a regular file: $1" >&2; exit 1; }
${REGULAR_OR_ABSENT('$2')}
case "$2" in */*) parent=\${2%/*}; parent=\${parent:-/} ;; *) parent=. ;; esac
if [ "$3" = 1 ]; then mkdir -p -- "$parent" || exit 1; fi
[ -d "$parent" ] || exit 44
cp -f -- "$1" "$2"`;

/** $1 folder: prints "d NAME" or "f NAME" per entry, each ended by a NUL byte. */
const LIST_SCRIPT = `[ -e "$1" ] || exit 44
[ -d "$1" ] || exit 46
cd -- "$1" || exit 1
for entry in * .[!.]* ..?*; do
  [ -e "$entry" ] || [ -L "$entry" ] || continue
  if [ -d "$entry" ]; then printf 'd %s\\000' "$entry"; else printf 'f %s\\000' "$entry"; fi
done`;

/** An error a file tool recognises by its errno-style `code` (`ENOENT`, `EISDIR`, …). */
export class SandboxFsError extends Error {
  readonly code: string;
  /** The sandbox path at fault. */
  readonly containerPath: string;

  constructor(code: string, containerPath: string, message: string) {
    super(message);
    this.name = 'SandboxFsError';
    this.code = code;
    this.containerPath = containerPath;
  }
}

function isInside(root: string, candidate: string): boolean {
  return candidate === root || candidate.startsWith(`${root === '/' ? '' : root}/`);
}

/** Options of {@link createSandboxFsBridge}. */
export interface CreateSandboxFsBridgeOptions {
  /** Runs the scripts in the session's sandbox. */
  readonly shell: SandboxShell;
  /**
   * OpenClaw's own host folder for this session's workspace. OpenClaw's path guards project
   * `/workspace` onto it; a host path inside it is read as the same place in the sandbox.
   */
  readonly hostWorkspaceDir: string;
  /**
   * The most bytes `readFile` returns, whatever `maxBytes` a caller gives (OpenClaw's edit and
   * apply_patch tools give none): a larger file is refused with `EFBIG`, before it is read.
   * @default 16 MiB
   */
  readonly maxReadBytes?: number;
  /**
   * Reads a file that is to leave the sandbox for a chat, with the checks of a delivery
   * (`readSandboxFile`: no link out of the user's folders, no FIFO or device, one hard link, no
   * credential in it). `readFile` uses it when the caller bounds the read with `maxBytes`: in
   * OpenClaw 2026.9.6 only its outbound media reader does (the message tool's
   * `createSandboxBridgeReadFile`); the file tools read without a bound. It throws a
   * {@link SandboxFsError}.
   */
  readonly readForDelivery?: (containerPath: string, maxBytes: number) => Promise<Buffer>;
}

/** The default bound of the fs bridge's `readFile`: 16 MiB. */
export const DEFAULT_FS_READ_LIMIT = 16 * 1024 * 1024;

/**
 * The fs bridge OpenClaw's read, write, edit, ls and apply_patch tools call for a Berth
 * sandbox: every operation runs inside the session's own sandbox (its warm shell session), so
 * the files are the ones its commands see, in that user's `{sandbox_dir}/docker/{user}/workspace`.
 * Paths must lie in `/workspace`. Reads return the file's bytes unmasked (see readFile).
 */
export function createSandboxFsBridge(options: CreateSandboxFsBridgeOptions): OpenClawSandboxFsBridge {
  const { shell } = options;
  const hostRoot = path.resolve(options.hostWorkspaceDir);
  const readLimit = options.maxReadBytes ?? DEFAULT_FS_READ_LIMIT;

  const toContainerPath = (filePath: string, cwd: string | undefined): string => {
    const input = filePath.trim().replace(/\\/g, '/');
    if (input === '') throw new SandboxFsError('EINVAL', '', 'an empty path was given to the sandbox file tools');
    const fromHost = (hostPath: string): string | undefined => {
      const resolved = path.resolve(hostPath);
      if (resolved !== hostRoot && !resolved.startsWith(`${hostRoot}${path.sep}`)) return undefined;
      const relative = path.relative(hostRoot, resolved).split(path.sep).join('/');
      return relative ? path.posix.join(SANDBOX_WORKSPACE, relative) : SANDBOX_WORKSPACE;
    };
    let containerPath: string;
    if (path.posix.isAbsolute(input)) {
      containerPath = isInside(SANDBOX_WORKSPACE, path.posix.normalize(input)) ? path.posix.normalize(input) : (fromHost(input) ?? path.posix.normalize(input));
    } else {
      const base = cwd === undefined ? SANDBOX_WORKSPACE : (fromHost(cwd) ?? (path.posix.isAbsolute(cwd) ? path.posix.normalize(cwd) : SANDBOX_WORKSPACE));
      containerPath = path.posix.resolve(base, input);
    }
    const normalized = containerPath.length > 1 ? containerPath.replace(/\/+$/, '') : containerPath;
    if (!isInside(SANDBOX_WORKSPACE, normalized)) {
      throw new SandboxFsError(
        'EACCES',
        normalized,
        `${normalized} is outside the sandbox's ${SANDBOX_WORKSPACE}; the file tools work in ${SANDBOX_WORKSPACE} (use exec for other folders)`,
      );
    }
    return normalized;
  };

  const fail = (result: SandboxScriptResult, action: string, containerPath: string): never => {
    const code = EXIT_CODES[result.exitCode];
    if (code) throw new SandboxFsError(code, containerPath, `Sandbox FS error (${code}): cannot ${action} ${containerPath}`);
    if (result.timedOut)
      throw new SandboxFsError('ETIMEDOUT', containerPath, `cannot ${action} ${containerPath}: the sandbox did not answer within terminal.timeout`);
    const detail = result.stderr.trim().split('\n')[0] || `exit status ${result.exitCode}`;
    throw new SandboxFsError('EIO', containerPath, `cannot ${action} ${containerPath} in the sandbox: ${detail}`);
  };

  const run = async (
    script: string,
    args: string[],
    action: string,
    containerPath: string,
    extra: { stdin?: Buffer | string; signal?: AbortSignal | undefined } = {},
  ) => {
    const result = await shell.run(script, {
      args,
      ...(extra.stdin !== undefined ? { stdin: extra.stdin } : {}),
      ...(extra.signal ? { signal: extra.signal } : {}),
    });
    if (result.exitCode !== 0) fail(result, action, containerPath);
    return result;
  };

  const toBytes = (data: Buffer | string, encoding: BufferEncoding | undefined): Buffer =>
    Buffer.isBuffer(data) ? data : Buffer.from(data, encoding ?? 'utf8');

  // Chunks whose base64 form fits the output limit (4 characters per 3 bytes, with room for line ends).
  const blockSize = 4096;
  const blocksPerChunk = Math.max(1, Math.floor((shell.outputLimit * 0.7) / blockSize));

  return {
    pathMappings: [{ hostRoot, containerRoot: SANDBOX_WORKSPACE }],

    resolvePath({ filePath, cwd }): OpenClawSandboxResolvedPath {
      const containerPath = toContainerPath(filePath, cwd);
      return { relativePath: path.posix.relative(SANDBOX_WORKSPACE, containerPath), containerPath };
    },

    async stat({ filePath, cwd, signal }): Promise<OpenClawSandboxFsStat | null> {
      const containerPath = toContainerPath(filePath, cwd);
      const result = await shell.run(STAT_SCRIPT, { args: [containerPath], ...(signal ? { signal } : {}) });
      if (result.exitCode === 44) return null;
      if (result.exitCode !== 0) fail(result, 'stat', containerPath);
      const [type, size, mtime] = result.stdout.trim().split('|');
      return { type: type === 'file' || type === 'directory' ? type : 'other', size: Number(size) || 0, mtimeMs: (Number(mtime) || 0) * 1000 };
    },

    async readFile({ filePath, cwd, signal, maxBytes }) {
      const containerPath = toContainerPath(filePath, cwd);
      // A bounded read is a file on its way to a chat (see readForDelivery): the stronger checks.
      if (maxBytes !== undefined && options.readForDelivery) {
        signal?.throwIfAborted();
        return options.readForDelivery(containerPath, Math.min(maxBytes, readLimit));
      }
      // OpenClaw's edit and apply_patch tools read without maxBytes: the bridge's own bound
      // applies then, and a caller's larger one never lifts it.
      const limit = Math.min(maxBytes ?? readLimit, readLimit);
      const tooLarge = (): never => {
        throw new SandboxFsError(
          'EFBIG',
          containerPath,
          `File exceeds ${limit} bytes: ${containerPath}` +
            (maxBytes === undefined || maxBytes > readLimit ? ' (the sandbox file tools read at most that much; use exec for larger files)' : ''),
        );
      };
      const chunks: Buffer[] = [];
      let total = 0;
      let size: number | undefined;
      for (let chunk = 0; size === undefined || total < size; chunk++) {
        const result = await shell.run(READ_SCRIPT, {
          args: [containerPath, String(blockSize), String(chunk * blocksPerChunk), String(blocksPerChunk), String(limit)],
          ...(signal ? { signal } : {}),
        });
        if (result.exitCode === 48) tooLarge();
        if (result.exitCode !== 0) fail(result, 'read', containerPath);
        if (result.truncated)
          throw new SandboxFsError(
            'EFBIG',
            containerPath,
            `cannot read ${containerPath}: a chunk exceeded terminal.docker_output_limit; raise it or read the file with exec`,
          );
        const newline = result.stdout.indexOf('\n');
        const now = Number(result.stdout.slice(0, newline));
        if (!Number.isSafeInteger(now) || now < 0)
          throw new SandboxFsError('EIO', containerPath, `cannot read ${containerPath}: the sandbox did not say its size`);
        // A file that grows or shrinks while it is read in chunks would come back torn (or, growing, never end).
        if (size !== undefined && now !== size)
          throw new SandboxFsError(
            'EAGAIN',
            containerPath,
            `cannot read ${containerPath}: it changed size while it was read (${size} then ${now} bytes); read it again once it is written`,
          );
        size = now;
        if (size > limit) tooLarge();
        const part = Buffer.from(result.stdout.slice(newline + 1), 'base64');
        chunks.push(part.subarray(0, Math.max(0, size - total)));
        total += Math.min(part.length, Math.max(0, size - total));
        if (total < size && part.length < blockSize * blocksPerChunk) {
          throw new SandboxFsError('EAGAIN', containerPath, `cannot read ${containerPath}: it changed while it was read; read it again once it is written`);
        }
      }
      // Not masked, unlike command output: OpenClaw's edit tool writes back what it read and its
      // write tool verifies by reading back, so a masked read would replace the user's own
      // credentials in their files with ***.
      return Buffer.concat(chunks);
    },

    async writeFile({ filePath, cwd, data, encoding, mkdir, signal }) {
      const containerPath = toContainerPath(filePath, cwd);
      await run(WRITE_SCRIPT, [containerPath, mkdir === false ? '0' : '1'], 'write', containerPath, { stdin: toBytes(data, encoding), signal });
    },

    async createFileExclusive({ filePath, cwd, data, encoding, mkdir, signal }) {
      const containerPath = toContainerPath(filePath, cwd);
      const result = await shell.run(CREATE_SCRIPT, {
        args: [containerPath, mkdir === false ? '0' : '1'],
        stdin: toBytes(data, encoding),
        ...(signal ? { signal } : {}),
      });
      if (result.exitCode === 47) return 'exists';
      if (result.exitCode !== 0) fail(result, 'create', containerPath);
      return 'created';
    },

    async mkdirp({ filePath, cwd, signal }) {
      const containerPath = toContainerPath(filePath, cwd);
      await run(MKDIR_SCRIPT, [containerPath], 'create the folder', containerPath, { signal });
    },

    async remove({ filePath, cwd, recursive, force, signal }) {
      const containerPath = toContainerPath(filePath, cwd);
      if (containerPath === SANDBOX_WORKSPACE) throw new SandboxFsError('EPERM', containerPath, `refusing to remove ${SANDBOX_WORKSPACE} itself`);
      await run(REMOVE_SCRIPT, [containerPath, recursive ? '1' : '0', force ? '1' : '0'], 'remove', containerPath, { signal });
    },

    async rename({ from, to, cwd, signal }) {
      const source = toContainerPath(from, cwd);
      const destination = toContainerPath(to, cwd);
      if (source === SANDBOX_WORKSPACE) throw new SandboxFsError('EPERM', source, `refusing to move ${SANDBOX_WORKSPACE} itself`);
      await run(RENAME_SCRIPT, [source, destination], 'rename', source, { signal });
    },

    async copyFile({ sourcePath, destinationPath, cwd, mkdir, signal }) {
      const source = toContainerPath(sourcePath, cwd);
      const destination = toContainerPath(destinationPath, cwd);
      await run(COPY_SCRIPT, [source, destination, mkdir === false ? '0' : '1'], 'copy', source, { signal });
    },

    async readDirectory({ filePath, cwd, signal }): Promise<OpenClawDirectoryEntry[]> {
      const containerPath = toContainerPath(filePath, cwd);
      const result = await run(LIST_SCRIPT, [containerPath], 'list', containerPath, { signal });
      return result.stdout
        .split('\0')
        .filter((line) => line.length > 2)
        .map((line) => ({ name: line.slice(2), isDirectory: line.startsWith('d ') }))
        .sort((left, right) => (left.name < right.name ? -1 : left.name > right.name ? 1 : 0));
    },
  };
}
