#!/usr/bin/env bash
# Runs shellcheck over every shell file under packages/, apps/, integrations/ and scripts/: the
# set-up scripts (bash) and the programs Berth sends into sandboxes (POSIX sh, run by busybox ash
# and dash: packages/sandbox-runtime/src/shell/). Each file says its shell (a `#!` line or a
# `# shellcheck shell=` directive); .shellcheckrc holds the settings. A finding that is meant is
# disabled on its line, with the reason. Installs shellcheck from Debian's packages when missing.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$BERTH_ROOT"
ensure_shellcheck
mapfile -t files < <(find packages apps integrations scripts -name node_modules -prune -o -name dist -prune -o -type f -name '*.sh' -print | LC_ALL=C sort)
say "shellcheck $(shellcheck --version | sed -n 's/^version: //p'): ${#files[@]} files"
shellcheck "${files[@]}"
