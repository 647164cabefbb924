/**
 * The text Berth writes into a persistent `/bin/sh` inside a sandbox. Everything here is pure
 * string building, so the quoting is unit-tested without an engine. The scripts use only POSIX
 * shell features and, on the paths that must work under a fork bomb, only builtins.
 */

const VARIABLE_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** Quotes `value` as one single-quoted shell word. Throws on NUL, which no shell word can hold. */
export function quoteShell(value: string): string {
  if (value.includes('\0')) throw new TypeError('a shell word cannot contain a NUL byte');
  return `'${value.replaceAll("'", `'\\''`)}'`;
}

/**
 * A single-quoted `printf` format that prints exactly `bytes`: `%` and `\` are escaped, and
 * NUL, quotes and every byte outside printable ASCII are written as three-digit octal escapes
 * (a digit right after an escape is escaped too, so no shell reads a longer number). A leading
 * `-` is escaped so that printf never takes the format for an option.
 */
export function encodePrintfFormat(bytes: Uint8Array): string {
  let out = "'";
  let afterEscape = false;
  for (const byte of bytes) {
    const printable = (byte >= 0x20 && byte < 0x7f) || byte === 0x0a;
    const digit = byte >= 0x30 && byte <= 0x39;
    // A leading `-` would be read as an option by printf.
    const leadingDash = byte === 0x2d && out === "'";
    if (!printable || leadingDash || byte === 0x27 || byte === 0x5c || byte === 0x25 || (digit && afterEscape)) {
      out += `\\${byte.toString(8).padStart(3, '0')}`;
      afterEscape = true;
    } else {
      out += String.fromCharCode(byte);
      afterEscape = false;
    }
  }
  return `${out}'`;
}

/** `export NAME='value'` lines for `variables`, and `unset` for names no longer present. */
export function buildEnvironmentScript(variables: Readonly<Record<string, string>>, removed: Iterable<string> = []): string {
  let script = '';
  for (const name of removed) {
    if (VARIABLE_NAME.test(name) && !(name in variables)) script += `unset ${name}\n`;
  }
  for (const [name, value] of Object.entries(variables)) {
    // Core validates names; a malformed one is skipped rather than written into a script.
    if (!VARIABLE_NAME.test(name)) continue;
    script += `export ${name}=${quoteShell(value)}\n`;
  }
  return script;
}

/**
 * The command line of a Berth session's shell as a process list shows it — and of its spares
 * (forked from it) and of a command made only of builtins running in one — so a driver that
 * finds one asks {@link RUNNING_PROBE} before calling the sandbox idle.
 */
export const SESSION_PROCESS = /^\/bin\/sh$/;

/** @deprecated Spares are forked from the session's shell now and look like it: use {@link SESSION_PROCESS}. */
export const SPARE_PROCESS = SESSION_PROCESS;

/**
 * A script that exits 0 when a command runs in some Berth session of the sandbox (its state
 * folder's `pid` file names a live process), 1 otherwise. Builtins only.
 */
export const RUNNING_PROBE = `for __berth_f in /tmp/.berth-*/pid; do read -r __berth_p __berth_s < "$__berth_f" 2>/dev/null || continue; [ -n "$__berth_p" ] && kill -0 "$__berth_p" 2>/dev/null && exit 0; done; exit 1`;

/**
 * What runs a command, in a child of the session's shell: take the session's exports and
 * directory from the state file, source the command file, and save them again — when the
 * command returns, and on `exit` through an EXIT trap (a command that sets its own EXIT trap
 * and then exits replaces that one; the session notices, as the `saved` flag stays empty, and
 * says so). `__berth_dir` is the state folder. The session's own shell holds none of the user's
 * variables, so an `unset` in one command persists like an `export`. Should the state file be
 * lost (a full `/tmp` when it was written), the session's initial environment in `init` is used.
 */
