import { randomBytes } from 'node:crypto';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import net, { type AddressInfo } from 'node:net';
import os from 'node:os';
import { releaseDisksUnder } from '@berth/gateway-plugin';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addressInAttackPool, randomTelegramUser, startAttackGateway, temporarySandboxDir, type AttackGateway } from './support/attack-gateway.js';
import { startNeighbourContainer, type NeighbourContainer } from './support/neighbour-container.js';
import { freeOctet, startStandInNetwork, type StandInNetwork } from './support/stand-in-network.js';

// Egress exceptions an operator might plausibly write, aimed past the policy: a range that covers
// the pool, the gateway host and link-local; ranges covering the networks of containers that are
// not Berth's, whose ports the host publishes; two installations on one pool with different
// exceptions; DNS on another sandbox's gateway; a host name whose address moves, one pointed at
// link-local or the host, and one that does not resolve. On Docker and rootful Podman. As in
// egress.attack.test.ts, every server is the test's own (the host's bound to its addresses,
// stand-ins in network namespaces, neighbour containers on the engines' default networks); no
// test packet goes to an address anyone else owns.

/** One HTTP request from inside the sandbox with busybox nc: the body's last line, or nc's error. */
const fetchFrom = (address: string, port: number): string => `printf 'GET / HTTP/1.0\\r\\n\\r\\n' | nc -w 3 ${address} ${port} 2>&1 | tail -n 1`;
const REFUSED = /Connection refused|timed out|unreachable|No route/i;

/** Every IPv4 address of the gateway host except loopback. */
const hostAddresses = (): string[] =>
  Object.values(os.networkInterfaces())
    .flat()
    .filter((entry) => entry !== undefined && entry.family === 'IPv4' && !entry.internal)
    .map((entry) => entry!.address);

/** The sandbox's own address and its network's gateway, read inside it. */
async function addressesOf(gateway: AttackGateway, user: ReturnType<typeof randomTelegramUser>): Promise<{ own: string; gateway: string }> {
  const output = (await gateway.run(user, "ip -4 -o addr show eth0 | awk '{print $4}' | cut -d/ -f1; ip route | awk '/default/ {print $3}'")).output
    .trim()
    .split('\n');
  return { own: output[0]!, gateway: output[1]! };
}

/** A TCP server of the test's own that answers `answer` and closes. */
async function listen(host: string, port: number, answer: string): Promise<net.Server> {
  const server = net.createServer((socket) => socket.end(`${answer}\n`));
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  return server;
}

const HOSTS = '/etc/hosts';
const hostsMarker = `# berth-egress-attack-${randomBytes(4).toString('hex')}`;
/** The names this file points in the hosts file now, and where. */
const pointed = new Map<string, string>();
/** Points `name` at `address` in the host's hosts file (the test's own lines, marked); `undefined` removes it. */
function pointName(name: string, address: string | undefined): void {
  if (address === undefined) pointed.delete(name);
  else pointed.set(name, address);
  const kept = readFileSync(HOSTS, 'utf8')
    .split('\n')
    .filter((line) => !line.endsWith(hostsMarker));
  while (kept.length > 0 && kept.at(-1) === '') kept.pop();
  for (const [pointedName, pointedAddress] of pointed) kept.push(`${pointedAddress} ${pointedName} ${hostsMarker}`);
  // In place: the hosts file may be a bind mount, which a rename would not replace.
  writeFileSync(HOSTS, `${kept.join('\n')}\n`);
}
/** A name of the test's own, in the reserved `.test` domain. */
const testName = (): string => `berth-egress-${randomBytes(4).toString('hex')}.test`;

/**
 * Fetches `address:port` for every target at once from inside the sandbox (a refusal is a reset,
 * a drop a 3 s wait): each target's last line of answer, or nc's error.
 */
async function fetchAll(gateway: AttackGateway, user: ReturnType<typeof randomTelegramUser>, targets: readonly string[]): Promise<Map<string, string>> {
  const fetchOne = `r=$(printf 'GET / HTTP/1.0\\r\\n\\r\\n' | nc -w 3 "\${t%:*}" "\${t##*:}" 2>&1 | tail -n 1); echo "$t $r"`;
  const output = (await gateway.run(user, `for t in ${targets.join(' ')}; do (${fetchOne}) & done; wait`)).output;
  return new Map(output.split('\n').map((line) => [line.slice(0, line.indexOf(' ')), line.slice(line.indexOf(' ') + 1)] as const));
}

