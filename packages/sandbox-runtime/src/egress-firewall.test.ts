import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { BLOCKED_RANGES, egressRuleset, egressTableName, egressUnenforcedReason, hostResolvers, resolveEgressException } from './egress-firewall.js';

// The rules as text; egress.attack.test.ts proves them on real engines with servers of its own.
describe('the egress policy', () => {
  it('parses docker_egress_allow entries: an address, a range, either with a port', async () => {
    expect(await resolveEgressException('10.1.2.3')).toEqual([{ cidr: '10.1.2.3/32' }]);
    expect(await resolveEgressException('10.1.0.0/16')).toEqual([{ cidr: '10.1.0.0/16' }]);
    expect(await resolveEgressException('10.1.2.3:5432')).toEqual([{ cidr: '10.1.2.3/32', port: 5432 }]);
    expect(await resolveEgressException('localhost:8080')).toEqual(expect.arrayContaining([{ cidr: '127.0.0.1/32', port: 8080 }]));
    await expect(resolveEgressException('no-such-host.invalid:1')).rejects.toMatchObject({ code: 'EGRESS_ALLOW_UNRESOLVED', message: expect.stringMatching(/^terminal\.docker_egress_allow: no-such-host\.invalid:1 does not resolve/) });
  });

  it('reads the host\'s IPv4 resolvers, leaving out loopback stubs', () => {
    const folder = mkdtempSync(path.join(tmpdir(), 'berth-resolv-'));
    try {
      writeFileSync(path.join(folder, 'a'), 'nameserver 127.0.0.53\nnameserver 10.0.0.2\n# nameserver 9.9.9.9\nnameserver fd00::1\n');
      writeFileSync(path.join(folder, 'b'), 'nameserver 10.0.0.2\nnameserver 192.168.1.1\n');
      expect(hostResolvers([path.join(folder, 'a'), path.join(folder, 'b'), path.join(folder, 'missing')])).toEqual(['10.0.0.2', '192.168.1.1']);
    } finally {
      rmSync(folder, { recursive: true, force: true });
    }
  });

  it('replaces one table per pool in one transaction, refusing the blocked ranges, the pool and the host, and keeping DNS and the exceptions', () => {
    const rules = egressRuleset({ pool: '10.217.0.0/16', exceptions: [{ cidr: '192.168.5.0/24' }, { cidr: '10.9.9.9/32', port: 5432 }], resolvers: ['10.255.255.53'] });
    const table = egressTableName('10.217.0.0/16');
    expect(table).toMatch(/^berth_[0-9a-f]{10}$/);
    expect(egressTableName('10.218.0.0/16')).not.toBe(table);
    expect(rules.split('\n').slice(0, 3)).toEqual([`table inet ${table}`, `delete table inet ${table}`, `table inet ${table} {`]);
    for (const range of BLOCKED_RANGES) expect(rules).toContain(range);
    expect(rules).toContain('elements = { 10.255.255.53/32 }');
    expect(rules).toContain('elements = { 192.168.5.0/24 }');
    expect(rules).toContain('10.9.9.9/32 . tcp . 5432, 10.9.9.9/32 . udp . 5432');
    const forward = rules.slice(rules.indexOf('chain forward'), rules.indexOf('chain input'));
    const input = rules.slice(rules.indexOf('chain input'));
    for (const chain of [forward, input]) {
      // Only sandboxes' traffic is looked at; replies and DNS to the host's resolvers pass.
      expect(chain).toMatch(/ip saddr != @pool return[\s\S]*ct state established,related return[\s\S]*ip daddr @resolvers meta l4proto \{ tcp, udp \} th dport 53 return/);
    }
    expect(forward).toMatch(/ip daddr @pool goto refuse\n\s+ip daddr @blocked goto refuse/);
    // The host itself: only DNS on a pool gateway, then everything else refused; its own loopback traffic passes.
    expect(input).toMatch(/iif lo return[\s\S]*ip daddr @pool meta l4proto \{ tcp, udp \} th dport 53 return\n\s+goto refuse/);
    expect(rules).toMatch(/chain refuse \{\n\s+meta l4proto tcp reject with tcp reset\n\s+reject with icmpx type admin-prohibited/);
  });

  it('says why it is not enforced where it cannot be, and nothing without networking', () => {
    expect(egressUnenforcedReason({ network: false, poolNetworks: false, engine: 'podman' })).toBeUndefined();
    expect(egressUnenforcedReason({ network: true, poolNetworks: false, engine: 'podman' })).toMatch(/^the egress policy is not enforced: podman sandboxes here are not on networks of terminal\.docker_network_pool/);
    const local = egressUnenforcedReason({ network: true, poolNetworks: true, engine: 'docker' });
    if (process.getuid?.() === 0) expect(local === undefined || /nft not found/.test(local)).toBe(true);
    else expect(local).toMatch(/firewall rules need root/);
  });
});
