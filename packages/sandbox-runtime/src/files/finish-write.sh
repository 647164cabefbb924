# shellcheck shell=sh
# Moves the whole temporary file into place (FILE_PROGRAMS.finishWrite): $1 final path, $2
# temporary name, $3 the size it must have; removes it when that is not its size or something
# is at $1 by now.
# shellcheck disable=SC2154

tmp="${1%/*}/$2"
[ "$(stat -c %s -- "$tmp")" = "$3" ] || { rm -f -- "$tmp"; exit 1; }
if [ -e "$1" ] || [ -L "$1" ]; then rm -f -- "$tmp"; exit "$EXISTS"; fi
mv -- "$tmp" "$1"
