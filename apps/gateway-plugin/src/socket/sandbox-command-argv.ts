import { execFileSync } from 'node:child_process';
import { accessSync, constants, existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { BerthError, isCommandTimeoutText, MAX_COMMAND_TIMEOUT_SECONDS, PLAIN_TASK_ID_PATTERN, platformAndUserTogether } from '@berth/core';
import { SANDBOX_SOCKET_PROTOCOL_VERSION, type SandboxSocketRequest } from './protocol.js';
import { writeRequestFile } from './request-file.js';

/**
 * Options of {@link sandboxCommandArgv}: the request's fields (whose sandbox, the command, its
 * directory and timeout) and how to reach the server.
 */
export interface SandboxCommandArgvOptions extends Omit<SandboxSocketRequest, 'v' | 'stdin' | 'reply'> {
  /** The socket `berth serve --socket` listens on. */
  readonly socket: string;
  /** Forward the spawned process's stdin to the command (otherwise its stdin is empty). @default false */
  readonly forwardStdin?: boolean;
  /**
   * Which client the argv spawns: `perl`, the small Perl client shipped in this package's
   * `client/` folder (starts in a few ms); `node`, `berth exec --socket` (Node's own start-up
   * costs tens of ms); `auto`, Perl when a `perl` with its `Socket` module is on the PATH, else Node.
   * @default 'auto'
   */
  readonly client?: 'auto' | 'perl' | 'node';
  /** The Perl binary for the Perl client. @default the `perl` found on the PATH */
  readonly perl?: string;
  /** The Node.js binary for the Node client. @default process.execPath */
  readonly node?: string;
  /** The `berth` CLI script for the Node client. @default this package's dist/cli.js */
  readonly cli?: string;
}

function invalid(message: string): BerthError {
  return new BerthError('ARGUMENT_INVALID', `sandboxCommandArgv: ${message}`);
}

/** The Perl client script: beside dist/ once built, two folders up from src/socket/ in the sources. */
export const PERL_SOCKET_CLIENT = [
  new URL('../client/berth-socket-client.pl', import.meta.url),
  new URL('../../client/berth-socket-client.pl', import.meta.url),
]
  .map((url) => fileURLToPath(url))
  .find((file) => existsSync(file));

let foundPerl: string | null | undefined;

/**
 * The `perl` on the PATH that can run the Perl client (its `Socket` module loads), or
 * undefined. Looked up once per process: one spawn of a few milliseconds.
 */
export function findPerl(): string | undefined {
  if (foundPerl !== undefined) return foundPerl ?? undefined;
  foundPerl = null;
  for (const folder of (process.env.PATH ?? '/usr/bin:/bin').split(path.delimiter)) {
    if (!path.isAbsolute(folder)) continue;
    const candidate = path.join(folder, 'perl');
    try {
      accessSync(candidate, constants.X_OK);
      execFileSync(candidate, ['-MSocket', '-e', '0'], { stdio: 'ignore', timeout: 10_000, env: {} });
      foundPerl = candidate;
      break;
    } catch {
      // Not here, or a perl without Socket: look further.
    }
  }
  return foundPerl ?? undefined;
}

/**
 * The argv a host spawns to run one command in a sandbox through `berth serve`. The request
 * (whose sandbox, the command, its directory and timeout) is written to a private file beside the
 * socket (`{socket folder}/.berth-requests/`, mode 0600, read and deleted by the client), and the
 * argv names only that file: every local user can read a process's argv in `/proc/<pid>/cmdline`.
 * With the Perl client: `[perl, berth-socket-client.pl, '--socket=…', …, '--request-file=…']`;
 * with the Node client: `[node, cli.js, 'exec', '--socket=…', '--request-file=…']`. Either
 * client exits with the command's status (124 after a timeout, 125 when Berth fails) and writes
 * its stdout and stderr to its own, byte for byte the same. Call it once per spawn: a request
 * file is read once. A host that never spawns the argv can delete the file with
 * `discardRequestFile(requestFileOf(argv))`.
 */
export function sandboxCommandArgv(options: SandboxCommandArgvOptions): string[] {
  if (!options.socket) throw invalid('socket is required: the path given to berth serve --socket');
  if (!options.command) throw invalid('command is empty; give the command line to run');
  if (!platformAndUserTogether(options.platform, options.userId)) throw invalid('platform and userId go together; give both');
  if (options.sessionKey !== undefined && options.platform !== undefined) throw invalid('give either sessionKey or platform and userId, not both');
  if (options.timeout !== undefined && !isCommandTimeoutText(String(options.timeout))) {
    throw invalid(`timeout ${options.timeout} is not a number of seconds between 0 and ${MAX_COMMAND_TIMEOUT_SECONDS}`);
  }
  // The names `berth exec --task` accepts, whichever client is spawned.
  if (options.taskId !== undefined && !PLAIN_TASK_ID_PATTERN.test(options.taskId))
    throw invalid(`taskId ${JSON.stringify(options.taskId.slice(0, 60))} is not a plain name; use up to 128 letters, digits, ".", "_" or "-"`);
  const client = options.client ?? 'auto';
  if (client !== 'node') {
    const perl = options.perl ?? findPerl();
    if (perl && PERL_SOCKET_CLIENT) return perlArgv(perl, PERL_SOCKET_CLIENT, options);
    if (client === 'perl')
      throw invalid(
        perl
          ? 'the Perl client script is missing from this package; reinstall @berth/gateway-plugin'
          : 'no perl with its Socket module on the PATH; install perl, give perl, or use client "node"',
      );
  }
  const cli = options.cli ?? fileURLToPath(new URL('./cli.js', import.meta.url));
  const socket = path.resolve(options.socket);
  const argv = [options.node ?? process.execPath, cli, 'exec', `--socket=${socket}`, `--request-file=${writeRequestFile(socket, requestOf(options))}`];
  if (options.forwardStdin) argv.push('--stdin');
  return argv;
}

/** The request file an argv of {@link sandboxCommandArgv} names. */
export function requestFileOf(argv: readonly string[]): string | undefined {
  return argv.find((word) => word.startsWith('--request-file='))?.slice('--request-file='.length);
}

/** The request either client sends (the server checks it); the Perl client asks for a framed reply. */
function requestOf(options: SandboxCommandArgvOptions, reply?: 'framed'): SandboxSocketRequest {
  return {
    v: SANDBOX_SOCKET_PROTOCOL_VERSION,
    ...(options.sessionKey !== undefined ? { sessionKey: options.sessionKey } : {}),
    ...(options.platform !== undefined && options.userId !== undefined ? { platform: options.platform, userId: options.userId } : {}),
    ...(options.taskId !== undefined ? { taskId: options.taskId } : {}),
    ...(options.profile !== undefined ? { profile: options.profile } : {}),
    command: options.command,
    ...(options.cwd !== undefined ? { cwd: options.cwd } : {}),
    ...(options.timeout !== undefined ? { timeout: options.timeout } : {}),
    ...(reply ? { reply } : {}),
  };
}

function perlArgv(perl: string, script: string, options: SandboxCommandArgvOptions): string[] {
  const socket = path.resolve(options.socket);
  const argv = [perl, script, `--socket=${socket}`];
  if (options.timeout !== undefined) argv.push(`--timeout=${options.timeout}`);
  if (options.forwardStdin) argv.push('--stdin');
  argv.push(`--request-file=${writeRequestFile(socket, requestOf(options, 'framed'))}`);
  return argv;
}
