import type dns from 'node:dns';
import net, { type LookupFunction } from 'node:net';
import os from 'node:os';
import { cidrWithin, LINK_LOCAL_RANGE } from '@berth/core/driver';
import { BLOCKED_RANGES } from '../egress-rulesets.js';
import type { EgressException } from '../resolve-egress-entry.js';

/** How long the host's own addresses are kept before they are read again. */
const LOCAL_ADDRESSES_MS = 10_000;

/**
 * The egress policy the firewall enforces on sandboxes (egress-firewall.ts), as a test of one
 * address the egress proxy is about to connect to for a sandbox. The proxy runs on the host,
 * outside that firewall, so it applies the same rules itself, in the same order
 * (egress-rulesets.ts):
 *
 * - never the sandboxes' pool (another sandbox), whatever an exception says;
 * - the host's own addresses and link-local (cloud metadata) only where an exception names that
 *   one address;
 * - the blocked ranges (private, loopback, CGNAT, multicast, reserved) only where an exception
 *   (an address or a range, with its port if it has one) covers it;
 * - anything else: yes.
 *
 * IPv4 only: sandboxes have no IPv6, and the proxy does not give them a way around that (an
 * IPv4-mapped IPv6 address is read as its IPv4 address).
 */
export function createAddressPolicy(options: {
  pool: string;
  /** The exceptions in force (`docker_egress_allow`, names as the firewall last resolved them). */
  exceptions: () => readonly EgressException[];
  /** The host's own addresses (tests give theirs). @default every address of every interface */
  localAddresses?: () => readonly string[];
}): (address: string, port: number) => boolean {
  const readLocal =
    options.localAddresses ??
    (() =>
      Object.values(os.networkInterfaces())
        .flat()
        .map((entry) => entry?.address ?? '')
        .filter((address) => address !== ''));
  let local = new Set<string>();
  let readAt = Number.NEGATIVE_INFINITY;
  const isLocal = (address: string): boolean => {
    if (performance.now() - readAt > LOCAL_ADDRESSES_MS) {
      local = new Set(readLocal());
      readAt = performance.now();
    }
    return local.has(address);
  };
  return (given, port) => {
    const address = given.startsWith('::ffff:') ? given.slice('::ffff:'.length) : given;
    if (!net.isIPv4(address)) return false;
    const host = `${address}/32`;
    if (cidrWithin(host, options.pool)) return false;
    const covering = options.exceptions().filter((exception) => cidrWithin(host, exception.cidr) && (exception.port === undefined || exception.port === port));
    // An address learned from a name is a range's worth of trust, as in the firewall: whoever answers
    // for the name must not open the host or link-local (resolve-egress-entry.ts).
    const exact = covering.some((exception) => exception.cidr.endsWith('/32') && !exception.learned);
    if (isLocal(address) || cidrWithin(host, LINK_LOCAL_RANGE)) return exact;
    if (BLOCKED_RANGES.some((range) => cidrWithin(host, range))) return covering.length > 0;
    return true;
  };
}

/**
 * A lookup for upstream connections to `port` that gives only the addresses `allowsAddress`
 * allows: a name that resolves to refused addresses (the metadata address, say) is refused, so
 * DNS cannot step around the egress policy.
 */
export function guardedLookupOf(resolve: LookupFunction, allowsAddress: (address: string, port: number) => boolean): (port: number) => LookupFunction {
  return (port) => (hostname, lookupOptions, callback) => {
    resolve(hostname, { ...lookupOptions, all: true }, (error, found) => {
      if (error) return callback(error, '', 0);
      const allowed = (found as unknown as dns.LookupAddress[]).filter((entry) => allowsAddress(entry.address, port));
      if (allowed.length === 0) {
        return callback(Object.assign(new Error(`${hostname} resolves only to addresses sandboxes may not reach`), { code: 'EGRESS_REFUSED' }), '', 0);
      }
      if (lookupOptions.all) return (callback as unknown as (error: null, addresses: dns.LookupAddress[]) => void)(null, allowed);
      callback(null, allowed[0]!.address, allowed[0]!.family);
    });
  };
}
