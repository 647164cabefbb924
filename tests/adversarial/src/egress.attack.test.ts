import { execFileSync, spawnSync } from 'node:child_process';
import { randomInt } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { egressTableName } from '@berth/sandbox-runtime';
import {
  ATTACK_ENGINES,
  ATTACK_NETWORK_POOL,
  inSandboxNetns,
  randomTelegramUser,
  startAttackGateway,
  UNDER_GVISOR,
  type AttackGateway,
} from './support/attack-gateway.js';
import { startStandInNetwork, type StandInNetwork } from './support/stand-in-network.js';

// The egress policy, tried from inside sandboxes with the default configuration (networking on),
// on Docker and on rootful Podman. Every server is the test's own: one on the gateway host (bound
// to 0.0.0.0, reached through each of the host's addresses), one in a network namespace standing
// in for the internet, and one standing in for private services next to the gateway (RFC 1918,
// CGNAT, link-local). No test packet goes to any other address.

/** One HTTP request from inside the sandbox with busybox nc: the body's last line, or nc's error. */
const fetchFrom = (address: string, port: number): string => `printf 'GET / HTTP/1.0\\r\\n\\r\\n' | nc -w 3 ${address} ${port} 2>&1 | tail -n 1`;

/** Every IPv4 address of the gateway host except loopback (a sandbox's 127.0.0.1 is its own). */
const hostAddresses = (): string[] =>
  Object.values(os.networkInterfaces())
    .flat()
    .filter((entry) => entry !== undefined && entry.family === 'IPv4' && !entry.internal)
    .map((entry) => entry!.address);

let hostServer: http.Server;
let hostPort: number;
let internet: StandInNetwork;
let privateNet: StandInNetwork;
const octet = randomInt(1, 250);

beforeAll(async () => {
  hostServer = http.createServer((_request, response) => response.end('host-secret\n'));
  await new Promise<void>((resolve) => hostServer.listen(0, '0.0.0.0', resolve));
  hostPort = (hostServer.address() as AddressInfo).port;
  internet = await startStandInNetwork({ link: `203.0.113.${octet & ~3}` });
  privateNet = await startStandInNetwork({
    link: `198.51.100.${octet & ~3}`,
    extra: [`10.253.${octet}.2`, `172.31.${octet}.2`, `192.168.253.${octet}`, `100.64.${octet}.2`, `169.254.${octet}.254`],
  });
});

afterAll(async () => {
  internet?.close();
  privateNet?.close();
  await new Promise((resolve) => hostServer?.close(resolve));
});

