# shellcheck shell=sh
# OpenClaw's stat (FILE_PROGRAMS.statPath): $1 path; prints "type|size|mtime seconds", or exits
# NOT_FOUND when nothing is there.
# shellcheck disable=SC2154

if [ ! -e "$1" ] && [ ! -L "$1" ]; then exit "$NOT_FOUND"; fi
if [ -d "$1" ]; then type='directory'; elif [ -f "$1" ]; then type='file'; else type='other'; fi
set -- "$1" "$(stat -L -c '%s %Y' -- "$1" 2>/dev/null || stat -c '%s %Y' -- "$1")"
printf '%s|%s|%s\n' "$type" "${2% *}" "${2#* }"
