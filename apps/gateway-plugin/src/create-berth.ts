import {
  SessionAttributionError,
  createSandboxResolver,
  type ExecRequest,
  type ExecResult,
  type HostLogger,
  type ListenAddress,
  type SandboxBackendV1,
  type SandboxRequest,
  type SandboxResolver,
  type SessionContext,
  type TerminalConfig,
} from '@berth/core';
import type { EgressProxyHooks } from '@berth/sandbox-runtime';
import type { RuntimeMetrics } from '@berth/sandbox-runtime/metrics';
import { createBackend, type BackendProgressListener } from './create-backend.js';
import { createBerthPlatformRegistry } from './create-berth-platform-registry.js';
import { serveMetrics, type MetricsListener } from './metrics/serve-metrics.js';

/** Options of {@link createBerthResolver}. */
export interface CreateBerthResolverOptions {
  /** A validated `terminal:` section (core's `parseTerminalConfig` or `loadConfig`). */
  readonly config: TerminalConfig;
  /** The gateway's environment; `process.env` when absent. */
  readonly environment?: Readonly<Record<string, string | undefined>>;
  /** Where third-party platform adapters are resolved from. @default process.cwd() */
  readonly resolveFrom?: string;
}

/**
 * The resolver of a Berth gateway (platform adapters included), without a backend: what
 * `berth env` needs, and what validates ids and config before any engine is touched.
 */
export async function createBerthResolver(options: CreateBerthResolverOptions): Promise<SandboxResolver> {
  const registry = await createBerthPlatformRegistry(options.config, options.resolveFrom ? { resolveFrom: options.resolveFrom } : {});
  return createSandboxResolver({ config: options.config, registry, ...(options.environment ? { environment: options.environment } : {}) });
}

/** Options of {@link createBerth}. */
export interface CreateBerthOptions extends CreateBerthResolverOptions {
  /** A backend to use instead of the one `terminal.backend` names. */
  readonly backend?: SandboxBackendV1;
  readonly logger?: HostLogger;
  /** Progress of long engine operations (pulls, first container). */
  readonly onProgress?: BackendProgressListener;
  /** What the egress proxy trusts upstream besides the host's store, and how it resolves names (tests, embedding). */
  readonly egressProxy?: EgressProxyHooks;
  /**
   * Serve Prometheus metrics (`GET /metrics`) at this address while the Berth runs: the plugin's
   * `terminal.metrics_listen`, `berth serve --metrics`. Absent: no listener, and prom-client is not loaded.
   */
  readonly metricsListen?: ListenAddress;
  /** Where `metricsListen` was given, named when it cannot be listened on. @default 'terminal.metrics_listen' */
  readonly metricsSetting?: string;
  /** The metrics to serve, for a `backend` given with their `observer` (tests, embedding); made here otherwise. */
  readonly metrics?: RuntimeMetrics;
}

/** Where {@link Berth.execute} runs a command: a session, or a task when no user is named. */
export interface ExecuteTarget {
  /** The session; the active one (core's `runWithSession`) when absent. */
  readonly session?: SessionContext;
  /** The task for the legacy layout, used when the session names nobody. */
  readonly taskId?: string;
  /**
   * The command comes from a process that serves many people (a gateway): a session that names
   * no user, chat or key is refused instead of using the task's sandbox (core's `resolveScope`).
   * @default false
   */
  readonly sessionRequired?: boolean;
  /**
   * The variables of the host's own scope for this command (a profile's secrets, Hermes 0.21+):
   * forwarded and user variables then come from them alone, never from the gateway's
   * environment (core's `SandboxResolveOptions.variables`).
   */
  readonly variables?: Readonly<Record<string, string>>;
}

/** Options of {@link Berth.execute}. */
export interface BerthExecuteOptions extends ExecuteTarget {
  readonly cwd?: string;
  /** Seconds; absent, the backend applies `terminal.timeout` (core's `ExecRequest.timeout`). */
  readonly timeout?: number;
  readonly stdin?: string;
  /** Stops the command (exit 130); see `ExecRequest.signal`. */
  readonly signal?: AbortSignal;
  /** The output as it comes, masked; see `ExecRequest.onOutput`. */
  readonly onOutput?: ExecRequest['onOutput'];
}

