# shellcheck shell=sh
# OpenClaw's readdir (FILE_PROGRAMS.listFolder): $1 folder; prints "d NAME" or "f NAME" per
# entry, each ended by a NUL byte.
# shellcheck disable=SC2154

[ -e "$1" ] || exit "$NOT_FOUND"
[ -d "$1" ] || exit "$NOT_FOLDER"
cd -- "$1" || exit 1
for entry in * .[!.]* ..?*; do
  [ -e "$entry" ] || [ -L "$entry" ] || continue
  if [ -d "$entry" ]; then printf 'd %s\000' "$entry"; else printf 'f %s\000' "$entry"; fi
done
