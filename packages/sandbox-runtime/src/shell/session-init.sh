# shellcheck shell=sh
# The program that turns a fresh /bin/sh into a Berth session (buildSessionInit in
# ../session-init-script.ts). A template: @STATE_DIR@, @STATE@ and @EXEC_CHILD@ are quoted words,
# @WRITE_STATE@ is the line that writes the state file, @CHILD_BODY@ is command-child.sh (indented),
# @READY_ID@ is the ready frame's id. Its printf formats hold real newlines, as the text did when it
# was a template literal: the bytes sent are unchanged.

__berth_d=@STATE_DIR@
# shellcheck disable=SC2174 # only the state folder itself is made (in /tmp), and it must be private
mkdir -m 700 -p "$__berth_d" || exit 97
__berth_e=@STATE@
printf '%s
' "$__berth_e" > "$__berth_d/init" || exit 97
@WRITE_STATE@
unset __berth_e
__berth_child=@EXEC_CHILD@
# A command's child: a fork of this shell, rid of this shell's bookkeeping.
__berth_sub() {
  __berth_dir=$__berth_d
  unset __berth_child __berth_base __berth_now __berth_mine __berth_c __berth_a __berth_w
  set --
  @CHILD_BODY@
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
if { read -r __berth_j < "/proc/$$/stat"; } 2>/dev/null; then
  # shellcheck disable=SC2086 # split on purpose: the fields of /proc/PID/stat after the command's name (no glob characters)
  set -- ${__berth_j##*) }
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
      # shellcheck disable=SC3013 # busybox ash, dash and bash have -ef; in a shell without it the test fails and no holder is found
      if [ "$__berth_f" -ef "/proc/$$/fd/1" ] || [ "$__berth_f" -ef "/proc/$$/fd/2" ]; then return 0; fi
    done
  done
  return 1
}
# The sandbox's process ids, as " /proc/1 /proc/7 … ", in __berth_now (a glob: one listing of /proc).
__berth_pids() { set -- /proc/[0-9]*; __berth_now=" $* "; }
# The list $1 without /proc/$2, in __berth_w.
__berth_without() { __berth_w=${1%%" /proc/$2 "*}; [ "$__berth_w" = "$1" ] || __berth_w="$__berth_w ${1#*" /proc/$2 "}"; }
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
  # A failed write (ENOMEM) would leave it waiting, and this shell with it.
  __berth_say q "$__berth_sfd" || kill -9 "$__berth_sp" 2>/dev/null
  wait "$__berth_sp" 2>/dev/null
  __berth_shut "$__berth_sfd"
  __berth_sp=
}
# Berth's own write of a command (its file, its input, a change of variables, the word to its
# spare; $2 set: the start frame went already) failed (a full memory bound fails it with ENOMEM): nothing runs — an old file would run the previous command
# again — and the answer says so (W); the host gives the next command a new session. The spare is
# left alone: a write to its FIFO could fail too, and then a wait for it would never end.
__berth_unwritten() {
  __berth_wf=
  [ -n "$2" ] || printf '__BERTH_%s_S__
' "$1"
  printf '
__BERTH_%s_E_125%s
' "$1" W; printf '
__BERTH_%s_E_125%s
' "$1" W >&2
}
__berth_run() {
  printf '__BERTH_%s_S__
' "$1"
  if [ ! -f "$__berth_d/init" ]; then
    __berth_unspare
    printf '
__BERTH_%s_E_125%s
' "$1" G; printf '
__BERTH_%s_E_125%s
' "$1" G >&2
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
    if [ "$3" = x ]; then __berth_w="x$2"; else __berth_w=$2; fi
    if ! __berth_say "$__berth_w" "$__berth_pfd"; then
      # The spare never got its word (ENOMEM): it goes, and the command did not run.
      kill -9 "$__berth_p" 2>/dev/null; wait "$__berth_p" 2>/dev/null; __berth_shut "$__berth_pfd"
      __berth_unwritten "$1" started
      return
    fi
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
      case "$__berth_mine" in *" ${__berth_q#/proc/} "*) continue ;; esac
      __berth_clean=; break
    done
  fi
  if [ -z "$__berth_clean" ] && __berth_holders; then __berth_x=L; fi
  __berth_base=$__berth_now; __berth_mine=' '
  if [ ! -f "$__berth_d/init" ]; then
    __berth_x="${__berth_x}D"
  else
    { read -r __berth_v < "$__berth_d/saved"; } 2>/dev/null || __berth_v=
    # A command exec'd as the child (mode e) saves nothing, having nothing to save.
    if [ "$__berth_v" != 1 ] && [ "$__berth_s" -lt 128 ] && [ "$3" != e ]; then __berth_x="${__berth_x}T"; fi
  fi
  printf '
__BERTH_%s_E_%s
' "$1" "$__berth_s"; printf '
__BERTH_%s_E_%s%s
' "$1" "$__berth_s" "$__berth_x" >&2
  # The next command's spare, once this answer is on its way (not for a session being retired).
  if [ -z "$__berth_sp" ]; then case "$__berth_x" in *L* | *D*) ;; *) __berth_spawn ;; esac; fi
}
__berth_pids; __berth_base=$__berth_now; __berth_mine=' '
printf '__BERTH_%s_S__

__BERTH_%s_E_0
' @READY_ID@ @READY_ID@
printf '__BERTH_%s_S__

__BERTH_%s_E_0
' @READY_ID@ @READY_ID@ >&2
__berth_spawn
