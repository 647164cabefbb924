import {
  createDockerApiDriver,
  createSandboxNetworks,
  dockerBackendOptionsSchema,
  dockerodeReads,
  engineStatus,
  fixedSandboxNetwork,
  type DockerApiConnection,
} from '@berth/backend-docker';
import { EngineUnavailableError, SandboxError, type HostLogger } from '@berth/core';
import { DEFAULT_NETWORK_POOL } from '@berth/core/driver';
import { defineBackend, installationTag, sandboxBridgeName, type BackendOptions, type SandboxRuntime } from '@berth/sandbox-runtime/driver';
import Dockerode from 'dockerode';
import { adjustPodmanCreate, PODMAN_SANDBOX_NETWORK } from './adjust-podman-spec.js';
import { findPodmanSocket, podmanServiceCommand } from './find-podman-socket.js';
import { mapPodmanError } from './map-podman-error.js';
import { readPodmanHostOf, type PodmanHost } from './read-podman-host.js';
import { createThroughLibpod, libpodRuntimeOf } from './to-libpod-spec.js';

/** Options of {@link createPodmanDriver}. */
export interface PodmanDriverOptions {
  /** An existing client for Podman's Docker-compatible API; else one is made from `socketPath` or discovery. */
  readonly docker?: Dockerode;
  /**
   * The Podman API socket. Without it (and without `docker`), discovery tries `CONTAINER_HOST`,
   * then `$XDG_RUNTIME_DIR/podman/podman.sock`, then `/run/podman/podman.sock`.
   */
  readonly socketPath?: string;
  /** The gateway's environment, read by discovery. @default process.env */
  readonly environment?: Readonly<Record<string, string | undefined>>;
  /** Where the driver says what it cannot apply on this host. */
  readonly logger?: HostLogger;
  /** Rootful: the IPv4 range each sandbox's own /29 network is taken from (`terminal.docker_network_pool`). @default DEFAULT_NETWORK_POOL (core) */
  readonly networkPool?: string;
  /** Labels on every network Berth makes (a test run's marker, say). */
  readonly labels?: Readonly<Record<string, string>>;
  /**
   * The folder of this installation's sandboxes (`{sandbox_dir}/docker`): only those whose
   * workspace is inside it are this backend's to list, adopt, reap, stop and remove; its
   * installation key names its sandboxes' bridges for the egress policy.
   */
  readonly sandboxRoot?: string;
}

/** The Podman driver, and what it found out about the engine. */
export interface PodmanDriver extends ReturnType<typeof createDockerApiDriver> {
  /** The endpoint in use and the engine facts the sandboxes are adapted to (rootless, cgroups, SELinux). */
  podmanHost(): Promise<PodmanHost & { readonly endpoint: string }>;
}

/** Connects to the engine the options name (or discovery finds) and reads what it must adapt to. */
async function connect(options: PodmanDriverOptions): Promise<{ docker: Dockerode; endpoint: string; discovery: string; host: PodmanHost }> {
  let docker: Dockerode;
  let endpoint: string;
  let discovery: string;
  if (options.docker) {
    docker = options.docker;
    const modem = docker.modem as { socketPath?: unknown; host?: unknown; port?: unknown };
    endpoint =
      typeof modem.socketPath === 'string' ? modem.socketPath : `${String(modem.host ?? 'the given client')}${modem.port ? `:${String(modem.port)}` : ''}`;
    discovery = 'the docker option';
  } else if (options.socketPath) {
    docker = new Dockerode({ socketPath: options.socketPath });
    endpoint = options.socketPath;
    discovery = 'the socketPath option';
  } else {
    const found = await findPodmanSocket({ environment: (options.environment ?? process.env) as NodeJS.ProcessEnv });
    docker = new Dockerode(found.endpoint);
    endpoint = found.label;
    discovery = found.source === 'CONTAINER_HOST' ? '$CONTAINER_HOST' : `the ${found.source} socket`;
  }
  try {
    const socketPath = (docker.modem as { socketPath?: unknown }).socketPath;
    return { docker, endpoint, discovery, host: await readPodmanHostOf(docker, typeof socketPath === 'string' ? socketPath : undefined) };
  } catch (error) {
    const mapped = mapPodmanError(error, { engine: 'podman', endpoint, action: 'read the Podman host information' });
    if (mapped instanceof EngineUnavailableError) {
      const command = endpoint.startsWith('/') ? `podman system service --time=0 unix://${endpoint}` : podmanServiceCommand();
      throw new EngineUnavailableError(
        endpoint,
        `the Podman API at ${endpoint} did not answer (${(error as { code?: string }).code ?? 'no answer'}); start it with \`${command}\``,
        { cause: error },
      );
    }
    if (engineStatus(error) === 404) {
      throw new SandboxError(
        'ENGINE_NOT_PODMAN',
        `the engine at ${endpoint} has no Podman API (/libpod/info answered 404); ` +
          'point socketPath at a Podman socket, or use createDockerBackend for a Docker Engine',
        { cause: error },
      );
    }
    throw mapped;
  }
}