const CHILD_BODY = `if [ -s "$__berth_dir/state" ]; then . "$__berth_dir/state" 2>/dev/null; else . "$__berth_dir/init" 2>/dev/null; fi
cd -- "$__BERTH_CWD" 2>/dev/null; unset __BERTH_CWD
__berth_save() { [ -z "$__berth_kept" ] || return 0; __berth_kept=1; __BERTH_CWD=$PWD; export __BERTH_CWD; export -p > "$__berth_dir/state" && echo 1 > "$__berth_dir/saved"; }
trap __berth_save EXIT
. "$__berth_dir/cmd"
__berth_st=$?
__berth_save
exit $__berth_st`;

/**
 * The same as a new `/bin/sh -c` (`$0` is the state folder): for a command that reads `$$` or
 * `$PPID`, which must name the command's own shell, not the session's.
 */
const EXEC_CHILD_SCRIPT = `__berth_dir=$0
${CHILD_BODY}`;

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
  ('. alias bg break builtin caller cd command compgen complete continue declare dirs disown echo enable eval exec exit export false fc fg ' +
    'getopts hash help history jobs kill let local logout mapfile popd printf pushd pwd read readarray readonly return set shift shopt source ' +
    'suspend test time times trap true type typeset ulimit umask unalias unset wait case do done elif else esac fi for function if in ' +
    'select then until while').split(' '),
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
  const state = `${buildEnvironmentScript(options.variables)}export __BERTH_CWD=${quoteShell(options.cwd ?? '/workspace')}`;
  const writeState = options.inherit
    ? `if [ -s "$__berth_d/state" ]; then printf '%s\\n' ${quoteShell(buildEnvironmentScript(options.variables, options.inherit.previousNames))} >> "$__berth_d/state" || exit 97; else printf '%s\\n' "$__berth_e" > "$__berth_d/state" || exit 97; fi`
    : `printf '%s\\n' "$__berth_e" > "$__berth_d/state" || exit 97`;
  return `__berth_d=${quoteShell(options.stateDir)}
mkdir -m 700 -p "$__berth_d" || exit 97
__berth_e=${quoteShell(state)}
printf '%s\n' "$__berth_e" > "$__berth_d/init" || exit 97
${writeState}
unset __berth_e
__berth_child=${quoteShell(EXEC_CHILD_SCRIPT)}
# A command's child: a fork of this shell, rid of this shell's bookkeeping.
__berth_sub() {
  __berth_dir=$__berth_d
  unset __berth_child __berth_base __berth_now __berth_mine __berth_c __berth_a __berth_w
  set --
  ${CHILD_BODY.replaceAll('\n', '\n  ')}
}
# A spare: waits on its FIFO for one line — 0 or 1 (stdin from /dev/null or the command's input
# file), x0 or x1 (the same, in a /bin/sh of its own) — and leaves on anything else or at the
# FIFO's end.
__berth_spare() {
  read -r __berth_line || exit 0
  case "$__berth_line" in
    0) exec < /dev/null ;;
    1) exec < "$__berth_d/in" ;;
    x0) exec /bin/sh -c "$__berth_child" "$__berth_d" < /dev/null ;;
    x1) exec /bin/sh -c "$__berth_child" "$__berth_d" < "$__berth_d/in" ;;
    *) exit 0 ;;
  esac
  unset __berth_line
  __berth_sub
}
# This shell's process group, when it leads one (an engine's exec makes it lead a session): a
# command's processes share it, so the kill shell finds those a command left to init too.
__berth_pg=-
if read -r __berth_j < "/proc/$$/stat" 2>/dev/null; then
  set -- \${__berth_j##*) }
  [ "$3" = "$$" ] && __berth_pg=$$
  set --
fi
__berth_holders() {
  for __berth_q in /proc/[0-9]*/fd; do
    # Itself, and its parent (outside the sandbox on an engine; the test host's runner locally).
    # No redirection on these loops: some shells run a redirected loop in a subshell, which holds the pipes too.
    # The next command's spare holds them too, waiting.
    case "$__berth_q" in "/proc/$$/fd" | "/proc/$PPID/fd" | "/proc/$__berth_sp/fd") continue ;; esac
    for __berth_f in "$__berth_q"/*; do
      if [ "$__berth_f" -ef "/proc/$$/fd/1" ] || [ "$__berth_f" -ef "/proc/$$/fd/2" ]; then return 0; fi
    done
  done
  return 1
}
# The sandbox's process ids, as " /proc/1 /proc/7 … ", in __berth_now (a glob: one listing of /proc).
__berth_pids() { set -- /proc/[0-9]*; __berth_now=" $* "; }
# The list $1 without /proc/$2, in __berth_w.
__berth_without() { __berth_w=\${1%%" /proc/$2 "*}; [ "$__berth_w" = "$1" ] || __berth_w="$__berth_w \${1#*" /proc/$2 "}"; }
__berth_ga="$__berth_d/go-$$-a"; __berth_gb="$__berth_d/go-$$-b"
if command -v mkfifo >/dev/null 2>&1 && { [ -p "$__berth_ga" ] || mkfifo -m 600 "$__berth_ga" 2>/dev/null; } && { [ -p "$__berth_gb" ] || mkfifo -m 600 "$__berth_gb" 2>/dev/null; }; then __berth_fifo=1; else __berth_fifo=0; fi
__berth_sp=; __berth_sfd=4
# A new spare, on the FIFO (and descriptor) the running command's spare does not use. This shell
# holds the FIFO open (read and write, so the open never waits) before the spare opens its end,
# and until that spare has ended: a FIFO's bytes go with its last open end, and a spare still on
# its way to its open would then wait for a writer forever. The spare sees the end of the FIFO
# when this shell, its only writer, is gone — however soon that is. It keeps neither descriptor.
__berth_spawn() {
  [ "$__berth_fifo" = 1 ] && [ -p "$__berth_ga" ] && [ -p "$__berth_gb" ] || return 0
  if [ "$__berth_sfd" = 3 ]; then __berth_sfd=4; __berth_g=$__berth_gb; exec 4<> "$__berth_g"; else __berth_sfd=3; __berth_g=$__berth_ga; exec 3<> "$__berth_g"; fi
  # In ( ): a function's redirections would keep copies of the closed descriptors in the child.
  ( __berth_spare ) < "$__berth_g" 3>&- 4>&- &
  __berth_sp=$!; __berth_mine="$__berth_mine$__berth_sp "
}
__berth_say() { if [ "$2" = 3 ]; then echo "$1" >&3; else echo "$1" >&4; fi; }
__berth_shut() { if [ "$1" = 3 ]; then exec 3>&-; else exec 4>&-; fi; }
__berth_unspare() {
  [ -n "$__berth_sp" ] || return 0
  __berth_say q "$__berth_sfd"
  wait "$__berth_sp" 2>/dev/null
  __berth_shut "$__berth_sfd"
  __berth_sp=
}
__berth_run() {
  printf '__BERTH_%s_S__\n' "$1"
  if [ ! -f "$__berth_d/init" ]; then
    __berth_unspare
    printf '\n__BERTH_%s_E_125%s\n' "$1" G; printf '\n__BERTH_%s_E_125%s\n' "$1" G >&2
    return
  fi
  true > "$__berth_d/saved"
  # The processes alive before the command starts: the kill shell takes the session's others
  # for the command's, wherever they were left.
  __berth_pids
  __berth_pfd=
  # A spare something killed meanwhile (it lives beside the previous command) is not used: gone,
  # or a zombie, whose status would pass for the command's.
  if [ -n "$__berth_sp" ] && [ -e "/proc/$__berth_sp/fd/0" ]; then
    __berth_p=$__berth_sp; __berth_pfd=$__berth_sfd; __berth_sp=
    echo "$__berth_p $__berth_pg$__berth_now" > "$__berth_d/pid"
    if [ "$3" = x ]; then __berth_say "x$2" "$__berth_pfd"; else __berth_say "$2" "$__berth_pfd"; fi
  else
    __berth_unspare
    if [ "$2" = 1 ]; then __berth_i="$__berth_d/in"; else __berth_i=/dev/null; fi
    if [ "$3" = x ]; then
      /bin/sh -c "$__berth_child" "$__berth_d" < "$__berth_i" 3>&- 4>&- &
    else
      ( __berth_sub ) < "$__berth_i" 3>&- 4>&- &
    fi
    __berth_p=$!; __berth_mine="$__berth_mine$__berth_p "
    echo "$__berth_p $__berth_pg$__berth_now" > "$__berth_d/pid"
  fi
  wait "$__berth_p"; __berth_s=$?
  [ -n "$__berth_pfd" ] && __berth_shut "$__berth_pfd"
  true > "$__berth_d/pid" 2>/dev/null
  __berth_x=
  # Nothing the command started is alive when every process alive now was alive at the last
  # check or is one this shell made since (a spare, the command's own child); only otherwise the
  # walk over every process's descriptors.
  # Quickest: the same list as then, but for the child that ran and the spare waiting now.
  __berth_pids
  __berth_without "$__berth_now" "$__berth_sp"; __berth_a=$__berth_w
  __berth_without "$__berth_base" "$__berth_p"
  __berth_clean=1
  if [ "$__berth_a" != "$__berth_w" ]; then
    for __berth_q in $__berth_now; do
      case "$__berth_base" in *" $__berth_q "*) continue ;; esac
      case "$__berth_mine" in *" \${__berth_q#/proc/} "*) continue ;; esac
      __berth_clean=; break
    done
  fi
  if [ -z "$__berth_clean" ] && __berth_holders; then __berth_x=L; fi
  __berth_base=$__berth_now; __berth_mine=' '
  if [ ! -f "$__berth_d/init" ]; then
    __berth_x="\${__berth_x}D"
  else
    read -r __berth_v < "$__berth_d/saved" 2>/dev/null || __berth_v=
    # A command exec'd as the child (mode e) saves nothing, having nothing to save.
    if [ "$__berth_v" != 1 ] && [ "$__berth_s" -lt 128 ] && [ "$3" != e ]; then __berth_x="\${__berth_x}T"; fi
  fi
  printf '\n__BERTH_%s_E_%s\n' "$1" "$__berth_s"; printf '\n__BERTH_%s_E_%s%s\n' "$1" "$__berth_s" "$__berth_x" >&2
  # The next command's spare, once this answer is on its way (not for a session being retired).
  if [ -z "$__berth_sp" ]; then case "$__berth_x" in *L* | *D*) ;; *) __berth_spawn ;; esac; fi
}
__berth_pids; __berth_base=$__berth_now; __berth_mine=' '
printf '__BERTH_%s_S__\n\n__BERTH_%s_E_0\n' ${options.readyId} ${options.readyId}
printf '__BERTH_%s_S__\n\n__BERTH_%s_E_0\n' ${options.readyId} ${options.readyId} >&2
__berth_spawn
`;
}

