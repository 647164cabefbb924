import { reservedVariableReason } from './reserved-variables.js';
import { AmbiguousVariableError } from './errors.js';
import { formatIdentity, PLATFORM_NAME_PATTERN, type Identity } from './identity.js';
import type { PlatformRegistry } from './platform-registry.js';

/** One user variable found in the gateway's environment. */
export interface UserVariable {
  /** The full name in the gateway's environment, e.g. `HERMES_USER_TELEGRAM_1_GITHUB_TOKEN`. */
  readonly source: string;
  /** The name inside the sandbox, e.g. `GITHUB_TOKEN`. */
  readonly name: string;
  readonly value: string;
}

/** How one user variable is read: whose it is and as which name, and who it may have been meant for. */
export interface UserVariableReading {
  readonly source: string;
  /** The identity it reaches, e.g. `signal:ab`. */
  readonly identity: string;
  /** The name it has in that sandbox. */
  readonly name: string;
  /**
   * When the name looks written for another user, one the env form escapes (an id with `_`,
   * `-` or `.`, or upper-case letters: `HERMES_USER_SIGNAL_AB_CD_TOKEN` meant for `signal:ab_cd`),
   * that user and the name to write instead.
   */
  readonly meantFor?: { readonly identity: string; readonly source: string; readonly name: string };
}

/**
 * The gateway's environment, indexed once: user variables grouped by platform and env form,
 * so resolving one user's variables touches only that user's entries. Variables under the
 * prefix that name no user unambiguously are kept aside in `refused`, never forwarded.
 */
export interface EnvironmentIndex {
  /** The prefix this index was built for, e.g. `HERMES_USER`. */
  readonly prefix: string;
  /** The user variables of an identity, in name order. */
  variablesOf(identity: Identity): readonly UserVariable[];
  /** The variables under the prefix that were refused, with the reason. */
  readonly refused: readonly AmbiguousVariableError[];
  /** The gateway's environment the index was built from. */
  readonly environment: Readonly<Record<string, string | undefined>>;
  /** `{PREFIX}_{PLATFORM}_{ENVFORM}_`: what an operator writes before a variable for `identity`. */
  prefixFor(identity: Identity): string;
  /** Each user variable's name, with how many users have one of that name (`berth doctor`). */
  userVariableNames(): ReadonlyMap<string, number>;
  /** Every user variable as it is read, with a likely other meaning where there is one (`berth doctor`, `berth env`). */
  readings(): readonly UserVariableReading[];
}

const VARIABLE_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * Indexes `environment` for the user-variable prefix. A name `{PREFIX}_{P}_{E}_{VAR}` is read
 * one way only: `P` and `E` contain no `_` (core forbids it in platform names and env forms),
 * so the first two `_` after the prefix end them. It is refused when `P` is not a platform
 * name, when `E` is not the exact env form of a canonical id on that platform (lower case,
 * `0123` for Telegram, an escape written two ways), when `VAR` is empty, invalid, reserved
 * (`PATH`, `HOME`, `HOSTNAME`) or one of Berth's own (`__berth…`), or when the value holds a NUL.
 */
