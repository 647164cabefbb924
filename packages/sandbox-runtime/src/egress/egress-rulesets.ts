import { cidrWithin, LINK_LOCAL_RANGE } from '@berth/core/driver';
import { BRIDGE_NAME_PREFIX, EGRESS_PROXY_PORT, egressTableName, installationTableName } from './egress-names.js';
import type { EgressException } from './resolve-egress-entry.js';

// The egress policy as nftables scripts: what the pool's table refuses, and what an
// installation's table marks as one of its exceptions (see EgressFirewall in egress-firewall.ts).

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

/**
 * Set by an installation's table on a packet of its own sandboxes that the sandbox sent to an
 * exception naming one address (not one learned from a host name): the one mark that opens the
 * host itself, link-local, a port the host DNATs, or another engine's containers.
 */
export const EXACT_EXCEPTION_MARK = 0x0010_0000;
/** Set on a packet of its own sandboxes to an exception that is a range, or an address learned from a host name. */
export const RANGE_EXCEPTION_MARK = 0x0020_0000;
/**
 * The bridges of other containers on the host (Docker's `docker0`, `br-<id>` and
 * `docker_gwbridge`; Podman's `podman<n>` and, with CNI, `cni-podman<n>`; a CNI `cni0`): a range
 * exception never reaches a private address behind them, only an exception naming that address.
 */
export const ENGINE_BRIDGE_PATTERNS = ['docker*', 'br-*', 'podman*', 'cni*'] as const;
const OUR_MARKS = EXACT_EXCEPTION_MARK | RANGE_EXCEPTION_MARK;
const hex = (value: number): string => `0x${value.toString(16).padStart(8, '0')}`;

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
    // IPv6 is off in every sandbox. Where a runtime leaves a link-local address up all the same
    // (gVisor under Podman: docs/gvisor.md), no IPv6 packet from a sandbox bridge goes anywhere,
    // the host included; past that, this table looks at IPv4 only (never at the host's own IPv6).
    `    meta nfproto ipv6 iifname "${BRIDGE_NAME_PREFIX}*" goto refuse`,
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
    // A packet the host DNAT'd before this hook (a port it publishes for a container, a port
    // forward) was sent to the host: wherever it goes now, only an exception naming the address
    // the sandbox sent it to opens it (the marks judge `ct original`), never a range.
    '    ct status dnat goto refuse',
    // Nor does a range reach the containers of another engine on this host (not Berth's bridges:
    // refused above): their networks are private ranges behind the host's own bridges.
    `    oifname { ${ENGINE_BRIDGE_PATTERNS.map((pattern) => `"${pattern}"`).join(', ')} } ip daddr @blocked goto refuse`,
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
    // The egress proxy on the same gateway (brokered variables, allow-list mode): its port, and
    // only where a socket listens on that very address (the proxy binds each gateway by itself).
    // Where no proxy runs, or a host service listens on 0.0.0.0:3129, a sandbox reaches nothing.
    `    tcp dport ${EGRESS_PROXY_PORT} fib daddr . iif type local socket wildcard 0 return`,
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
 * The CIDRs of `cidrs` that none of the others covers, widest first: nftables refuses an interval
 * set whose elements overlap (`10.0.0.0/8` beside `10.1.0.0/16`, or an address a name resolved to
 * inside a listed range), and a covered element adds nothing.
 */
function outermost(cidrs: readonly string[]): string[] {
  const prefix = (cidr: string): number => Number(cidr.split('/')[1] ?? 32);
  const kept: string[] = [];
  for (const cidr of [...cidrs].sort((a, b) => prefix(a) - prefix(b))) {
    if (!kept.some((wider) => cidrWithin(cidr, wider))) kept.push(cidr);
  }
  return kept;
}

/** Whether an exception counts as naming its one address: a `/32` the operator wrote, never one a host name resolved to. */
const namesOneAddress = (exception: EgressException): boolean => exception.cidr.endsWith('/32') && exception.learned !== true;

