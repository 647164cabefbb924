# shellcheck shell=sh
# OpenClaw's copy (FILE_PROGRAMS.copyFile): $1 source file, $2 destination, $3 "1" to create the
# destination's folder. Refuses (exit 1, naming it) a source or destination that is there and
# is not a regular file: a FIFO or a device would block.
# shellcheck disable=SC2154

[ -e "$1" ] || exit "$NOT_FOUND"
[ -d "$1" ] && exit "$IS_FOLDER"
[ -f "$1" ] || { echo "not a regular file: $1" >&2; exit 1; }
if [ -e "$2" ] && [ ! -f "$2" ] && [ ! -d "$2" ]; then echo "not a regular file: $2" >&2; exit 1; fi
case "$2" in */*) parent=${2%/*}; parent=${parent:-/} ;; *) parent=. ;; esac
if [ "$3" = 1 ]; then mkdir -p -- "$parent" || exit 1; fi
[ -d "$parent" ] || exit "$NOT_FOUND"
cp -f -- "$1" "$2"
