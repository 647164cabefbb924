import { createHmac } from 'node:crypto';
import { CREDENTIAL_HEADERS } from '@berth/core/driver';
import { hostMatches, type HostPattern } from './host-patterns.js';
import type { HeadForm } from './secret-masker.js';

/**
 * Brokered variables (docs/brokered-secrets.md): the sandbox holds a placeholder where the value
 * would be, and the egress proxy puts the value back only in requests from that sandbox to the
 * hosts the variable is approved for.
 *
 * A placeholder is `berth_secret_` and 32 hex digits: a keyed hash (the installation's key) of
 * the sandbox's name and the variable's, so it is the same for the sandbox's whole life (across
 * gateway restarts: tools that cached it keep working), differs between sandboxes and variables,
 * and says nothing of the value. It is not a secret: a placeholder is worth something only in a
 * request that arrives from its own sandbox, which the proxy tells by the connection's addresses.
 */
const PLACEHOLDER_PATTERN = /berth_secret_[0-9a-f]{32}/g;

/** The ports a value goes to unless its variable names others. */
const DEFAULT_PORTS: readonly number[] = [443];

/** The placeholder of `variable` in the sandbox named `sandboxName`. */
export function placeholderFor(installationKey: string | Buffer, sandboxName: string, variable: string): string {
  const digest = createHmac('sha256', installationKey).update(`berth-placeholder\0${sandboxName}\0${variable}`).digest('hex');
  return `berth_secret_${digest.slice(0, 32)}`;
}

/** One brokered variable of one sandbox. */
export interface BrokeredValue {
  readonly variable: string;
  readonly value: string;
  readonly hosts: readonly HostPattern[];
  /** Headers it goes in besides Authorization and Proxy-Authorization, lower case. @default [] */
  readonly headers?: readonly string[] | undefined;
  /** Query parameters it goes in. @default [] */
  readonly query?: readonly string[] | undefined;
  /** The ports of its hosts it goes to. @default [443] */
  readonly ports?: readonly number[] | undefined;
}

/** A sandbox's brokered variables, by placeholder. */
export type PlaceholderTable = ReadonlyMap<string, BrokeredValue>;

/** Whether `brokered` goes to `host`:`port` at all. */
export function approvedFor(brokered: BrokeredValue, host: string, port: number): boolean {
  return (brokered.ports ?? DEFAULT_PORTS).includes(port) && hostMatches(host, brokered.hosts);
}

/** Whether a sandbox with `table` has any variable approved for `host`:`port` (the proxy opens only such TLS). */
export function anyApprovedFor(table: PlaceholderTable, host: string, port: number): boolean {
  for (const brokered of table.values()) if (approvedFor(brokered, host, port)) return true;
  return false;
}
/** What substituting did to one request. */
export interface Substitution {
  /** The variables whose values went in. */
  readonly substituted: ReadonlySet<string>;
  /** The variables whose placeholders were sent where their value does not go (left as they were). */
  readonly refused: ReadonlySet<string>;
  /** Headers (lower case) and query parameters dropped: a client's own value where a brokered value goes. */
  readonly dropped: readonly string[];
  /** Each form of a value the request now carries, and what the sandbox sent in its place: what masking puts back. */
  readonly forms: readonly HeadForm[];
}

const BASIC = /^(\s*basic\s+)([A-Za-z0-9+/]+={0,2})\s*$/i;

/**
 * Puts brokered values into a request to `host`:`port`, only where credentials go: the
 * `Authorization` and `Proxy-Authorization` headers, and the headers and query parameters each
 * variable names (brokered-hosts.ts in core) — never the path, other headers or the body. A
 * `Basic` credential is decoded, substituted and encoded again (`user:placeholder` works).
 *
 * Where a value of a variable approved here may go, only its placeholder is accepted: a field
 * there that carries none (the client's own credential, sent beside the injected one) or a second
 * field of the same name is dropped. When the request's Host names another host, nothing is
 * substituted. `rawHeaders` is Node's flat list (name, value, …), returned as a new list.
 */
