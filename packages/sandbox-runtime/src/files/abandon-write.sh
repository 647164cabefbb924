# shellcheck shell=sh
# Removes what a failed write left (FILE_PROGRAMS.abandonWrite): $1 final path, $2 temporary name.

rm -f -- "${1%/*}/$2"
