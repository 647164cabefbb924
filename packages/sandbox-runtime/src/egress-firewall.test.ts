import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  BLOCKED_RANGES,
  egressRuleset,
  egressTableName,
  egressUnenforcedReason,
  hostResolvers,
  installationRuleset,
  installationTableName,
  installationTag,
  resolveEgressEntry,
  resolveEgressException,
  sandboxBridgeName,
} from './egress-firewall.js';

// The rules as text; egress.attack.test.ts proves them on real engines with servers of its own.
describe('the egress policy', () => {
  it('parses docker_egress_allow entries: an address, a range, either with a port; a host name with how long its answer holds', async () => {
    expect(await resolveEgressException('10.1.2.3')).toEqual([{ cidr: '10.1.2.3/32' }]);
    expect(await resolveEgressException('10.1.0.0/16')).toEqual([{ cidr: '10.1.0.0/16' }]);
    expect(await resolveEgressException('10.1.2.3:5432')).toEqual([{ cidr: '10.1.2.3/32', port: 5432 }]);
    expect(await resolveEgressException('localhost:8080')).toEqual(expect.arrayContaining([{ cidr: '127.0.0.1/32', port: 8080 }]));
    // A name always has a time after which it is looked at again (its TTL, or UNKNOWN_TTL_SECONDS from the hosts file).
    expect((await resolveEgressEntry('localhost')).ttl).toBeGreaterThanOrEqual(0);
    expect((await resolveEgressEntry('10.1.2.3')).ttl).toBeUndefined();
    await expect(resolveEgressException('no-such-host.invalid:1')).rejects.toMatchObject({
      code: 'EGRESS_ALLOW_UNRESOLVED',
      message: expect.stringMatching(/^terminal\.docker_egress_allow: no-such-host\.invalid:1 does not resolve/),
    });
  });

  it("reads the host's IPv4 resolvers, leaving out loopback stubs", () => {
    const folder = mkdtempSync(path.join(tmpdir(), 'berth-resolv-'));
    try {
      writeFileSync(path.join(folder, 'a'), 'nameserver 127.0.0.53\nnameserver 10.0.0.2\n# nameserver 9.9.9.9\nnameserver fd00::1\n');
      writeFileSync(path.join(folder, 'b'), 'nameserver 10.0.0.2\nnameserver 192.168.1.1\n');
      expect(hostResolvers([path.join(folder, 'a'), path.join(folder, 'b'), path.join(folder, 'missing')])).toEqual(['10.0.0.2', '192.168.1.1']);
    } finally {
      rmSync(folder, { recursive: true, force: true });
    }
  });

  it("replaces the pool's table in one transaction: the blocked ranges, the pool and the host refused, DNS to the resolvers and the own gateway kept, exceptions only by an installation's mark", () => {
    const rules = egressRuleset({ pool: '10.217.0.0/16', resolvers: ['10.255.255.53', '10.217.3.1'] });
    const table = egressTableName('10.217.0.0/16');
    expect(table).toMatch(/^berth_[0-9a-f]{10}$/);
    expect(egressTableName('10.218.0.0/16')).not.toBe(table);
    expect(rules.split('\n').slice(0, 3)).toEqual([`table inet ${table}`, `delete table inet ${table}`, `table inet ${table} {`]);
    for (const range of BLOCKED_RANGES) expect(rules).toContain(range);
    // A resolver inside the pool would be a sandbox's address: left out.
    expect(rules).toContain('elements = { 10.255.255.53/32 }');
    expect(rules).not.toContain('10.217.3.1');
    const forward = rules.slice(rules.indexOf('chain forward'), rules.indexOf('chain input'));
    const input = rules.slice(rules.indexOf('chain input'));
    for (const chain of [forward, input]) {
      // IPv4 from sandboxes only; replies and DNS to the host's resolvers pass.
      expect(chain).toMatch(
        /meta nfproto ipv6 iifname "bth\*" goto refuse\n\s+meta nfproto != ipv4 return\n\s+ip saddr != @pool return\n\s+ct state established,related return\n\s+ip daddr @resolvers meta l4proto \{ tcp, udp \} th dport 53 return/,
      );
    }
    // The pool and every Berth bridge before any exception; link-local before any range.
    expect(forward).toMatch(
      /ip daddr @pool goto refuse\n\s+oifname "bth\*" goto refuse\n\s+meta mark and 0x00100000 != 0 return\n\s+ip daddr @link_local goto refuse\n\s+meta mark and 0x00200000 != 0 return\n\s+ip daddr @blocked goto refuse/,
    );
    // The host: DNS and the egress proxy's port only on the address of the bridge the packet came
    // in on, then only exceptions naming one address.
    expect(input).toMatch(
      /iif lo return[\s\S]*th dport 53 fib daddr \. iif type local return\n\s+tcp dport 3129 fib daddr \. iif type local return\n\s+ip daddr @pool goto refuse\n\s+meta mark and 0x00100000 != 0 return\n\s+goto refuse/,
    );
    expect(input).not.toMatch(/ip daddr @pool meta l4proto \{ tcp, udp \} th dport 53 return/);
    // Marks from anywhere else never count: cleared before anything reads them.
    expect(rules).toMatch(
      /chain clear_forward \{\n\s+type filter hook forward priority filter - 30; policy accept;\n\s+ip saddr @pool meta mark set meta mark and 0xffcfffff/,
    );
    expect(rules).toMatch(/chain refuse \{\n\s+meta l4proto tcp reject with tcp reset\n\s+reject with icmpx type admin-prohibited/);
  });

  it("marks only its own sandboxes' packets to its exceptions, single addresses apart from ranges, in a table of the installation's own", () => {
    const rules = installationRuleset({
      tag: 'a1b2c3',
      exceptions: [{ cidr: '192.168.5.0/24' }, { cidr: '10.9.9.9/32', port: 5432 }, { cidr: '169.254.169.254/32' }, { cidr: '10.0.0.0/8', port: 443 }],
    });
    expect(installationTableName('a1b2c3')).toBe('berth_inst_a1b2c3');
    expect(rules.split('\n').slice(0, 3)).toEqual(['table inet berth_inst_a1b2c3', 'delete table inet berth_inst_a1b2c3', 'table inet berth_inst_a1b2c3 {']);
    expect(rules).toMatch(/set exact \{[^}]*elements = \{ 169\.254\.169\.254\/32 \}/);
    expect(rules).toMatch(/set exact_ports \{[^}]*elements = \{ 10\.9\.9\.9\/32 \. tcp \. 5432, 10\.9\.9\.9\/32 \. udp \. 5432 \}/);
    expect(rules).toMatch(/set ranges \{[^}]*elements = \{ 192\.168\.5\.0\/24 \}/);
    expect(rules).toMatch(/set range_ports \{[^}]*elements = \{ 10\.0\.0\.0\/8 \. tcp \. 443, 10\.0\.0\.0\/8 \. udp \. 443 \}/);
    for (const hook of ['forward', 'input']) {
      expect(rules).toMatch(
        new RegExp(
          `chain mark_${hook} \\{\\n\\s+type filter hook ${hook} priority filter - 20; policy accept;\\n\\s+meta nfproto != ipv4 return\\n\\s+iifname != "btha1b2c3\\*" return`,
        ),
      );
    }
    expect(rules).not.toMatch(/reject|drop|accept;\n\s+accept/);
    // Allow-list mode: past the host, its own sandboxes reach only DNS and the exceptions.
    const allowlist = installationRuleset({ tag: 'a1b2c3', exceptions: [{ cidr: '10.9.9.9/32', port: 5432 }], allowlist: { resolvers: ['10.255.255.53'] } });
    expect(allowlist).toMatch(/set resolvers \{[^}]*elements = \{ 10\.255\.255\.53\/32 \}/);
    expect(allowlist).toMatch(
      /chain allowlist_forward \{\n\s+type filter hook forward priority filter - 15; policy accept;\n\s+iifname != "btha1b2c3\*" return\n\s+ct state established,related return\n\s+meta mark and 0x00300000 != 0 return\n\s+meta nfproto ipv4 ip daddr @resolvers meta l4proto \{ tcp, udp \} th dport 53 return\n\s+meta l4proto tcp reject with tcp reset\n\s+reject with icmpx type admin-prohibited\n\s+\}/,
    );
  });

  it("names an installation's bridges after its key: 15 characters, one prefix per installation, stable per network", () => {
    const folder = mkdtempSync(path.join(tmpdir(), 'berth-tag-'));
    const other = mkdtempSync(path.join(tmpdir(), 'berth-tag-'));
    try {
      const tag = installationTag({ sandboxRoot: folder, pool: '10.217.0.0/16' });
      expect(tag).toMatch(/^[0-9a-f]{6}$/);
      expect(installationTag({ sandboxRoot: folder, pool: '10.217.0.0/16' })).toBe(tag);
      expect(installationTag({ sandboxRoot: other, pool: '10.217.0.0/16' })).not.toBe(tag);
      const bridge = sandboxBridgeName(tag, 'berth-net-0011223344556677');
      expect(bridge).toMatch(new RegExp(`^bth${tag}[0-9a-f]{6}$`));
      expect(bridge).toHaveLength(15);
      expect(sandboxBridgeName(tag, 'berth-net-0011223344556677')).toBe(bridge);
      expect(sandboxBridgeName(tag, 'berth-net-8899aabbccddeeff')).not.toBe(bridge);
    } finally {
      rmSync(folder, { recursive: true, force: true });
      rmSync(other, { recursive: true, force: true });
    }
  });

  it('says why it is not enforced where it cannot be, and nothing without networking', () => {
    expect(egressUnenforcedReason({ network: false, poolNetworks: false, engine: 'podman' })).toBeUndefined();
    expect(egressUnenforcedReason({ network: true, poolNetworks: false, engine: 'podman' })).toMatch(
      /^the egress policy is not enforced: podman sandboxes here are not on networks of terminal\.docker_network_pool/,
    );
    const local = egressUnenforcedReason({ network: true, poolNetworks: true, engine: 'docker' });
    if (process.getuid?.() === 0) expect(local === undefined || /nft not found/.test(local)).toBe(true);
    else expect(local).toMatch(/firewall rules need root/);
  });
});
