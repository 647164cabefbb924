import {
  createEngineBackend,
  engineStatus,
  mapEngineError,
  validateEngineBackendOptions,
  type EngineBackend,
  type EngineBackendFactoryOptions,
  type EngineInfo,
} from '@berth/backend-docker';
import { EngineUnavailableError, SandboxError, sandboxName, type BackendCapabilities, type SandboxRequest } from '@berth/core';
import Dockerode from 'dockerode';
import { adjustPodmanHostConfig, PODMAN_SANDBOX_NETWORK, transformPodmanCreate } from './adjust-podman-spec.js';
import { findPodmanSocket, podmanServiceCommand } from './find-podman-socket.js';
import { readPodmanHost, type PodmanHost } from './read-podman-host.js';
import { createThroughLibpod } from './to-libpod-spec.js';
import { unlockForPurge } from './unlock-for-purge.js';
import { wrapPodmanClient } from './wrap-podman-client.js';

/** Options of {@link createPodmanBackend}; the same shape as `createDockerBackend`'s. */
export interface PodmanBackendOptions extends EngineBackendFactoryOptions {
  /** An existing client for Podman's Docker-compatible API; else one is made from `socketPath` or discovery. */
  docker?: Dockerode;
  /**
   * The Podman API socket. Without it (and without `docker`), discovery tries `CONTAINER_HOST`,
   * then `$XDG_RUNTIME_DIR/podman/podman.sock`, then `/run/podman/podman.sock`.
   */
  socketPath?: string;
}

/** The Podman backend: the contract, the engine extras, and what it found out about the engine. */
export interface PodmanBackend extends EngineBackend {
  /** The endpoint in use and the engine facts the sandboxes are adapted to (rootless, cgroups, SELinux). */
  podmanHost(): Promise<PodmanHost & { readonly endpoint: string }>;
}


interface Connected {
  readonly backend: EngineBackend;
  readonly host: PodmanHost;
  readonly endpoint: string;
}

/** Connects to the engine the options name (or discovery finds) and reads what it must adapt to. */
async function connect(options: PodmanBackendOptions): Promise<{ docker: Dockerode; endpoint: string; host: PodmanHost }> {
  let docker: Dockerode;
  let endpoint: string;
  if (options.docker) {
    docker = options.docker;
    const modem = docker.modem as { socketPath?: unknown; host?: unknown; port?: unknown };
    endpoint = typeof modem.socketPath === 'string' ? modem.socketPath : `${String(modem.host ?? 'the given client')}${modem.port ? `:${String(modem.port)}` : ''}`;
  } else if (options.socketPath) {
    docker = new Dockerode({ socketPath: options.socketPath });
    endpoint = options.socketPath;
  } else {
    const found = await findPodmanSocket();
    docker = new Dockerode(found.endpoint);
    endpoint = found.label;
  }
  try {
    return { docker, endpoint, host: await readPodmanHost(docker) };
  } catch (error) {
    const mapped = mapEngineError(error, { engine: 'podman', endpoint, action: 'read the Podman host information' });
    if (mapped.code === 'ENGINE_UNAVAILABLE') {
      const command = endpoint.startsWith('/') ? `podman system service --time=0 unix://${endpoint}` : podmanServiceCommand();
      throw new EngineUnavailableError(endpoint, `the Podman API at ${endpoint} did not answer (${(error as { code?: string }).code ?? 'no answer'}); start it with \`${command}\``, { cause: error });
    }
    if (engineStatus(error) === 404) {
      throw new SandboxError('ENGINE_NOT_PODMAN', `the engine at ${endpoint} has no Podman API (/libpod/info answered 404); point socketPath at a Podman socket, or use createDockerBackend for a Docker Engine`, { cause: error });
    }
    throw mapped;
  }
}

/**
 * Creates the Podman backend: the shared engine layer of `@berth/backend-docker` (one hardened
 * container per scope, persistent shell, adoption, recovery, reaping, purge) on Podman's
 * Docker-compatible API, with what Podman needs on top: engine discovery, rootless user
 * namespaces (keep-id), a private slirp4netns network per sandbox, SELinux relabelling, and
 * Podman's status codes. The engine is found and probed on first use. See docs/backend-podman.md.
 */
