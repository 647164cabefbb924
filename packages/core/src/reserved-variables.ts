/** Variables every sandbox sets itself; no configured, forwarded or user variable may replace them. */
export const RESERVED_VARIABLE_NAMES = ['PATH', 'HOME', 'HOSTNAME'] as const;

/** Names Berth's own shell protocol uses inside a sandbox (`__berth_dir`, `__BERTH_CWD`, …): any case of the `__berth` prefix. */
const INTERNAL_VARIABLE = /^__berth/i;

/**
 * Why `name` may not be given to a sandbox (a reserved or internal name), or `undefined` when it
 * may. One rule for `docker_env`, `docker_forward_env`, `env_passthrough` and user variables: a
 * user's variable named `__berth_dir` would break every command of theirs, one named `PATH` the
 * sandbox's own set-up.
 */
export function reservedVariableReason(name: string): string | undefined {
  if ((RESERVED_VARIABLE_NAMES as readonly string[]).includes(name)) return `${name} is set by the sandbox itself`;
  if (INTERNAL_VARIABLE.test(name)) return `names starting with __berth (any case) are Berth's own, inside the sandbox`;
  return undefined;
}
