import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { SandboxError } from '@berth/core';
import { DEFAULT_NETWORK_POOL } from '@berth/core/driver';
import type Dockerode from 'dockerode';
import { LABELS, MANAGED_BY, processIdentity } from '@berth/sandbox-runtime/driver';
import { engineMessage, engineStatus, isConflict } from './map-docker-error.js';

/** The network option that names its bridge's interface (Docker's, which Podman's compatible API reads too). */
const BRIDGE_NAME_OPTION = 'com.docker.network.bridge.name';

/** Every sandbox network is a /29: its gateway, the sandbox, and nothing else. */
const SUBNET_PREFIX = 29;
/** Free subnets tried before giving up on a crowded pool. */
const MAX_ATTEMPTS = 64;

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

/**
 * Podman's answer when a host interface went away while it read the host's routes to check the
 * subnet (another network's bridge removed at that moment, Go's "route ip+net: no such network
 * interface"): nothing is wrong with the subnet, and the same create succeeds a moment later.
 */
function isRouteRace(error: unknown): boolean {
  return engineStatus(error) === 500 && /no such network interface/i.test(engineMessage(error));
}

/** How many times one subnet is tried again after {@link isRouteRace}, and how long apart. */
const ROUTE_RACE_RETRIES = 5;
const ROUTE_RACE_WAIT_MS = 100;

/** Whether the engine refused a network because its subnet is in use. */
function isSubnetTaken(error: unknown): boolean {
  const status = engineStatus(error);
  const message = engineMessage(error);
  return (status === 403 && /overlap/i.test(message)) || (status === 500 && /subnet .* is already used/i.test(message));
}

/** How {@link createSubnetNetworkMaker} makes a network: what the engine is given, and where failures go. */
export interface SubnetNetworkOptions {
  /** The client, made when first used. */
  readonly docker: () => Dockerode;
  /** `terminal.docker_network_pool`, an IPv4 CIDR. */
  readonly pool: string;
  /** Labels added to every network. */
  readonly labels?: Readonly<Record<string, string>> | undefined;
  /** The interface name of a network's bridge; the engine's own name when absent. */
  readonly bridgeName?: ((networkName: string) => string) | undefined;
  /** Driver options added to every network the engine makes. */
  readonly driverOptions?: Readonly<Record<string, string>> | undefined;
  /** Throws what an engine answer means, naming the action. */
  readonly fail: (error: unknown, action: string) => never;
  /** Told of the engine's networks each time they are listed (the orphans among them go). */
  readonly onListed: (networks: Dockerode.NetworkInspectInfo[]) => void;
}

/**
 * Makes a sandbox's bridge network on a /29 of the pool no network and no route of this host is
 * on, probed from a point derived from the name so that concurrent gateways rarely race for one.
 * Refuses a pool that is not an IPv4 range of /29 or larger at once.
 */
export function createSubnetNetworkMaker(options: SubnetNetworkOptions): (name: string) => Promise<void> {
  const { docker, fail } = options;
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

  const subnetsInUse = async (): Promise<Cidr[]> => {
    let networks: Dockerode.NetworkInspectInfo[];
    try {
      networks = await docker().listNetworks();
    } catch (error) {
      return fail(error, 'list networks');
    }
    options.onListed(networks);
    const listed = networks.flatMap((network) =>
      (network.IPAM?.Config ?? []).map((config) => parseCidr(config.Subnet ?? '')).filter((cidr): cidr is Cidr => cidr !== undefined),
    );
    return [...listed, ...(await hostRoutesIn(pool))];
  };

  return async (name: string): Promise<void> => {
    const used = await subnetsInUse();
    const start = Number.parseInt(createHash('sha256').update(name).digest('hex').slice(0, 8), 16) % count;
    let attempts = 0;
    for (let step = 0; step < count && attempts < MAX_ATTEMPTS; step++) {
      const subnet = subnetAt((start + step) % count);
      if (used.some((cidr) => overlaps(cidr, subnet))) continue;
      attempts++;
      for (let raced = 0; ; raced++) {
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
          if (isRouteRace(error) && raced < ROUTE_RACE_RETRIES) {
            await new Promise((resolve) => setTimeout(resolve, ROUTE_RACE_WAIT_MS));
            continue;
          }
          // The subnet was taken since the list, or is used where the list cannot see it (Docker's
          // 403 "Pool overlaps"; Podman's 500 "subnet … is already used on the host", which also
          // counts the routes of another engine's bridges on the same host): try the next one.
          if (isSubnetTaken(error)) {
            used.push(subnet);
            break;
          }
          fail(error, `create network ${name}`);
        }
      }
    }
    throw new SandboxError(
      'NETWORK_POOL_FULL',
      `no free /${SUBNET_PREFIX} is left in terminal.docker_network_pool ${options.pool} (room for ${count} sandboxes); ` +
        'give a larger pool, or remove unused sandboxes with berth rm',
    );
  };
}
