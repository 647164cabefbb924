# shellcheck shell=sh
# The sandbox's main process and launcher (KEEP_ALIVE_COMMAND in ../sandbox-spec.ts), a template:
# @CHANNELS@ is CHANNELS_TARGET. One line, as a process list shows it: is-sandbox-busy.ts knows the
# launcher by its first statement, and the text is part of the sandbox's config digest.

trap "exit 0" TERM INT HUP; if [ -p @CHANNELS@/launch ]; then ( command -v setsid >/dev/null 2>&1 && __berth_s=setsid || __berth_s=; while :; do while IFS= read -r __berth_n; do case "$__berth_n" in "" | *[!0-9a-f]*) continue ;; esac; [ -p "@CHANNELS@/$__berth_n.in" ] || continue; ( ( echo "$__berth_n"; cd /workspace 2>/dev/null; exec $__berth_s /bin/sh ) < "@CHANNELS@/$__berth_n.in" > "@CHANNELS@/$__berth_n.out" 2> "@CHANNELS@/$__berth_n.err" & ); done < @CHANNELS@/launch || exit 0; done ) & fi; while :; do sleep 3600 & wait $!; done
