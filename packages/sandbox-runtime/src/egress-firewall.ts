import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { lookup } from 'node:dns/promises';
import { existsSync, readFileSync } from 'node:fs';
import { isIPv4 } from 'node:net';
import path from 'node:path';
import { SandboxError, type HostLogger } from '@berth/core';

/**
 * The egress policy: a sandbox reaches the internet, but not the gateway host's own addresses,
 * other sandboxes, private ranges (RFC 1918, CGNAT), link-local (cloud metadata), loopback,
 * multicast or reserved ranges — unless `docker_egress_allow` lists them. DNS to the host's own
 * resolvers and to each sandbox network's gateway stays open.
 *
 * Enforced on the engine host as one nftables table of Berth's own, keyed by the pool, with base
 * chains on the `forward` and `input` hooks at a priority just before the usual filter chains:
 * rules match the pool (every sandbox network is a /29 of `docker_network_pool`), so they hold
 * for every sandbox network at once with nothing to keep in step when networks come and go, and
 * neither Docker's nor netavark's own rule ordering (re-asserted at each restart) can bypass them.
 * A `reject` in any base chain is final, whatever the others accept. IPv6 is turned off in the
 * sandboxes themselves (a sysctl), so there is no IPv6 path to police.
 */
export interface EgressFirewall {
  /** Why the policy is not enforced here, or `undefined` when it is (or networking is off). */
  readonly unenforced: string | undefined;
  /** Installs (or re-installs) the table; once per process, again after a failure. */
  ensure(): Promise<void>;
}

/** The ranges no sandbox reaches unless the operator allows them (IPv4; IPv6 is off in sandboxes). */
export const BLOCKED_RANGES = [
  '0.0.0.0/8', // "this network"
  '10.0.0.0/8', // RFC 1918
  '100.64.0.0/10', // CGNAT (RFC 6598)
  '127.0.0.0/8', // loopback
  '169.254.0.0/16', // link-local: cloud metadata services
  '172.16.0.0/12', // RFC 1918
  '192.0.0.0/24', // IETF protocol assignments
  '192.168.0.0/16', // RFC 1918
  '198.18.0.0/15', // benchmarking
  '224.0.0.0/4', // multicast
  '240.0.0.0/4', // reserved, and the broadcast address
] as const;

/** One `docker_egress_allow` entry, parsed: an IPv4 address or range, with a port or not. */
export interface EgressException {
  readonly cidr: string;
  readonly port?: number;
}

/** Parses a `docker_egress_allow` entry: `10.1.2.3`, `10.1.0.0/16`, `10.1.2.3:5432`, `db.internal:5432`. */
export async function resolveEgressException(entry: string): Promise<EgressException[]> {
  const match = /^(\[?[^\]]+?\]?)(?::(\d{1,5}))?$/.exec(entry.trim());
  const [, host = '', portText] = match ?? [];
  const port = portText === undefined ? undefined : Number(portText);
  const withPort = (cidr: string): EgressException => (port === undefined ? { cidr } : { cidr, port });
  if (/^\d+\.\d+\.\d+\.\d+(\/\d+)?$/.test(host)) return [withPort(host.includes('/') ? host : `${host}/32`)];
  // A host name: resolved once, here; its IPv4 addresses are allowed.
  try {
    const addresses = await lookup(host, { all: true, family: 4 });
    return addresses.map((address) => withPort(`${address.address}/32`));
  } catch (error) {
    throw new SandboxError('EGRESS_ALLOW_UNRESOLVED', `terminal.docker_egress_allow: ${entry} does not resolve (${(error as NodeJS.ErrnoException).code ?? 'no answer'}); use an address, or fix the name`);
  }
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

const SEARCH = ['/usr/sbin', '/sbin', '/usr/bin', '/bin'];
const findNft = (): string | undefined => [...SEARCH, ...(process.env.PATH ?? '').split(path.delimiter).filter(Boolean)].map((folder) => path.join(folder, 'nft')).find((file) => existsSync(file));

/** The nftables table name of a pool: one table per pool, so two installations never clash. */
export const egressTableName = (pool: string): string => `berth_${createHash('sha256').update(pool).digest('hex').slice(0, 10)}`;

