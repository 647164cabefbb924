import { parseArgs } from 'node:util';
import {
  BerthError,
  isCommandTimeoutText,
  LISTEN_ADDRESS_FORMS,
  MAX_COMMAND_TIMEOUT_SECONDS,
  parseListenAddress,
  PLAIN_TASK_ID_PATTERN,
  platformAndUserTogether,
  truncateForMessage,
  type ListenAddress,
} from '@berth/core';

/** A mistake on the command line; the CLI prints it in one line and exits 125. */
export class UsageError extends BerthError {
  constructor(message: string) {
    super('USAGE', message);
  }
}

/** The commands of `berth`. */
export const COMMANDS = ['exec', 'ls', 'rm', 'env', 'doctor', 'demo', 'serve', 'top'] as const;
/** One command of `berth`. */
export type CommandName = (typeof COMMANDS)[number];

/** Options each command accepts, besides `--config` and `--help`. */
const COMMAND_OPTIONS = {
  exec: ['platform', 'user', 'task', 'timeout', 'cwd', 'session-key', 'profile', 'socket', 'stdin'],
  ls: ['json'],
  rm: ['platform', 'user', 'session-key', 'profile', 'task', 'purge'],
  env: ['platform', 'user', 'session-key', 'profile', 'json'],
  doctor: ['json'],
  demo: ['json'],
  serve: ['socket', 'metrics'],
  top: ['once', 'json', 'interval'],
} as const satisfies Record<CommandName, readonly string[]>;

const OPTION_TYPES = {
  platform: { type: 'string' },
  user: { type: 'string' },
  task: { type: 'string' },
  timeout: { type: 'string' },
  cwd: { type: 'string' },
  'session-key': { type: 'string' },
  profile: { type: 'string' },
  socket: { type: 'string' },
  metrics: { type: 'string' },
  stdin: { type: 'boolean' },
  json: { type: 'boolean' },
  purge: { type: 'boolean' },
  config: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
  // berth top
  once: { type: 'boolean' },
  interval: { type: 'string' },
} as const;

/** The values a command line gave. */
export interface CliOptions {
  platform?: string;
  user?: string;
  task?: string;
  timeout?: number;
  cwd?: string;
  /** A host session key, e.g. `agent:main:telegram:direct:123`. */
  sessionKey?: string;
  /** The host profile of the sandbox (`--profile`); the default profile's when absent. */
  profile?: string;
  /** The Unix socket of `berth serve`. */
  socket?: string;
  /** Where `berth serve` serves Prometheus metrics (`--metrics ADDR`). */
  metrics?: ListenAddress;
  /** Forward stdin to the command (`exec --socket` only). */
  stdin?: boolean;
  json: boolean;
  purge: boolean;
  config?: string;
  /** `berth top`: one table (or JSON) and leave. */
  once?: boolean;
  /** `berth top`: seconds between refreshes of the live table. */
  interval?: number;
}

/** A parsed command line. */
export type ParsedCommandLine =
  | { readonly kind: 'help'; readonly command?: CommandName }
  | { readonly kind: 'version' }
  | { readonly kind: 'command'; readonly command: CommandName; readonly options: CliOptions; readonly commandWords: readonly string[] };

/** The options that take a value (`--name VALUE`). */
const VALUE_OPTIONS = new Set(
  Object.entries(OPTION_TYPES)
    .filter(([, spec]) => spec.type === 'string')
    .map(([name]) => `--${name}`),
);

/**
 * `--timeout -1` as `--timeout=-1`: a value that starts with a dash would read as an option to
 * parseArgs, which says only "argument is ambiguous"; joined to its option, it gets the check
 * that option has, in one line naming the value.
 */
function joinDashValues(words: readonly string[]): string[] {
  const joined: string[] = [];
  for (let index = 0; index < words.length; index++) {
    const word = words[index]!;
    const next = words[index + 1];
    if (VALUE_OPTIONS.has(word) && next !== undefined && /^-[^-]/.test(next)) {
      joined.push(`${word}=${next}`);
      index++;
    } else joined.push(word);
  }
  return joined;
}

