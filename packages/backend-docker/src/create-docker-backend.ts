import Dockerode from 'dockerode';
import { createEngineBackend, type EngineBackend } from './engine/create-engine-backend.js';
import { engineBackendOptionsSchema, validateEngineBackendOptions, type EngineBackendFactoryOptions } from './engine/engine-backend-options.js';
import { createSandboxNetworks } from './sandbox-networks.js';

/** The Docker socket used when neither `socketPath` nor `DOCKER_HOST` says otherwise. */
export const DEFAULT_DOCKER_SOCKET = '/var/run/docker.sock';

/** Options of {@link createDockerBackend}. */
export interface DockerBackendOptions extends EngineBackendFactoryOptions {
  /** An existing client; else one is made from `socketPath`, `DOCKER_HOST` or the default socket. */
  docker?: Dockerode;
  /** The engine's Unix socket. @default `$DOCKER_HOST` or /var/run/docker.sock */
  socketPath?: string;
}

/** The Docker backend: the contract, plus `ping()`, `engineInfo()` and `containerName()`. */
export type DockerBackend = EngineBackend;

/** Where a Docker client talks, from the options or `DOCKER_HOST`. */
export function resolveDockerEndpoint(socketPath?: string, environment: NodeJS.ProcessEnv = process.env): { socketPath: string } | { host: string; port: number; protocol: 'http' | 'https' } {
  if (socketPath) return { socketPath };
  const host = environment.DOCKER_HOST;
  if (!host) return { socketPath: DEFAULT_DOCKER_SOCKET };
  if (host.startsWith('unix://')) return { socketPath: host.slice('unix://'.length) };
  const url = new URL(host.replace(/^tcp:\/\//, 'http://'));
  return { host: url.hostname, port: Number(url.port || 2375), protocol: url.protocol === 'https:' ? 'https' : 'http' };
}

/**
 * Creates the Docker backend: one hardened container per scope on a Docker Engine, commands
 * through a persistent shell. See docs/backend-docker.md.
 */
export function createDockerBackend(options: DockerBackendOptions): DockerBackend {
  const config = validateEngineBackendOptions('createDockerBackend', options, engineBackendOptionsSchema);
  const target = resolveDockerEndpoint(options.socketPath);
  const endpoint = 'socketPath' in target ? target.socketPath : `${target.protocol}://${target.host}:${target.port}`;
  const docker = options.docker ?? new Dockerode(target);
  const labels = options.labels ?? {};
  const networks = createSandboxNetworks({ docker, endpoint, enabled: config.docker_network, pool: config.docker_network_pool, labels });
  return createEngineBackend({
    engine: 'docker',
    docker,
    endpoint,
    config,
    networkModeOf: networks.modeOf,
    prepareNetwork: networks.prepare,
    releaseNetwork: networks.release,
    labels,
    ...(options.image ? { image: options.image } : {}),
    ...(options.logger ? { logger: options.logger } : {}),
    ...(options.onProgress ? { onProgress: options.onProgress } : {}),
    ...(options.namePrefix ? { namePrefix: options.namePrefix } : {}),
    ...(options.reapIntervalMs !== undefined ? { reapIntervalMs: options.reapIntervalMs } : {}),
  });
}
