# shellcheck shell=sh
# OpenClaw's rename (FILE_PROGRAMS.renamePath): $1 from, $2 to; creates the destination's folder.
# shellcheck disable=SC2154

if [ ! -e "$1" ] && [ ! -L "$1" ]; then exit "$NOT_FOUND"; fi
case "$2" in */*) parent=${2%/*}; parent=${parent:-/} ;; *) parent=. ;; esac
mkdir -p -- "$parent" && mv -f -- "$1" "$2"
