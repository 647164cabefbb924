# shellcheck shell=sh
# OpenClaw's mkdirp (FILE_PROGRAMS.makeFolder): $1 folder.
# shellcheck disable=SC2154

[ -e "$1" ] && [ ! -d "$1" ] && exit "$NOT_FOLDER"
mkdir -p -- "$1"