/** Appends an environment change to a session's state file: later lines win when it is sourced. */
export function buildEnvironmentUpdate(variables: Readonly<Record<string, string>>, removed: Iterable<string>): string {
  // The spare took the environment before the change: it goes, and the command gets a new child.
  return `__berth_unspare
__berth_e=${quoteShell(buildEnvironmentScript(variables, removed))}
printf '%s\n' "$__berth_e" >> "$__berth_d/init"
printf '%s\n' "$__berth_e" >> "$__berth_d/state"
unset __berth_e
`;
}

/** The command file's text: an optional `cd` for this command, then the command itself. */
export function buildCommandFile(command: string, cwd?: string): string {
  const prefix = cwd === undefined ? '' : `cd -- ${quoteShell(cwd)} || exit 1\n`;
  return `${prefix}${command}\n`;
}

/** What Berth writes into a session to run one framed command. */
export function buildCommandScript(options: { id: string; command: string; cwd?: string; stdin?: Uint8Array }): string {
  // A plain program with no directory of its own: the child becomes it (`e`: nothing to save).
  const plain = options.cwd === undefined && isPlainProgram(options.command);
  const file = plain ? `exec ${options.command}\n` : buildCommandFile(options.command, options.cwd);
  const input = options.stdin === undefined ? '' : `printf ${encodePrintfFormat(options.stdin)} > "$__berth_d/in"\n`;
  const mode = plain ? ' e' : needsOwnShell(options.command) ? ' x' : '';
  return `__berth_c=${quoteShell(file)}
printf '%s' "$__berth_c" > "$__berth_d/cmd"
${input}__berth_run ${options.id} ${options.stdin === undefined ? 0 : 1}${mode}
`;
}

