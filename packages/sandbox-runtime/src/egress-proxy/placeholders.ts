import { createHmac } from 'node:crypto';
import { hostMatches, type HostPattern } from './host-patterns.js';

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
export const PLACEHOLDER_PATTERN = /berth_secret_[0-9a-f]{32}/g;

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
}

/** A sandbox's brokered variables, by placeholder. */
export type PlaceholderTable = ReadonlyMap<string, BrokeredValue>;

/** What substituting did to one request. */
export interface Substitution {
  /** The variables whose values went in. */
  readonly substituted: ReadonlySet<string>;
  /** The variables whose placeholders were sent to a host they are not approved for (left as they were). */
  readonly refused: ReadonlySet<string>;
}

/**
 * Replaces, in `text`, each placeholder of `table` approved for `host` by its value; records the
 * others. Placeholders not in the table (another sandbox's, or made up) stay as they are.
 */
function replaceIn(text: string, host: string, table: PlaceholderTable, substituted: Set<string>, refused: Set<string>): string {
  if (!text.includes('berth_secret_')) return text;
  return text.replace(PLACEHOLDER_PATTERN, (placeholder) => {
    const brokered = table.get(placeholder);
    if (!brokered) return placeholder;
    if (!hostMatches(host, brokered.hosts)) {
      refused.add(brokered.variable);
      return placeholder;
    }
    substituted.add(brokered.variable);
    return brokered.value;
  });
}

/**
 * Substitutes placeholders in a request's target (path and query) and header values, for a
 * request to `host`: an `Authorization` or other header of the form `Basic <base64>` is decoded,
 * substituted and encoded again, so `user:placeholder` credentials work. Header names and the
 * body are never touched (a body can be large and is streamed; a secret belongs in headers).
 * `headers` is Node's raw list (name, value, name, value, …), returned as a new list.
 */
export function substituteRequest(
  request: { readonly target: string; readonly rawHeaders: readonly string[] },
  host: string,
  table: PlaceholderTable,
): { target: string; rawHeaders: string[] } & Substitution {
  const substituted = new Set<string>();
  const refused = new Set<string>();
  const target = replaceIn(request.target, host, table, substituted, refused);
  const rawHeaders = request.rawHeaders.map((value, index) => {
    if (index % 2 === 0) return value;
    const basic = /^(\s*basic\s+)([A-Za-z0-9+/=]+)\s*$/i.exec(value);
    if (basic) {
      const decoded = Buffer.from(basic[2]!, 'base64').toString('utf8');
      const replaced = replaceIn(decoded, host, table, substituted, refused);
      if (replaced !== decoded) return `${basic[1]}${Buffer.from(replaced, 'utf8').toString('base64')}`;
    }
    return replaceIn(value, host, table, substituted, refused);
  });
  return { target, rawHeaders, substituted, refused };
}
