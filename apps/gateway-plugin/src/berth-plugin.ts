import {
  assertHost,
  assertOneSessionStore,
  BerthError,
  describeIgnoredKeys,
  hermesHome,
  loadConfig,
  parseListenAddress,
  parseTerminalConfig,
  type BerthHostV1,
  type BerthPluginV1,
  type SandboxBackendV1,
  type TerminalConfig,
} from '@berth/core';
import type { EgressProxyHooks } from '@berth/sandbox-runtime';
import type { BackendProgressListener } from './create-backend.js';
import { createBerth, type Berth } from './create-berth.js';
import { createTerminalProvider } from './create-terminal-provider.js';
import { findIsolationRisks } from './isolation-risks.js';

/** Options of {@link createBerthPlugin}. */
export interface BerthPluginOptions {
  /** A backend to use instead of the one `terminal.backend` names (tests, embedding). */
  readonly backend?: SandboxBackendV1;
  /** Progress of long engine operations. */
  readonly onProgress?: BackendProgressListener;
  /** What the egress proxy trusts upstream besides the host's store, and how it resolves names (tests, embedding). */
  readonly egressProxy?: EgressProxyHooks;
  /** Where third-party platform adapters are resolved from. @default process.cwd() */
  readonly resolveFrom?: string;
}

/** The Berth plugin, plus what an embedding program needs to shut it down. */
export interface BerthPlugin extends BerthPluginV1 {
  /** The Berth instances made by `register()`, one per host. */
  readonly instances: readonly Berth[];
  /** Closes every instance's backend; sandboxes keep running. */
  close(): Promise<void>;
}

/** The provider name Berth registers for a backend. */
export function providerNameFor(backend: TerminalConfig['backend']): string {
  return `berth-${backend}`;
}

/**
 * Creates the plugin a host registers. `register(host)` validates the host's contract version
 * and the `terminal:` config (the host's parsed section, else the default config file), builds
 * the backend and the platform adapters, and registers the `berth-docker` (or `berth-podman`,
 * `berth-kubernetes`)
 * terminal environment provider.
 */
export function createBerthPlugin(options: BerthPluginOptions = {}): BerthPlugin {
  const instances: Berth[] = [];
  return {
    specificationVersion: 'v1',
    name: 'berth',
    instances,
    async register(host: BerthHostV1): Promise<void> {
      assertHost(host);
      // A host that set its sessions through another copy of core would look like one that never
      // sets any: every user would share the task sandbox.
      assertOneSessionStore();
      const environment = host.environment ?? process.env;
      const config = host.config !== undefined ? parseTerminalConfig(host.config) : loadConfig({ environment: environment as NodeJS.ProcessEnv }).config;
      const name = providerNameFor(config.backend);
      if (host.terminal.reservedNames?.includes(name)) {
        throw new BerthError(
          'PROVIDER_NAME_RESERVED',
          `the host reserves the terminal environment name ${name}, so Berth cannot register under it; rename the host's built-in environment`,
        );
      }
      const berth = await createBerth({
        config,
        environment,
        ...(options.backend ? { backend: options.backend } : {}),
        ...(host.logger ? { logger: host.logger } : {}),
        ...(options.onProgress ? { onProgress: options.onProgress } : {}),
        ...(options.egressProxy ? { egressProxy: options.egressProxy } : {}),
        ...(options.resolveFrom ? { resolveFrom: options.resolveFrom } : {}),
        // The schema refused any other form; the listener closes with the instance.
        ...(config.metrics_listen !== undefined ? { metricsListen: parseListenAddress(config.metrics_listen)! } : {}),
      });
      try {
        host.terminal.registerEnvironmentProvider(
          createTerminalProvider(berth, {
            name,
            environment,
            ...(host.logger ? { logger: host.logger } : {}),
            ...(host.sessionSource ? { sessionSource: host.sessionSource } : {}),
          }),
        );
      } catch (error) {
        await berth.close();
        throw error;
      }
      instances.push(berth);
      berth.warm();
      for (const risk of findIsolationRisks(config, { sandboxDir: berth.resolver.sandboxDir, hermesHome: hermesHome(environment as NodeJS.ProcessEnv) })) {
        host.logger?.warn(`berth: ${risk.key}: ${risk.risk}; remove it unless every user may have that (berth doctor lists these)`);
      }
      host.logger?.info(`berth: registered terminal environment ${name} (sandboxes under ${berth.resolver.sandboxDir})`);
      if (berth.metricsUrl) host.logger?.info(`berth: serving Prometheus metrics at ${berth.metricsUrl}`);
      const ignored = describeIgnoredKeys(config);
      if (ignored) host.logger?.warn(ignored);
    },
    async close(): Promise<void> {
      const closing = instances.splice(0);
      await Promise.all(closing.map((berth) => berth.close()));
    },
  };
}
