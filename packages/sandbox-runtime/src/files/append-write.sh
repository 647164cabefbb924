# shellcheck shell=sh
# Appends stdin (base64) to the temporary file begin-write.sh made (FILE_PROGRAMS.appendWrite):
# $1 final path, $2 temporary name.

base64 -d >> "${1%/*}/$2"
