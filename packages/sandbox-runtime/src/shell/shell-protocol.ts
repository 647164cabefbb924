/**
 * The text Berth writes into a persistent `/bin/sh` inside a sandbox. Everything here is pure
 * string building, so the quoting is unit-tested without an engine. The scripts use only POSIX
 * shell features and, on the paths that must work under a fork bomb, only builtins.
 *
 * This module decides how one command is written into a session (and what a process list
 * shows of one); the session's own program (`session-init-script.ts`), the kill shell's
 * (`kill-shell-script.ts`), the fallback mode's (`fallback-exec-script.ts`) and the quoting
 * (`shell-words.ts`) are files of their own, exported from here too.
 */

import { programLine } from './program-file.js';
import runningProbe from './running-probe.sh';
import { buildCommandFile, buildEnvironmentScript, encodePrintfFormat, quoteShell } from './shell-words.js';

export { buildCommandFile, buildEnvironmentScript, encodePrintfFormat, quoteShell } from './shell-words.js';
export { buildSessionInit } from './session-init-script.js';
export { buildKillRequest, buildWatchRequest, KILLER_INIT } from './kill-shell-script.js';
export { buildFallbackInput, FALLBACK_PRELUDE } from './fallback-exec-script.js';

/**
 * The command line of a Berth session's shell as a process list shows it — and of its spares
 * (forked from it) and of a command made only of builtins running in one — so the busy check,
 * finding one, asks {@link RUNNING_PROBE} before calling the sandbox idle.
 */
export const SESSION_PROCESS = /^\/bin\/sh$/;

/**
 * A script that exits 0 when a command runs in some Berth session of the sandbox (its state
 * folder's `pid` file names a live process), 1 otherwise. Builtins only. One line: shell/running-probe.sh.
 */
export const RUNNING_PROBE = programLine(runningProbe);

/**
 * Whether a command reads the shell's own process id or its parent's (`$$`, `\${$}`, `$PPID`):
 * it then runs in a `/bin/sh` of its own rather than in a forked copy of the session's shell,
 * whose `$$` is the session's.
 */
export function needsOwnShell(command: string): boolean {
  return /\$\$|\$\{#?\$\}|PPID/.test(command);
}

/** Builtins and words whose meaning needs the shell, so a command starting with one is never exec'd. */
const SHELL_WORDS = new Set(
  (
    '. alias bg break builtin caller cd command compgen complete continue declare dirs disown echo enable eval exec exit export false fc fg ' +
    'getopts hash help history jobs kill let local logout mapfile popd printf pushd pwd read readarray readonly return set shift shopt source ' +
    'suspend test time times trap true type typeset ulimit umask unalias unset wait case do done elif else esac fi for function if in ' +
    'select then until while'
  ).split(' '),
);

/**
 * Whether a command is one program with plain words and nothing for the shell to do (no
 * expansion, quoting, redirection, pipe, list, assignment or builtin): its child shell can then
 * become the program (`exec`), one process fewer, as nothing it does can change the session's
 * `cd` or `export`.
 */
export function isPlainProgram(command: string): boolean {
  if (!/^[A-Za-z0-9_./-]+( +[A-Za-z0-9_./=:,@%+-]+)*$/.test(command)) return false;
  return !SHELL_WORDS.has(command.split(' ', 1)[0]!);
}

/** Appends an environment change to a session's state file: later lines win when it is sourced. */
export function buildEnvironmentUpdate(variables: Readonly<Record<string, string>>, removed: Iterable<string>): string {
  // The spare took the environment before the change: it goes, and the command gets a new child.
  return `__berth_unspare
__berth_e=${quoteShell(buildEnvironmentScript(variables, removed))}
printf '%s\n' "$__berth_e" >> "$__berth_d/init" || __berth_wf=1
printf '%s\n' "$__berth_e" >> "$__berth_d/state" || __berth_wf=1
unset __berth_e
`;
}

/** What Berth writes into a session to run one framed command. */
export function buildCommandScript(options: { id: string; command: string; cwd?: string; stdin?: Uint8Array }): string {
  // A plain program with no directory of its own: the child becomes it (`e`: nothing to save).
  const plain = options.cwd === undefined && isPlainProgram(options.command);
  const file = plain ? `exec ${options.command}\n` : buildCommandFile(options.command, options.cwd);
  const input = options.stdin === undefined ? '' : `printf ${encodePrintfFormat(options.stdin)} > "$__berth_d/in" || __berth_wf=1\n`;
  const mode = plain ? ' e' : needsOwnShell(options.command) ? ' x' : '';
  // A write that failed (__berth_wf, also set by an environment change before) runs nothing.
  return `__berth_c=${quoteShell(file)}
printf '%s' "$__berth_c" > "$__berth_d/cmd" || __berth_wf=1
${input}if [ -n "$__berth_wf" ]; then __berth_unwritten ${options.id}; else __berth_run ${options.id} ${options.stdin === undefined ? 0 : 1}${mode}; fi
`;
}