/**
 * The nftables script that replaces one installation's table: it marks the packets of the
 * installation's own sandboxes (bridges `bth<tag>…`) that go to one of its exceptions, which
 * the pool's table then lets through.
 */
export function installationRuleset(options: {
  tag: string;
  exceptions: readonly EgressException[];
  /**
   * Allow-list mode (`docker_egress: allowlist`): the installation's sandboxes reach nothing
   * past their host but DNS to these resolvers and its exceptions; the rest goes through the
   * egress proxy on their gateway (which the pool's table lets through), or nowhere.
   */
  allowlist?: { readonly resolvers: readonly string[] } | undefined;
}): string {
  const table = installationTableName(options.tag);
  const exact = options.exceptions.filter(namesOneAddress);
  const ranges = options.exceptions.filter((exception) => !namesOneAddress(exception));
  const whole = (list: readonly EgressException[]): string[] =>
    outermost(list.filter((exception) => exception.port === undefined).map((exception) => exception.cidr));
  // One rule per port and protocol: nft 1.0 cannot put `ct original proto-dst` in a set's
  // concatenation, and lists it back as text it cannot load again (`[invalid type]`) unless one
  // protocol and one port name its type, which would break a host's `nft list ruleset` save.
  const ported = (list: readonly EgressException[], mark: number): string[] =>
    [...new Set(list.flatMap((exception) => (exception.port === undefined ? [] : [exception.port])))]
      .sort((a, b) => a - b)
      .flatMap((port) => {
        const addresses = outermost(list.filter((exception) => exception.port === port).map((exception) => exception.cidr));
        return ['tcp', 'udp'].map(
          (protocol) =>
            `    meta l4proto ${protocol} ct original proto-dst ${port} ct original ip daddr { ${addresses.join(', ')} } meta mark set meta mark ` +
            `or ${hex(mark)} return`,
        );
      });
  const mark = (hook: string): string[] => [
    `  chain mark_${hook} {`,
    `    type filter hook ${hook} priority filter - 20; policy accept;`,
    '    meta nfproto != ipv4 return',
    `    iifname != "${BRIDGE_NAME_PREFIX}${options.tag}*" return`,
    // Judged on where the sandbox sent the packet (`ct original`), not where the host's DNAT of a
    // published port sent it on: naming a container's address never opens the host's ports to it.
    `    ct original ip daddr @exact meta mark set meta mark or ${hex(EXACT_EXCEPTION_MARK)} return`,
    ...ported(exact, EXACT_EXCEPTION_MARK),
    `    ct original ip daddr @ranges meta mark set meta mark or ${hex(RANGE_EXCEPTION_MARK)} return`,
    ...ported(ranges, RANGE_EXCEPTION_MARK),
    '  }',
  ];
  return [
    `table inet ${table}`,
    `delete table inet ${table}`,
    `table inet ${table} {`,
    set('exact', 'ipv4_addr', whole(exact)),
    set('ranges', 'ipv4_addr', whole(ranges)),
    ...mark('forward'),
    ...mark('input'),
    ...(options.allowlist
      ? [
          set(
            'resolvers',
            'ipv4_addr',
            options.allowlist.resolvers.map((address) => `${address}/32`),
          ),
          // After the marks (priority - 20) and before the pool's table (- 10): a reject in any
          // base chain is final, so nothing later reopens what this refuses.
          '  chain allowlist_forward {',
          '    type filter hook forward priority filter - 15; policy accept;',
          `    iifname != "${BRIDGE_NAME_PREFIX}${options.tag}*" return`,
          '    ct state established,related return',
          `    meta mark and ${hex(OUR_MARKS)} != 0 return`,
          '    meta nfproto ipv4 ip daddr @resolvers meta l4proto { tcp, udp } th dport 53 return',
          '    meta l4proto tcp reject with tcp reset',
          '    reject with icmpx type admin-prohibited',
          '  }',
        ]
      : []),
    '}',
    '',
  ].join('\n');
}
