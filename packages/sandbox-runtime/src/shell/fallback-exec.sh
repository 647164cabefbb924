# shellcheck shell=sh
# The fallback mode's `/bin/sh -c` script (FALLBACK_PRELUDE in ../fallback-exec-script.ts), for
# images whose shell cannot hold a session. $1: the state folder; $2: the marker line that ends
# the variables on stdin.

__berth_b=
while IFS= read -r __berth_l; do
  [ "$__berth_l" = "$2" ] && break
  __berth_b="$__berth_b$__berth_l
"
done
eval "$__berth_b"
unset __berth_b __berth_l
__berth_d=$1
# shellcheck disable=SC2174 # only the state folder itself is made (in /tmp), and it must be private
mkdir -m 700 -p "$__berth_d" 2>/dev/null
# shellcheck disable=SC1091,SC2154,SC2164 # the state file is written at run time; __berth_apply and __berth_env come from stdin (the eval above); a directory that is gone leaves the command in the one it started in
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
# shellcheck disable=SC2154 # __berth_c comes from stdin (the eval above)
eval "$__berth_c"