/** The nftables script that replaces the pool's table in one transaction. */
export function egressRuleset(options: { pool: string; exceptions: readonly EgressException[]; resolvers: readonly string[] }): string {
  const table = egressTableName(options.pool);
  const set = (name: string, type: string, elements: readonly string[]): string =>
    `  set ${name} {\n    type ${type}; flags interval;\n${elements.length > 0 ? `    elements = { ${elements.join(', ')} }\n` : ''}  }`;
  const whole = options.exceptions.filter((exception) => exception.port === undefined).map((exception) => exception.cidr);
  const ported = options.exceptions
    .filter((exception) => exception.port !== undefined)
    .flatMap((exception) => ['tcp', 'udp'].map((protocol) => `${exception.cidr} . ${protocol} . ${exception.port}`));
  const resolvers = options.resolvers.map((address) => `${address}/32`);
  // Shared by both hooks: what a sandbox may still send.
  const allowed = [
    '    ct state established,related return',
    '    ip daddr @resolvers meta l4proto { tcp, udp } th dport 53 return',
    '    ip daddr @allowed return',
    '    ip daddr . meta l4proto . th dport @allowed_ports return',
  ];
  return [
    `table inet ${table}`,
    `delete table inet ${table}`,
    `table inet ${table} {`,
    set('pool', 'ipv4_addr', [options.pool]),
    set('blocked', 'ipv4_addr', [...BLOCKED_RANGES]),
    set('resolvers', 'ipv4_addr', resolvers),
    set('allowed', 'ipv4_addr', whole),
    set('allowed_ports', 'ipv4_addr . inet_proto . inet_service', ported),
    '  chain refuse {',
    '    meta l4proto tcp reject with tcp reset',
    '    reject with icmpx type admin-prohibited',
    '  }',
    '  chain forward {',
    '    type filter hook forward priority filter - 10; policy accept;',
    '    ip saddr != @pool return',
    ...allowed,
    // Another sandbox, whatever range the pool is in.
    '    ip daddr @pool goto refuse',
    '    ip daddr @blocked goto refuse',
    '  }',
    '  chain input {',
    '    type filter hook input priority filter - 10; policy accept;',
    // The host talking to its own pool addresses (their source is a pool address too).
    '    iif lo return',
    '    ip saddr != @pool return',
    ...allowed,
    // DNS on the sandbox network's own gateway (Podman's aardvark-dns answers there).
    '    ip daddr @pool meta l4proto { tcp, udp } th dport 53 return',
    // Every other address of the host itself: the gateway, its services, the engines' bridges.
    '    goto refuse',
    '  }',
    '}',
    '',
  ].join('\n');
}

/** Why the egress policy cannot be enforced by this process, or `undefined`. */
export function egressUnenforcedReason(options: { network: boolean; poolNetworks: boolean; engine: string }): string | undefined {
  if (!options.network) return undefined;
  const risk = "sandboxes can reach the gateway host, private networks and cloud metadata (169.254.169.254)";
  if (!options.poolNetworks) return `the egress policy is not enforced: ${options.engine} sandboxes here are not on networks of terminal.docker_network_pool on this host (rootless user-mode networking, a remote engine, or a cluster); ${risk}`;
  if (process.platform !== 'linux') return `the egress policy is not enforced: it needs Linux nftables; ${risk}`;
  if (process.getuid?.() !== 0) return `the egress policy is not enforced: firewall rules need root, and the gateway runs as uid ${process.getuid?.()}; ${risk}`;
  if (!findNft()) return `the egress policy is not enforced: nft not found (install nftables); ${risk}`;
  return undefined;
}

/** Builds the egress policy of one runtime. */
export function createEgressFirewall(options: {
  pool: string;
  allow: readonly string[];
  network: boolean;
  poolNetworks: boolean;
  engine: string;
  logger?: HostLogger | undefined;
  resolvers?: readonly string[];
}): EgressFirewall {
  const unenforced = egressUnenforcedReason(options);
  let installed: Promise<void> | undefined;
  const install = async (): Promise<void> => {
    const exceptions = (await Promise.all(options.allow.map((entry) => resolveEgressException(entry)))).flat();
    const script = egressRuleset({ pool: options.pool, exceptions, resolvers: options.resolvers ?? hostResolvers() });
    await new Promise<void>((resolve, reject) => {
      const child = execFile(findNft()!, ['-f', '-'], { timeout: 30_000 }, (error, _stdout, stderr) => {
        if (!error) return resolve();
        reject(new SandboxError('EGRESS_RULES_FAILED', `could not install the egress rules (nft: ${(stderr || error.message).trim().split('\n')[0]}); no sandbox starts with networking until they are in — check nftables, or set terminal.docker_network: false`));
      });
      child.stdin?.end(script);
    });
    options.logger?.info(`berth: egress rules for ${options.pool} in nftables table inet ${egressTableName(options.pool)} (${exceptions.length} exception(s))`);
  };
  return {
    unenforced,
    ensure() {
      if (!options.network || unenforced) return Promise.resolve();
      installed ??= install().catch((error: unknown) => {
        installed = undefined;
        throw error;
      });
      return installed;
    },
  };
}
