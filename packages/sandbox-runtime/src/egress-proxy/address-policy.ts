import net from 'node:net';
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
    const exact = covering.some((exception) => exception.cidr.endsWith('/32'));
    if (isLocal(address) || cidrWithin(host, LINK_LOCAL_RANGE)) return exact;
    if (BLOCKED_RANGES.some((range) => cidrWithin(host, range))) return covering.length > 0;
    return true;
  };
}
