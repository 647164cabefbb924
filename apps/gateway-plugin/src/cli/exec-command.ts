import { describeIgnoredKeys, INTERRUPTED_EXIT_CODE, type SandboxRequest } from '@berth/core';
import { type Berth, createBerth } from '../create-berth.js';
import { progressReporter, type CliIo } from './cli-io.js';
import { cliTarget } from './cli-target.js';
import { loadCliConfig } from './load-cli-config.js';
import type { CliOptions } from './parse-cli-arguments.js';
import { scopeHasFiles } from './scope-files.js';

/**
 * Removes what a scope's first command made (its sandbox, disk and folders) when that command
 * failed or was interrupted before it ran: the scope had nothing on the host before, so nothing
 * of the user's is lost. Returns what to add to the one line the operator reads.
 */
async function undoFirst(berth: Berth, request: SandboxRequest): Promise<string> {
  try {
    await berth.backend.remove(request.scope.key, { purge: true, paths: request.paths });
    return `; removed what this first command made for ${request.scope.key}`;
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    return `; removing what this first command made for ${request.scope.key} failed too (${reason}): run berth rm --purge for it`;
  }
}

/**
 * `berth exec`: validates the config and the ids first (nothing is created when they are
 * wrong), then runs the command in the sandbox the terminal tool would use for the same session
 * (core's `resolveScope`), its output shown as it comes (masked as the terminal tool's is).
 * Returns the command's exit status.
 *
 * A scope's first command (nothing of it on the host yet) makes the sandbox apart, before the
 * command runs: when that fails or is interrupted (SIGINT, SIGTERM) what it made is removed and
 * one line says so. Ctrl-C while the command runs stops it (its process tree is killed, as at
 * the timeout) and exits 130; the sandbox and its files stay.
 */
export async function runExecCommand(io: CliIo, options: CliOptions, commandWords: readonly string[]): Promise<number> {
  const { config } = loadCliConfig(io, options.config);
  // As berth serve and the plugin say it: a Hermes key such as docker_extra_args does nothing here.
  const ignored = describeIgnoredKeys(config);
  if (ignored) io.stderr.write(`${ignored}\n`);
  const onProgress = progressReporter(io);
  const stop = new AbortController();
  let interrupted: string | undefined;
  const unlisten = io.onInterrupt?.((signal) => {
    interrupted ??= signal;
    stop.abort();
  });
  try {
    const berth = await createBerth({ config, environment: io.environment, resolveFrom: io.cwd, ...(onProgress ? { onProgress } : {}) });
    try {
      const request = berth.request(cliTarget(options, berth.resolver.registry));
      if (!scopeHasFiles(request.paths)) {
        try {
          await berth.executeRequest(request, 'true', { signal: stop.signal });
        } catch (error) {
          // Nothing on the host yet (a refusal before the folders, an engine that never answered): nothing to undo.
          const undone = scopeHasFiles(request.paths) ? await undoFirst(berth, request) : '';
          if (error instanceof Error) error.message = `${error.message.replace(/[\s.]+$/, '')}${undone}`;
          throw error;
        }
        if (interrupted !== undefined) {
          io.stderr.write(`berth: interrupted (${interrupted}) before the command ran${await undoFirst(berth, request)}\n`);
          return INTERRUPTED_EXIT_CODE;
        }
      }
      const result = await berth.executeRequest(request, commandWords.join(' '), {
        ...(options.timeout !== undefined ? { timeout: options.timeout } : {}),
        ...(options.cwd !== undefined ? { cwd: options.cwd } : {}),
        signal: stop.signal,
        onOutput: (stream, text) => (stream === 'stdout' ? io.stdout : io.stderr).write(text),
      });
      if (result.timedOut) io.stderr.write(`berth: the command was killed after ${options.timeout ?? config.timeout} s\n`);
      if (interrupted !== undefined && !result.timedOut) {
        io.stderr.write(`berth: interrupted (${interrupted}); the command was stopped, the sandbox of ${request.scope.key} stays\n`);
        return INTERRUPTED_EXIT_CODE;
      }
      return result.exitCode;
    } finally {
      await berth.close();
    }
  } finally {
    unlisten?.();
  }
}