let hostServer: http.Server;
let hostPort: number;
let privateNet: StandInNetwork;
// Containers that are not Berth's, one per engine, each on its engine's default network with a published port.
const neighbours: { docker?: NeighbourContainer; podman?: NeighbourContainer } = {};
// The link /30 and the extra addresses, free on the machine (other suites run egress cases beside this one).
const octet = freeOctet((n) => [`198.51.100.${(n + 64) & 0xfc}/30`, `10.253.${n}.2`, `192.168.253.${n}`, `169.254.${n}.254`, `169.254.${n}.253`]);
const office = `10.253.${octet}.2`;
const lan = `192.168.253.${octet}`;
const metadata = `169.254.${octet}.254`;
const namedMetadata = `169.254.${octet}.253`;

beforeAll(async () => {
  hostServer = http.createServer((_request, response) => response.end('host-secret\n'));
  await new Promise<void>((resolve) => hostServer.listen(0, '0.0.0.0', resolve));
  hostPort = (hostServer.address() as AddressInfo).port;
  privateNet = await startStandInNetwork({ link: `198.51.100.${(octet + 64) & 0xfc}`, extra: [office, lan, metadata, namedMetadata] });
  neighbours.docker = await startNeighbourContainer('docker');
  neighbours.podman = await startNeighbourContainer('podman');
});

afterAll(async () => {
  await neighbours.docker?.close();
  await neighbours.podman?.close();
  for (const name of [...pointed.keys()]) pointName(name, undefined);
  privateNet?.close();
  await new Promise((resolve) => hostServer?.close(resolve));
});