function isCommand(value: string | undefined): value is CommandName {
  return (COMMANDS as readonly string[]).includes(value ?? '');
}

/**
 * Parses `berth COMMAND [options] [-- words…]` with `node:util`'s `parseArgs`. Everything after
 * the first `--` belongs to the command run by `exec`. Throws {@link UsageError} on unknown
 * commands or options, missing values, and combinations that name no single sandbox.
 */
export function parseCliArguments(argv: readonly string[]): ParsedCommandLine {
  const [first, ...rest] = argv;
  if (first === undefined || first === '--help' || first === '-h' || first === 'help') {
    const topic = first === 'help' ? rest[0] : undefined;
    if (topic !== undefined && !isCommand(topic))
      throw new UsageError(`unknown command ${JSON.stringify(truncateForMessage(topic))}; run "berth --help" for the list`);
    return topic ? { kind: 'help', command: topic } : { kind: 'help' };
  }
  if (first === '--version' || first === '-V') return { kind: 'version' };
  if (!isCommand(first)) throw new UsageError(`unknown command ${JSON.stringify(truncateForMessage(first))}; run "berth --help" for the list`);
  const command = first;
  const separator = rest.indexOf('--');
  const optionWords = joinDashValues(separator < 0 ? rest : rest.slice(0, separator));
  const afterSeparator = separator < 0 ? [] : rest.slice(separator + 1);
  const allowed = [...COMMAND_OPTIONS[command], 'config', 'help'];
  const options = Object.fromEntries(allowed.map((name) => [name, OPTION_TYPES[name as keyof typeof OPTION_TYPES]]));
  let parsed: { values: Record<string, string | boolean | undefined>; positionals: string[] };
  try {
    parsed = parseArgs({ args: [...optionWords], options, strict: true, allowPositionals: true });
  } catch (error) {
    const message = (error as Error).message.split('\n')[0]!.replace(/\. To specify a positional argument.*$/, '');
    throw new UsageError(`berth ${command}: ${message}; run "berth ${command} --help"`);
  }
  if (parsed.values.help === true) return { kind: 'help', command };
  const values = parsed.values;
  if (command === 'exec') {
    if (parsed.positionals.length > 0 && separator < 0) {
      throw new UsageError('berth exec: put the command after "--", e.g. berth exec --task default -- ls -la');
    }
  } else if (parsed.positionals.length > 0 || separator >= 0) {
    throw new UsageError(
      `berth ${command}: unexpected argument ${JSON.stringify(truncateForMessage(String(parsed.positionals[0] ?? '--')))}; run "berth ${command} --help"`,
    );
  }
  const commandWords = command === 'exec' ? [...parsed.positionals, ...afterSeparator] : [];
  if (command === 'exec' && commandWords.length === 0) throw new UsageError('berth exec: no command given; add it after "--", e.g. berth exec -- ls -la');

  const result: CliOptions = { json: values.json === true, purge: values.purge === true };
  if (values.stdin === true) result.stdin = true;
  for (const name of ['platform', 'user', 'task', 'cwd', 'config', 'socket', 'profile'] as const) {
    const value = values[name];
    if (typeof value === 'string') result[name] = value;
  }
  if (typeof values['session-key'] === 'string') result.sessionKey = values['session-key'];
  if (typeof values.timeout === 'string') {
    const timeout = Number(values.timeout);
    if (!isCommandTimeoutText(values.timeout)) {
      throw new UsageError(
        `berth exec: --timeout ${JSON.stringify(truncateForMessage(values.timeout))} is not a ` +
          `number of seconds above 0 and at most ${MAX_COMMAND_TIMEOUT_SECONDS}, e.g. --timeout 60`,
      );
    }
    result.timeout = timeout;
  }
  if (typeof values.metrics === 'string') {
    const address = parseListenAddress(values.metrics);
    if (!address) {
      throw new UsageError(
        `berth serve: --metrics ${JSON.stringify(truncateForMessage(values.metrics))} is not a listen address; give ${LISTEN_ADDRESS_FORMS}`,
      );
    }
    result.metrics = address;
  }
  if (command === 'top') Object.assign(result, topOptions(values));
  validateTarget(command, result);
  return { kind: 'command', command, options: result, commandWords };
}

