import { describeIgnoredKeys, TIMEOUT_EXIT_CODE } from '@berth/core';
import { createBerth } from '../create-berth.js';
import { progressReporter, type CliIo } from './cli-io.js';
import { cliTarget } from './cli-target.js';
import { loadCliConfig } from './load-cli-config.js';
import type { CliOptions } from './parse-cli-arguments.js';

/**
 * `berth exec`: validates the config and the ids first (nothing is created when they are
 * wrong), then runs the command in the sandbox the terminal tool would use for the same session
 * (core's `resolveScope`). Returns the command's exit status.
 */
export async function runExecCommand(io: CliIo, options: CliOptions, commandWords: readonly string[]): Promise<number> {
  const { config } = loadCliConfig(io, options.config);
  // As berth serve and the plugin say it: a Hermes key such as docker_extra_args does nothing here.
  const ignored = describeIgnoredKeys(config);
  if (ignored) io.stderr.write(`${ignored}\n`);
  const onProgress = progressReporter(io);
  const berth = await createBerth({ config, environment: io.environment, resolveFrom: io.cwd, ...(onProgress ? { onProgress } : {}) });
  try {
    const request = berth.request(cliTarget(options, berth.resolver.registry));
    const result = await berth.executeRequest(request, commandWords.join(' '), {
      ...(options.timeout !== undefined ? { timeout: options.timeout } : {}),
      ...(options.cwd !== undefined ? { cwd: options.cwd } : {}),
    });
    io.stdout.write(result.stdout);
    io.stderr.write(result.stderr);
    if (result.timedOut) io.stderr.write(`berth: the command was killed after ${options.timeout ?? config.timeout} s\n`);
    return result.timedOut ? TIMEOUT_EXIT_CODE : result.exitCode;
  } finally {
    await berth.close();
  }
}
