import { buildEnvironmentScript, quoteShell } from './shell-words.js';

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
