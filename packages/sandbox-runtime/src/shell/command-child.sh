# shellcheck shell=sh
# What runs a command, in a child of the session's shell (CHILD_BODY in ../session-init-script.ts):
# the session's exports and directory from the state file, the command file sourced, and both saved
# again. `__berth_dir` (the state folder) is set by the text this is pasted after: the exec child
# script's first line, or the session's `__berth_sub`.

# shellcheck disable=SC1091,SC2154 # the state files are written at run time; __berth_dir is set by the text this follows
if [ -s "$__berth_dir/state" ]; then . "$__berth_dir/state" 2>/dev/null; else . "$__berth_dir/init" 2>/dev/null; fi
# shellcheck disable=SC2164 # a directory that is gone leaves the command in the one it started in
cd -- "$__BERTH_CWD" 2>/dev/null; unset __BERTH_CWD
__berth_save() { [ -z "$__berth_kept" ] || return 0; __berth_kept=1; __BERTH_CWD=$PWD; export __BERTH_CWD; export -p > "$__berth_dir/state" && echo 1 > "$__berth_dir/saved"; }
trap __berth_save EXIT
# shellcheck disable=SC1091 # the command file, written for each command
. "$__berth_dir/cmd"
__berth_st=$?
__berth_save
exit $__berth_st
