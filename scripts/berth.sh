#!/bin/sh
# The `berth` operator CLI from a checkout (the root package's `berth` script): the Node that the
# set-up brought into .tools/ when the machine's own is older than 22, else the machine's.
root="$(cd "$(dirname "$0")/.." && pwd)"
node="$root/.tools/node/bin/node"
cli="$root/apps/gateway-plugin/dist/cli.js"
# The set-up's Node is new enough; the machine's is asked. `node --version` answers before the
# JavaScript engine starts, yet costs about 30 ms, so it is asked only of a Node the set-up did not bring.
if [ ! -x "$node" ]; then
  node="$(command -v node || true)"
  version="$([ -n "$node" ] && "$node" --version 2>/dev/null || echo v0)"
  major="${version#v}"
  major="${major%%.*}"
  case "$major" in '' | *[!0-9]*) major=0 ;; esac
  if [ "$major" -lt 22 ]; then
    echo "berth: needs Node 22 or newer; run bash scripts/demo.sh (or scripts/test.sh) once, which brings it into .tools/" >&2
    exit 125
  fi
fi
if [ ! -f "$cli" ]; then
  echo "berth: $cli is not built; run bash scripts/demo.sh once, or pnpm build" >&2
  exit 125
fi
exec "$node" "$cli" "$@"
