import { fileURLToPath } from 'node:url';
import { BerthError } from '@berth/core';
import type { SandboxSocketRequest } from './protocol.js';

/**
 * Options of {@link sandboxCommandArgv}: the request's fields (whose sandbox, the command, its
 * directory and timeout) and how to reach the server.
 */
export interface SandboxCommandArgvOptions extends Omit<SandboxSocketRequest, 'v' | 'stdin'> {
  /** The socket `berth serve --socket` listens on. */
  readonly socket: string;
  /** Forward the spawned process's stdin to the command (otherwise its stdin is empty). @default false */
  readonly forwardStdin?: boolean;
  /** The Node.js binary. @default process.execPath */
  readonly node?: string;
  /** The `berth` CLI script. @default this package's dist/cli.js */
  readonly cli?: string;
}

function invalid(message: string): BerthError {
  return new BerthError('ARGUMENT_INVALID', `sandboxCommandArgv: ${message}`);
}

/**
 * The argv a host spawns to run one command in a sandbox through `berth serve`:
 * `[node, cli.js, 'exec', '--socket=…', '--session-key=…', '--', command]`. Values are passed
 * as `--name=value`, so one starting with `-` is never read as an option, and the command
 * follows `--` as a single word. The spawned client exits with the command's status (124 after
 * a timeout, 125 when Berth fails) and writes its stdout and stderr to its own.
 */
export function sandboxCommandArgv(options: SandboxCommandArgvOptions): string[] {
  if (!options.socket) throw invalid('socket is required: the path given to berth serve --socket');
  if (!options.command) throw invalid('command is empty; give the command line to run');
  if ((options.platform === undefined) !== (options.userId === undefined)) throw invalid('platform and userId go together; give both');
  if (options.sessionKey !== undefined && options.platform !== undefined) throw invalid('give either sessionKey or platform and userId, not both');
  if (options.timeout !== undefined && !(options.timeout > 0 && options.timeout <= 86_400)) throw invalid(`timeout ${options.timeout} is not a number of seconds between 0 and 86400`);
  const cli = options.cli ?? fileURLToPath(new URL('./cli.js', import.meta.url));
  const argv = [options.node ?? process.execPath, cli, 'exec', `--socket=${options.socket}`];
  if (options.sessionKey !== undefined) argv.push(`--session-key=${options.sessionKey}`);
  if (options.platform !== undefined) argv.push(`--platform=${options.platform}`, `--user=${options.userId}`);
  if (options.taskId !== undefined) argv.push(`--task=${options.taskId}`);
  if (options.timeout !== undefined) argv.push(`--timeout=${options.timeout}`);
  if (options.cwd !== undefined) argv.push(`--cwd=${options.cwd}`);
  if (options.forwardStdin) argv.push('--stdin');
  argv.push('--', options.command);
  return argv;
}