describe.each(ATTACK_ENGINES)('egress on %s: the internet, but not the gateway host or the networks next to it', (backend) => {
  let gateway: AttackGateway;
  let allowed: AttackGateway;
  const user = randomTelegramUser();

  beforeAll(async () => {
    gateway = await startAttackGateway({ config: { backend } });
    // Exceptions: one private service by address and port, and one port on the host's own bridge.
    allowed = await startAttackGateway({
      config: { backend, docker_egress_allow: [`192.168.253.${octet}:${privateNet.port}`, `${privateNet.hostAddress}:${hostPort}`] },
    });
  });

  afterAll(async () => {
    await gateway?.cleanup();
    await allowed?.cleanup();
  });

  it('reaches the stand-in internet', async () => {
    const result = await gateway.run(user, fetchFrom(internet.addresses[0]!, internet.port));
    expect(result.output).toBe(`reached ${internet.addresses[0]}\n`);
  });

  it('is refused by every address of the gateway host, its own network gateway included, while the host itself reaches them', async () => {
    const gatewayAddress = (await gateway.run(user, "ip route | awk '/default/ {print $3}'")).output.trim();
    const targets = [...new Set([gatewayAddress, ...hostAddresses()])];
    expect(targets.length).toBeGreaterThan(1);
    for (const address of targets) {
      // Control: the server answers on that address.
      const body = await new Promise<string>((resolve, reject) => {
        http
          .get({ host: address, port: hostPort }, (response) => {
            let text = '';
            response.on('data', (chunk: Buffer) => (text += chunk.toString()));
            response.on('end', () => resolve(text));
          })
          .on('error', reject);
      });
      expect(body, address).toBe('host-secret\n');
      const result = await gateway.run(user, fetchFrom(address, hostPort));
      expect(result.output, address).not.toContain('host-secret');
      expect(result.output, address).toMatch(/Connection refused|timed out|unreachable/i);
    }
  });

  it('is refused by private, CGNAT and link-local (metadata) addresses', async () => {
    // The first address is the link's own (TEST-NET-2, public); the rest stand in for private services.
    for (const address of privateNet.addresses.slice(1)) {
      const result = await gateway.run(user, fetchFrom(address, privateNet.port));
      expect(result.output, address).not.toContain('reached');
      expect(result.output, address).toMatch(/Connection refused|timed out|unreachable/i);
    }
  });

  it('reaches exactly what docker_egress_allow lists, and nothing next to it', async () => {
    const listed = await allowed.run(user, fetchFrom(`192.168.253.${octet}`, privateNet.port));
    expect(listed.output).toBe(`reached 192.168.253.${octet}\n`);
    const hostPortAllowed = await allowed.run(user, fetchFrom(privateNet.hostAddress, hostPort));
    expect(hostPortAllowed.output).toBe('host-secret\n');
    const neighbour = await allowed.run(user, fetchFrom(`10.253.${octet}.2`, privateNet.port));
    expect(neighbour.output).toMatch(/Connection refused|timed out|unreachable/i);
  });

  it('has no IPv6 at all inside the sandbox', async () => {
    if (UNDER_GVISOR) {
      // gVisor's /proc has no such sysctl: read it on the host, in the sandbox's own namespace, and try a socket inside.
      const container = (await gateway.containerOf(user))!;
      expect(await inSandboxNetns(container.Id, ['cat', '/proc/sys/net/ipv6/conf/all/disable_ipv6'])).toBe('1\n');
      expect(await inSandboxNetns(container.Id, ['sh', '-c', 'ip -6 addr show | grep -c inet6 || true'])).toBe('0\n');
      const inside = await gateway.run(user, 'ip -6 addr show | grep -c inet6; nc -w 2 ::1 80 </dev/null 2>&1; echo "rc=$?"');
      expect(inside.output).toMatch(/^0\n/);
      expect(inside.output).toMatch(/rc=[1-9]/);
      return;
    }
    const result = await gateway.run(user, 'cat /proc/sys/net/ipv6/conf/all/disable_ipv6; ip -6 addr show | grep -c inet6 || true');
    expect(result.output).toBe('1\n0\n');
  });

  it("puts the pool's table back within seconds when something outside removes it (a reload of the host's firewall), and the block holds again", async () => {
    const table = egressTableName(ATTACK_NETWORK_POOL);
    const present = (): boolean => spawnSync('nft', ['list', 'table', 'inet', table], { stdio: 'ignore' }).status === 0;
    await gateway.run(user, 'true');
    expect(present()).toBe(true);
    execFileSync('nft', ['delete', 'table', 'inet', table]);
    // Waited for, not timed: the gateways look every TABLE_CHECK_SECONDS.
    const deadline = Date.now() + 60_000;
    while (!present() && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 250));
    expect(present(), `table inet ${table} is back`).toBe(true);
    expect([...gateway.logs, ...allowed.logs].filter((line) => line.includes(`table inet ${table}`) && line.includes('removed from outside'))).not.toEqual([]);
    const result = await gateway.run(user, fetchFrom(privateNet.addresses[1]!, privateNet.port));
    expect(result.output).not.toContain('reached');
    expect(result.output).toMatch(/Connection refused|timed out|unreachable/i);
  });

  it('berth doctor and the start-up log say nothing of an unenforced policy here (root, nft present)', () => {
    expect(gateway.logs.filter((line) => /egress policy is not enforced/.test(line))).toEqual([]);
  });
});
