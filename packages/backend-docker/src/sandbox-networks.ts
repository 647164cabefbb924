import { createHash, randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { SandboxError } from '@berth/core';
import { DEFAULT_NETWORK_POOL } from '@berth/core/driver';
import type Dockerode from 'dockerode';
import { isProcessIdentityGone, LABELS, MANAGED_BY, processIdentity } from '@berth/sandbox-runtime/driver';
import { engineMessage, engineStatus, isConflict, isGone, mapDockerError } from './map-docker-error.js';

/** The network option that names its bridge's interface (Docker's, which Podman's compatible API reads too). */
const BRIDGE_NAME_OPTION = 'com.docker.network.bridge.name';

/** Every sandbox network is a /29: its gateway, the sandbox, and nothing else. */
const SUBNET_PREFIX = 29;
/** Free subnets tried before giving up on a crowded pool. */
const MAX_ATTEMPTS = 64;
/** How old a network without its sandbox must be before it counts as an orphan. */
const ORPHAN_AGE_MS = 10 * 60_000;

/** An IPv4 CIDR as a 32-bit base address and a prefix length. */
interface Cidr {
  readonly base: number;
  readonly prefix: number;
}

function parseCidr(text: string): Cidr | undefined {
  const match = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})\/(\d{1,2})$/.exec(text.trim());
  if (!match) return undefined;
  const octets = match.slice(1, 5).map(Number);
  const prefix = Number(match[5]);
  if (octets.some((octet) => octet > 255) || prefix > 32) return undefined;
  const address = ((octets[0]! << 24) | (octets[1]! << 16) | (octets[2]! << 8) | octets[3]!) >>> 0;
  const mask = prefix === 0 ? 0 : (0xffffffff << (32 - prefix)) >>> 0;
  return { base: (address & mask) >>> 0, prefix };
}

function formatAddress(address: number): string {
  return [24, 16, 8, 0].map((shift) => (address >>> shift) & 255).join('.');
}

function overlaps(a: Cidr, b: Cidr): boolean {
  const prefix = Math.min(a.prefix, b.prefix);
  const mask = prefix === 0 ? 0 : (0xffffffff << (32 - prefix)) >>> 0;
  return (a.base & mask) >>> 0 === (b.base & mask) >>> 0;
}

/**
 * The routes of this host's network namespace that lie inside the pool: the bridges of another
 * engine (Docker and Podman on one host share the default pool) or of anything else. Neither
 * engine lists the other's networks, and Docker does not check a subnet it is given against the
 * host's routes, so a sandbox network on such a subnet would shadow one that exists. Read from
 * `/proc/net/route` (absent off Linux: nothing to add); a route wider than the pool (a default
 * route, a VPN's 10.0.0.0/8) is the operator's layout, not a taken subnet.
 */
async function hostRoutesIn(pool: Cidr): Promise<Cidr[]> {
  let table: string;
  try {
    table = await readFile('/proc/net/route', 'utf8');
  } catch {
    return [];
  }
  const routes: Cidr[] = [];
  for (const line of table.split('\n').slice(1)) {
    const fields = line.trim().split(/\s+/);
    if (fields.length < 8) continue;
    // Destination and mask are little-endian hexadecimal.
    const destination = Buffer.from(fields[1]!, 'hex').readUInt32LE(0);
    const mask = Buffer.from(fields[7]!, 'hex').readUInt32LE(0);
    const prefix = mask.toString(2).replace(/0/g, '').length;
    const route = { base: (destination & mask) >>> 0, prefix };
    if (prefix >= pool.prefix && overlaps(route, pool)) routes.push(route);
  }
  return routes;
}

/** Whether the engine refused a network because its subnet is in use. */
function isSubnetTaken(error: unknown): boolean {
  const status = engineStatus(error);
  const message = engineMessage(error);
  return (status === 403 && /overlap/i.test(message)) || (status === 500 && /subnet .* is already used/i.test(message));
}

/** The per-sandbox networks of a Docker backend. */
export interface SandboxNetworks {
  /**
   * The network (`NetworkMode`) of a new sandbox with networking: a spare made ahead when there
   * is one, else a new one. `pool` says whether it is one of these networks (the sandbox's own,
   * to be recorded on the container, prepared and released), not a mode such as `slirp4netns`.
   */
  take(): Promise<{ readonly mode: string; readonly pool: boolean }>;
  /** Makes sure a sandbox's own network exists (a stopped sandbox's network may have been removed). */
  prepare(name: string): Promise<void>;
  /** Removes a sandbox's own network, if it has one; never throws (an engine that refuses leaves it). */
  release(name: string): Promise<void>;
  /** Makes the next spare in the background, so the next new sandbox need not wait for one. */
  refill(): void;
  /** Removes the spare; for shutting down. */
  close(): Promise<void>;
}

/** Networks that are not the engine's own: the rootless case, where each sandbox gets `mode`. */
export function fixedSandboxNetwork(mode: string): SandboxNetworks {
  return {
    take: async () => ({ mode, pool: false }),
    prepare: async () => undefined,
    release: async () => undefined,
    refill: () => undefined,
    close: async () => undefined,
  };
}

