import { SANDBOX_LAYOUT } from '../files/sandbox-layout.js';
import commandChild from './command-child.sh';
import { fillTemplate, programText } from './program-file.js';
import sessionInit from './session-init.sh';
import { buildEnvironmentScript, quoteShell } from './shell-words.js';

/**
 * What runs a command, in a child of the session's shell (shell/command-child.sh, without its
 * final newline: it is pasted into other text): take the session's exports and
 * directory from the state file, source the command file, and save them again — when the
 * command returns, and on `exit` through an EXIT trap (a command that sets its own EXIT trap
 * and then exits replaces that one; the session notices, as the `saved` flag stays empty, and
 * says so). `__berth_dir` is the state folder. The session's own shell holds none of the user's
 * variables, so an `unset` in one command persists like an `export`. Should the state file be
 * lost (a full `/tmp` when it was written), the session's initial environment in `init` is used.
 */
const CHILD_BODY = programText(commandChild).slice(0, -1);

/**
 * The same as a new `/bin/sh -c` (`$0` is the state folder): for a command that reads `$$` or
 * `$PPID`, which must name the command's own shell, not the session's.
 */
const EXEC_CHILD_SCRIPT = `__berth_dir=$0
${CHILD_BODY}`;

/** The session's program, shell/session-init.sh: a template, filled by {@link buildSessionInit}. */
const SESSION_INIT = programText(sessionInit);

/**
 * The script that turns a fresh `/bin/sh` into a Berth session: a private state folder whose
 * state file holds the environment (sent here, over stdin, so it is never in the container's
 * or the exec's stored configuration) and the directory, and `__berth_run`, which runs one
 * command in a child of its own and frames its output. Ends with frame `readyId` (status 0).
 *
 * A command's child is a fork of this shell (no new program to load: the cheapest process a
 * shell can make), rid of the session's bookkeeping; a command that reads `$$` or `$PPID` gets a
 * `/bin/sh` of its own instead ({@link needsOwnShell}), so those name its shell. Each command runs
 * in a spare child forked once the previous command's answer was sent (`__berth_spawn`, when the
 * image has `mkfifo`; otherwise, or when the spare is gone, the child starts with the command):
 * the fork costs the next command nothing and competes with no running one. The `pid`
 * file names the running child, this shell's process group (`-` when it leads none) and the
 * processes alive before the command started, for the kill shell ({@link KILLER_INIT}) and
 * {@link RUNNING_PROBE}.
 *
 * After each command the session looks, with builtins only, whether a process it left behind
 * still holds the session's stdout or stderr (`__berth_holders`). The walk over every process's
 * descriptors is skipped when every process alive now was alive at the last check or is one the
 * session made since (a spare, a command's own child): one listing of `/proc` tells. (Only a
 * process id reused by a process of
 * the same sandbox could hide one — a user fooling their own next command.) The stderr frame's status
 * then carries `L`, and the runtime retires the session, so nothing that process writes later
 * reaches the gateway (its writes go to a pipe nobody reads). `T`: the command's own EXIT trap
 * kept its `cd` and `export` from being saved. `D`: the command deleted the state folder. Status
 * 125 with `G`: the state folder was gone before the command, which did not run. (The session
 * uses `true >` rather than `: >` for its bookkeeping: a failed redirection on a special builtin
 * makes a POSIX shell exit.)
 */
export function buildSessionInit(options: {
  stateDir: string;
  readyId: string;
  variables: Readonly<Record<string, string>>;
  cwd?: string;
  /** Take over a retired session's state folder: its cd and exports go on, with today's variables over them. */
  inherit?: { readonly previousNames: readonly string[] };
}): string {
  const state = `${buildEnvironmentScript(options.variables)}export __BERTH_CWD=${quoteShell(options.cwd ?? SANDBOX_LAYOUT.workspace)}`;
  const writeState = options.inherit
    ? `if [ -s "$__berth_d/state" ]; then printf '%s\\n' ${quoteShell(buildEnvironmentScript(options.variables, options.inherit.previousNames))} >> ` +
      `"$__berth_d/state" || exit 97; else printf '%s\\n' "$__berth_e" > "$__berth_d/state" || exit 97; fi`
    : `printf '%s\\n' "$__berth_e" > "$__berth_d/state" || exit 97`;
  return fillTemplate(SESSION_INIT, {
    STATE_DIR: quoteShell(options.stateDir),
    STATE: quoteShell(state),
    WRITE_STATE: writeState,
    EXEC_CHILD: quoteShell(EXEC_CHILD_SCRIPT),
    CHILD_BODY: CHILD_BODY.replaceAll('\n', '\n  '),
    READY_ID: options.readyId,
  });
}
