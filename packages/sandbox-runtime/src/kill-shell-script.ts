import { quoteShell } from './shell-words.js';

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
