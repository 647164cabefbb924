import { createRequire } from 'node:module';
import { isIP } from 'node:net';

/**
 * Host patterns of the egress proxy (docs/brokered-secrets.md), in the one place both the config
 * check (`docker_secret_hosts`, `docker_egress_domains`) and the proxy (`@berth/sandbox-runtime`'s
 * `egress/egress-proxy/`) read them: `api.github.com` is that host only; `*.example.com` is
 * any host below it (one label or more), not the domain itself. Matching is on the lower-cased
 * name without a trailing dot. Addresses are never patterns: a brokered secret or an allowed
 * domain is named, so what the sandbox connects to is checked against the name it asked for
 * (CONNECT, SNI and Host agree), not an address. A wildcard over a public suffix is refused.
 */
export type HostPattern = { readonly exact: string } | { readonly below: string };

const LABEL = /^(?!-)[a-z0-9-]{1,63}(?<!-)$/;

/**
 * tldts's `getPublicSuffix`, loaded when a wildcard pattern is first checked: its list of public
 * suffixes takes about 60 ms to load as a module, which every command (`berth ls`, say) paid
 * even with no wildcard in its config. Its CommonJS build, through `require`, loads at half that.
 */
let getPublicSuffix: typeof import('tldts').getPublicSuffix | undefined;
function publicSuffixOf(name: string): string | null {
  getPublicSuffix ??= (createRequire(import.meta.url)('tldts') as typeof import('tldts')).getPublicSuffix;
  return getPublicSuffix(name, { allowPrivateDomains: true });
}

/** The canonical form of a host name: lower case, no trailing dot; undefined when it is not a DNS name. */
export function canonicalHost(host: string): string | undefined {
  const name = host.trim().toLowerCase().replace(/\.$/, '');
  if (name.length === 0 || name.length > 253 || isIP(name.replace(/^\[|\]$/g, '')) !== 0) return undefined;
  return name.split('.').every((label) => LABEL.test(label)) ? name : undefined;
}

/**
 * Parses one pattern; throws a one-line error saying what to write instead. The error does not
 * repeat the text: an operator who pasted a token where its host belongs must not find the
 * token in a log (the config's error names the entry by its key and position).
 */
export function parseHostPattern(text: string): HostPattern {
  const wildcard = text.startsWith('*.');
  const name = canonicalHost(wildcard ? text.slice(2) : text);
  if (name === undefined || name.includes('*')) {
    throw new Error(
      'not a host name or "*.domain" pattern (an address, a port or a "*" elsewhere is not allowed); write it like "api.github.com" or "*.example.com"',
    );
  }
  // "*.com" would approve every host of a top-level domain: a mistake, never a policy. A name
  // without a dot is no host on the internet (and a pasted token often looks like one).
  if (wildcard && !name.includes('.')) throw new Error('covers a whole top-level domain; name the domain under it, like "*.example.com"');
  if (!name.includes('.')) throw new Error('names no domain; write the host with its domain, like "api.github.com"');
  // "*.github.io" would approve every GitHub Pages site, "*.co.uk" every British company: below
  // a public suffix (the Public Suffix List, its private part too) names belong to many parties.
  if (wildcard && publicSuffixOf(name) === name) {
    throw new Error(
      'covers a public suffix, under which anyone may own a name (like "*.github.io" or "*.co.uk"); name the hosts themselves, like "api.github.com"',
    );
  }
  return wildcard ? { below: name } : { exact: name };
}

/** Whether `host` (any case, a trailing dot allowed) matches one of `patterns`. Addresses match none. */
export function hostMatches(host: string, patterns: readonly HostPattern[]): boolean {
  const name = canonicalHost(host);
  if (name === undefined) return false;
  return patterns.some((pattern) => ('exact' in pattern ? name === pattern.exact : name.endsWith(`.${pattern.below}`)));
}

/** The ports an egress domain without a port of its own allows: HTTPS and plain HTTP. */
export const DEFAULT_EGRESS_PORTS: readonly number[] = [443, 80];

/** A `docker_egress_domains` entry: a host pattern and the ports it allows. */
export interface EgressDomain {
  readonly pattern: HostPattern;
  readonly ports: readonly number[];
}

/**
 * Parses a `docker_egress_domains` entry, `pattern` or `pattern:port` (`api.github.com`,
 * `git.example.com:22`); without a port it allows {@link DEFAULT_EGRESS_PORTS}. Throws a one-line
 * error that does not repeat the entry, as {@link parseHostPattern} does.
 */
export function parseEgressDomain(text: string): EgressDomain {
  const ported = /^(.*):(\d{1,5})$/.exec(text);
  if (ported) {
    const port = Number(ported[2]);
    if (!(port >= 1 && port <= 65_535)) throw new Error('has a port outside 1 to 65535; write it like "git.example.com:22"');
    return { pattern: parseHostPattern(ported[1]!), ports: [port] };
  }
  return { pattern: parseHostPattern(text), ports: DEFAULT_EGRESS_PORTS };
}

/** Whether `host`:`port` is one of `domains` (the name as {@link hostMatches} matches it, and one of its ports). */
export function egressDomainMatches(host: string, port: number, domains: readonly EgressDomain[]): boolean {
  return domains.some((domain) => domain.ports.includes(port) && hostMatches(host, [domain.pattern]));
}

/** The text form of a pattern, as the operator wrote it (canonical). */
export function formatHostPattern(pattern: HostPattern): string {
  return 'exact' in pattern ? pattern.exact : `*.${pattern.below}`;
}