/**
 * Defines `__berth_kill DIR`, which kills the process tree of the command running in the
 * session whose state folder is DIR: every descendant found through /proc, and the processes in
 * the session's process group made since the command started (those it left to init, which no
 * longer descend from it). The session's group is stopped first, its shell with it for a moment,
 * so nothing forks while the walk runs, and continued after. Builtins only, so it works while a
 * fork bomb holds every pid the container may have. When the kill shell's stdin ends (its
 * connection to the gateway is gone), it kills the command of the session it watches.
 */
export const KILLER_INIT = `__berth_session=
trap '[ -n "$__berth_session" ] && __berth_kill "$__berth_session"' EXIT
__berth_kill() {
  read -r __berth_p __berth_pg __berth_before < "$1/pid" 2>/dev/null || return 0
  [ -n "$__berth_p" ] || return 0
  # A group of the session's own only: never 0 (the kill shell's), 1 (every process) or junk.
  case "$__berth_pg" in '' | 0 | 1 | *[!0-9]*) __berth_pg=- ;; esac
  if [ "$__berth_pg" != - ]; then kill -STOP "-$__berth_pg" 2>/dev/null; else kill -STOP "$__berth_p" 2>/dev/null; fi
  __berth_all=" $__berth_p "
  __berth_more=1
  while [ "$__berth_more" = 1 ]; do
    __berth_more=0
    for __berth_f in /proc/[0-9]*/stat; do
      read -r __berth_l < "$__berth_f" 2>/dev/null || continue
      __berth_pid=\${__berth_l%% *}
      case "$__berth_all" in *" $__berth_pid "*) continue ;; esac
      set -- \${__berth_l##*) }
      # A descendant, or a process of the session's group that was not alive when the command started.
      case "$__berth_all" in
        *" $2 "*) ;;
        *)
          [ "$__berth_pg" != - ] && [ "$3" = "$__berth_pg" ] || continue
          case " $__berth_before " in *" /proc/$__berth_pid "*) continue ;; esac
          ;;
      esac
      __berth_all="$__berth_all$__berth_pid "; __berth_more=1; kill -STOP "$__berth_pid" 2>/dev/null
    done
  done
  for __berth_pid in $__berth_all; do kill -KILL "$__berth_pid" 2>/dev/null; done
  [ "$__berth_pg" != - ] && kill -CONT "-$__berth_pg" 2>/dev/null
  return 0
}
`;

/** Asks a killer shell to kill the running command of the session with state folder `stateDir`. */
export function buildKillRequest(stateDir: string): string {
  return `__berth_kill ${quoteShell(stateDir)}\n`;
}

/**
 * Tells a killer shell which session is current: when its own connection ends (the gateway
 * died, or closed it), it kills that session's running command, so no command outlives the
 * gateway that gave it a timeout.
 */
export function buildWatchRequest(stateDir: string): string {
  return `__berth_session=${quoteShell(stateDir)}\n`;
}

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
