import { assertSandboxBackend, ConfigError, resolveSandboxDir, sandboxRootOf, type HostLogger, type SandboxBackendV1, type TerminalConfig } from '@berth/core';
import type { EgressProxyHooks, ProgressEvent, sandboxSettings } from '@berth/sandbox-runtime';
import type { RuntimeObserver } from '@berth/sandbox-runtime/metrics';

/** A progress event of a long engine operation (pulling an image, creating a first container). */
export type BackendProgressListener = (event: ProgressEvent) => void;

/** Options of {@link createBackend}. */
export interface CreateBackendOptions {
  /** The gateway's environment, where each backend looks for its engine (`DOCKER_HOST`, `CONTAINER_HOST`, …). */
  readonly environment?: Readonly<Record<string, string | undefined>>;
  readonly logger?: HostLogger;
  readonly onProgress?: BackendProgressListener;
  /** What the egress proxy trusts upstream besides the host's store, and how it resolves names (tests, embedding). */
  readonly egressProxy?: EgressProxyHooks;
  /** Told of every command and sandbox event (the metrics' observer). */
  readonly observer?: RuntimeObserver;
}

/** What every Berth backend factory takes from the plugin: the settings it uses, and where to look for its engine. */
interface BackendFactoryOptions {
  settings: ReturnType<typeof sandboxSettings>;
  environment?: Readonly<Record<string, string | undefined>>;
  logger?: HostLogger;
  onProgress?: BackendProgressListener;
  /** An engine's own keys (Kubernetes: namespace, kubeconfig, …), picked by its package's settings function. */
  [engineKeys: string]: unknown;
}

type BackendFactory = (options: BackendFactoryOptions) => SandboxBackendV1;

/**
 * The package and factory of each backend name; loaded on demand, so a gateway on one engine
 * never loads another's. `engineSettings` names the package's function that picks its own
 * `terminal:` keys, passed to the factory under `engineOption`.
 */
const BACKENDS: Record<TerminalConfig['backend'], { package: string; factory: string; engineSettings?: { function: string; option: string } }> = {
  docker: { package: '@berth/backend-docker', factory: 'createDockerBackend' },
  podman: { package: '@berth/backend-podman', factory: 'createPodmanBackend' },
  kubernetes: {
    package: '@berth/backend-kubernetes',
    factory: 'createKubernetesBackend',
    engineSettings: { function: 'kubernetesSettings', option: 'kubernetes' },
  },
};

async function loadPackage(specifier: string): Promise<Record<string, unknown> | undefined> {
  try {
    return (await import(specifier)) as Record<string, unknown>;
  } catch {
    return undefined;
  }
}

/**
 * Builds the backend `terminal.backend` names, with only the settings a backend uses. Each
 * backend finds its engine itself, in the gateway's environment (one discovery per engine,
 * shared with `berth doctor`, which asks the backend). Builds only: no engine is contacted
 * until the first sandbox is needed.
 */
export async function createBackend(config: TerminalConfig, options: CreateBackendOptions = {}): Promise<SandboxBackendV1> {
  const entry = BACKENDS[config.backend];
  const loaded = await loadPackage(entry.package);
  const factory = typeof loaded?.[entry.factory] === 'function' ? (loaded[entry.factory] as BackendFactory) : undefined;
  const engineSettings = entry.engineSettings ? loaded?.[entry.engineSettings.function] : undefined;
  if (!factory || (entry.engineSettings && typeof engineSettings !== 'function')) {
    throw new ConfigError(
      'terminal.backend',
      `terminal.backend is ${config.backend}, but the package ${entry.package} cannot be loaded; ` +
        `install it next to @berth/gateway-plugin (npm install ${entry.package})`,
    );
  }
  // Loaded with the backend, not with this module: what only resolves (berth env) never loads the runtime.
  const { sandboxSettings: settingsOf } = await import('@berth/sandbox-runtime');
  const backend = factory({
    settings: settingsOf(config),
    // This installation's sandboxes only: another gateway on the same engine has its own.
    sandboxRoot: sandboxRootOf(resolveSandboxDir(config.sandbox_dir, (options.environment ?? process.env) as NodeJS.ProcessEnv)),
    ...(entry.engineSettings ? { [entry.engineSettings.option]: (engineSettings as (config: TerminalConfig) => unknown)(config) } : {}),
    ...(options.environment ? { environment: options.environment } : {}),
    ...(options.logger ? { logger: options.logger } : {}),
    ...(options.onProgress ? { onProgress: options.onProgress } : {}),
    ...(options.egressProxy ? { egressProxy: options.egressProxy } : {}),
    ...(options.observer ? { observer: options.observer } : {}),
  });
  assertSandboxBackend(backend);
  return backend;
}
