import type { ExecuteTarget } from '../create-berth.js';
import type { CliOptions } from './parse-cli-arguments.js';

/**
 * The session a CLI command names, as a host would pass it to `runWithSession`: `--platform` and
 * `--user`, or `--session-key`; `--task` (default `default`) for a command that names no user.
 * The CLI never decides a scope itself: `berth.request(target)` does, through core's
 * `resolveScope`, exactly as for the terminal tool.
 */
export function cliTarget(options: CliOptions): ExecuteTarget {
  const session =
    options.platform !== undefined && options.user !== undefined
      ? { platform: options.platform, userId: options.user }
      : options.sessionKey !== undefined
        ? { sessionKey: options.sessionKey }
        : undefined;
  return { ...(session ? { session } : {}), taskId: options.task ?? 'default' };
}

/** The user a CLI command names, for messages (`telegram:123`), or `undefined`. */
export function namedUser(options: CliOptions): string | undefined {
  return options.platform !== undefined && options.user !== undefined ? `${options.platform}:${options.user}` : undefined;
}