/** A running Berth: the resolver, the backend and the way a command runs through both. */
export interface Berth {
  readonly config: TerminalConfig;
  readonly resolver: SandboxResolver;
  readonly backend: SandboxBackendV1;
  /** The sandbox request of a target; validates ids and paths without touching the engine. */
  request(target?: ExecuteTarget): SandboxRequest;
  /**
   * Runs a command in the target's sandbox, exactly as the terminal tool does; stdout and stderr
   * have the scope's secrets masked (by the backend) unless `docker_mask_secrets` is false.
   */
  execute(command: string, options?: BerthExecuteOptions): Promise<ExecResult & { readonly scopeKey: string }>;
  /** Runs a command for an already resolved request. */
  executeRequest(request: SandboxRequest, command: string, options?: Omit<BerthExecuteOptions, keyof ExecuteTarget>): Promise<ExecResult>;
  /**
   * Starts keeping the warm pool of new users' sandboxes (`docker_pool_size`) in the background,
   * for a process that serves commands (the plugin, `berth serve`); a failure is logged.
   */
  warm(): void;
  /** The URL of the metrics listener, when `metricsListen` was given. */
  readonly metricsUrl?: string;
  /** Closes the metrics listener and releases the backend's connections and timers; sandboxes keep running. */
  close(): Promise<void>;
}

/**
 * The programmatic API behind the plugin and the CLI: validates nothing twice, builds the
 * platform registry, the resolver and the configured backend.
 */
export async function createBerth(options: CreateBerthOptions): Promise<Berth> {
  const resolver = await createBerthResolver(options);
  // Loaded only to serve them: prom-client costs every other command of the CLI its load time.
  const metrics =
    options.metricsListen === undefined ? undefined : (options.metrics ?? (await import('@berth/sandbox-runtime/metrics')).createRuntimeMetrics());
  const backend =
    options.backend ??
    (await createBackend(options.config, {
      ...(options.environment ? { environment: options.environment } : {}),
      ...(options.logger ? { logger: options.logger } : {}),
      ...(options.onProgress ? { onProgress: options.onProgress } : {}),
      ...(options.egressProxy ? { egressProxy: options.egressProxy } : {}),
      ...(metrics ? { observer: metrics.observer } : {}),
    }));
  let listener: MetricsListener | undefined;
  if (metrics && options.metricsListen) {
    try {
      listener = await serveMetrics({
        metrics,
        address: options.metricsListen,
        setting: options.metricsSetting ?? 'terminal.metrics_listen',
        ...(options.logger ? { logger: options.logger } : {}),
      });
    } catch (error) {
      await backend.close();
      throw error;
    }
  }
  const { config } = options;
  const request = (target: ExecuteTarget = {}): SandboxRequest => {
    try {
      return resolver.resolve({
        ...(target.session ? { session: target.session } : {}),
        ...(target.taskId !== undefined ? { taskId: target.taskId } : {}),
        ...(target.sessionRequired ? { sessionRequired: true } : {}),
        ...(target.variables ? { variables: target.variables } : {}),
      });
    } catch (error) {
      // A refusal is the host's misconfiguration, not the user's: the operator reads it in the log.
      if (error instanceof SessionAttributionError) options.logger?.warn(`berth: refused a command: ${error.message}`);
      throw error;
    }
  };
  // The backend masks the scope's secrets in what it returns (the contract says so, and the
  // conformance suite checks it): masking happens once, where the output cut is known.
  const executeRequest: Berth['executeRequest'] = (sandboxRequest, command, executeOptions = {}) =>
    backend.doExec(sandboxRequest, {
      command,
      ...(executeOptions.timeout !== undefined ? { timeout: executeOptions.timeout } : {}),
      ...(executeOptions.cwd !== undefined ? { cwd: executeOptions.cwd } : {}),
      ...(executeOptions.stdin !== undefined ? { stdin: executeOptions.stdin } : {}),
      ...(executeOptions.signal ? { signal: executeOptions.signal } : {}),
      ...(executeOptions.onOutput ? { onOutput: executeOptions.onOutput } : {}),
    });
  return {
    config,
    resolver,
    backend,
    request,
    executeRequest,
    warm() {
      const runtime = backend as Partial<{ warm(): Promise<void> }>;
      if (config.docker_pool_size > 0)
        runtime.warm?.().catch((error: unknown) => options.logger?.warn(`berth: the warm pool could not start: ${(error as Error)?.message ?? error}`));
    },
    async execute(command, executeOptions = {}) {
      const sandboxRequest = request(executeOptions);
      const result = await executeRequest(sandboxRequest, command, executeOptions);
      return { ...result, scopeKey: sandboxRequest.scope.key };
    },
    ...(listener ? { metricsUrl: listener.url } : {}),
    async close() {
      await listener?.close();
      await backend.close();
    },
  };
}
