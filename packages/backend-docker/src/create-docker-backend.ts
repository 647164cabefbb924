import { SandboxError } from '@berth/core';
import Dockerode from 'dockerode';
import { z } from 'zod';
import { LABELS, MANAGED_BY } from './engine/container-spec.js';
import { createEngineBackend, type EngineBackend } from './engine/create-engine-backend.js';
import { engineBackendOptionsSchema, validateEngineBackendOptions, type EngineBackendFactoryOptions } from './engine/engine-backend-options.js';
import { isConflict, isGone, mapEngineError } from './engine/map-engine-error.js';

/** The Docker socket used when neither `socketPath` nor `DOCKER_HOST` says otherwise. */
export const DEFAULT_DOCKER_SOCKET = '/var/run/docker.sock';

/** The Berth-owned bridge network sandboxes join when `docker_network` is true. */
export const SANDBOX_NETWORK = 'berth-sandboxes';

/** Options of {@link createDockerBackend}. */
export interface DockerBackendOptions extends EngineBackendFactoryOptions {
  /** An existing client; else one is made from `socketPath`, `DOCKER_HOST` or the default socket. */
  docker?: Dockerode;
  /** The engine's Unix socket. @default `$DOCKER_HOST` or /var/run/docker.sock */
  socketPath?: string;
  /** The bridge network sandboxes join when `docker_network` is true. @default 'berth-sandboxes' */
  networkName?: string;
}

/** The Docker backend: the contract, plus `ping()`, `engineInfo()` and `containerName()`. */
export type DockerBackend = EngineBackend;

const optionsSchema = engineBackendOptionsSchema.extend({
  networkName: z.string().regex(/^[a-zA-Z0-9][a-zA-Z0-9_.-]{0,63}$/).optional(),
});

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
 * Makes (once) the Berth-owned bridge network with inter-container traffic disabled, so
 * sandboxes reach the outside world but not each other. An existing network of that name is
 * used only if it has that setting; otherwise Berth refuses rather than join an open one.
 */
export function createIsolatedNetworkPreparer(docker: Dockerode, name: string, endpoint: string, extraLabels: Readonly<Record<string, string>> = {}): () => Promise<string> {
  let ready: Promise<string> | undefined;
  const check = (info: { Options?: Record<string, string> | null }): string => {
    if (info.Options?.['com.docker.network.bridge.enable_icc'] !== 'false') {
      throw new SandboxError(
        'NETWORK_NOT_ISOLATED',
        `docker network ${name} exists but lets containers talk to each other (enable_icc is not false); remove it (\`docker network rm ${name}\`) so Berth can create it isolated, or set terminal.docker_network: false`,
      );
    }
    return name;
  };
  return () => {
    ready ??= (async () => {
      const network = docker.getNetwork(name);
      try {
        return check(await network.inspect());
      } catch (error) {
        if (!isGone(error)) throw mapEngineError(error, { engine: 'docker', endpoint, action: `inspect network ${name}` });
      }
      try {
        await docker.createNetwork({
          Name: name,
          Driver: 'bridge',
          CheckDuplicate: true,
          Options: { 'com.docker.network.bridge.enable_icc': 'false' },
          Labels: { ...extraLabels, [LABELS.managedBy]: MANAGED_BY },
        });
      } catch (error) {
        // 409: another gateway created it at the same moment; check it like any existing one.
        if (!isConflict(error)) throw mapEngineError(error, { engine: 'docker', endpoint, action: `create network ${name}` });
      }
      return check(await network.inspect());
    })().catch((error: unknown) => {
      ready = undefined;
      throw error;
    });
    return ready;
  };
}

/**
 * Creates the Docker backend: one hardened container per scope on a Docker Engine, commands
 * through a persistent shell. See docs/backend-docker.md.
 */
export function createDockerBackend(options: DockerBackendOptions): DockerBackend {
  const config = validateEngineBackendOptions('createDockerBackend', options, optionsSchema);
  const target = resolveDockerEndpoint(options.socketPath);
  const endpoint = 'socketPath' in target ? target.socketPath : `${target.protocol}://${target.host}:${target.port}`;
  const docker = options.docker ?? new Dockerode(target);
  const labels = options.labels ?? {};
  const prepareNetwork = config.docker_network ? createIsolatedNetworkPreparer(docker, options.networkName ?? SANDBOX_NETWORK, endpoint, labels) : async () => 'none';
  return createEngineBackend({
    engine: 'docker',
    docker,
    endpoint,
    config,
    prepareNetwork,
    labels,
    ...(options.image ? { image: options.image } : {}),
    ...(options.logger ? { logger: options.logger } : {}),
    ...(options.onProgress ? { onProgress: options.onProgress } : {}),
    ...(options.namePrefix ? { namePrefix: options.namePrefix } : {}),
  });
}
