#!/usr/bin/env bash
# Sourced by check-python-3.14.sh and test-python-3.14.sh: the cached Debian sid root with Python
# 3.14 (upstream Hermes 0.21's), how to build it once per version, and how to run a command in it
# (chroot, in a mount namespace of its own: no container engine). docs/testing.md says more.
# shellcheck source=../../../scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../../scripts/lib.sh"

# A root counts as present when it is this version (bump on any change to what goes in).
PYTHON_ROOT_VERSION=1
PYTHON_VERSION=3.14
# sid serves python3 3.14 and the tools built for it (forky, its testing, follows it).
SUITE=sid
PACKAGES=(python3 python3-mypy flake8 python3-pytest python3-yaml python3-pip)
CACHE_ROOT="${BERTH_CACHE_DIR:-/var/cache/berth}"
ROOT="$CACHE_ROOT/python-$PYTHON_VERSION-root-$PYTHON_ROOT_VERSION"
# The archive may be a dated snapshot whose Release has expired: apt must not refuse it for that.
APT_OPTIONS=(-o Acquire::Check-Valid-Until=false -o DPkg::Lock::Timeout=600)

[ "$(id -u)" = 0 ] || { say "running the checks under Python $PYTHON_VERSION needs root (debootstrap, unshare, chroot); run as root"; exit 1; }
mkdir -p "$CACHE_ROOT"

# Runs "$@" chrooted in the root given first, with /proc, a fresh /tmp and (when BERTH_ROOT_RO is
# set) the checkout read-only at /berth, all in a mount namespace that ends with the command.
in_root() { # ROOT COMMAND...
  # shellcheck disable=SC2016 # the inner shell expands $1, $root and $BERTH_ROOT_RO, not this one
  unshare --mount --propagation private /bin/sh -c '
    root=$1; shift
    mount -t proc proc "$root/proc" && mount -t tmpfs -o mode=1777,size=512m tmpfs "$root/tmp" || exit 1
    if [ -n "${BERTH_ROOT_RO:-}" ]; then
      mount --bind "$BERTH_ROOT_RO" "$root/berth" && mount -o remount,bind,ro "$root/berth" || exit 1
    fi
    exec chroot "$root" /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
      HOME=/tmp LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive PYTHONDONTWRITEBYTECODE=1 \
      MYPY_CACHE_DIR=/tmp/mypy-cache "$@"' sh "$@"
}

# Two runs at once take turns: the second then finds the root present.
exec 9>"$CACHE_ROOT/.python-$PYTHON_VERSION-root.lock"
flock 9

build_root() {
  local work="$ROOT.partial" log="$CACHE_ROOT/python-$PYTHON_VERSION-root.log" debootstrap mirror started
  started="$(date +%s)"
  # A build that died may have left debootstrap's mounts: unmounted first, and rm stays on this
  # file system whatever happens.
  clean_partial() {
    awk -v prefix="$work/" 'index($2, prefix) == 1 { print $2 }' /proc/mounts | sort -r |
      while read -r mount; do umount -l "$mount" || true; done
    rm -rf --one-file-system "$work"
  }
  fail() {
    say "$1; the end of its log ($log):"
    tail -n 15 "$log" >&2 || true
    clean_partial
    exit 1
  }
  clean_partial
  : >"$log"
  debootstrap="$(command -v debootstrap || echo /usr/sbin/debootstrap)"
  if [ ! -x "$debootstrap" ]; then
    say "installing debootstrap from Debian's packages"
    { apt_get update -qq && apt_get install -y -qq debootstrap; } >>"$log" 2>&1 ||
      fail "installing debootstrap failed: check the host's apt sources (apt-get update) and run this again"
    debootstrap="$(command -v debootstrap || echo /usr/sbin/debootstrap)"
  fi
  mirror="$(debian_mirror "$SUITE")"
  if [ -z "$mirror" ]; then
    apt_get update -qq >>"$log" 2>&1 || fail "apt-get update failed: check the host's apt sources and run this again"
    mirror="$(debian_mirror "$SUITE")"
  fi
  [ -n "$mirror" ] || { say "no Debian mirror in apt's sources (/etc/apt/sources.list, /etc/apt/sources.list.d/); add one and run this again"; exit 1; }
  say "building the Python $PYTHON_VERSION root (once): debootstrap $SUITE (minbase) from $mirror, then ${PACKAGES[*]}"
  "$debootstrap" --variant=minbase "$SUITE" "$work" "$mirror" >>"$log" 2>&1 ||
    fail "downloading Debian $SUITE from $mirror failed (debootstrap): check that the mirror answers and run this again"
  cp /etc/resolv.conf "$work/etc/resolv.conf"
  mkdir -p "$work/berth"
  { in_root "$work" apt-get "${APT_OPTIONS[@]}" update -qq &&
    in_root "$work" apt-get "${APT_OPTIONS[@]}" install -y -qq --no-install-recommends "${PACKAGES[@]}"; } >>"$log" 2>&1 ||
    fail "downloading ${PACKAGES[*]} from Debian $SUITE failed (apt-get in the root): check that $mirror answers and run this again"
  # What the checks do without: apt's downloads and indexes, documentation, the build host's resolver.
  rm -rf "${work:?}"/var/cache/apt/archives/*.deb "${work:?}"/var/cache/apt/*.bin "${work:?}"/var/lib/apt/lists/* \
    "${work:?}"/usr/share/doc/* "${work:?}"/usr/share/man/* "${work:?}"/usr/share/locale/* "${work:?}"/etc/resolv.conf
  in_root "$work" python3 -c 'import sys, mypy, flake8, pytest, yaml, pip; print("%d.%d" % sys.version_info[:2])' \
    >"$work/python-version" 2>>"$log" || fail "the tools do not start in the new root"
  [ "$(cat "$work/python-version")" = "$PYTHON_VERSION" ] ||
    fail "Debian $SUITE's python3 is $(cat "$work/python-version"), not $PYTHON_VERSION: change SUITE or PYTHON_VERSION in $0"
  echo "$(($(date +%s) - started))" >"$work/build-seconds"
  mv "$work" "$ROOT"
  # Roots of earlier versions go: only this one is ever used.
  find "$CACHE_ROOT" -mindepth 1 -maxdepth 1 -type d -name "python-$PYTHON_VERSION-root-[0-9]*" ! -name "$(basename "$ROOT")" \
    ! -name '*.partial' -exec rm -rf --one-file-system {} +
  say "built the Python $PYTHON_VERSION root in $(cat "$ROOT/build-seconds") s ($(du -sm "$ROOT" | cut -f1) MB, $ROOT)"
}

# Builds the root when this version is not there yet; two runs at once take turns.
ensure_python_root() {
  if [ -f "$ROOT/python-version" ]; then
    say "the Python $PYTHON_VERSION root (version $PYTHON_ROOT_VERSION) is present"
  else
    build_root
  fi
  flock -u 9
}
