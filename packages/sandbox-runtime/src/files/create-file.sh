# shellcheck shell=sh
# OpenClaw's exclusive create (FILE_PROGRAMS.createFile): $1 file, $2 "1" to create missing
# parents; stdin is the content; exits EXISTS when something is there.
# shellcheck disable=SC2154

case "$1" in */*) parent=${1%/*}; parent=${parent:-/} ;; *) parent=. ;; esac
if [ "$2" = 1 ]; then mkdir -p -- "$parent" || exit 1; fi
[ -d "$parent" ] || exit "$NOT_FOUND"
if [ -e "$1" ] || [ -L "$1" ]; then exit "$EXISTS"; fi
if (set -C; cat > "$1") 2>/dev/null; then exit 0; fi
if [ -e "$1" ] || [ -L "$1" ]; then exit "$EXISTS"; fi
exit 1
