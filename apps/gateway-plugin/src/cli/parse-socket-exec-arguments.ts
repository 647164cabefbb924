import { parseArgs } from 'node:util';
import { isCommandTimeoutText, MAX_COMMAND_TIMEOUT_SECONDS, PLAIN_TASK_ID_PATTERN, platformAndUserTogether } from '@berth/core/request-protocol';
import { SANDBOX_SOCKET_PROTOCOL_VERSION, type SandboxSocketRequest } from '../socket/protocol.js';

// The spawned client's parser: it must not import @berth/core's main entry (see
// request-sandbox-exec.ts), so it keeps its own error type; its limits are core's request
// protocol, which imports nothing.

/** A mistake on a `berth exec --socket` command line. */
export class SocketExecUsageError extends Error {
  readonly code = 'USAGE';
}

/** A parsed `berth exec --socket` command line. */
export type SocketExecArguments = {
  readonly socket: string;
  /** Forward this process's stdin to the command. */
  readonly forwardStdin: boolean;
} & (
  | { readonly request: SandboxSocketRequest; readonly requestFile?: undefined }
  /** The request is in a private file (`sandboxCommandArgv` writes it), read once by the client. */
  | { readonly request?: undefined; readonly requestFile: string }
);

function shorten(value: string, max = 60): string {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what it replaces
  const printable = value.replace(/[\u0000-\u001f\u007f]/g, '?');
  return JSON.stringify(printable.length > max ? `${printable.slice(0, max)}… (${value.length} characters)` : printable);
}

/** True when `argv` is `exec … --socket …` (before `--`) and asks for no help: the fast client path. */
export function isSocketExec(argv: readonly string[]): boolean {
  if (argv[0] !== 'exec') return false;
  const separator = argv.indexOf('--');
  const options = separator < 0 ? argv.slice(1) : argv.slice(1, separator);
  if (options.some((word) => word === '--help' || word === '-h')) return false;
  return options.some((word) => word === '--socket' || word.startsWith('--socket='));
}

/**
 * Parses `exec --socket PATH [--session-key KEY | --platform P --user ID] [--task T]
 * [--timeout S] [--cwd DIR] [--stdin] -- COMMAND…` into a socket request. Throws
 * {@link SocketExecUsageError} with a one-line message.
 */
export function parseSocketExecArguments(argv: readonly string[]): SocketExecArguments {
  const rest = argv[0] === 'exec' ? argv.slice(1) : [...argv];
  const separator = rest.indexOf('--');
  const optionWords = separator < 0 ? rest : rest.slice(0, separator);
  let parsed: ReturnType<typeof parseWords>;
  try {
    parsed = parseWords(optionWords);
  } catch (error) {
    const message = (error as Error).message.split('\n')[0]!.replace(/\. To specify a positional argument.*$/, '');
    throw new SocketExecUsageError(`berth exec: ${message}; run "berth exec --help"`);
  }
  const { values, positionals } = parsed;
  if (values.config !== undefined) throw new SocketExecUsageError('berth exec: --config is read by berth serve, not by a --socket client; drop it');
  if (values['request-file'] !== undefined) {
    const others = ['session-key', 'platform', 'user', 'task', 'timeout', 'cwd'].filter((name) => values[name as keyof typeof values] !== undefined);
    if (others.length > 0 || positionals.length > 0 || separator >= 0) {
      throw new SocketExecUsageError(
        `berth exec: --request-file carries the whole request; drop ${others.length > 0 ? others.map((name) => `--${name}`).join(', ') : 'the command'}`,
      );
    }
    if (!values.socket) throw new SocketExecUsageError('berth exec: --socket needs the path berth serve listens on');
    return { socket: values.socket, requestFile: values['request-file'], forwardStdin: values.stdin === true };
  }
  if (positionals.length > 0 && separator < 0)
    throw new SocketExecUsageError('berth exec: put the command after "--", e.g. berth exec --socket PATH -- ls -la');
  const words = [...positionals, ...(separator < 0 ? [] : rest.slice(separator + 1))];
  if (words.length === 0) throw new SocketExecUsageError('berth exec: no command given; add it after "--", e.g. berth exec --socket PATH -- ls -la');
  const socket = values.socket;
  if (!socket) throw new SocketExecUsageError('berth exec: --socket needs the path berth serve listens on');
  const hasUser = values.platform !== undefined || values.user !== undefined;
  if (!platformAndUserTogether(values.platform, values.user)) {
    throw new SocketExecUsageError('berth exec: --platform and --user go together; give both, e.g. --platform telegram --user 123456789');
  }
  if (hasUser && values['session-key'] !== undefined) throw new SocketExecUsageError('berth exec: give either --session-key or --platform/--user, not both');
  if (values['session-key'] === '')
    throw new SocketExecUsageError('berth exec: --session-key is empty; give the host session key, e.g. agent:main:telegram:direct:123');
  if (values.task !== undefined && !PLAIN_TASK_ID_PATTERN.test(values.task)) {
    throw new SocketExecUsageError(
      `berth exec: task id ${shorten(values.task)} is not a plain name; use up to 128 letters, digits, ".", "_" or "-", starting with a letter or digit`,
    );
  }
  let timeout: number | undefined;
  if (values.timeout !== undefined) {
    timeout = Number(values.timeout);
    if (!isCommandTimeoutText(values.timeout)) {
      throw new SocketExecUsageError(
        `berth exec: --timeout ${shorten(values.timeout)} is not a number of seconds between 0 and ${MAX_COMMAND_TIMEOUT_SECONDS}`,
      );
    }
  }
  const request: SandboxSocketRequest = {
    v: SANDBOX_SOCKET_PROTOCOL_VERSION,
    ...(values['session-key'] !== undefined ? { sessionKey: values['session-key'] } : {}),
    ...(values.platform !== undefined && values.user !== undefined ? { platform: values.platform, userId: values.user } : {}),
    ...(values.task !== undefined ? { taskId: values.task } : {}),
    ...(values.profile !== undefined ? { profile: values.profile } : {}),
    command: words.join(' '),
    ...(values.cwd !== undefined ? { cwd: values.cwd } : {}),
    ...(timeout !== undefined ? { timeout } : {}),
  };
  return { socket, request, forwardStdin: values.stdin === true };
}

function parseWords(words: readonly string[]) {
  return parseArgs({
    args: [...words],
    options: {
      socket: { type: 'string' },
      'session-key': { type: 'string' },
      platform: { type: 'string' },
      user: { type: 'string' },
      task: { type: 'string' },
      profile: { type: 'string' },
      timeout: { type: 'string' },
      cwd: { type: 'string' },
      stdin: { type: 'boolean' },
      config: { type: 'string' },
      'request-file': { type: 'string' },
    },
    strict: true,
    allowPositionals: true,
  });
}
