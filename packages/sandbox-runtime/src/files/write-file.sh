# shellcheck shell=sh
# OpenClaw's write (FILE_PROGRAMS.writeFile): $1 file, $2 "1" to create missing parents; stdin
# is the content. Writes in place, keeping an existing file's mode; refuses (exit 1, naming it)
# a file that exists and is not a regular file: a FIFO or a device would block the writer.
# shellcheck disable=SC2154

case "$1" in */*) parent=${1%/*}; parent=${parent:-/} ;; *) parent=. ;; esac
if [ "$2" = 1 ]; then mkdir -p -- "$parent" || exit 1; fi
[ -d "$parent" ] || exit "$NOT_FOUND"
[ -d "$1" ] && exit "$IS_FOLDER"
if [ -e "$1" ] && [ ! -f "$1" ]; then echo "not a regular file: $1" >&2; exit 1; fi
cat > "$1"
