import {
  backendOptionsSchema,
  defineBackend,
  installationTag,
  sandboxBridgeName,
  type BackendOptions,
  type SandboxRuntime,
} from '@berth/sandbox-runtime/driver';
import { DEFAULT_NETWORK_POOL } from '@berth/core/driver';
import { createRequire } from 'node:module';
import type Dockerode from 'dockerode';
import { z } from 'zod';
import { createDockerApiDriver } from './create-docker-api-driver.js';
import { createEngineReads, dockerodeReads } from './engine-reads.js';
import { findDockerEngine } from './find-docker-engine.js';
import { mapDockerError } from './map-docker-error.js';
import { createSandboxNetworks } from './sandbox-networks.js';

/** Options of {@link createDockerDriver}. */
export interface DockerDriverOptions {
  /** An existing client; else one is made for the engine `findDockerEngine` finds. */
  readonly docker?: Dockerode;
  /** The engine's Unix socket. @default `$DOCKER_HOST`, else the first default socket that exists */
  readonly socketPath?: string;
  /** The gateway's environment, read for `DOCKER_HOST`. @default process.env */
  readonly environment?: Readonly<Record<string, string | undefined>>;
  /** The IPv4 range each sandbox's own /29 network is taken from (`terminal.docker_network_pool`). @default DEFAULT_NETWORK_POOL (core) */
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

/**
 * dockerode, loaded when a call first needs it: read-only commands (`berth ls`, `berth doctor`)
 * answer through engine-reads.ts and never load it (ssh2, gRPC, protobufjs: about 200 ms).
 */
export function loadDockerode(): typeof Dockerode {
  return createRequire(import.meta.url)('dockerode') as typeof Dockerode;
}

/** The Docker driver: hardened containers, each on a bridge network of its own. */
export function createDockerDriver(options: DockerDriverOptions = {}) {
  const found = findDockerEngine({
    ...(options.socketPath ? { socketPath: options.socketPath } : {}),
    ...(options.environment ? { environment: options.environment } : {}),
  });
  return createDockerApiDriver({
    engine: 'docker',
    capabilities: { networkIsolation: true, hostFolders: true, processList: true },
    specRevision: 'docker-2',
    mapError: mapDockerError,
    connect: async () => {
      let client = options.docker;
      // Made on first use: only calls that change the engine need it.
      const dockerClient = (): Dockerode => (client ??= new (loadDockerode())(found.connection));
      const reads = client ? dockerodeReads(client) : createEngineReads(found.connection);
      const endpoint = options.docker ? 'the given client' : found.endpoint;
      const pool = options.networkPool ?? DEFAULT_NETWORK_POOL;
      // A Unix socket is an engine on this host: its bridges are this host's, and so is the firewall.
      const { socketPath } = reads;
      return {
        get docker() {
          return dockerClient();
        },
        reads,
        endpoint,
        discovery: options.docker ? 'the docker option' : found.discovery,
        networks: createSandboxNetworks({
          docker: dockerClient,
          endpoint,
          pool,
          ...(options.labels ? { labels: options.labels } : {}),
          // The installation's egress table knows its sandboxes by their bridges' names.
          bridgeName: (name) => sandboxBridgeName(installationTag({ sandboxRoot: options.sandboxRoot, pool }), name),
        }),
        ...(typeof socketPath === 'string' ? { networkPool: pool } : {}),
      };
    },
  });
}

/** Options of {@link createDockerBackend}: every backend's (`BackendOptions` of `@berth/sandbox-runtime/driver`) and the Docker driver's. */
export interface DockerBackendOptions extends DockerDriverOptions, BackendOptions {}

/** The Docker backend: the sandbox runtime over the Docker driver. */
export type DockerBackend = SandboxRuntime;

/** The schema of {@link DockerBackendOptions} (Podman's factory takes the same). */
export const dockerBackendOptionsSchema = backendOptionsSchema.extend({
  docker: z.custom<Dockerode>((value) => value === undefined || (value !== null && typeof value === 'object')).optional(),
  socketPath: z.string().min(1).optional(),
  networkPool: z.string().optional(),
});

/**
 * Creates the Docker backend: one hardened container per scope on a Docker Engine, each on a
 * network of its own, commands through a persistent shell. See docs/backend-docker.md.
 */
export const createDockerBackend: (options: DockerBackendOptions) => DockerBackend = defineBackend({
  name: 'createDockerBackend',
  options: dockerBackendOptionsSchema,
  driver: (options: DockerBackendOptions, settings) => createDockerDriver({ ...options, networkPool: options.networkPool ?? settings.docker_network_pool }),
});
