#!/usr/bin/env bash
# Runs a command (the stand-in gateway, from tests/conftest.py) inside the Python 3.14 root, seeing
# the host's /tmp (the tests' Hermes homes, sockets and sandbox folders, at the same paths) and the
# checkout read-only at its own path (the bridge and the stand-in; BERTH_CLI, which the bridge
# checks is there). Nothing else of the host: no container engine and no Node.js run in the root, so
# the tests start the `berth serve` processes on the host beforehand and the bridge uses them.
#
#   run-in-python-3.14.sh ROOT CHECKOUT COMMAND...
set -euo pipefail
[ "$#" -ge 3 ] || { echo "usage: $0 ROOT CHECKOUT COMMAND..." >&2; exit 2; }
# shellcheck disable=SC2016 # the inner shell expands its own arguments
exec unshare --mount --propagation private /bin/sh -c '
  root=$1; checkout=$2; shift 2
  mount -t proc proc "$root/proc" && mount --rbind /tmp "$root/tmp" || exit 1
  mkdir -p "$root$checkout" && mount --bind "$checkout" "$root$checkout" &&
    mount -o remount,bind,ro "$root$checkout" || exit 1
  exec chroot "$root" "$@"' sh "$@"
