import { describeIgnoredKeys, type HostLogger } from '@berth/core';
import { createBerth } from '../create-berth.js';
import { serveSandboxes } from '../socket/serve-sandboxes.js';
import { progressReporter, type CliIo } from './cli-io.js';
import { loadCliConfig } from './load-cli-config.js';
import type { CliOptions } from './parse-cli-arguments.js';

/** Signals that stop `berth serve`; a process object that emits them (the real one outside tests). */
export interface SignalSource {
  once(signal: 'SIGINT' | 'SIGTERM', listener: () => void): unknown;
  off(signal: 'SIGINT' | 'SIGTERM', listener: () => void): unknown;
}

/**
 * `berth serve --socket PATH [--metrics ADDR]`: holds one Berth (one backend, so every scope's shell session
 * stays warm) and serves it on a Unix socket for spawned `berth exec --socket` clients until
 * SIGINT or SIGTERM, then removes the socket. Returns 0 after a signal.
 */
export async function runServeCommand(io: CliIo, options: CliOptions, signals: SignalSource = process): Promise<number> {
  // The config and the socket path are checked before anything is listened on.
  const { config, file } = loadCliConfig(io, options.config);
  const logger: HostLogger = {
    info: (message) => io.stderr.write(`${message}\n`),
    warn: (message) => io.stderr.write(`${message}\n`),
    error: (message) => io.stderr.write(`${message}\n`),
  };
  const onProgress = progressReporter(io);
  const berth = await createBerth({
    config,
    environment: io.environment,
    resolveFrom: io.cwd,
    logger,
    ...(onProgress ? { onProgress } : {}),
    ...(options.metrics ? { metricsListen: options.metrics, metricsSetting: 'berth serve --metrics' } : {}),
  });
  let server: Awaited<ReturnType<typeof serveSandboxes>>;
  try {
    server = await serveSandboxes({ berth, socket: options.socket!, logger });
  } catch (error) {
    await berth.close();
    throw error;
  }
  // The handlers are in place before the ready line: whoever reads it may signal at once.
  const stopped = new Promise<void>((resolve) => {
    const stop = (): void => {
      signals.off('SIGINT', stop);
      signals.off('SIGTERM', stop);
      resolve();
    };
    signals.once('SIGINT', stop);
    signals.once('SIGTERM', stop);
  });
  berth.warm();
  const ignored = describeIgnoredKeys(config);
  if (ignored) io.stderr.write(`${ignored}\n`);
  io.stdout.write(
    `berth serve: listening on ${server.socket} (${berth.backend.name}, config ${file ?? 'defaults'}, ` +
      `sandboxes under ${berth.resolver.sandboxDir})${berth.metricsUrl ? `; metrics at ${berth.metricsUrl}` : ''}; stop with Ctrl-C or SIGTERM\n`,
  );
  await stopped;
  await server.close();
  await berth.close();
  io.stderr.write(`berth serve: stopped; ${server.socket} removed\n`);
  return 0;
}
