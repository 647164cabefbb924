import { createHash } from 'node:crypto';
import { SandboxFileError, type SandboxRequest, type SessionContext } from '@berth/core';
import { readSandboxFile, type Berth } from '@berth/gateway-plugin';
import { discardRequestFile, requestFileOf, sandboxCommandArgv } from '@berth/gateway-plugin/socket';
import { createSandboxFsBridge, SANDBOX_WORKSPACE, SandboxFsError } from './create-sandbox-fs-bridge.js';
import { createSandboxShell } from './create-sandbox-shell.js';
import type { OpenClawSandboxBackendHandle } from './openclaw-sdk-types.js';

/** The id OpenClaw knows the backend by: `agents.defaults.sandbox.backend: "berth"`. */
export const BERTH_SANDBOX_BACKEND_ID = 'berth';

/** What a handle needs: the running Berth, its socket, and the session it serves. */
export interface CreateSandboxHandleOptions {
  readonly berth: Berth;
  /** The socket the gateway's own Berth server listens on. */
  readonly socket: string;
  /** The OpenClaw session key, e.g. `agent:main:telegram:direct:123`. */
  readonly sessionKey: string;
  /** The request core resolved for the session (checked before the handle exists). */
  readonly request: SandboxRequest;
  /** OpenClaw's host folder for the session's workspace (its file tools' path guard). */
  readonly hostWorkspaceDir: string;
  /** Node binary of the spawned client. @default process.execPath */
  readonly node?: string;
  /** Which spawned client: see `sandboxCommandArgv`'s `client`. @default 'auto' */
  readonly client?: 'auto' | 'perl' | 'node';
}

/**
 * The id OpenClaw's sandbox registry keeps for a scope's sandbox (`openclaw sandbox list`): a
 * digest of the scope key, stable across restarts, that names no platform or user. It is not
 * the container's name (Berth keys that with the installation's secret); the manager finds the
 * sandbox by comparing digests.
 */
export function runtimeIdOf(scopeKey: string): string {
  return `berth-${createHash('sha256').update(`openclaw-runtime:${scopeKey}`, 'utf8').digest('hex').slice(0, 20)}`;
}

/** The errno code a file tool expects for each refusal of a delivery read. */
const DELIVERY_ERRNO: Record<SandboxFileError['code'], string> = {
  FILE_NOT_FOUND: 'ENOENT',
  FILE_TOO_LARGE: 'EFBIG',
  FILE_CHANGED: 'EAGAIN',
  FILE_EXISTS: 'EEXIST',
  FILE_REFUSED: 'EACCES',
};

/** A file the message tool sends to the chat, read with `readSandboxFile`'s checks (the scope resolved now, by core). */
async function readForDelivery(berth: Berth, session: SessionContext, containerPath: string, maxBytes: number): Promise<Buffer> {
  try {
    return (await readSandboxFile(berth, berth.request({ session }), containerPath, { maxBytes })).bytes;
  } catch (error) {
    if (error instanceof SandboxFileError) throw new SandboxFsError(DELIVERY_ERRNO[error.code], containerPath, error.message);
    throw error;
  }
}

/**
 * The OpenClaw handle of one session's Berth sandbox. Commands are spawned as Berth's thin
 * socket client against the gateway's own server, so they run in the scope's warm shell session
 * (no engine exec per command); OpenClaw's own scripts and its file tools run in-process in the
 * same sandbox. The sandbox is named by the session key alone and decided by core on every call.
 */
export function createSandboxHandle(options: CreateSandboxHandleOptions): OpenClawSandboxBackendHandle {
  const { berth, socket, sessionKey, request } = options;
  const session: SessionContext = { sessionKey };
  const shell = createSandboxShell({ berth, session });
  const runtimeId = runtimeIdOf(request.scope.key);
  return {
    id: BERTH_SANDBOX_BACKEND_ID,
    runtimeId,
    runtimeLabel: runtimeId,
    workdir: SANDBOX_WORKSPACE,
    configLabel: berth.config.docker_image,
    configLabelKind: 'Image',
    capabilities: { browser: false },
    // The working folders exist in the sandbox, not on the gateway's disk: Berth checks them.
    workdirValidation: 'backend',
    workdirRoots: ['/'],
    async validateWorkdir(workdir) {
      // The workspace is the sandbox's mount point and always there: no command for OpenClaw's default.
      if (workdir === SANDBOX_WORKSPACE) return workdir;
      const result = await shell.run('cd -- "$1" && pwd', { args: [workdir] });
      return result.exitCode === 0 && result.stdout.trim() ? result.stdout.trim() : null;
    },

    async buildExecSpec({ command, workdir }) {
      const argv = sandboxCommandArgv({
        socket,
        sessionKey,
        command,
        ...(workdir ? { cwd: workdir } : {}),
        ...(options.node ? { node: options.node } : {}),
        ...(options.client ? { client: options.client } : {}),
      });
      return {
        // The session key and the command are in a private request file the client reads and
        // deletes; the argv, which every local user can read, names only that file.
        argv,
        // The client needs no variables: the sandbox's come from Berth (docker_env,
        // docker_forward_env, the user's own), never from the gateway's process.
        env: {},
        cwd: '/',
        stdinMode: 'pipe-closed',
        finalizeToken: requestFileOf(argv),
      };
    },

    // A spawn that failed (or a client killed before it read its request) leaves the file: gone here.
    async finalizeExec({ token }) {
      if (typeof token === 'string') discardRequestFile(token);
    },

    async runShellCommand({ script, args, stdin, allowFailure, signal }) {
      const result = await shell.run(script, { ...(args ? { args } : {}), ...(stdin !== undefined ? { stdin } : {}), ...(signal ? { signal } : {}) });
      if (result.exitCode !== 0 && !allowFailure) {
        const detail = result.stderr.trim().split('\n')[0] || `exit status ${result.exitCode}`;
        throw new Error(`a sandbox script failed in ${runtimeId} (exit ${result.exitCode}): ${detail}`);
      }
      return { stdout: Buffer.from(result.stdout), stderr: Buffer.from(result.stderr), code: result.exitCode };
    },

    createFsBridge: ({ sandbox }) =>
      createSandboxFsBridge({
        shell,
        hostWorkspaceDir: sandbox.workspaceDir || options.hostWorkspaceDir,
        readForDelivery: (containerPath, maxBytes) => readForDelivery(berth, session, containerPath, maxBytes),
      }),
  };
}
