# shellcheck shell=sh
# The file kit's read of one chunk (READ_CHUNK in file-programs.ts; the exit codes come from
# file-exit-codes.ts, set in front of the program). $1 file, $2 block size, $3 blocks to skip,
# $4 blocks to read, $5 the most bytes it may have, then the roots what is read must lie in.
# Opens the file once, then decides on what was opened: its real path (/proc/self/fd), its
# type and its link count; prints the size, then the chunk in base64. What it prints is the
# sandbox's word only: the host checks it (read-in-chunks.ts).
# (A failed redirection of exec ends a POSIX shell at once, so what would fail it is checked first.)
# shellcheck disable=SC2154

file=$1 block=$2 skip=$3 count=$4 most=$5
shift 5
if [ ! -e "$file" ]; then exit "$NOT_FOUND"; fi
if [ -d "$file" ]; then exit "$IS_FOLDER"; fi
if [ -p "$file" ] || [ -S "$file" ] || [ -c "$file" ] || [ -b "$file" ]; then echo "not a regular file: $file" >&2; exit "$NOT_REGULAR"; fi
[ -r "$file" ] || { echo "permission denied: $file" >&2; exit 1; }
exec 3< "$file"
real=$(readlink "/proc/$$/fd/3") || exit 1
inside=
for root in "$@"; do
  case "$real" in "$root" | "$root"/*) inside=1 ;; esac
done
[ -n "$inside" ] || { printf '%s\n' "$real" >&2; exit "$OUTSIDE"; }
[ -f "/proc/$$/fd/3" ] || { echo "not a regular file: $file" >&2; exit "$NOT_REGULAR"; }
facts=$(stat -L -c '%h %s' "/proc/$$/fd/3") || exit 1
[ "${facts% *}" = 1 ] || exit "$LINKED"
size=${facts#* }
echo "$size"
[ "$size" -le "$most" ] || exit "$TOO_LARGE"
# At most the bytes the size printed leaves from here: a file that grows after the stat must not
# hand the host more than was claimed (which it refuses as a lie), only the next chunk's new size.
left=$((size - skip * block))
[ "$left" -gt 0 ] || left=0
dd bs="$block" skip="$skip" count="$count" 2>/dev/null <&3 | head -c "$left" | base64
