import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parse as parseYaml, YAMLParseError } from 'yaml';
import type { z } from 'zod';
import { ConfigError } from './errors.js';
import { hermesHome } from './host-layout.js';
import { misspeltKey } from './misspelt-key.js';
import { BERTH_PROVIDER_NAME, IGNORED_GATEWAY_KEYS, type TerminalConfig, terminalConfigSchema } from './terminal-config-schema.js';

/** Where a configuration came from, for `berth doctor` and messages. */
export interface LoadedConfig {
  readonly config: TerminalConfig;
  /** The file read, or `undefined` when defaults were used. */
  readonly file: string | undefined;
}

function describeValue(value: unknown): string {
  if (value === undefined) return 'nothing';
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'a list';
  if (typeof value === 'object') return 'a mapping';
  if (typeof value === 'string') return `the string ${JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value)}`;
  return String(value);
}

/** Expected forms for keys whose schema is a union (zod only says "Invalid input" there). */
const EXPECTED_FORM: Record<string, string> = {
  docker_env: 'expected a string, number or boolean value',
  container_memory: 'expected megabytes as a number (5120) or a size like "512m" or "2g"',
  docker_max_running: 'expected "auto" or a whole number of sandboxes (0: no cap)',
  docker_total_memory: 'expected "auto", megabytes as a number (20000) or a size like "20g"',
  docker_total_pids: 'expected "auto" or a whole number of processes (at least 64)',
  docker_tmp_size: 'expected megabytes as a number (512) or a size like "512m"',
  container_disk: 'expected megabytes as a number (51200), a size like "50g", or 0 for no limit',
};

/** Turns zod's wording into "expected …" in plain words. */
function expectation(issue: z.core.$ZodIssue): string {
  // A mapping's key (a variable name) that its rule refuses: zod says only "Invalid key in record".
  if (issue.code === 'invalid_key') return `${issue.issues[0]?.message ?? 'expected a different key'}, not ${JSON.stringify(String(issue.path.at(-1)))}`;
  const message = issue.message.replace(/^Invalid input: /, '').replace(/, received .*$/, '');
  if (message === 'Invalid input') return EXPECTED_FORM[String(issue.path[0])] ?? 'expected a different kind of value (see docs/configuration.md)';
  const bound = /^Too (?:small|big): expected (\w+) to (?:be|have) (.+)$/.exec(message);
  if (bound) {
    const limit = bound[2]!.replace('>=', 'at least ').replace('<=', 'at most ').replace('>', 'more than ').replace('<', 'less than ');
    return `expected ${bound[1] === 'array' ? 'a list with' : `a ${bound[1]}`} ${limit}`;
  }
  const option = /^Invalid option: expected one of (.+)$/.exec(message);
  if (option) return `expected one of ${option[1]!.split('|').join(', ')}`;
  const type = /^expected (\w+)$/.exec(message);
  if (type) return `expected ${type[1] === 'array' ? 'a list' : type[1] === 'object' || type[1] === 'record' ? 'a mapping' : `a ${type[1]}`}`;
  return message;
}

function valueAt(root: unknown, keyPath: readonly PropertyKey[]): unknown {
  let current = root;
  for (const key of keyPath) {
    if (current === null || typeof current !== 'object') return undefined;
    current = (current as Record<PropertyKey, unknown>)[key];
  }
  return current;
}

/** Every key the schema takes, and those of them Berth itself reads (not the host's ignored ones). */
const KNOWN_KEYS = new Set(Object.keys(terminalConfigSchema.shape));
const IGNORED = new Set<string>(IGNORED_GATEWAY_KEYS);
const BERTH_KEYS = [...KNOWN_KEYS].filter((key) => !IGNORED.has(key)).sort();

/** The unknown keys each parsed config was given, for its warning line (a copy of the config has none). */
const unknownKeysOf = new WeakMap<TerminalConfig, readonly string[]>();

/** A key as a message may show it: as written when it is a plain name, else quoted, and never long. */
function printableKey(key: string): string {
  const short = key.length > 64 ? `${key.slice(0, 64)}…` : key;
  return /^[A-Za-z0-9_.-]+$/.test(short) ? short : JSON.stringify(short);
}

/**
 * Takes the keys that neither Berth nor its host knows out of `input`: a misspelling of a Berth
 * key throws (naming the nearest one), any other is accepted and returned, to be named in the
 * warning line. Values are never looked at.
 */
function setAsideUnknownKeys(input: unknown, source: string): { known: unknown; unknown: string[] } {
  if (input === null || typeof input !== 'object' || Array.isArray(input)) return { known: input, unknown: [] };
  const known: Record<string, unknown> = {};
  const unknown: string[] = [];
  for (const [key, value] of Object.entries(input)) {
    if (KNOWN_KEYS.has(key)) {
      known[key] = value;
      continue;
    }
    const full = `${source}.${printableKey(key)}`;
    const misspelt = misspeltKey(key, BERTH_KEYS);
    if (misspelt) {
      const hint = misspelt.suggestion ? ` (did you mean ${source}.${misspelt.suggestion}?)` : '';
      throw new ConfigError(full, `unknown key ${full}${hint}; remove it or check its spelling (known keys are listed in docs/configuration.md)`);
    }
    unknown.push(key);
  }
  return { known, unknown };
}

/**
 * Validates a parsed `terminal:` section. Throws `ConfigError` naming the first offending key,
 * what it holds and what was expected; a key that looks like a misspelling of a Berth key is one
 * (with the key it resembles). A key that neither Berth nor its host knows and that resembles no
 * Berth key is accepted and named by {@link describeIgnoredKeys}.
 */