export function createEnvironmentIndex(
  environment: Readonly<Record<string, string | undefined>>,
  options: { prefix: string; registry: PlatformRegistry },
): EnvironmentIndex {
  const { prefix, registry } = options;
  const head = `${prefix}_`;
  const byUser = new Map<string, UserVariable[]>();
  const readings: UserVariableReading[] = [];
  const refused: AmbiguousVariableError[] = [];
  const refuse = (variable: string, why: string): void => {
    refused.push(
      new AmbiguousVariableError(
        variable,
        `variable ${variable} is not forwarded to any sandbox: ${why}; run "berth env --platform P --user ID" for the exact prefix of a user`,
      ),
    );
  };

  for (const [key, value] of Object.entries(environment)) {
    if (value === undefined || !key.startsWith(head)) continue;
    const rest = key.slice(head.length);
    const first = rest.indexOf('_');
    const second = first < 0 ? -1 : rest.indexOf('_', first + 1);
    if (first <= 0 || second <= first + 1 || second === rest.length - 1) {
      refuse(key, `it is not of the form ${prefix}_{PLATFORM}_{USER}_{NAME}`);
      continue;
    }
    const platformSegment = rest.slice(0, first);
    const envForm = rest.slice(first + 1, second);
    const name = rest.slice(second + 1);
    const platform = platformSegment.toLowerCase();
    if (platformSegment !== platform.toUpperCase() || !PLATFORM_NAME_PATTERN.test(platform)) {
      refuse(key, `${JSON.stringify(platformSegment)} is not a platform name in upper case`);
      continue;
    }
    if (!VARIABLE_NAME.test(name)) {
      refuse(key, `${JSON.stringify(name)} is not a valid variable name`);
      continue;
    }
    const reserved = reservedVariableReason(name);
    if (reserved) {
      refuse(key, `${reserved}, so it would break every command of that user`);
      continue;
    }
    if (value.includes('\u0000')) {
      refuse(key, 'its value contains a NUL byte, which no variable can hold');
      continue;
    }
    let identity: Identity;
    try {
      registry.adapterFor(platform);
    } catch (error) {
      refuse(key, error instanceof Error ? error.message : String(error));
      continue;
    }
    try {
      const adapter = registry.adapterFor(platform);
      const id = adapter.idFromEnvName(envForm);
      if (id === undefined) throw new Error('no id');
      identity = { platform: adapter.platform, id };
      if (registry.envName(identity) !== envForm) throw new Error('not canonical');
    } catch {
      refuse(key, `${JSON.stringify(envForm)} is not the env form of any ${platform} user`);
      continue;
    }
    const userKey = formatIdentity(identity);
    const list = byUser.get(userKey) ?? [];
    byUser.set(userKey, list);
    list.push({ source: key, name, value });
    readings.push(readingOf(key, identity, envForm, name, registry, head));
  }
  for (const list of byUser.values()) list.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));

  return {
    prefix,
    refused,
    environment,
    variablesOf: (identity) => byUser.get(formatIdentity(identity)) ?? [],
    prefixFor: (identity) => `${head}${registry.envPlatform(identity.platform)}_${registry.envName(identity)}_`,
    readings: () => [...readings].sort((a, b) => (a.source < b.source ? -1 : 1)),
    userVariableNames: () => {
      const names = new Map<string, number>();
      for (const list of byUser.values()) for (const variable of list) names.set(variable.name, (names.get(variable.name) ?? 0) + 1);
      return names;
    },
  };
}

/**
 * The user an operator may have meant instead: the variable's user part joined with the next
 * part of its name by `_`, `-` or `.` (an id the env form escapes, written as if only upper-cased),
 * or in upper case where the platform keeps case (a Slack id `U024BE7LH` reads as `u024be7lh`).
 * The first such id the platform's adapter takes as another user is the suggestion.
 */
function readingOf(source: string, identity: Identity, envForm: string, name: string, registry: PlatformRegistry, head: string): UserVariableReading {
  const reading = { source, identity: formatIdentity(identity), name };
  const parts = name.split('_');
  const candidates: Array<{ id: string; name: string }> = [];
  if (parts.length > 1) {
    for (const joiner of ['_', '-', '.']) candidates.push({ id: `${envForm}${joiner}${parts[0]}`.toLowerCase(), name: parts.slice(1).join('_') });
  }
  if (/[a-z]/.test(identity.id)) candidates.push({ id: identity.id.toUpperCase(), name });
  for (const candidate of candidates) {
    try {
      const other = registry.resolve(identity.platform, candidate.id);
      if (formatIdentity(other) === reading.identity) continue;
      const otherForm = registry.envName(other);
      if (otherForm === envForm) continue;
      const meantSource = `${head}${registry.envPlatform(other.platform)}_${otherForm}_${candidate.name}`;
      return { ...reading, meantFor: { identity: formatIdentity(other), source: meantSource, name: candidate.name } };
    } catch {
      // Not an id of that platform: no other meaning.
    }
  }
  return reading;
}
