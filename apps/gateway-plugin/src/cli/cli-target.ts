import { resolveTypedIdentity, type PlatformRegistry } from '@berth/core';
import type { ExecuteTarget } from '../create-berth.js';
import type { CliOptions } from './parse-cli-arguments.js';

/**
 * The session a CLI command names, as a host would pass it to `runWithSession`: `--platform` and
 * `--user`, or `--session-key`; `--task` (default `default`) for a command that names no user;
 * `--profile` for a host profile other than the default.
 * The CLI never decides a scope itself: `berth.request(target)` does, through core's
 * `resolveScope`, exactly as for the terminal tool. An operator types `--user`, so it must be
 * the canonical id (`resolveTypedIdentity`): `--platform whatsapp --user 2025550123` is refused
 * with the form to type rather than read as someone's international number.
 */
export function cliTarget(options: CliOptions, registry: PlatformRegistry): ExecuteTarget {
  let session: ExecuteTarget['session'];
  if (options.platform !== undefined && options.user !== undefined) {
    const identity = resolveTypedIdentity(
      registry,
      { platform: options.platform, id: options.user },
      (typed) => `--platform ${typed.platform} --user ${typed.id}`,
    );
    session = { platform: identity.platform, userId: identity.id };
  } else if (options.sessionKey !== undefined) {
    session = { sessionKey: options.sessionKey };
  }
  // A profile alone names nobody: with --task it is that task's sandbox in the profile.
  if (options.profile !== undefined) session = { ...session, profile: options.profile };
  return { ...(session ? { session } : {}), taskId: options.task ?? 'default' };
}

/** The user a CLI command names, for messages (`telegram:123`), or `undefined`. */
export function namedUser(options: CliOptions): string | undefined {
  return options.platform !== undefined && options.user !== undefined ? `${options.platform}:${options.user}` : undefined;
}
