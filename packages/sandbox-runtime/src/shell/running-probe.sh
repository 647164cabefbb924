# shellcheck shell=sh
# RUNNING_PROBE (../shell-protocol.ts): exits 0 when a command runs in some Berth session of the
# sandbox, 1 otherwise. Builtins only. One line: it is an argument of `/bin/sh -c`.

for __berth_f in /tmp/.berth-*/pid; do { read -r __berth_p __berth_s < "$__berth_f"; } 2>/dev/null || continue; [ -n "$__berth_p" ] && kill -0 "$__berth_p" 2>/dev/null && exit 0; done; exit 1