export function createPodmanBackend(options: PodmanBackendOptions): PodmanBackend {
  const config = validateEngineBackendOptions('createPodmanBackend', options);
  const namePrefix = options.namePrefix ?? 'berth-';
  const logger = options.logger;
  const capabilities: BackendCapabilities = {
    persistentSession: config.docker_exec_mode !== 'exec',
    // Each sandbox has its own slirp4netns stack (or none): no shared segment to reach another over.
    networkIsolation: true,
    idleStop: true,
    adoption: true,
  };
  let connecting: Promise<Connected> | undefined;
  let closed = false;

  const ready = (): Promise<Connected> => {
    if (closed) return Promise.reject(new SandboxError('BACKEND_CLOSED', 'the podman backend was closed; create a new one'));
    connecting ??= (async () => {
      const { docker, endpoint, host } = await connect(options);
      if (!host.resourceLimits) {
        logger?.warn(
          `berth: rootless Podman on cgroup ${host.cgroupVersion} cannot limit memory, CPU or pids; each sandbox is bounded by the nproc ulimit (${Math.min(config.docker_nproc, config.docker_pids_limit)}) instead — move the host to cgroup v2 for full limits`,
        );
      }
      const client = wrapPodmanClient(docker, {
        transformCreate: (spec) => transformPodmanCreate(spec, host),
        // Rootless, the compatible create drops the ulimits; Podman's own create keeps them.
        ...(host.rootless ? { createContainer: (spec: Dockerode.ContainerCreateOptions) => createThroughLibpod(docker, spec) } : {}),
      });
      const backend = createEngineBackend({
        engine: 'podman',
        docker: client,
        endpoint,
        config,
        // Each sandbox's own slirp4netns stack: nothing to make beforehand, nothing to remove after.
        networkModeOf: () => (config.docker_network ? PODMAN_SANDBOX_NETWORK : 'none'),
        prepareNetwork: async () => undefined,
        adjustHostConfig: (hostConfig) => adjustPodmanHostConfig(hostConfig, { host, pidsLimit: config.docker_pids_limit }),
        capabilities,
        ...(options.labels ? { labels: options.labels } : {}),
        ...(options.image ? { image: options.image } : {}),
        ...(logger ? { logger } : {}),
        ...(options.onProgress ? { onProgress: options.onProgress } : {}),
        ...(options.namePrefix ? { namePrefix: options.namePrefix } : {}),
        ...(options.reapIntervalMs !== undefined ? { reapIntervalMs: options.reapIntervalMs } : {}),
      });
      return { backend, host, endpoint };
    })().catch((error: unknown) => {
      connecting = undefined;
      throw error;
    });
    return connecting;
  };

  // An idle lifetime needs the reaper running from the start, also after a gateway restart
  // with no message yet: connect now (a failure is logged and retried on first use).
  if (config.lifetime_seconds > 0) {
    ready().catch((error: unknown) => logger?.warn(`berth: ${(error as Error).message}`));
  }

  return {
    specificationVersion: 'v1',
    name: 'podman',
    capabilities,
    // The shared layer's formula, needed before the engine is reached.
    containerName: (request: SandboxRequest) => sandboxName({ root: request.paths.root, scopeKey: request.scope.key, prefix: namePrefix }),
    doAcquire: async (request) => (await ready()).backend.doAcquire(request),
    doExec: async (request, exec) => (await ready()).backend.doExec(request, exec),
    list: async () => (await ready()).backend.list(),
    stop: async (scopeKey) => (await ready()).backend.stop(scopeKey),
    async remove(scopeKey, removeOptions) {
      const { backend } = await ready();
      if (removeOptions?.purge && removeOptions.paths) {
        // Rootless, the gateway is not root: a folder a command made read-only would stop the
        // purge. The container goes first, so nothing in it can change the folders meanwhile.
        await backend.remove(scopeKey);
        await unlockForPurge(removeOptions.paths);
      }
      return backend.remove(scopeKey, removeOptions);
    },
    reap: async () => (await ready()).backend.reap(),
    ping: async () => (await ready()).backend.ping(),
    engineInfo: async (): Promise<EngineInfo> => (await ready()).backend.engineInfo(),
    podmanHost: async () => {
      const { host, endpoint } = await ready();
      return { ...host, endpoint };
    },
    async close() {
      const pending = connecting;
      closed = true;
      if (!pending) return;
      const connected = await pending.catch(() => undefined);
      await connected?.backend.close();
    },
  };
}