/**
 * The Podman driver: the Docker-API driver on Podman's compatible service, with what Podman
 * needs: engine discovery, a network per sandbox (rootful: an isolated netavark bridge of its own;
 * rootless: a private slirp4netns stack), rootless user namespaces (keep-id) and
 * Podman's own create endpoint where the compatible one drops settings, SELinux relabelling,
 * and its status codes.
 */
export function createPodmanDriver(options: PodmanDriverOptions = {}): PodmanDriver {
  let found: { host: PodmanHost; endpoint: string } | undefined;
  // Rootful: a netavark bridge of its own per sandbox, on a /29 of the pool, made with netavark's
  // isolate option (without it netavark 1.4 forwards between its networks: its isolation chains
  // apply only to networks made isolated), and the egress policy, which holds on this host as for
  // Docker. Rootless: a private slirp4netns stack each (the gateway's user cannot make bridges or
  // firewall rules).
  const networking = (docker: Dockerode, endpoint: string, host: PodmanHost): Pick<DockerApiConnection, 'networks' | 'networkPool'> => {
    if (host.rootless) return { networks: fixedSandboxNetwork(PODMAN_SANDBOX_NETWORK) };
    const pool = options.networkPool ?? DEFAULT_NETWORK_POOL;
    const local = typeof (docker.modem as { socketPath?: unknown }).socketPath === 'string';
    const networks = createSandboxNetworks({
      docker,
      engine: 'podman',
      endpoint,
      pool,
      ...(options.labels ? { labels: options.labels } : {}),
      bridgeName: (name) => sandboxBridgeName(installationTag({ sandboxRoot: options.sandboxRoot, pool }), name),
      driverOptions: { isolate: 'true' },
    });
    return { networks, ...(local ? { networkPool: pool } : {}) };
  };
  const driver = createDockerApiDriver({
    engine: 'podman',
    capabilities: { networkIsolation: true, hostFolders: true, processList: true },
    specRevision: 'podman-2',
    mapError: mapPodmanError,
    connect: async (): Promise<DockerApiConnection> => {
      const { docker, endpoint, discovery, host } = await connect(options);
      found = { host, endpoint };
      const warnings: string[] = [];
      if (!host.resourceLimits) {
        const warning =
          `rootless Podman on cgroup ${host.cgroupVersion} cannot limit memory, CPU or pids; ` +
          'each sandbox is bounded by the nproc ulimit (the pids limit) instead — move the host to cgroup v2 for full limits';
        warnings.push(warning);
        options.logger?.warn(`berth: ${warning}`);
      }
      return {
        docker,
        // Podman's connection reads its host through dockerode as it connects, so the reads share the client.
        reads: dockerodeReads(docker),
        endpoint,
        discovery,
        warnings,
        ...networking(docker, endpoint, host),
        adjustCreate: (request) => adjustPodmanCreate(request, host),
        // Rootless, the compatible create drops the ulimits; Podman's own create keeps them.
        ...(host.rootless ? { createContainer: (request: Dockerode.ContainerCreateOptions) => createThroughLibpod(docker, request) } : {}),
        runtimeOf: (id: string) => libpodRuntimeOf(docker, id),
      };
    },
  });
  return {
    ...driver,
    async podmanHost() {
      await driver.connection();
      return { ...found!.host, endpoint: found!.endpoint };
    },
  };
}

/**
 * Options of {@link createPodmanBackend}; the same shape as `createDockerBackend`'s: every
 * backend's (`BackendOptions` of `@berth/sandbox-runtime/driver`) and the Podman driver's.
 */
export interface PodmanBackendOptions extends PodmanDriverOptions, BackendOptions {}

/** The Podman backend: the sandbox runtime over the Podman driver, and the engine facts it adapted to. */
export interface PodmanBackend extends SandboxRuntime {
  podmanHost(): Promise<PodmanHost & { readonly endpoint: string }>;
}

/**
 * Creates the Podman backend: one hardened container per scope on Podman (rootful or
 * rootless), commands through a persistent shell; the engine is found and probed on first use.
 * See docs/backend-podman.md.
 */
export const createPodmanBackend: (options: PodmanBackendOptions) => PodmanBackend = defineBackend({
  name: 'createPodmanBackend',
  options: dockerBackendOptionsSchema,
  driver: (options: PodmanBackendOptions, settings) => createPodmanDriver({ ...options, networkPool: options.networkPool ?? settings.docker_network_pool }),
  extend: (runtime, driver): PodmanBackend => ({ ...runtime, podmanHost: () => driver.podmanHost() }),
});
