/** The host side the plugin's benches share: the plugin registered as a host registers it. */
import { rm } from 'node:fs/promises';
import type { HostLogger, TerminalEnvironment } from '@berth/core';
import type Dockerode from 'dockerode';
import { createBerthPlugin, createInProcessTerminalRegistry, releaseDisksUnder, type BerthPlugin } from '../src/index.js';

/** Logs nothing but errors: a bench's output is its table. */
export const quietLogger: HostLogger = { info: () => undefined, warn: () => undefined, error: (line: string) => console.error(line) };

/**
 * Registers a plugin as a host does (`register()` with a terminal registry of its own) and opens
 * one environment of its provider (`berth-{backend}`, docker unless the config names another).
 */
export async function registerBenchPlugin(options: {
  environment: Record<string, string>;
  config: Record<string, unknown>;
  logger?: HostLogger;
}): Promise<{ plugin: BerthPlugin; terminal: TerminalEnvironment }> {
  const plugin = createBerthPlugin();
  const registry = createInProcessTerminalRegistry();
  await plugin.register({
    specificationVersion: 'v1',
    terminal: registry,
    environment: options.environment,
    config: options.config,
    logger: options.logger ?? quietLogger,
  });
  return { plugin, terminal: await registry.get(`berth-${String(options.config.backend ?? 'docker')}`).createEnvironment({}) };
}

/** The OCI runtime a bench's sandboxes (and its `docker run`) use: `BENCH_RUNTIME` (runsc for gVisor), else the engine's default. */
export const benchRuntime = (() => {
  const name = process.env.BENCH_RUNTIME;
  return {
    name: name ?? 'runc',
    config: name ? { docker_runtime: name } : {},
    dockerRunArgs: name ? ['--runtime', name] : [],
  };
})();

/** Removes every sandbox a bench made under `root` (thawed first when frozen), their disks, and `root`. */
export async function removeBenchSandboxes(docker: Dockerode, root: string): Promise<void> {
  for (const container of await docker.listContainers({ all: true, filters: { label: ['dev.berth.managed-by=berth'] } })) {
    if (!(container.Labels['dev.berth.workspace'] ?? '').startsWith(root)) continue;
    const found = docker.getContainer(container.Id);
    if (container.State === 'paused') await found.unpause().catch(() => undefined);
    await found.remove({ force: true }).catch(() => undefined);
  }
  await releaseDisksUnder(root);
  await rm(root, { recursive: true, force: true });
}
