#!/usr/bin/env bash
# Runs the OpenClaw end-to-end test ("test", the default) or the exec bench ("bench"): installs
# the pinned OpenClaw outside the clone (scripts/install-openclaw.sh), packs the berth plugin
# archive, then runs the test inside a network namespace of its own whose only interface is
# loopback, so nothing the gateway, the plugin or npm tries can leave the machine. The Docker
# engine is reached through its Unix socket, which a network namespace does not cut off.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
REPOSITORY="$(cd "$HERE/../.." && pwd)"
mode="${1:-test}"

say() { printf '[openclaw e2e] %s\n' "$*" >&2; }
fail() { say "$*"; exit 1; }

case "$mode" in
  test) command=("$HERE/node_modules/.bin/vitest" run --config vitest.e2e.config.ts) ;;
  bench) command=(node --import tsx bench/openclaw-exec.bench.ts) ;;
  *) fail "unknown mode $mode; use test or bench" ;;
esac
[ "$(id -u)" = 0 ] || fail "the test runs in a network namespace of its own (unshare --net), which needs root; run it as root, as scripts/test.sh does on CI"
command -v unshare >/dev/null 2>&1 || fail "unshare (util-linux) is missing; install it: apt-get install -y util-linux"
if command -v ip >/dev/null 2>&1; then loopback_up='ip link set lo up'
elif busybox ip >/dev/null 2>&1; then loopback_up='busybox ip link set lo up'
else fail "neither ip (iproute2) nor busybox is installed, so loopback cannot be brought up; apt-get install -y iproute2"
fi
for built in packages/openclaw/dist/index.js apps/gateway-plugin/dist/cli.js; do
  [ -f "$REPOSITORY/$built" ] || fail "$built is missing; run \"pnpm build\" at the repository root first"
done

{ read -r openclaw_home; read -r openclaw_node; } < <(bash "$HERE/scripts/install-openclaw.sh")
work="$(mktemp -d "${TMPDIR:-/tmp}/berth-openclaw-e2e-XXXXXX")"
trap 'rm -rf "$work"' EXIT
archive="$(node "$REPOSITORY/packages/openclaw/scripts/pack-openclaw-plugin.mjs" --out "$work")"
say "plugin archive: $(basename "$archive")"

export BERTH_OPENCLAW_HOME="$openclaw_home" BERTH_OPENCLAW_NODE="$openclaw_node" BERTH_OPENCLAW_PLUGIN_ARCHIVE="$archive"
cd "$HERE"
unshare --net -- sh -c "$loopback_up && exec \"\$@\"" run-e2e "${command[@]}"
