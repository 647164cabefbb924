import { BerthError } from '@berth/core';
import { createBerth } from '../create-berth.js';
import { cliTarget, namedUser } from './cli-target.js';
import type { CliIo } from './cli-io.js';
import { loadCliConfig } from './load-cli-config.js';
import type { CliOptions } from './parse-cli-arguments.js';
import { scopeHasFiles } from './scope-files.js';

/**
 * `berth rm`: removes the container of the sandbox a session names (as the terminal tool would
 * resolve it), and with `--purge` its workspace and home.
 */
export async function runRmCommand(io: CliIo, options: CliOptions): Promise<number> {
  const { config } = loadCliConfig(io, options.config);
  const berth = await createBerth({ config, environment: io.environment, resolveFrom: io.cwd });
  try {
    const target = cliTarget(options, berth.resolver.registry);
    const { scope, paths } = berth.request(target);
    if (target.session && scope.kind === 'task' && scope.taskId === target.taskId) {
      // The session's commands run in a shared task sandbox: removing "its" sandbox would remove everyone's.
      throw new BerthError(
        'NO_OWN_SANDBOX',
        `terminal.docker_user_sandbox is false, so ${namedUser(options) ?? 'this session'} has no sandbox of its own ` +
          `(its commands run in ${scope.key}, shared); nothing was removed — name the task sandbox with --task to remove it`,
      );
    }
    // What is there before: a container (any state), and with --purge the scope's folder or disk.
    const containers = (await berth.backend.list()).filter((sandbox) => sandbox.scopeKey === scope.key).length;
    const files = scopeHasFiles(paths);
    if (containers === 0 && !(options.purge && files)) {
      io.stdout.write(
        options.purge || !files
          ? `nothing removed: ${scope.key} has no container and no files under ${paths.root}\n`
          : `nothing removed: ${scope.key} has no container (its files in ${paths.folder} are kept; add --purge to remove them)\n`,
      );
      return 0;
    }
    await berth.backend.remove(scope.key, { purge: options.purge, paths });
    const container = containers > 0 ? 'its container' : 'no container';
    io.stdout.write(
      options.purge
        ? `removed ${scope.key}: ${container}, ${paths.workspace} and ${paths.home}\n`
        : `removed ${scope.key}: ${container} (files kept in ${paths.folder})\n`,
    );
    return 0;
  } finally {
    await berth.close();
  }
}
