import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os, { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import {
  BLOCKED_RANGES,
  createEgressFirewall,
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

// Host names resolved by a fake DNS of the test's own (any other name as the host resolves it),
// and nft replaced by a recorder: the refresh runs as it does on a host, without touching its tables.
const fakeDns = vi.hoisted(() => new Map<string, string[]>());
vi.mock('node:dns/promises', async (importOriginal) => {
  const real = await importOriginal<typeof import('node:dns/promises')>();
  // What the code under test uses of a resolver: TTLs of a name's IPv4 addresses.
  class Resolver {
    readonly #real: InstanceType<typeof real.Resolver>;
    constructor(options?: ConstructorParameters<typeof real.Resolver>[0]) {
      this.#real = new real.Resolver(options);
    }
    resolve4(host: string, options: { ttl: true }) {
      const answer = fakeDns.get(host);
      return answer ? Promise.resolve(answer.map((address) => ({ address, ttl: 10 }))) : this.#real.resolve4(host, options);
    }
  }
  const lookup = (host: string, options: object) => {
    const answer = fakeDns.get(host);
    return answer ? Promise.resolve(answer.map((address) => ({ address, family: 4 }))) : real.lookup(host, options);
  };
  return { ...real, lookup, Resolver };
});
const installed = vi.hoisted(() => [] as string[]);
const commands = vi.hoisted(() => [] as string[]);
vi.mock('./nft.js', () => ({
  findNft: () => '/usr/sbin/nft',
  nft: async (args: readonly string[], script = '') => {
    if (script) installed.push(script);
    else commands.push(args.join(' '));
    return '';
  },
  tableExists: async () => true,
}));

// The rules as text; egress.attack.test.ts and egress-exceptions.attack.test.ts prove them on real
// engines with servers of their own.
describe('the egress policy', () => {
  it('parses docker_egress_allow entries: an address, a range, either with a port; a host name with how long its answer holds', async () => {
    expect(await resolveEgressException('10.1.2.3')).toEqual([{ cidr: '10.1.2.3/32' }]);
    expect(await resolveEgressException('10.1.0.0/16')).toEqual([{ cidr: '10.1.0.0/16' }]);
    expect(await resolveEgressException('10.1.2.3:5432')).toEqual([{ cidr: '10.1.2.3/32', port: 5432 }]);
    // An address learned from a name says so: it opens only what a range would.
    expect(await resolveEgressException('localhost:8080')).toEqual(expect.arrayContaining([{ cidr: '127.0.0.1/32', port: 8080, learned: true }]));
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

  it(
    "replaces the pool's table in one transaction: the blocked ranges, the pool and the host refused, DNS to the resolvers and the own gateway " +
      "kept, exceptions only by an installation's mark",
    () => {
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
          new RegExp(
            /meta nfproto ipv6 iifname "bth\*" goto refuse\n\s+meta nfproto != ipv4 return\n\s+ip saddr != @pool return\n\s+/.source +
              /ct state established,related return\n\s+ip daddr @resolvers meta l4proto \{ tcp, udp \} th dport 53 return/.source,
          ),
        );
      }
      // The pool and every Berth bridge before any exception; link-local before any range; and no
      // range for a packet the host DNAT'd (a published port) or one to another engine's bridges.
      expect(forward).toMatch(
        new RegExp(
          /ip daddr @pool goto refuse\n\s+oifname "bth\*" goto refuse\n\s+meta mark and 0x00100000 != 0 return\n\s+/.source +
            /ip daddr @link_local goto refuse\n\s+ct status dnat goto refuse\n\s+/.source +
            /oifname \{ "docker\*", "br-\*", "podman\*", "cni\*" \} ip daddr @blocked goto refuse\n\s+/.source +
            /meta mark and 0x00200000 != 0 return\n\s+ip daddr @blocked goto refuse\n\s+\}/.source,
        ),
      );
      // The host: DNS and the egress proxy's port only on the address of the bridge the packet came
      // in on, then only exceptions naming one address.
      expect(input).toMatch(
        new RegExp(
          /iif lo return[\s\S]*th dport 53 fib daddr \. iif type local return\n\s+/.source +
            /tcp dport 3129 fib daddr \. iif type local socket wildcard 0 return\n\s+ip daddr @pool goto refuse\n\s+/.source +
            /meta mark and 0x00100000 != 0 return\n\s+goto refuse/.source,
        ),
      );
      expect(input).not.toMatch(/ip daddr @pool meta l4proto \{ tcp, udp \} th dport 53 return/);
      // Marks from anywhere else never count: cleared before anything reads them.
      expect(rules).toMatch(
        /chain clear_forward \{\n\s+type filter hook forward priority filter - 30; policy accept;\n\s+ip saddr @pool meta mark set meta mark and 0xffcfffff/,
      );
      expect(rules).toMatch(/chain refuse \{\n\s+meta l4proto tcp reject with tcp reset\n\s+reject with icmpx type admin-prohibited/);
    },
  );

  it(
    "marks only its own sandboxes' packets to its exceptions, by where the sandbox sent them, single addresses apart from ranges and names, in a " +
      "table of the installation's own",
    () => {
      const rules = installationRuleset({
        tag: 'a1b2c3',
        exceptions: [
          { cidr: '192.168.5.0/24' },
          { cidr: '10.9.9.9/32', port: 5432 },
          { cidr: '169.254.169.254/32' },
          { cidr: '10.0.0.0/8', port: 443 },
          // Nested ranges, and an address a name resolved to inside one: one element (nft refuses overlaps).
          { cidr: '10.1.0.0/16', port: 443 },
          { cidr: '192.168.5.7/32', learned: true },
          // A name's address counts as a range, never as naming one address.
          { cidr: '10.8.8.8/32', port: 443, learned: true },
          { cidr: '172.20.0.5/32', learned: true },
        ],
      });
      expect(installationTableName('a1b2c3')).toBe('berth_inst_a1b2c3');
      expect(rules.split('\n').slice(0, 3)).toEqual(['table inet berth_inst_a1b2c3', 'delete table inet berth_inst_a1b2c3', 'table inet berth_inst_a1b2c3 {']);
      expect(rules).toMatch(/set exact \{[^}]*elements = \{ 169\.254\.169\.254\/32 \}/);
      expect(rules).toMatch(/set ranges \{[^}]*elements = \{ 192\.168\.5\.0\/24, 172\.20\.0\.5\/32 \}/);
      for (const hook of ['forward', 'input']) {
        const chain = rules.slice(rules.indexOf(`chain mark_${hook}`), rules.indexOf('\n  }', rules.indexOf(`chain mark_${hook}`)));
        // Judged on the packet's original destination: a published port the host DNAT'd to a named
        // container address is not that address; one per protocol and port (nft lists a set of
        // them back as text it cannot load).
        expect(chain).toBe(
          [
            `chain mark_${hook} {`,
            `    type filter hook ${hook} priority filter - 20; policy accept;`,
            '    meta nfproto != ipv4 return',
            '    iifname != "btha1b2c3*" return',
            '    ct original ip daddr @exact meta mark set meta mark or 0x00100000 return',
            '    meta l4proto tcp ct original proto-dst 5432 ct original ip daddr { 10.9.9.9/32 } meta mark set meta mark or 0x00100000 return',
            '    meta l4proto udp ct original proto-dst 5432 ct original ip daddr { 10.9.9.9/32 } meta mark set meta mark or 0x00100000 return',
            '    ct original ip daddr @ranges meta mark set meta mark or 0x00200000 return',
            '    meta l4proto tcp ct original proto-dst 443 ct original ip daddr { 10.0.0.0/8 } meta mark set meta mark or 0x00200000 return',
            '    meta l4proto udp ct original proto-dst 443 ct original ip daddr { 10.0.0.0/8 } meta mark set meta mark or 0x00200000 return',
          ].join('\n'),
        );
      }
      expect(rules).not.toMatch(/reject|drop|accept;\n\s+accept/);
      // Allow-list mode: past the host, its own sandboxes reach only DNS and the exceptions.
      const allowlist = installationRuleset({ tag: 'a1b2c3', exceptions: [{ cidr: '10.9.9.9/32', port: 5432 }], allowlist: { resolvers: ['10.255.255.53'] } });
      expect(allowlist).toMatch(/set resolvers \{[^}]*elements = \{ 10\.255\.255\.53\/32 \}/);
      expect(allowlist).toMatch(
        new RegExp(
          /chain allowlist_forward \{\n\s+type filter hook forward priority filter - 15; policy accept;\n\s+/.source +
            /iifname != "btha1b2c3\*" return\n\s+ct state established,related return\n\s+meta mark and 0x00300000 != 0 return\n\s+/.source +
            /meta nfproto ipv4 ip daddr @resolvers meta l4proto \{ tcp, udp \} th dport 53 return\n\s+/.source +
            /meta l4proto tcp reject with tcp reset\n\s+reject with icmpx type admin-prohibited\n\s+\}/.source,
        ),
      );
    },
  );

  it(
    "checks a name's every address at every refresh: never link-local, loopback, the host or the pool, each skipped one said once, the rest marked " +
      'only as a range',
    async () => {
      vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval'] });
      vi.spyOn(process, 'getuid').mockReturnValue(0);
      const hostAddress = Object.values(os.networkInterfaces())
        .flat()
        .find((entry) => entry?.family === 'IPv4' && !entry.internal)!.address;
      const name = 'db.berth-refresh.test';
      const entry = `${name}:5432`;
      const warnings: string[] = [];
      const logger = { info: () => undefined, warn: (line: string) => void warnings.push(line), error: () => undefined };
      const firewall = createEgressFirewall({
        pool: '10.217.0.0/16',
        allow: [entry],
        network: true,
        poolNetworks: true,
        engine: 'docker',
        logger,
        resolvers: [],
      });
      const table = (): string => installed.filter((script) => script.startsWith('table inet berth_inst_')).at(-1) ?? '';
      const said = (address: string): string[] => warnings.filter((line) => line.includes(` ${entry} resolves to ${address},`));
      // Refreshes run on the fake clock until `done` (the fake TTL is 10 s).
      const refreshUntil = async (done: () => boolean): Promise<void> => {
        for (let step = 0; step < 6 && !done(); step++) await vi.advanceTimersByTimeAsync(10_000);
      };
      try {
        fakeDns.set(name, ['10.9.9.9', '169.254.169.254']);
        expect(firewall.unenforced).toBeUndefined();
        await firewall.ensure();
        expect(firewall.exceptions()).toEqual([{ cidr: '10.9.9.9/32', port: 5432, learned: true }]);
        expect(table()).toContain(
          'meta l4proto tcp ct original proto-dst 5432 ct original ip daddr { 10.9.9.9/32 } meta mark set meta mark or 0x00200000 return',
        );
        expect(table()).not.toContain('169.254.169.254');
        expect(table()).not.toContain('0x00100000 return\n    meta l4proto');
        expect(said('169.254.169.254')).toEqual([
          `berth: terminal.docker_egress_allow: ${entry} resolves to 169.254.169.254, in link-local 169.254.0.0/16 (cloud metadata), which a host ` +
            `name never opens; skipped (list the one address, e.g. 169.254.169.254:80, if sandboxes must reach it)`,
        ]);
        // The next refreshes: the same answer is not said again, and nothing is installed again.
        const scripts = installed.length;
        await vi.advanceTimersByTimeAsync(25_000);
        expect(said('169.254.169.254')).toHaveLength(1);
        expect(installed).toHaveLength(scripts);
        // Whoever answers for the name moves it: to the host, loopback, "this network", a sandbox.
        fakeDns.set(name, [hostAddress, '127.0.0.1', '0.0.0.1', '10.217.3.4', '10.9.9.10']);
        await refreshUntil(() => firewall.exceptions()[0]?.cidr === '10.9.9.10/32');
        expect(firewall.exceptions()).toEqual([{ cidr: '10.9.9.10/32', port: 5432, learned: true }]);
        for (const address of [hostAddress, '127.0.0.1', '0.0.0.1', '10.217.3.4']) {
          expect(said(address), address).toHaveLength(1);
          expect(table(), address).not.toContain(`${address}/32`);
        }
        expect(said(hostAddress)[0]).toMatch(/, an address of the gateway host, which a host name never opens; skipped \(/);
        expect(said('10.217.3.4')[0]).toMatch(
          /, inside terminal\.docker_network_pool 10\.217\.0\.0\/16, the sandboxes' own addresses, which no exception opens; skipped \(/,
        );
        expect(table()).toContain('ct original ip daddr { 10.9.9.10/32 } meta mark set meta mark or 0x00200000 return');
        expect(table()).not.toContain('10.9.9.9/32');
        // Back to link-local after it had left: a new event, said again.
        fakeDns.set(name, ['169.254.169.254']);
        await refreshUntil(() => firewall.exceptions().length === 0);
        expect(firewall.exceptions()).toEqual([]);
        expect(said('169.254.169.254')).toHaveLength(2);
      } finally {
        firewall.close();
        fakeDns.clear();
        vi.useRealTimers();
        vi.restoreAllMocks();
      }
    },
  );

  it('removes the installation table with its last sandbox, never while one is left, and installs it again with the next', async () => {
    vi.spyOn(process, 'getuid').mockReturnValue(0);
    const folder = mkdtempSync(path.join(tmpdir(), 'berth-retire-'));
    const sandboxRoot = path.join(folder, 'docker');
    const options = { pool: '10.217.0.0/16', allow: [], network: true, poolNetworks: true, engine: 'docker', resolvers: [] };
    try {
      // An installation without a key has no sandbox and no table: nothing to remove, nothing made.
      const keyless = createEgressFirewall({ ...options, sandboxRoot });
      expect(await keyless.retire(async () => false)).toBe(false);
      expect(existsSync(sandboxRoot)).toBe(false);
      const firewall = createEgressFirewall({ ...options, sandboxRoot });
      await firewall.ensure();
      const table = installationTableName(installationTag({ sandboxRoot, pool: options.pool }));
      const scripts = installed.length;
      commands.length = 0;
      expect(await firewall.retire(async () => true)).toBe(false);
      expect(commands).not.toContain(`delete table inet ${table}`);
      expect(await firewall.retire(async () => false)).toBe(true);
      expect(commands).toContain(`delete table inet ${table}`);
      // The next sandbox of this process gets it back.
      await firewall.ensure();
      expect(installed.slice(scripts).some((script) => script.startsWith(`table inet ${table}`))).toBe(true);
      firewall.close();
    } finally {
      rmSync(folder, { recursive: true, force: true });
      vi.restoreAllMocks();
    }
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
