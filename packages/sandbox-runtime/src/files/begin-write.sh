# shellcheck shell=sh
# The gateway's first step of putting a file in (FILE_PROGRAMS.beginWrite): $1 final path, $2
# temporary name in its folder, then the roots the folder must really lie in. Creates the folder
# and the empty temporary file, refusing what is already at $1. The next steps are
# append-write.sh, then finish-write.sh (or abandon-write.sh).
# shellcheck disable=SC2154

final=$1 temporary=$2
shift 2
parent=${final%/*}
mkdir -p -- "$parent" || exit 1
real=$(cd -P -- "$parent" && pwd -P) || exit 1
inside=
for root in "$@"; do
  case "$real" in "$root" | "$root"/*) inside=1 ;; esac
done
[ -n "$inside" ] || { printf '%s\n' "$real" >&2; exit "$OUTSIDE"; }
if [ -e "$final" ] || [ -L "$final" ]; then exit "$EXISTS"; fi
(set -C; : > "$parent/$temporary") || exit 1
