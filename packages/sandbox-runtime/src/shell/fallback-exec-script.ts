import fallbackExec from './fallback-exec.sh';
import { programText } from './program-file.js';
import { buildCommandFile, buildEnvironmentScript, quoteShell } from './shell-words.js';

/**
 * The fallback mode's `/bin/sh -c` script (shell/fallback-exec.sh), for images whose shell cannot
 * hold a session: it reads the environment and the command from stdin up to a marker line (`$2`),
 * so neither is stored in the exec's configuration; the rest of stdin is the command's input.
 * `$1` is the state folder that carries the directory and exports from one command to the next.
 */
export const FALLBACK_PRELUDE = programText(fallbackExec);

/**
 * What the fallback mode writes on stdin before the command's own input: the environment
 * (applied on the first command, and again when `changed`, over what earlier commands left),
 * and the command.
 */
export function buildFallbackInput(options: {
  marker: string;
  command: string;
  cwd?: string;
  variables: Readonly<Record<string, string>>;
  changed: boolean;
}): string {
  return `__berth_env=${quoteShell(buildEnvironmentScript(options.variables))}
__berth_apply=${options.changed ? 1 : 0}
__berth_c=${quoteShell(buildCommandFile(options.command, options.cwd))}
${options.marker}
`;
}