describe.each(['docker', 'podman'] as const)('egress exceptions on %s never reopen the pool, the host or metadata', (backend) => {
  const gateways: AttackGateway[] = [];
  const roots: string[] = [];
  afterAll(async () => {
    for (const gateway of gateways) await gateway.cleanup();
    for (const root of roots) {
      await releaseDisksUnder(root);
      rmSync(root, { recursive: true, force: true });
    }
  });
  const start = async (config: Record<string, unknown>, sandboxDir?: string): Promise<AttackGateway> => {
    const gateway = await startAttackGateway({ config: { backend, ...config }, ...(sandboxDir ? { sandboxDir } : {}) });
    gateways.push(gateway);
    return gateway;
  };

  it('ranges covering the pool, the host and link-local ("10.0.0.0/8", "192.168.0.0/16", "169.0.0.0/8") open the office network and the LAN, but not another sandbox, the host or metadata', async () => {
    const gateway = await start({ docker_egress_allow: ['10.0.0.0/8', '192.168.0.0/16', '169.0.0.0/8', `${namedMetadata}:${privateNet.port}`] });
    const [victim, attacker] = [randomTelegramUser(), randomTelegramUser()];
    // The victim listens on its own address; the attacker reads it.
    const started = await gateway.run(victim, "(printf 'victim-secret\\n' | nc -l -p 7777 >/dev/null 2>&1 &) ; sleep 1; echo listening");
    expect(started.output.trim().split('\n').at(-1)).toBe('listening');
    const victimAddress = (await addressesOf(gateway, victim)).own;
    const attackerNetwork = await addressesOf(gateway, attacker);
    const toVictim = await gateway.run(attacker, `nc -w 3 ${victimAddress} 7777 2>&1 | tail -n 1`);
    expect(toVictim.output).not.toContain('victim-secret');
    // The host's service, through the attacker's own gateway address and every host address.
    for (const address of [...new Set([attackerNetwork.gateway, ...hostAddresses()])]) {
      const result = await gateway.run(attacker, fetchFrom(address, hostPort));
      expect(result.output, address).not.toContain('host-secret');
      expect(result.output, address).toMatch(REFUSED);
    }
    // Link-local (metadata): a range never opens it; naming the one address does.
    expect((await gateway.run(attacker, fetchFrom(metadata, privateNet.port))).output).toMatch(REFUSED);
    expect((await gateway.run(attacker, fetchFrom(namedMetadata, privateNet.port))).output).toBe(`reached ${namedMetadata}\n`);
    // What the operator meant to open is open.
    expect((await gateway.run(attacker, fetchFrom(office, privateNet.port))).output).toBe(`reached ${office}\n`);
    expect((await gateway.run(attacker, fetchFrom(lan, privateNet.port))).output).toBe(`reached ${lan}\n`);
  });

  it('an exception inside the pool, a range inside link-local, or one wider than a /8, is refused at start in one line naming it', async () => {
    for (const entry of [`${addressInAttackPool(9)}:80`, '169.254.0.0/16', '0.0.0.0/0', '0.0.0.0/1']) {
      const outcome = await startAttackGateway({ config: { backend, docker_egress_allow: [entry] } }).catch((error: unknown) => error as Error);
      if (!(outcome instanceof Error)) {
        gateways.push(outcome);
        expect.fail(`${entry} was accepted`);
      }
      expect(outcome.message).toMatch(new RegExp(`^terminal\\.docker_egress_allow\\.0 .*${entry.replace(/[./]/g, '\\$&')}`));
      expect(outcome.message.split('\n')).toHaveLength(1);
    }
  });

  it('ranges ("10.0.0.0/8", "172.16.0.0/12") reach no neighbour container: neither its port the host publishes (DNAT), through any host address, nor its address on its engine\'s bridge', async () => {
    const gateway = await start({ docker_egress_allow: ['10.0.0.0/8', '172.16.0.0/12'] });
    const user = randomTelegramUser();
    const addresses = [...new Set([(await addressesOf(gateway, user)).gateway, ...hostAddresses()])];
    for (const neighbour of [neighbours.docker!, neighbours.podman!]) {
      const targets = [...addresses.map((address) => `${address}:${neighbour.hostPort}`), `${neighbour.address}:80`];
      const results = await fetchAll(gateway, user, targets);
      for (const target of targets) {
        expect(results.get(target), `${neighbour.engine} neighbour at ${target}`).not.toContain(neighbour.answer);
        expect(results.get(target), `${neighbour.engine} neighbour at ${target}`).toMatch(REFUSED);
      }
    }
  });

  it("the other engine's container is reached when named exactly, its published port only through the host address named", async () => {
    const other = backend === 'docker' ? neighbours.podman! : neighbours.docker!;
    const gateway = await start({ docker_egress_allow: [`${other.address}:80`, `${privateNet.hostAddress}:${other.hostPort}`] });
    const user = randomTelegramUser();
    const ownGateway = (await addressesOf(gateway, user)).gateway;
    const [direct, named, unnamed] = [`${other.address}:80`, `${privateNet.hostAddress}:${other.hostPort}`, `${ownGateway}:${other.hostPort}`];
    const results = await fetchAll(gateway, user, [direct, named, unnamed]);
    expect(results.get(direct), direct).toBe(other.answer);
    expect(results.get(named), named).toBe(other.answer);
    // The host DNATs this one to the very address named above: judged on where the sandbox sent it.
    expect(results.get(unnamed), unnamed).not.toContain(other.answer);
    expect(results.get(unnamed), unnamed).toMatch(REFUSED);
  });

  it('a host name pointed at link-local or at a host address opens neither: skipped, with one warning naming the entry and the address', async () => {
    const [toMetadata, toHost] = [testName(), testName()];
    pointName(toMetadata, metadata);
    pointName(toHost, privateNet.hostAddress);
    const entries = [`${toMetadata}:${privateNet.port}`, `${toHost}:${hostPort}`] as const;
    const gateway = await start({ docker_egress_allow: [...entries] });
    const user = randomTelegramUser();
    expect((await gateway.run(user, fetchFrom(metadata, privateNet.port))).output).toMatch(REFUSED);
    const toHostResult = (await gateway.run(user, fetchFrom(privateNet.hostAddress, hostPort))).output;
    expect(toHostResult).not.toContain('host-secret');
    expect(toHostResult).toMatch(REFUSED);
    for (const [entry, address] of [
      [entries[0], metadata],
      [entries[1], privateNet.hostAddress],
    ] as const) {
      const warnings = gateway.logs.filter((line) => line.startsWith('warn ') && line.includes(entry) && line.includes(address));
      expect(warnings, entry).toHaveLength(1);
      expect(warnings[0]!.split('\n'), entry).toHaveLength(1);
    }
  });

  it('two installations on one pool keep their own exceptions, whichever started last', async () => {
    const openRoot = temporarySandboxDir('egress-open');
    roots.push(openRoot);
    const open = await start({ docker_egress_allow: [`${lan}:${privateNet.port}`] }, openRoot);
    const strict = await start({});
    const [openUser, strictUser] = [randomTelegramUser(), randomTelegramUser()];
    // The open installation's first sandbox installs its rules, then the strict one's.
    expect((await open.run(openUser, fetchFrom(lan, privateNet.port))).output).toBe(`reached ${lan}\n`);
    expect((await strict.run(strictUser, fetchFrom(lan, privateNet.port))).output).toMatch(REFUSED);
    expect((await open.run(openUser, fetchFrom(lan, privateNet.port))).output).toBe(`reached ${lan}\n`);
    // The open installation's gateway restarts (same sandbox root): the strict user stays refused.
    await open.plugin.close();
    const reopened = await start({ docker_egress_allow: [`${lan}:${privateNet.port}`] }, openRoot);
    expect((await reopened.run(openUser, fetchFrom(lan, privateNet.port))).output).toBe(`reached ${lan}\n`);
    expect((await strict.run(strictUser, fetchFrom(lan, privateNet.port))).output).toMatch(REFUSED);
    expect((await reopened.run(randomTelegramUser(), fetchFrom(lan, privateNet.port))).output).toBe(`reached ${lan}\n`);
  });

  it("DNS is open only on the sandbox's own gateway, not on another sandbox's", async () => {
    const gateway = await start({});
    const [first, second] = [randomTelegramUser(), randomTelegramUser()];
    const firstNetwork = await addressesOf(gateway, first);
    const secondNetwork = await addressesOf(gateway, second);
    const servers: net.Server[] = [];
    try {
      // Port 53 on each gateway address, TCP (aardvark-dns, where Podman runs it, answers UDP).
      for (const [address, answer] of [
        [firstNetwork.gateway, 'first-gateway'],
        [secondNetwork.gateway, 'second-gateway'],
      ] as const)
        servers.push(await listen(address, 53, answer));
      expect((await gateway.run(second, `nc -w 3 ${secondNetwork.gateway} 53 2>&1 | tail -n 1`)).output).toBe('second-gateway\n');
      const other = await gateway.run(second, `nc -w 3 ${firstNetwork.gateway} 53 2>&1 | tail -n 1`);
      expect(other.output).not.toContain('first-gateway');
      expect(other.output).toMatch(REFUSED);
    } finally {
      for (const server of servers) server.close();
    }
  });

  const movesToo =
    backend === 'docker'
      ? 'is resolved again when its address moves, and one that does not resolve'
      : 'is reached at its address, and one that does not resolve';
  it(`a host name ${movesToo} is logged and skipped while the rest hold`, async () => {
    const [name, rebound] = [testName(), testName()];
    const missing = `no-such-host-${randomBytes(4).toString('hex')}.invalid`;
    pointName(name, lan);
    // A second name whose owner points it at the metadata stand-in after the start (DNS rebinding).
    pointName(rebound, lan);
    const gateway = await start({ docker_egress_allow: [`${name}:${privateNet.port}`, `${missing}:80`, `${rebound}:${privateNet.port}`] });
    const user = randomTelegramUser();
    expect((await gateway.run(user, fetchFrom(lan, privateNet.port))).output).toBe(`reached ${lan}\n`);
    expect(gateway.logs.filter((line) => line.startsWith('warn ') && line.includes(`${missing}:80 does not resolve`))).toHaveLength(1);
    // Following the name when it moves is the host's refresh (egress-firewall.ts), the same code
    // and table for both engines: its half-minute wait is spent once, on Docker.
    if (backend !== 'docker') return;
    pointName(name, office);
    pointName(rebound, metadata);
    // The name came from the hosts file (no TTL): re-resolved within 30 s; waited for, not timed.
    let moved = '';
    for (let attempt = 0; attempt < 30 && moved !== `reached ${office}\n`; attempt++) {
      moved = (await gateway.run(user, `sleep 2; ${fetchFrom(office, privateNet.port)}`)).output;
    }
    expect(moved).toBe(`reached ${office}\n`);
    expect((await gateway.run(user, fetchFrom(lan, privateNet.port))).output).toMatch(REFUSED);
    // The same refresh found the rebound name at link-local: skipped, said once.
    expect((await gateway.run(user, fetchFrom(metadata, privateNet.port))).output).toMatch(REFUSED);
    const entry = `${rebound}:${privateNet.port}`;
    expect(gateway.logs.filter((line) => line.startsWith('warn ') && line.includes(entry) && line.includes(metadata))).toHaveLength(1);
  });
});