export function substituteRequest(
  request: { readonly target: string; readonly rawHeaders: readonly string[] },
  host: string,
  table: PlaceholderTable,
  port = 443,
): { target: string; rawHeaders: string[] } & Substitution {
  const substituted = new Set<string>();
  const refused = new Set<string>();
  const dropped: string[] = [];
  const forms: HeadForm[] = [];
  const hostHeaders = request.rawHeaders.filter((_, index, all) => index % 2 === 1 && all[index - 1]!.toLowerCase() === 'host');
  const hostAgrees = hostHeaders.every((value) => hostMatches(value.replace(/:\d+$/, ''), [{ exact: host }]));
  const approved = hostAgrees ? [...table.values()].filter((brokered) => approvedFor(brokered, host, port)) : [];
  const headerPlaces = new Set(approved.flatMap((brokered) => [...CREDENTIAL_HEADERS, ...(brokered.headers ?? [])]));
  const queryPlaces = new Set(approved.flatMap((brokered) => brokered.query ?? []));

  /** `text` with each placeholder allowed in `place` replaced by `encode(value)`; the others noted as refused. */
  const replaceIn = (text: string, allowed: (brokered: BrokeredValue) => boolean, encode = (value: string) => value): { text: string; found: boolean } => {
    let found = false;
    const result = text.replace(PLACEHOLDER_PATTERN, (placeholder) => {
      const brokered = table.get(placeholder);
      if (!brokered) return placeholder;
      if (!approved.includes(brokered) || !allowed(brokered)) {
        refused.add(brokered.variable);
        return placeholder;
      }
      found = true;
      substituted.add(brokered.variable);
      forms.push({ secret: brokered.value, replacement: placeholder }, { secret: encode(brokered.value), replacement: placeholder });
      return encode(brokered.value);
    });
    return { text: result, found };
  };

  const rawHeaders: string[] = [];
  const seen = new Set<string>();
  for (let index = 0; index < request.rawHeaders.length; index += 2) {
    const name = request.rawHeaders[index]!;
    const value = request.rawHeaders[index + 1]!;
    const lower = name.toLowerCase();
    if (!headerPlaces.has(lower)) {
      // Not a place for a value: passed on as it is, a placeholder in it noted.
      replaceIn(value, () => false);
      rawHeaders.push(name, value);
      continue;
    }
    const allowed = (brokered: BrokeredValue): boolean => CREDENTIAL_HEADERS.includes(lower) || (brokered.headers ?? []).includes(lower);
    let result = { text: value, found: false };
    const basic = BASIC.exec(value);
    if (basic) {
      const decoded = Buffer.from(basic[2]!, 'base64').toString('utf8');
      const replaced = replaceIn(decoded, allowed);
      if (replaced.found) {
        const encoded = Buffer.from(replaced.text, 'utf8').toString('base64');
        forms.push({ secret: encoded, replacement: basic[2]! });
        result = { text: `${basic[1]}${encoded}`, found: true };
      }
    }
    if (!result.found) result = replaceIn(value, allowed);
    if (!result.found || seen.has(lower)) {
      dropped.push(lower);
      continue;
    }
    seen.add(lower);
    rawHeaders.push(name, result.text);
  }

  const question = request.target.indexOf('?');
  let target = request.target;
  if (question >= 0) {
    const kept: string[] = [];
    for (const parameter of request.target.slice(question + 1).split('&')) {
      const equals = parameter.indexOf('=');
      const rawName = equals < 0 ? parameter : parameter.slice(0, equals);
      let name = rawName;
      try {
        name = decodeURIComponent(rawName.replaceAll('+', ' '));
      } catch {
        // Not percent-encoding: compared as written.
      }
      if (!queryPlaces.has(name)) {
        replaceIn(parameter, () => false);
        kept.push(parameter);
        continue;
      }
      const replaced = replaceIn(equals < 0 ? '' : parameter.slice(equals + 1), (brokered) => (brokered.query ?? []).includes(name), encodeURIComponent);
      if (replaced.found) kept.push(`${rawName}=${replaced.text}`);
      else dropped.push(`?${name}`);
    }
    target = `${request.target.slice(0, question)}${kept.length > 0 ? `?${kept.join('&')}` : ''}`;
  }
  // The path is never a place for a value: a placeholder there goes as it is (and is noted).
  replaceIn(request.target.slice(0, question < 0 ? undefined : question), () => false);
  return { target, rawHeaders, substituted, refused, dropped, forms };
}
