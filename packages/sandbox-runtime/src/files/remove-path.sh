# shellcheck shell=sh
# OpenClaw's remove (FILE_PROGRAMS.removePath): $1 path, $2 "1" recursive, $3 "1" force. A link
# is removed itself, never what it leads to.
# shellcheck disable=SC2154

if [ ! -e "$1" ] && [ ! -L "$1" ]; then [ "$3" = 1 ] && exit 0; exit "$NOT_FOUND"; fi
if [ -d "$1" ] && [ ! -L "$1" ]; then
  if [ "$2" = 1 ]; then rm -rf -- "$1"; else rmdir -- "$1"; fi
else
  rm -f -- "$1"
fi
