import { assertSandboxBackend, ConfigError, type HostLogger, type SandboxBackendV1, type TerminalConfig } from '@berth/core';
import { findEngine } from './find-engine.js';

/** A progress event of a long engine operation (pulling an image, creating a first container). */
export type BackendProgressListener = (event: unknown) => void;

/** Options of {@link createBackend}. */
export interface CreateBackendOptions {
  /** The gateway's environment, read for `DOCKER_HOST` / `CONTAINER_HOST`. */
  readonly environment?: Readonly<Record<string, string | undefined>>;
  readonly logger?: HostLogger;
  readonly onProgress?: BackendProgressListener;
}

/** The options every Berth backend factory takes. */
interface BackendFactoryOptions {
  config: TerminalConfig;
  socketPath?: string;
  logger?: HostLogger;
  onProgress?: BackendProgressListener;
}

type BackendFactory = (options: BackendFactoryOptions) => SandboxBackendV1;

// Loaded on demand, so that a gateway on one engine never loads the other engine's backend.
async function loadFactory(specifier: string, exportName: string): Promise<BackendFactory | undefined> {
  try {
    const loaded = (await import(specifier)) as Record<string, unknown>;
    const factory = loaded[exportName];
    return typeof factory === 'function' ? (factory as BackendFactory) : undefined;
  } catch {
    return undefined;
  }
}

function notAvailable(backend: string): ConfigError {
  return new ConfigError(
    'terminal.backend',
    backend === 'docker'
      ? 'terminal.backend is docker, but the package @berth/backend-docker cannot be loaded; reinstall @berth/gateway-plugin with its dependencies'
      : `terminal.backend is ${backend}, but the ${backend} backend is not available in this build of Berth; set terminal.backend to docker`,
  );
}

/**
 * Builds the backend named by `terminal.backend`, talking to the engine that `findEngine` picks.
 * Builds only: no engine is contacted until the first sandbox is needed.
 */
export async function createBackend(config: TerminalConfig, options: CreateBackendOptions = {}): Promise<SandboxBackendV1> {
  const endpoint = findEngine(config.backend, options.environment);
  const factoryOptions: BackendFactoryOptions = {
    config,
    ...(endpoint.socketPath ? { socketPath: endpoint.socketPath } : {}),
    ...(options.logger ? { logger: options.logger } : {}),
    ...(options.onProgress ? { onProgress: options.onProgress } : {}),
  };
  let factory: BackendFactory | undefined;
  switch (config.backend) {
    case 'docker':
      factory = await loadFactory('@berth/backend-docker', 'createDockerBackend');
      break;
    case 'podman':
      factory = await loadFactory('@berth/backend-podman', 'createPodmanBackend');
      break;
  }
  if (!factory) throw notAvailable(config.backend);
  const backend = factory(factoryOptions);
  assertSandboxBackend(backend);
  return backend;
}
