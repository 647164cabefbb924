#!/usr/bin/env bash
# The README's first command: brings Node, pnpm, the dependencies, a container engine and the
# local base image where they are missing, builds Berth, and runs its main job, `berth demo`.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$BERTH_ROOT"
ensure_dependencies
bash scripts/engines.sh
say "building"
pnpm -s build >&2
exec node apps/gateway-plugin/dist/cli.js demo "$@"
