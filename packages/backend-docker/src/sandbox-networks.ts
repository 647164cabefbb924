import { randomBytes } from 'node:crypto';
import { SandboxError } from '@berth/core';
import type Dockerode from 'dockerode';
import { LABELS, MANAGED_BY } from '@berth/sandbox-runtime/driver';
import { isGone, mapDockerError } from './map-docker-error.js';
import { createSubnetNetworkMaker } from './network-subnets.js';
import { orphanNetworkPruner } from './prune-orphan-networks.js';

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
  const fail = (error: unknown, action: string): never => {
    throw mapDockerError(error, { engine: options.engine ?? 'docker', endpoint, action });
  };
  // The ready spare's name, which pruning leaves alone however old it is.
  let spareName: string | undefined;
  // Orphaned networks go in the background whenever the networks are listed (prune-orphan-networks.ts).
  const pruneOrphans = orphanNetworkPruner(docker, (name) => name === spareName);
  // A network on a free /29 of the pool (network-subnets.ts); the pool is checked here, at once.
  const create = createSubnetNetworkMaker({
    docker,
    pool: options.pool,
    labels: options.labels,
    bridgeName: options.bridgeName,
    driverOptions: options.driverOptions,
    fail,
    onListed: (networks) => void pruneOrphans(networks),
  });

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
