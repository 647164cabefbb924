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

/** Set by an installation's table on a packet of its own sandboxes to an exception naming one address. */
export const EXACT_EXCEPTION_MARK = 0x0010_0000;
/** Set on a packet of its own sandboxes to an exception that is a range. */
export const RANGE_EXCEPTION_MARK = 0x0020_0000;
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
    // The egress proxy on the same gateway (brokered variables, allow-list mode): its port only.
    `    tcp dport ${EGRESS_PROXY_PORT} fib daddr . iif type local return`,
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
  const single = (exception: EgressException): boolean => exception.cidr.endsWith('/32');
  const ported = (list: readonly EgressException[]): string[] =>
    list
      .filter((exception) => exception.port !== undefined)
      .flatMap((exception) => ['tcp', 'udp'].map((protocol) => `${exception.cidr} . ${protocol} . ${exception.port}`));
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
