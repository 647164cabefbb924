import { createBerth } from '../create-berth.js';
import { progressReporter, type CliIo } from './cli-io.js';
import { loadCliConfig } from './load-cli-config.js';
import type { CliOptions } from './parse-cli-arguments.js';

/**
 * `berth exec`: validates the config and the ids first (nothing is created when they are
 * wrong), then runs the command in the scope's sandbox. Returns the command's exit status.
 */
export async function runExecCommand(io: CliIo, options: CliOptions, commandWords: readonly string[]): Promise<number> {
  const { config } = loadCliConfig(io, options.config);
  const onProgress = progressReporter(io);
  const berth = await createBerth({ config, environment: io.environment, resolveFrom: io.cwd, ...(onProgress ? { onProgress } : {}) });
  try {
    const request =
      options.platform !== undefined && options.user !== undefined
        ? berth.resolver.forScope(berth.resolver.scopeOf({ identity: berth.resolver.registry.resolve(options.platform, options.user) }))
        : options.sessionKey !== undefined
          ? berth.request({ session: { sessionKey: options.sessionKey }, taskId: options.task ?? 'default' })
          : berth.request({ taskId: options.task ?? 'default' });
    const result = await berth.executeRequest(request, commandWords.join(' '), {
      ...(options.timeout !== undefined ? { timeout: options.timeout } : {}),
      ...(options.cwd !== undefined ? { cwd: options.cwd } : {}),
    });
    io.stdout.write(result.stdout);
    io.stderr.write(result.stderr);
    if (result.timedOut) io.stderr.write(`berth: the command was killed after ${options.timeout ?? config.timeout} s\n`);
    return result.timedOut ? 124 : result.exitCode;
  } finally {
    await berth.close();
  }
}
