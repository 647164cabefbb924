import { lookup, Resolver } from 'node:dns/promises';
import { readFileSync } from 'node:fs';
import { isIPv4 } from 'node:net';
import os from 'node:os';
import { SandboxError } from '@berth/core';
import { cidrWithin, isHostNameEntry, LINK_LOCAL_RANGE, splitEgressEntry } from '@berth/core/driver';

// What the addresses of the egress policy's exceptions are: `docker_egress_allow` entries
// resolved (host names with their TTL), and the host's own name servers.

/** The wait for a name whose TTL is unknown (it came from the hosts file, say), seconds. */
export const UNKNOWN_TTL_SECONDS = 30;
/** How long one name may take to resolve before it counts as unresolved, ms. */
const RESOLVE_TIMEOUT_MS = 5_000;

/** One `docker_egress_allow` entry, parsed: an IPv4 address or range, with a port or not. */
export interface EgressException {
  readonly cidr: string;
  readonly port?: number;
  /**
   * An address a host name resolved to: whoever answers for the name chose it, so it opens only
   * what a range would (never the host, link-local, a DNAT'd port or another engine's containers).
   */
  readonly learned?: true;
}

/** What resolving one entry gave: its exceptions, and for a host name how long they hold. */
interface ResolvedEntry {
  readonly exceptions: EgressException[];
  /** Seconds until the name should be resolved again; `undefined` for an address or range. */
  readonly ttl?: number;
}

const withTimeout = <T>(work: Promise<T>, ms: number, what: string): Promise<T> =>
  new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(Object.assign(new Error(`${what} took longer than ${ms} ms`), { code: 'ETIMEOUT' })), ms);
    timer.unref();
    work.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (error: unknown) => {
        clearTimeout(timer);
        reject(error);
      },
    );
  });

/**
 * Resolves a `docker_egress_allow` entry: `10.1.2.3`, `10.1.0.0/16`, `10.1.2.3:5432`,
 * `db.internal:5432`. A host name gives its IPv4 addresses (as the host's resolver answers,
 * hosts file included) and the shortest TTL DNS gives for it, when DNS answers. Throws
 * `EGRESS_ALLOW_UNRESOLVED` (one line naming the entry) when a name does not resolve.
 */
export async function resolveEgressEntry(entry: string): Promise<ResolvedEntry> {
  const { host, port } = splitEgressEntry(entry);
  const withPort = (cidr: string): EgressException => (port === undefined ? { cidr } : { cidr, port });
  if (!isHostNameEntry(entry)) return { exceptions: [withPort(host.includes('/') ? host : `${host}/32`)] };
  const learned = (address: string): EgressException => ({ ...withPort(`${address}/32`), learned: true });
  let addresses: string[];
  try {
    addresses = (await withTimeout(lookup(host, { all: true, family: 4 }), RESOLVE_TIMEOUT_MS, `resolving ${host}`)).map((found) => found.address);
  } catch (error) {
    throw new SandboxError(
      'EGRESS_ALLOW_UNRESOLVED',
      `terminal.docker_egress_allow: ${entry} does not resolve (${(error as NodeJS.ErrnoException).code ?? 'no answer'})`,
    );
  }
  let ttl: number | undefined;
  try {
    const resolver = new Resolver({ timeout: RESOLVE_TIMEOUT_MS, tries: 1 });
    const records = await withTimeout(resolver.resolve4(host, { ttl: true }), RESOLVE_TIMEOUT_MS, `the TTL of ${host}`);
    if (records.length > 0) ttl = Math.min(...records.map((record) => record.ttl));
  } catch {
    // Not in DNS (the hosts file, say): resolved again after UNKNOWN_TTL_SECONDS.
  }
  return { exceptions: [...new Set(addresses)].map(learned), ttl: ttl ?? UNKNOWN_TTL_SECONDS };
}

/**
 * Why an address a host name resolved to is never an exception, with what to do, or `undefined`:
 * a name opens only what a range may (docs/backend-docker.md, "The egress policy"), so whoever
 * answers for it, now or at a refresh, cannot point it at link-local (cloud metadata), loopback,
 * "this network", the gateway host (`hostAddresses`: every address of every interface) or the pool.
 */
export function learnedAddressProblem(
  address: string,
  options: { pool: string; hostAddresses: readonly string[] },
): { readonly what: string; readonly fix: string } | undefined {
  const host = `${address}/32`;
  const never = 'which a host name never opens';
  const checkDns = "check the name's DNS";
  if (cidrWithin(host, LINK_LOCAL_RANGE)) {
    return {
      what: `in link-local ${LINK_LOCAL_RANGE} (cloud metadata), ${never}`,
      fix: 'list the one address, e.g. 169.254.169.254:80, if sandboxes must reach it',
    };
  }
  if (cidrWithin(host, '127.0.0.0/8')) return { what: `loopback, ${never}`, fix: checkDns };
  if (cidrWithin(host, '0.0.0.0/8')) return { what: `in "this network" 0.0.0.0/8, ${never}`, fix: checkDns };
  if (cidrWithin(host, options.pool))
    return { what: `inside terminal.docker_network_pool ${options.pool}, the sandboxes' own addresses, which no exception opens`, fix: checkDns };
  if (options.hostAddresses.includes(address)) {
    return { what: `an address of the gateway host, ${never}`, fix: 'list that address and port itself if sandboxes must reach a service of the host there' };
  }
  return undefined;
}

/** Every IPv4 address of every interface of the gateway host, loopback included. */
export const hostAddresses = (): string[] =>
  Object.values(os.networkInterfaces())
    .flat()
    .filter((entry) => entry !== undefined && entry.family === 'IPv4')
    .map((entry) => entry!.address);

/** Parses a `docker_egress_allow` entry into its exceptions (see {@link resolveEgressEntry}). */
export async function resolveEgressException(entry: string): Promise<EgressException[]> {
  return (await resolveEgressEntry(entry)).exceptions;
}

/** The IPv4 name servers the host uses (its own and systemd-resolved's upstream ones). */
export function hostResolvers(files: readonly string[] = ['/etc/resolv.conf', '/run/systemd/resolve/resolv.conf']): string[] {
  const found = new Set<string>();
  for (const file of files) {
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch {
      continue;
    }
    for (const match of text.matchAll(/^\s*nameserver\s+(\S+)/gm)) {
      if (isIPv4(match[1]!) && !match[1]!.startsWith('127.')) found.add(match[1]!);
    }
  }
  return [...found];
}
