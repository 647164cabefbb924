import { execFile } from 'node:child_process';
import { createHash, createHmac } from 'node:crypto';
import { lookup, Resolver } from 'node:dns/promises';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { isIPv4 } from 'node:net';
import path from 'node:path';
import { cidrWithin, isHostNameEntry, LINK_LOCAL_RANGE, loadInstallationKey, SandboxError, splitEgressEntry, type HostLogger } from '@berth/core';

/**
 * The egress policy: a sandbox reaches the internet, but not the gateway host's own addresses,
 * other sandboxes, private ranges (RFC 1918, CGNAT), link-local (cloud metadata), loopback,
 * multicast or reserved ranges — unless `docker_egress_allow` lists them. DNS to the host's own
 * resolvers and to the sandbox's own network gateway stays open.
 *
 * Enforced on the engine host by nftables, in two kinds of tables of Berth's own:
 *
 * - the pool's table (`berth_<digest of the pool>`), the same for every installation on that
 *   pool: it refuses everything the policy refuses to every source in `docker_network_pool`,
 *   and lets through only what an installation's table marked as one of its exceptions. Its
 *   order makes sure no exception ever reopens the pool (other sandboxes), a Berth bridge of
 *   another pool, the host itself (only an exception naming one address opens a host address),
 *   or link-local (only an exception naming one address opens one: ranges never do).
 * - one table per installation (`berth_inst_<tag>`, an installation being a sandbox root with its
 *   own installation key): it marks the packets of that installation's own sandboxes (their
 *   bridges are named `bth<tag>…`, see {@link sandboxBridgeName}) that go to one of its
 *   exceptions. Two installations on one pool each keep their own exceptions; a table that is
 *   missing (not yet installed, pruned) lets no exception through — the policy fails closed.
 *
 * Base chains hook `forward` and `input` just before the usual filter chains, so neither Docker's
 * nor netavark's own rule ordering (re-asserted at each restart) can bypass them: a `reject` in any
 * base chain is final, whatever the others accept. IPv6 is turned off in the sandboxes themselves
 * (a sysctl), so there is no IPv6 path to police. Host names among the exceptions are resolved
 * again on a schedule (their TTL, within {@link MIN_REFRESH_SECONDS}…{@link MAX_REFRESH_SECONDS});
 * one that does not resolve is logged and skipped, never a reason to stop every sandbox.
 */