/**
 * One bridge network per sandbox, each on its own /29 taken from `terminal.docker_network_pool`.
 * Alone on its network, a sandbox cannot reach another one's address, and nothing on its network
 * (DNS answers, ARP, the addresses in use) says who else is there or how many. Docker's own
 * address pools hold about thirty networks, so the subnets come from Berth's pool, probed from a
 * point derived from the name so that concurrent gateways rarely race for one; a subnet the
 * engine calls taken is skipped.
 */
export function createSandboxNetworks(options: {
  /** The client, or a function that makes it when a network is first made or removed (create-docker-backend.ts loads dockerode late). */
  docker: Dockerode | (() => Dockerode);
  /** The engine's name, for messages. @default 'docker' */
  engine?: string;
  endpoint: string;
  /** `terminal.docker_network_pool`, an IPv4 CIDR. */
  pool: string;
  /** Labels added to every network (a test run's marker, say). */
  labels?: Readonly<Record<string, string>>;
  /**
   * The interface name of a network's bridge (the egress policy knows an installation's
   * sandboxes by it: `sandboxBridgeName` of `@berth/sandbox-runtime/driver`); the engine's own name when absent.
   */
  bridgeName?: (networkName: string) => string;
  /** Driver options added to every network the engine makes (Podman's `isolate`, say). */
  driverOptions?: Readonly<Record<string, string>>;
}): SandboxNetworks {
  const { endpoint } = options;
  const docker = (): Dockerode => (typeof options.docker === 'function' ? options.docker() : options.docker);
  const pool = parseCidr(options.pool);
  if (!pool || pool.prefix > SUBNET_PREFIX) {
    throw new SandboxError(
      'OPTIONS_INVALID',
      `terminal.docker_network_pool ${JSON.stringify(options.pool)} is not an IPv4 range of /${SUBNET_PREFIX} or larger, e.g. ${DEFAULT_NETWORK_POOL}`,
    );
  }
  const count = 2 ** (SUBNET_PREFIX - pool.prefix);
  const maker = processIdentity();
  const subnetAt = (index: number): Cidr => ({ base: (pool.base + index * 2 ** (32 - SUBNET_PREFIX)) >>> 0, prefix: SUBNET_PREFIX });
  const fail = (error: unknown, action: string): never => {
    throw mapDockerError(error, { engine: options.engine ?? 'docker', endpoint, action });
  };

  const subnetsInUse = async (): Promise<Cidr[]> => {
    let networks: Dockerode.NetworkInspectInfo[];
    try {
      networks = await docker().listNetworks();
    } catch (error) {
      return fail(error, 'list networks');
    }
    void pruneOrphans(networks);
    const listed = networks.flatMap((network) =>
      (network.IPAM?.Config ?? []).map((config) => parseCidr(config.Subnet ?? '')).filter((cidr): cidr is Cidr => cidr !== undefined),
    );
    return [...listed, ...(await hostRoutesIn(pool))];
  };

  // Orphans: Berth's networks whose sandbox is gone without Berth removing it (`docker rm -f`, a
  // gateway killed between making the network and the container). Each holds a /29 of the pool
  // and a bridge on the host, so they are removed in the background whenever a network is made.
  // Only a network older than ORPHAN_AGE_MS, so that one another gateway process has just made
  // for a container it is about to create is left alone; one removed by mistake is made again
  // by the next prepare().
  let pruning = false;
  // The ready spare's name, which pruning leaves alone however old it is.
  let spareName: string | undefined;
  const pruneOrphans = async (networks: Dockerode.NetworkInspectInfo[]): Promise<void> => {
    if (pruning) return;
    pruning = true;
    try {
      // Old enough that no live process is about to use it, or made by a process that is gone
      // (a killed gateway's spare: its maker can never take it).
      const ours = networks.filter(
        (network) =>
          network.Labels?.[LABELS.managedBy] === MANAGED_BY &&
          (Date.now() - Date.parse(network.Created) > ORPHAN_AGE_MS || isProcessIdentityGone(network.Labels[LABELS.maker] ?? '')),
      );
      if (ours.length === 0) return;
      const referenced = new Set(
        (await docker().listContainers({ all: true })).flatMap((container) => [
          ...(container.Names ?? []).map((name) => name.replace(/^\//, '')),
          ...(container.Labels?.[LABELS.network] ? [container.Labels[LABELS.network]] : []),
        ]),
      );
      for (const network of ours) {
        if (referenced.has(network.Name) || network.Name === spareName) continue;
        // Refused when a container (one made by hand, say) still uses it: then it stays.
        await docker()
          .getNetwork(network.Id)
          .remove()
          .catch(() => undefined);
      }
    } catch {
      // The next network made tries again.
    } finally {
      pruning = false;
    }
  };

  const create = async (name: string): Promise<void> => {
    const used = await subnetsInUse();
    const start = Number.parseInt(createHash('sha256').update(name).digest('hex').slice(0, 8), 16) % count;
    let attempts = 0;
    for (let step = 0; step < count && attempts < MAX_ATTEMPTS; step++) {
      const subnet = subnetAt((start + step) % count);
      if (used.some((cidr) => overlaps(cidr, subnet))) continue;
      attempts++;
      try {
        await docker().createNetwork({
          Name: name,
          Driver: 'bridge',
          CheckDuplicate: true,
          IPAM: { Driver: 'default', Config: [{ Subnet: `${formatAddress(subnet.base)}/${SUBNET_PREFIX}` }] },
          Options: {
            'com.docker.network.bridge.enable_icc': 'false',
            ...(options.bridgeName ? { [BRIDGE_NAME_OPTION]: options.bridgeName(name) } : {}),
            ...options.driverOptions,
          },
          Labels: {
            ...options.labels,
            [LABELS.managedBy]: MANAGED_BY,
            [LABELS.maker]: maker,
            ...(options.bridgeName ? { [LABELS.bridge]: options.bridgeName(name) } : {}),
          },
        });
        return;
      } catch (error) {
        // 409: another process made this sandbox's network at the same moment.
        if (isConflict(error)) return;
        // The subnet was taken since the list, or is used where the list cannot see it (Docker's
        // 403 "Pool overlaps"; Podman's 500 "subnet … is already used on the host", which also
        // counts the routes of another engine's bridges on the same host): try the next one.
        if (isSubnetTaken(error)) {
          used.push(subnet);
          continue;
        }
        fail(error, `create network ${name}`);
      }
    }
    throw new SandboxError(
      'NETWORK_POOL_FULL',
      `no free /${SUBNET_PREFIX} is left in terminal.docker_network_pool ${options.pool} (room for ${count} sandboxes); ` +
        'give a larger pool, or remove unused sandboxes with berth rm',
    );
  };

  const prepare = async (name: string): Promise<void> => {
    try {
      const info = await docker().getNetwork(name).inspect();
      if (info.Labels?.[LABELS.managedBy] !== MANAGED_BY) {
        throw new SandboxError(
          'NETWORK_NAME_TAKEN',
          `${options.engine ?? 'docker'} network ${name} exists but is not Berth's; ` +
            `remove it (${options.engine ?? 'docker'} network rm ${name}) or set another name prefix`,
        );
      }
      // The label, not Options: Podman's compatible inspect does not report the bridge's name.
      if (!options.bridgeName || info.Labels?.[LABELS.bridge] === options.bridgeName(name)) return;
      // A network of an earlier release (or of the same sandbox root under another key) has a
      // bridge the installation's egress table does not know, so its sandbox gets the pool's
      // policy without the installation's exceptions. Its sandbox is stopped (prepare() runs
      // before a start): the network is made again under the same name, with its own bridge.
      try {
        await docker().getNetwork(name).remove();
      } catch {
        return; // still in use (a container someone attached by hand): it keeps the strict policy
      }
    } catch (error) {
      if (error instanceof SandboxError) throw error;
      if (!isGone(error)) fail(error, `inspect network ${name}`);
    }
    await create(name);
  };

  // One spare at a time: made when the driver asks (after a new sandbox started), taken by the
  // next new one. Its name is random, like every sandbox network's: a name says nothing about
  // whose it is.
  let spare: Promise<string | undefined> | undefined;
  let closed = false;
  const make = async (): Promise<string> => {
    const name = `berth-net-${randomBytes(8).toString('hex')}`;
    await create(name);
    return name;
  };

  return {
    async take() {
      const ready = spare;
      spare = undefined;
      const name = ready ? await ready : undefined;
      if (name) {
        spareName = undefined;
        try {
          const info = await docker().getNetwork(name).inspect();
          if (info.Labels?.[LABELS.managedBy] === MANAGED_BY) return { mode: name, pool: true };
        } catch {
          // Gone (pruned by another gateway, say): make one now.
        }
      }
      return { mode: await make(), pool: true };
    },
    prepare,
    async release(name) {
      // The name comes from the container's label (Podman reports "bridge" as the NetworkMode of
      // a container on a named network). Only Berth's own network of that name goes.
      try {
        const network = docker().getNetwork(name);
        const info = await network.inspect();
        if (info.Labels?.[LABELS.managedBy] !== MANAGED_BY) return;
        await network.remove();
      } catch {
        // Gone already, or still in use by a container someone made by hand: leave it.
      }
    },
    refill() {
      // Never after close(): a spare nobody will take or remove would be left behind.
      if (spare || closed) return;
      spare = make().then(
        (name) => (spareName = name),
        () => undefined,
      );
    },
    async close() {
      closed = true;
      const ready = spare;
      spare = undefined;
      const name = ready ? await ready : undefined;
      if (!name) return;
      spareName = undefined;
      await docker()
        .getNetwork(name)
        .remove()
        .catch(() => undefined);
    },
  };
}
