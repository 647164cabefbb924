/**
 * What a `docker_egress_allow` entry is, in the one place both the config check (core) and the
 * egress policy (`@berth/sandbox-runtime`'s `egress/egress-firewall.ts`) read it.
 */

/** Link-local, where cloud metadata services answer: an exception opens an address here only by naming it alone. */
export const LINK_LOCAL_RANGE = '169.254.0.0/16';

/** The widest range an exception may be: `0.0.0.0/0` and its like would open every private network at once. */
export const MIN_RANGE_PREFIX = 8;

/** An IPv4 CIDR (or single address) as a 32-bit base address and a prefix length, or `undefined`. */
function parseCidr(text: string): { base: number; prefix: number } | undefined {
  const match = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})(?:\/(\d{1,2}))?$/.exec(text.trim());
  if (!match) return undefined;
  const octets = match.slice(1, 5).map(Number);
  const prefix = match[5] === undefined ? 32 : Number(match[5]);
  if (octets.some((octet) => octet > 255) || prefix > 32) return undefined;
  const address = ((octets[0]! << 24) | (octets[1]! << 16) | (octets[2]! << 8) | octets[3]!) >>> 0;
  const mask = prefix === 0 ? 0 : (0xffffffff << (32 - prefix)) >>> 0;
  return { base: (address & mask) >>> 0, prefix };
}

/** Whether every address of `inner` lies in `outer` (IPv4 addresses or CIDRs). */
export function cidrWithin(inner: string, outer: string): boolean {
  const a = parseCidr(inner);
  const b = parseCidr(outer);
  if (!a || !b || a.prefix < b.prefix) return false;
  const mask = b.prefix === 0 ? 0 : (0xffffffff << (32 - b.prefix)) >>> 0;
  return (a.base & mask) >>> 0 === b.base;
}

/** A `docker_egress_allow` entry split into its host (an address, a range or a name) and its port. */
export function splitEgressEntry(entry: string): { host: string; port: number | undefined } {
  const match = /^(\[?[^\]]+?\]?)(?::(\d{1,5}))?$/.exec(entry.trim());
  const [, host = '', portText] = match ?? [];
  return { host, port: portText === undefined ? undefined : Number(portText) };
}

/** Whether a `docker_egress_allow` entry is a host name (resolved, and again on a schedule) rather than an address or range. */
export const isHostNameEntry = (entry: string): boolean => parseCidr(splitEgressEntry(entry).host) === undefined;

/**
 * Why a `docker_egress_allow` entry that is an address or range can never work, or `undefined`:
 * one inside the pool (sandboxes never reach each other, whatever an exception says), or a range
 * inside link-local (ranges never open it: name the one address), or one wider than a /8 (`0.0.0.0/0`
 * would open every private network at once). The config check refuses these
 * at start, in one line; a range that merely overlaps the pool, link-local or the host's own
 * addresses is kept, without them (the egress policy refuses those first).
 */
export function egressExceptionProblem(entry: string, pool: string): string | undefined {
  const { host } = splitEgressEntry(entry);
  const cidr = parseCidr(host);
  if (!cidr) return undefined;
  const normal = `${host.split('/')[0]}/${cidr.prefix}`;
  if (cidrWithin(normal, pool))
    return `${entry} lies in terminal.docker_network_pool ${pool}, the sandboxes' own addresses, which no exception opens; remove it`;
  if (cidr.prefix < MIN_RANGE_PREFIX) {
    return (
      `${entry} is wider than a /${MIN_RANGE_PREFIX}: it would open every private network at once; ` +
      `name the networks the sandboxes need, each a /${MIN_RANGE_PREFIX} or narrower (e.g. 10.0.0.0/8)`
    );
  }
  if (cidr.prefix < 32 && cidrWithin(normal, LINK_LOCAL_RANGE)) {
    return (
      `${entry} is a range in link-local ${LINK_LOCAL_RANGE} (cloud metadata), which a range never opens; ` +
      'name the one address a sandbox needs, e.g. 169.254.169.254:80'
    );
  }
  return undefined;
}