export function parseTerminalConfig(section: unknown, source = 'terminal'): TerminalConfig {
  const { known: input, unknown } = setAsideUnknownKeys(section ?? {}, source);
  const result = terminalConfigSchema.safeParse(input);
  if (result.success) {
    const forwarded = [...new Set([...result.data.docker_forward_env, ...result.data.env_passthrough])];
    const config: TerminalConfig = { ...result.data, docker_forward_env: forwarded };
    if (unknown.length > 0) unknownKeysOf.set(config, unknown);
    return config;
  }
  const issue = result.error.issues[0]!;
  if (issue.code === 'unrecognized_keys') {
    const key = issue.keys[0]!;
    const full = [source, ...issue.path.map(String), printableKey(key)].join('.');
    throw new ConfigError(full, `unknown key ${full}; remove it or check its spelling (known keys are listed in docs/configuration.md)`);
  }
  const keyPath = issue.path.map(String);
  const full = [source, ...keyPath].join('.');
  const given = valueAt(input, issue.path as PropertyKey[]);
  const expected = expectation(issue);
  const redacted = /env|token|secret|key|password/i.test(keyPath.join('.')) && typeof given === 'string' ? 'a string' : describeValue(given);
  throw new ConfigError(full, `${full} is ${redacted}: ${expected}`);
}

/** At most this many names in the warning line; the rest are counted. */
const MAX_NAMED = 20;

function nameList(names: readonly string[]): string {
  const shown = names.slice(0, MAX_NAMED).join(', ');
  return names.length > MAX_NAMED ? `${shown} and ${names.length - MAX_NAMED} more` : shown;
}

/**
 * The one warning line for the keys a config sets that Berth accepts and does not use, or
 * `undefined` when it sets none: the host's own settings ({@link IGNORED_GATEWAY_KEYS}), other
 * terminal providers' settings (`terminal.backends.<name>`) and keys unknown to Berth that
 * resemble none of its own. Names only, never values. `berth serve`, `berth exec`, `berth
 * doctor` and the plugin's `register()` write it once.
 */
export function describeIgnoredKeys(config: TerminalConfig, source = 'terminal'): string | undefined {
  const host = IGNORED_GATEWAY_KEYS.filter((key) => (config as Record<string, unknown>)[key] !== undefined).map((key) => `${source}.${key}`);
  const providers = Object.keys(config.backends ?? {})
    .filter((name) => name !== BERTH_PROVIDER_NAME)
    .map((name) => `${source}.backends.${printableKey(name)}`);
  const unknown = (unknownKeysOf.get(config) ?? []).map((key) => `${source}.${printableKey(key)}`);
  const parts = [
    host.length > 0 ? `${nameList(host)}: Hermes settings with no meaning for a Berth sandbox` : undefined,
    providers.length > 0 ? `${nameList(providers)}: other terminal providers' settings` : undefined,
    unknown.length > 0 ? `${nameList(unknown)}: unknown to Berth, so check the spelling of any meant for Berth` : undefined,
  ].filter((part): part is string => part !== undefined);
  if (parts.length === 0) return undefined;
  return `berth: ignoring ${parts.join('; ')} (see docs/configuration.md)`;
}

/** The default config file: `${HERMES_HOME:-~/.hermes}/config.yaml`. */
export function defaultConfigPath(environment: NodeJS.ProcessEnv = process.env): string {
  return path.join(hermesHome(environment), 'config.yaml');
}

/** Parses YAML text and validates its `terminal:` section. */
export function parseConfigText(text: string, file: string): TerminalConfig {
  let document: unknown;
  try {
    document = parseYaml(text, { prettyErrors: true, uniqueKeys: true, logLevel: 'error' });
  } catch (error) {
    const where = error instanceof YAMLParseError && error.linePos ? ` at line ${error.linePos[0].line}, column ${error.linePos[0].col}` : '';
    const reason = error instanceof Error ? error.message.split('\n')[0]!.replace(/ at line \d+, column \d+:?$/, '') : String(error);
    throw new ConfigError('', `${file} is not valid YAML${where}: ${reason}; fix the file`, { cause: error });
  }
  if (document === null || document === undefined) return parseTerminalConfig({});
  if (typeof document !== 'object' || Array.isArray(document)) {
    throw new ConfigError('', `${file} must hold a mapping with a terminal: section, not ${describeValue(document)}`);
  }
  const terminal = (document as Record<string, unknown>).terminal;
  if (terminal !== undefined && terminal !== null && (typeof terminal !== 'object' || Array.isArray(terminal))) {
    throw new ConfigError('terminal', `terminal in ${file} is ${describeValue(terminal)}: expected a mapping of settings`);
  }
  return parseTerminalConfig(terminal ?? {});
}

/**
 * Loads the config: the explicit `file` (which must exist), else the default file when it
 * exists, else the defaults.
 */
export function loadConfig(options: { file?: string; environment?: NodeJS.ProcessEnv } = {}): LoadedConfig {
  const environment = options.environment ?? process.env;
  const file = options.file ?? defaultConfigPath(environment);
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' && options.file === undefined) return { config: parseTerminalConfig({}), file: undefined };
    const reason =
      code === 'ENOENT' ? 'does not exist' : code === 'EACCES' ? 'is not readable' : code === 'EISDIR' ? 'is a folder' : `cannot be read (${code})`;
    throw new ConfigError('', `config file ${file} ${reason}; pass an existing file with --config or remove the option`, { cause: error });
  }
  return { config: parseConfigText(text, file), file };
}