function validateTarget(command: CommandName, options: CliOptions): void {
  const hasUser = options.platform !== undefined || options.user !== undefined;
  if (command === 'serve' && !options.socket)
    throw new UsageError('berth serve: --socket PATH is required, e.g. berth serve --socket ~/.hermes/run/berth.sock');
  if (!['exec', 'rm', 'env'].includes(command)) return;
  if (!platformAndUserTogether(options.platform, options.user)) {
    throw new UsageError(`berth ${command}: --platform and --user go together; give both, e.g. --platform telegram --user 123456789`);
  }
  // An empty id names nobody: refused here rather than taken for "no user" (the shared task sandbox).
  if (options.user === '') throw new UsageError(`berth ${command}: --user is empty; give the user's id on that platform, e.g. --user 123456789`);
  if (command === 'exec' && options.stdin && options.socket === undefined) throw new UsageError('berth exec: --stdin works with --socket only');
  if (options.sessionKey !== undefined) {
    if (hasUser) throw new UsageError(`berth ${command}: give either --session-key or --platform/--user, not both`);
    if (options.sessionKey === '')
      throw new UsageError(`berth ${command}: --session-key is empty; give the host session key, e.g. agent:main:telegram:direct:123`);
  }
  // Through berth serve (and with a session key) the task is the fallback scope of a request
  // that names no user; a direct --platform/--user names the user's sandbox outright.
  if (hasUser && options.task !== undefined && options.socket === undefined) {
    throw new UsageError(`berth ${command}: give either --platform/--user or --task, not both`);
  }
  if (command === 'env' && !hasUser && options.sessionKey === undefined) {
    throw new UsageError('berth env: --platform and --user (or --session-key) are required, e.g. berth env --platform telegram --user 123456789');
  }
  if (command === 'rm' && !hasUser && options.task === undefined && options.sessionKey === undefined) {
    throw new UsageError('berth rm: name the sandbox with --platform P --user ID, --session-key KEY or --task T');
  }
  if (options.task !== undefined && !PLAIN_TASK_ID_PATTERN.test(options.task)) {
    throw new UsageError(
      `berth ${command}: task id ${JSON.stringify(truncateForMessage(options.task))} is not a plain name; ` +
        'use up to 128 letters, digits, ".", "_" or "-", starting with a letter or digit',
    );
  }
}

/** The most and least seconds between `berth top`'s refreshes. */
const TOP_INTERVAL_RANGE = [0.5, 3600] as const;

/** `berth top`'s own options: `--once`, `--interval S`, and `--json` only with `--once`. */
function topOptions(values: Record<string, string | boolean | undefined>): Pick<CliOptions, 'once' | 'interval'> {
  const once = values.once === true;
  if (values.json === true && !once) throw new UsageError('berth top: --json needs --once (the live table is for a terminal); e.g. berth top --once --json');
  if (typeof values.interval !== 'string') return { once };
  if (once) throw new UsageError('berth top: --interval is for the live table, not --once; drop one of them');
  const interval = Number(values.interval);
  if (!/^\d+(?:\.\d+)?$/.test(values.interval) || interval < TOP_INTERVAL_RANGE[0] || interval > TOP_INTERVAL_RANGE[1]) {
    throw new UsageError(
      `berth top: --interval ${JSON.stringify(truncateForMessage(values.interval))} is not a number of seconds from ` +
        `${TOP_INTERVAL_RANGE[0]} to ${TOP_INTERVAL_RANGE[1]}, e.g. --interval 5`,
    );
  }
  return { once, interval };
}
