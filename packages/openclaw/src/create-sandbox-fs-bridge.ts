import path from 'node:path';
import type { OpenClawDirectoryEntry, OpenClawSandboxFsBridge, OpenClawSandboxFsStat, OpenClawSandboxResolvedPath } from './openclaw-sdk-types.js';
import type { SandboxShell, SandboxScriptResult } from './create-sandbox-shell.js';
import { ChunkedReadError, FILE_EXIT, FILE_PROGRAMS, fileExitName, readInChunks, SANDBOX_LAYOUT } from '@berth/gateway-plugin';
import type { FileExitName } from '@berth/gateway-plugin';

/** The sandbox folder OpenClaw's file tools work in: the user's workspace (the file kit's layout). */
export const SANDBOX_WORKSPACE = SANDBOX_LAYOUT.workspace;

// The file kit's exit statuses a file tool reports by errno code. Every program is POSIX sh
// (dash, busybox ash) with its paths as positional arguments, so a file name is never parsed as
// shell text: the kit's `.sh` files, shellchecked, in sandbox-runtime's files/ folder.
const ERRNO_OF: Partial<Record<FileExitName, string>> = {
  NOT_FOUND: 'ENOENT',
  IS_FOLDER: 'EISDIR',
  NOT_FOLDER: 'ENOTDIR',
  EXISTS: 'EEXIST',
  TOO_LARGE: 'EFBIG',
};

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
    const name = fileExitName(result.exitCode);
    if (name === 'OUTSIDE') {
      const real = result.stderr.trim().split('\n')[0] ?? '';
      throw new SandboxFsError('EACCES', containerPath, `cannot ${action} ${containerPath}: it leads outside the sandbox's ${SANDBOX_WORKSPACE} (to ${real})`);
    }
    if (name === 'LINKED') {
      throw new SandboxFsError('EACCES', containerPath, `cannot ${action} ${containerPath}: it has more than one hard link; copy it to a new file first`);
    }
    const code = name ? ERRNO_OF[name] : undefined;
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

  return {
    pathMappings: [{ hostRoot, containerRoot: SANDBOX_WORKSPACE }],

    resolvePath({ filePath, cwd }): OpenClawSandboxResolvedPath {
      const containerPath = toContainerPath(filePath, cwd);
      return { relativePath: path.posix.relative(SANDBOX_WORKSPACE, containerPath), containerPath };
    },

    async stat({ filePath, cwd, signal }): Promise<OpenClawSandboxFsStat | null> {
      const containerPath = toContainerPath(filePath, cwd);
      const result = await shell.run(FILE_PROGRAMS.statPath, { args: [containerPath], ...(signal ? { signal } : {}) });
      if (result.exitCode === FILE_EXIT.NOT_FOUND) return null;
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
      let bytes: Buffer;
      try {
        bytes = await readInChunks({
          path: containerPath,
          roots: [SANDBOX_WORKSPACE],
          limit,
          outputLimit: shell.outputLimit,
          run: (program, args) => shell.run(program, { args: [...args], ...(signal ? { signal } : {}) }),
          signal,
        });
      } catch (error) {
        if (!(error instanceof ChunkedReadError)) throw error;
        const why = error.refusal;
        if (why.reason === 'exit') {
          if (why.result.exitCode === FILE_EXIT.TOO_LARGE) tooLarge();
          return fail(why.result, 'read', containerPath);
        }
        if (why.reason === 'too-large') return tooLarge();
        if (why.reason === 'aborted') throw new SandboxFsError('ECANCELED', containerPath, `reading ${containerPath} stopped: the caller left`);
        if (why.reason === 'changed') {
          throw new SandboxFsError(
            'EAGAIN',
            containerPath,
            `cannot read ${containerPath}: it changed size while it was read (${why.before} then ${why.now} bytes); read it again once it is written`,
          );
        }
        if (why.reason === 'malformed' && why.truncated) {
          throw new SandboxFsError(
            'EFBIG',
            containerPath,
            `cannot read ${containerPath}: a chunk exceeded terminal.docker_output_limit; raise it or read the file with exec`,
          );
        }
        throw new SandboxFsError('EIO', containerPath, `cannot read ${containerPath}: the sandbox's answer was not its size and exactly that many bytes`);
      }
      // Not masked, unlike command output: OpenClaw's edit tool writes back what it read and its
      // write tool verifies by reading back, so a masked read would replace the user's own
      // credentials in their files with ***.
      return bytes;
    },

    async writeFile({ filePath, cwd, data, encoding, mkdir, signal }) {
      const containerPath = toContainerPath(filePath, cwd);
      await run(FILE_PROGRAMS.writeFile, [containerPath, mkdir === false ? '0' : '1'], 'write', containerPath, { stdin: toBytes(data, encoding), signal });
    },

    async createFileExclusive({ filePath, cwd, data, encoding, mkdir, signal }) {
      const containerPath = toContainerPath(filePath, cwd);
      const result = await shell.run(FILE_PROGRAMS.createFile, {
        args: [containerPath, mkdir === false ? '0' : '1'],
        stdin: toBytes(data, encoding),
        ...(signal ? { signal } : {}),
      });
      if (result.exitCode === FILE_EXIT.EXISTS) return 'exists';
      if (result.exitCode !== 0) fail(result, 'create', containerPath);
      return 'created';
    },

    async mkdirp({ filePath, cwd, signal }) {
      const containerPath = toContainerPath(filePath, cwd);
      await run(FILE_PROGRAMS.makeFolder, [containerPath], 'create the folder', containerPath, { signal });
    },

    async remove({ filePath, cwd, recursive, force, signal }) {
      const containerPath = toContainerPath(filePath, cwd);
      if (containerPath === SANDBOX_WORKSPACE) throw new SandboxFsError('EPERM', containerPath, `refusing to remove ${SANDBOX_WORKSPACE} itself`);
      await run(FILE_PROGRAMS.removePath, [containerPath, recursive ? '1' : '0', force ? '1' : '0'], 'remove', containerPath, { signal });
    },

    async rename({ from, to, cwd, signal }) {
      const source = toContainerPath(from, cwd);
      const destination = toContainerPath(to, cwd);
      if (source === SANDBOX_WORKSPACE) throw new SandboxFsError('EPERM', source, `refusing to move ${SANDBOX_WORKSPACE} itself`);
      await run(FILE_PROGRAMS.renamePath, [source, destination], 'rename', source, { signal });
    },

    async copyFile({ sourcePath, destinationPath, cwd, mkdir, signal }) {
      const source = toContainerPath(sourcePath, cwd);
      const destination = toContainerPath(destinationPath, cwd);
      await run(FILE_PROGRAMS.copyFile, [source, destination, mkdir === false ? '0' : '1'], 'copy', source, { signal });
    },

    async readDirectory({ filePath, cwd, signal }): Promise<OpenClawDirectoryEntry[]> {
      const containerPath = toContainerPath(filePath, cwd);
      const result = await run(FILE_PROGRAMS.listFolder, [containerPath], 'list', containerPath, { signal });
      return result.stdout
        .split('\0')
        .filter((line) => line.length > 2)
        .map((line) => ({ name: line.slice(2), isDirectory: line.startsWith('d ') }))
        .sort((left, right) => (left.name < right.name ? -1 : left.name > right.name ? 1 : 0));
    },
  };
}
