# shellcheck shell=sh
# The busy check's listing from inside a sandbox (insideProcessListing in is-sandbox-busy.ts), a
# template: each process's id, its parent's, its group's (from stat, after the name's last ") ")
# and its command line (NULs and newlines as spaces), one a line, then the line
# `@MARKER@-running` when @RUNNING_PROBE@ says a command runs in a Berth session. The marker also
# ends the program, so the listing knows its own command line. One line: an argument of `/bin/sh -c`.
# A process that ends while listed is left out quietly (`{ … < f; } 2>/dev/null`: the `<` of a
# command alone is opened before its `2>` applies, under dash and busybox's sh alike).

# shellcheck disable=SC2086 # the fields of stat are split on purpose
for p in /proc/[0-9]*; do { [ -r "$p/cmdline" ] && read -r s < "$p/stat"; } 2>/dev/null || continue; s=${s##*) }; set -f; set -- $s; set +f; printf '%s %s %s ' "${p#/proc/}" "$2" "$3"; { tr '\0\n' '  ' < "$p/cmdline"; } 2>/dev/null; echo; done; if (@RUNNING_PROBE@); then echo @MARKER@-running; fi; : @MARKER@
