import { buildCommandFile, buildEnvironmentScript, quoteShell } from './shell-words.js';

/**
 * The fallback mode's `/bin/sh -c` script, for images whose shell cannot hold a session: it
 * reads the environment and the command from stdin up to a marker line (`$2`), so neither is
 * stored in the exec's configuration; the rest of stdin is the command's input. `$1` is the
 * state folder that carries the directory and exports from one command to the next.
 */
export const FALLBACK_PRELUDE = `__berth_b=
while IFS= read -r __berth_l; do
  [ "$__berth_l" = "$2" ] && break
  __berth_b="$__berth_b$__berth_l
"
done
eval "$__berth_b"
unset __berth_b __berth_l
__berth_d=$1
mkdir -m 700 -p "$__berth_d" 2>/dev/null
if [ -s "$__berth_d/state" ]; then
  . "$__berth_d/state" 2>/dev/null; cd -- "$__BERTH_CWD" 2>/dev/null; unset __BERTH_CWD
  if [ "$__berth_apply" = 1 ]; then eval "$__berth_env"; fi
else
  eval "$__berth_env"
fi
unset __berth_env __berth_apply
# This shell is the command's, its own exec: its process group (when it leads one) is the command's.
echo "$$ $$" > "$__berth_d/pid" 2>/dev/null
trap '__BERTH_CWD=$PWD; export __BERTH_CWD; export -p > "$__berth_d/state" 2>/dev/null' EXIT
set --
eval "$__berth_c"
`;

/**
 * What the fallback mode writes on stdin before the command's own input: the environment
 * (applied on the first command, and again when `changed`, over what earlier commands left),
 * and the command.
 */
export function buildFallbackInput(options: { marker: string; command: string; cwd?: string; variables: Readonly<Record<string, string>>; changed: boolean }): string {
  return `__berth_env=${quoteShell(buildEnvironmentScript(options.variables))}
__berth_apply=${options.changed ? 1 : 0}
__berth_c=${quoteShell(buildCommandFile(options.command, options.cwd))}
${options.marker}
`;
}