export interface EgressFirewall {
  /** Why the policy is not enforced here, or `undefined` when it is (or networking is off). */
  readonly unenforced: string | undefined;
  /** Installs (or re-installs) the tables; once per process, again after a failure. */
  ensure(): Promise<void>;
  /** Stops re-resolving host names; the tables stay (the sandboxes keep running). */
  close(): void;
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

/** The first letters of every Berth sandbox bridge's interface name. */
export const BRIDGE_NAME_PREFIX = 'bth';

/** Set by an installation's table on a packet of its own sandboxes to an exception naming one address. */
export const EXACT_EXCEPTION_MARK = 0x0010_0000;
/** Set on a packet of its own sandboxes to an exception that is a range. */
export const RANGE_EXCEPTION_MARK = 0x0020_0000;
const OUR_MARKS = EXACT_EXCEPTION_MARK | RANGE_EXCEPTION_MARK;
const hex = (value: number): string => `0x${value.toString(16).padStart(8, '0')}`;

/** Shortest wait before a host name is resolved again, seconds (a TTL of 0 is not a reason to spin). */
export const MIN_REFRESH_SECONDS = 10;
/** Longest wait between refreshes, seconds: names are re-resolved and the tables checked at least this often. */
export const MAX_REFRESH_SECONDS = 300;
/** The wait for a name whose TTL is unknown (it came from the hosts file, say), seconds. */
export const UNKNOWN_TTL_SECONDS = 30;
/** How long one name may take to resolve before it counts as unresolved, ms. */
const RESOLVE_TIMEOUT_MS = 5_000;

/** One `docker_egress_allow` entry, parsed: an IPv4 address or range, with a port or not. */
export interface EgressException {
  readonly cidr: string;
  readonly port?: number;
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
  let addresses: string[];
  try {
    addresses = (await withTimeout(lookup(host, { all: true, family: 4 }), RESOLVE_TIMEOUT_MS, `resolving ${host}`)).map((found) => found.address);
  } catch (error) {
    throw new SandboxError('EGRESS_ALLOW_UNRESOLVED', `terminal.docker_egress_allow: ${entry} does not resolve (${(error as NodeJS.ErrnoException).code ?? 'no answer'})`);
  }
  let ttl: number | undefined;
  try {
    const resolver = new Resolver({ timeout: RESOLVE_TIMEOUT_MS, tries: 1 });
    const records = await withTimeout(resolver.resolve4(host, { ttl: true }), RESOLVE_TIMEOUT_MS, `the TTL of ${host}`);
    if (records.length > 0) ttl = Math.min(...records.map((record) => record.ttl));
  } catch {
    // Not in DNS (the hosts file, say): resolved again after UNKNOWN_TTL_SECONDS.
  }
  return { exceptions: [...new Set(addresses)].map((address) => withPort(`${address}/32`)), ttl: ttl ?? UNKNOWN_TTL_SECONDS };
}

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

const SEARCH = ['/usr/sbin', '/sbin', '/usr/bin', '/bin'];
const findNft = (): string | undefined => [...SEARCH, ...(process.env.PATH ?? '').split(path.delimiter).filter(Boolean)].map((folder) => path.join(folder, 'nft')).find((file) => existsSync(file));

/** The nftables table of a pool, the same for every installation on it (earlier releases' one table per pool, by name). */
export const egressTableName = (pool: string): string => `berth_${createHash('sha256').update(pool).digest('hex').slice(0, 10)}`;

/** The first letters of every installation table's name; the rest is its {@link installationTag}. */
export const INSTALLATION_TABLE_PREFIX = 'berth_inst_';

/** The nftables table of one installation: its exceptions, for its own sandboxes' bridges. */
export const installationTableName = (tag: string): string => `${INSTALLATION_TABLE_PREFIX}${tag}`;

/**
 * Six hex digits that tell one installation's sandbox bridges and egress table from another's
 * on the host: keyed with the sandbox root's installation key, so they are stable across
 * restarts and releases. Without a sandbox root (a runtime used on its own), a digest of the pool.
 */
export function installationTag(options: { sandboxRoot?: string | undefined; pool: string }): string {
  if (options.sandboxRoot === undefined) return createHash('sha256').update(`pool:${options.pool}`).digest('hex').slice(0, 6);
  return createHmac('sha256', loadInstallationKey(options.sandboxRoot)).update('berth egress installation').digest('hex').slice(0, 6);
}

/**
 * The interface name of a sandbox network's bridge: `bth`, the installation's tag and six hex
 * digits of the network's name (15 characters, Linux's limit). The installation's egress table
 * knows its sandboxes by this prefix, so nothing has to be kept in step as networks come and go.
 */
export function sandboxBridgeName(tag: string, networkName: string): string {
  return `${BRIDGE_NAME_PREFIX}${tag}${createHash('sha256').update(networkName).digest('hex').slice(0, 6)}`;
}

const set = (name: string, type: string, elements: readonly string[], interval = true): string =>
  `  set ${name} {\n    type ${type};${interval ? ' flags interval;' : ''}\n${elements.length > 0 ? `    elements = { ${elements.join(', ')} }\n` : ''}  }`;

/**
 * The nftables script that replaces a pool's table in one transaction: the policy for every
 * sandbox of every installation on the pool, which only an installation's marks relax.
 */
export function egressRuleset(options: { pool: string; resolvers: readonly string[] }): string {
  const table = egressTableName(options.pool);
  const resolvers = options.resolvers.filter((address) => !cidrWithin(`${address}/32`, options.pool)).map((address) => `${address}/32`);
  const start = [
    // IPv6 is off in every sandbox; this table looks at IPv4 only (and never at the host's own IPv6).
    '    meta nfproto != ipv4 return',
    '    ip saddr != @pool return',
    '    ct state established,related return',
    '    ip daddr @resolvers meta l4proto { tcp, udp } th dport 53 return',
  ];
  const clear = (hook: string): string[] => [
    `  chain clear_${hook} {`,
    `    type filter hook ${hook} priority filter - 30; policy accept;`,
    // The marks mean something only when an installation's table set them for this packet.
    `    ip saddr @pool meta mark set meta mark and ${hex(~OUR_MARKS >>> 0)}`,
    '  }',
  ];
  return [
    `table inet ${table}`,
    `delete table inet ${table}`,
    `table inet ${table} {`,
    set('pool', 'ipv4_addr', [options.pool]),
    set('blocked', 'ipv4_addr', [...BLOCKED_RANGES]),
    set('link_local', 'ipv4_addr', [LINK_LOCAL_RANGE]),
    set('resolvers', 'ipv4_addr', resolvers),
    '  chain refuse {',
    '    meta l4proto tcp reject with tcp reset',
    '    reject with icmpx type admin-prohibited',
    '  }',
    ...clear('forward'),
    ...clear('input'),
    '  chain forward {',
    '    type filter hook forward priority filter - 10; policy accept;',
    ...start,
    // Another sandbox (whatever an exception says), and any Berth sandbox bridge of another pool.
    '    ip daddr @pool goto refuse',
    `    oifname "${BRIDGE_NAME_PREFIX}*" goto refuse`,
    `    meta mark and ${hex(EXACT_EXCEPTION_MARK)} != 0 return`,
    // A range never opens link-local (cloud metadata): only an exception naming the address does.
    '    ip daddr @link_local goto refuse',
    `    meta mark and ${hex(RANGE_EXCEPTION_MARK)} != 0 return`,
    '    ip daddr @blocked goto refuse',
    '  }',
    '  chain input {',
    '    type filter hook input priority filter - 10; policy accept;',
    // The host talking to its own pool addresses (their source is a pool address too).
    '    iif lo return',
    ...start,
    // DNS on the sandbox's own network gateway (an address of the bridge the packet came in on;
    // Podman's aardvark-dns answers there), never on another sandbox's gateway.
    '    meta l4proto { tcp, udp } th dport 53 fib daddr . iif type local return',
    '    ip daddr @pool goto refuse',
    // The host itself: only what an exception names by its one address.
    `    meta mark and ${hex(EXACT_EXCEPTION_MARK)} != 0 return`,
    '    goto refuse',
    '  }',
    '}',
    '',
  ].join('\n');
}

/**
 * The nftables script that replaces one installation's table: it marks the packets of the
 * installation's own sandboxes (bridges `bth<tag>…`) that go to one of its exceptions, which
 * the pool's table then lets through.
 */
export function installationRuleset(options: { tag: string; exceptions: readonly EgressException[] }): string {
  const table = installationTableName(options.tag);
  const single = (exception: EgressException): boolean => exception.cidr.endsWith('/32');
  const ported = (list: readonly EgressException[]): string[] =>
    list.filter((exception) => exception.port !== undefined).flatMap((exception) => ['tcp', 'udp'].map((protocol) => `${exception.cidr} . ${protocol} . ${exception.port}`));
  const whole = (list: readonly EgressException[]): string[] => list.filter((exception) => exception.port === undefined).map((exception) => exception.cidr);
  const exact = options.exceptions.filter(single);
  const ranges = options.exceptions.filter((exception) => !single(exception));
  const mark = (hook: string): string[] => [
    `  chain mark_${hook} {`,
    `    type filter hook ${hook} priority filter - 20; policy accept;`,
    '    meta nfproto != ipv4 return',
    `    iifname != "${BRIDGE_NAME_PREFIX}${options.tag}*" return`,
    `    ip daddr @exact meta mark set meta mark or ${hex(EXACT_EXCEPTION_MARK)} return`,
    `    ip daddr . meta l4proto . th dport @exact_ports meta mark set meta mark or ${hex(EXACT_EXCEPTION_MARK)} return`,
    `    ip daddr @ranges meta mark set meta mark or ${hex(RANGE_EXCEPTION_MARK)} return`,
    `    ip daddr . meta l4proto . th dport @range_ports meta mark set meta mark or ${hex(RANGE_EXCEPTION_MARK)} return`,
    '  }',
  ];
  return [
    `table inet ${table}`,
    `delete table inet ${table}`,
    `table inet ${table} {`,
    set('exact', 'ipv4_addr', whole(exact)),
    set('exact_ports', 'ipv4_addr . inet_proto . inet_service', ported(exact)),
    set('ranges', 'ipv4_addr', whole(ranges)),
    set('range_ports', 'ipv4_addr . inet_proto . inet_service', ported(ranges)),
    ...mark('forward'),
    ...mark('input'),
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

/** Runs `nft` with `args`, the script on stdin; rejects with nft's first line of complaint. */
function nft(args: readonly string[], script = ''): Promise<string> {
  return new Promise<string>((resolve, reject) => {
    const child = execFile(findNft()!, [...args], { timeout: 30_000 }, (error, stdout, stderr) => {
      if (!error) return resolve(stdout);
      reject(new Error((stderr || error.message).trim().split('\n')[0]));
    });
    // nft may exit before it reads its stdin (a list or delete command, or a refusal): its exit
    // status and stderr are the answer, and a broken pipe here must not become an unhandled error.
    child.stdin?.on('error', () => undefined);
    if (script) child.stdin?.end(script);
    else child.stdin?.end();
  });
}

/** The network interfaces of the host (its own network namespace). */
const hostInterfaces = (): string[] => {
  try {
    return readdirSync('/sys/class/net');
  } catch {
    return [];
  }
};

/** How long an installation's table must have been seen without a bridge before it is removed. */
export const PRUNE_AFTER_MS = 60_000;
/** Installation tables seen without any bridge, and since when (this process's view). */
const bridgeless = new Map<string, number>();

/**
 * Removes the tables of installations that have had no sandbox bridge on this host for
 * {@link PRUNE_AFTER_MS} (their sandboxes and networks are gone, or the installation is): each
 * would otherwise stay for ever. A table that just appeared, before its installation made its
 * first bridge, is left alone; one removed anyway costs that installation its exceptions, never
 * more, until its next refresh puts it back.
 */
export async function pruneInstallationTables(keep: string, now = Date.now()): Promise<string[]> {
  const tables = (await nft(['list', 'tables'])).split('\n').map((line) => /^table inet (berth_inst_[0-9a-f]{6})$/.exec(line.trim())?.[1]).filter((name): name is string => name !== undefined);
  const interfaces = hostInterfaces();
  const removed: string[] = [];
  for (const table of tables) {
    const prefix = `${BRIDGE_NAME_PREFIX}${table.slice(INSTALLATION_TABLE_PREFIX.length)}`;
    if (table === keep || interfaces.some((name) => name.startsWith(prefix))) {
      bridgeless.delete(table);
      continue;
    }
    const since = bridgeless.get(table);
    if (since === undefined) {
      bridgeless.set(table, now);
      continue;
    }
    if (now - since < PRUNE_AFTER_MS) continue;
    try {
      await nft(['delete', 'table', 'inet', table]);
      removed.push(table);
    } catch {
      // Removed by another gateway at the same moment.
    }
    bridgeless.delete(table);
  }
  for (const table of bridgeless.keys()) if (!tables.includes(table)) bridgeless.delete(table);
  return removed;
}

/** Builds the egress policy of one runtime. */
export function createEgressFirewall(options: {
  pool: string;
  allow: readonly string[];
  network: boolean;
  poolNetworks: boolean;
  engine: string;
  /** The installation's sandbox root (`{sandbox_dir}/docker`): its tag names its table and bridges. */
  sandboxRoot?: string | undefined;
  logger?: HostLogger | undefined;
  resolvers?: readonly string[];
}): EgressFirewall {
  const unenforced = egressUnenforcedReason(options);
  const { logger } = options;
  let installed: Promise<void> | undefined;
  let timer: NodeJS.Timeout | undefined;
  let closed = false;
  // The last exceptions installed, as text, so a refresh that changes nothing installs nothing.
  let current = '';
  // Names that did not resolve at the last try, so each is logged once until it resolves again.
  const unresolved = new Set<string>();

  const resolveAll = async (): Promise<{ exceptions: EgressException[]; refreshSeconds: number }> => {
    let refreshSeconds = MAX_REFRESH_SECONDS;
    const exceptions: EgressException[] = [];
    await Promise.all(
      options.allow.map(async (entry) => {
        try {
          const resolved = await resolveEgressEntry(entry);
          if (unresolved.delete(entry)) logger?.info(`berth: terminal.docker_egress_allow: ${entry} resolves again; its exception is in force`);
          for (const exception of resolved.exceptions) {
            if (cidrWithin(exception.cidr, options.pool)) {
              logger?.warn(`berth: terminal.docker_egress_allow: ${entry} resolves to ${exception.cidr.replace(/\/32$/, '')}, inside terminal.docker_network_pool ${options.pool}; skipped (no exception opens the sandboxes' own addresses)`);
              continue;
            }
            exceptions.push(exception);
          }
          if (resolved.ttl !== undefined) refreshSeconds = Math.min(refreshSeconds, Math.max(MIN_REFRESH_SECONDS, resolved.ttl));
        } catch (error) {
          refreshSeconds = Math.min(refreshSeconds, UNKNOWN_TTL_SECONDS);
          if (!unresolved.has(entry)) {
            unresolved.add(entry);
            logger?.warn(`berth: ${(error as Error).message}; skipped, and tried again every ${UNKNOWN_TTL_SECONDS} s — the other exceptions are in force`);
          }
        }
      }),
    );
    return { exceptions, refreshSeconds };
  };

  const tableOf = (): string => installationTableName(installationTag({ sandboxRoot: options.sandboxRoot, pool: options.pool }));

  /** Installs the installation's table when its exceptions changed (or always), prunes tables of installations that are gone, schedules the next refresh. */
  const refresh = async (always: boolean): Promise<void> => {
    const tag = installationTag({ sandboxRoot: options.sandboxRoot, pool: options.pool });
    const { exceptions, refreshSeconds } = await resolveAll();
    const text = JSON.stringify(exceptions.map((exception) => `${exception.cidr}:${exception.port ?? ''}`).sort());
    if (always || text !== current) {
      try {
        await nft(['-f', '-'], installationRuleset({ tag, exceptions }));
      } catch (error) {
        throw new SandboxError('EGRESS_RULES_FAILED', `could not install the egress rules (nft: ${(error as Error).message}); no sandbox starts with networking until they are in — check nftables, or set terminal.docker_network: false`);
      }
      if (!always) logger?.info(`berth: egress exceptions of table inet ${installationTableName(tag)} changed (${exceptions.length} in force)`);
      current = text;
    }
    await pruneInstallationTables(installationTableName(tag)).catch(() => []);
    schedule(refreshSeconds);
  };

  const schedule = (seconds: number): void => {
    if (closed) return;
    clearTimeout(timer);
    timer = setTimeout(() => {
      // A refresh re-installs a table that went missing (the pool's, removed by hand; the
      // installation's, pruned by another gateway), and the installation's when a name moved.
      void (async () => {
        if (!(await tableExists(egressTableName(options.pool)))) await installPool();
        await refresh(!(await tableExists(tableOf())));
      })().catch((error: unknown) => {
        logger?.warn(`berth: ${(error as Error).message}`);
        schedule(UNKNOWN_TTL_SECONDS);
      });
    }, seconds * 1000);
    timer.unref();
  };

  const installPool = async (): Promise<void> => {
    try {
      await nft(['-f', '-'], egressRuleset({ pool: options.pool, resolvers: options.resolvers ?? hostResolvers() }));
    } catch (error) {
      throw new SandboxError('EGRESS_RULES_FAILED', `could not install the egress rules (nft: ${(error as Error).message}); no sandbox starts with networking until they are in — check nftables, or set terminal.docker_network: false`);
    }
  };

  const install = async (): Promise<void> => {
    await installPool();
    await refresh(true);
    logger?.info(`berth: egress rules for ${options.pool} in nftables tables inet ${egressTableName(options.pool)} and inet ${tableOf()} (${JSON.parse(current).length} exception(s))`);
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
    close() {
      closed = true;
      clearTimeout(timer);
    },
  };
}

async function tableExists(table: string): Promise<boolean> {
  try {
    await nft(['list', 'table', 'inet', table]);
    return true;
  } catch {
    return false;
  }
}
