# shellcheck shell=sh
# The kill shell's program (KILLER_INIT in ../kill-shell-script.ts): defines `__berth_kill DIR`.
# Builtins only: it must work while a fork bomb holds every pid the sandbox may have.

__berth_session=
trap '[ -n "$__berth_session" ] && __berth_kill "$__berth_session"' EXIT
__berth_kill() {
  { read -r __berth_p __berth_pg __berth_before < "$1/pid"; } 2>/dev/null || return 0
  [ -n "$__berth_p" ] || return 0
  # A group of the session's own only: never 0 (the kill shell's), 1 (every process) or junk.
  case "$__berth_pg" in '' | 0 | 1 | *[!0-9]*) __berth_pg=- ;; esac
  if [ "$__berth_pg" != - ]; then kill -STOP "-$__berth_pg" 2>/dev/null; else kill -STOP "$__berth_p" 2>/dev/null; fi
  __berth_all=" $__berth_p "
  # Rounds of: stop every process found (again and again until a pass over /proc finds no new
  # one), then kill them all. A stop takes effect when its process next enters the kernel, so
  # one may still finish a fork after the pass that found it, and its child outlive the kill
  # (seen under load: a `sh -c 'sleep …' &`'s sleep). Another round finds such a child, as a
  # descendant or, its parent dead, by its group; the kill ends when a round finds none.
  __berth_round=0
  __berth_new=1
  while [ "$__berth_new" = 1 ] && [ "$__berth_round" -lt 8 ]; do
    __berth_new=0
    __berth_round=$((__berth_round + 1))
    __berth_more=1
    while [ "$__berth_more" = 1 ]; do
      __berth_more=0
      for __berth_f in /proc/[0-9]*/stat; do
        { read -r __berth_l < "$__berth_f"; } 2>/dev/null || continue
        __berth_pid=${__berth_l%% *}
        case "$__berth_all" in *" $__berth_pid "*) continue ;; esac
        # shellcheck disable=SC2086 # split on purpose: the fields of /proc/PID/stat after the command's name (no glob characters)
        set -- ${__berth_l##*) }
        # A descendant, or a process of the session's group that was not alive when the command started.
        case "$__berth_all" in
          *" $2 "*) ;;
          *)
            # shellcheck disable=SC2015 # meant: unless both hold, continue
            [ "$__berth_pg" != - ] && [ "$3" = "$__berth_pg" ] || continue
            case " $__berth_before " in *" /proc/$__berth_pid "*) continue ;; esac
            ;;
        esac
        __berth_all="$__berth_all$__berth_pid "; __berth_more=1; __berth_new=1; kill -STOP "$__berth_pid" 2>/dev/null
      done
    done
    [ "$__berth_round" = 1 ] && __berth_new=1
    for __berth_pid in $__berth_all; do kill -KILL "$__berth_pid" 2>/dev/null; done
  done
  [ "$__berth_pg" != - ] && kill -CONT "-$__berth_pg" 2>/dev/null
  return 0
}
