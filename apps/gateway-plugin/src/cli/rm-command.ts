import { createBerth } from '../create-berth.js';
import type { CliIo } from './cli-io.js';
import { loadCliConfig } from './load-cli-config.js';
import type { CliOptions } from './parse-cli-arguments.js';

/** `berth rm`: removes a scope's container, and with `--purge` its workspace and home. */
export async function runRmCommand(io: CliIo, options: CliOptions): Promise<number> {
  const { config } = loadCliConfig(io, options.config);
  const berth = await createBerth({ config, environment: io.environment, resolveFrom: io.cwd });
  try {
    const { resolver } = berth;
    const scope =
      options.platform !== undefined && options.user !== undefined
        ? resolver.scopeOf({ identity: resolver.registry.resolve(options.platform, options.user) })
        : resolver.scopeOf({ taskId: options.task! });
    const { paths } = resolver.forScope(scope);
    await berth.backend.remove(scope.key, { purge: options.purge, paths });
    io.stdout.write(options.purge ? `removed ${scope.key}: its container, ${paths.workspace} and ${paths.home}\n` : `removed ${scope.key}: its container (files kept in ${paths.folder})\n`);
    return 0;
  } finally {
    await berth.close();
  }
}
