#!/usr/bin/env bash
# The README's test command: brings Node, pnpm, the dependencies, the engines and the base
# image where they are missing, then builds, type-checks and runs every test suite.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$BERTH_ROOT"
ensure_dependencies
bash scripts/engines.sh
rm -rf .test-results && mkdir -p .test-results
status=0
run() { say "$*"; "$@" || status=1; }
run pnpm -s build
run pnpm -s typecheck
run pnpm -s test
run pnpm -s test:integration
run bash packages/backend-podman/scripts/run-rootless-suite.sh
run bash integrations/hermes/scripts/test.sh
run pnpm -s --filter @berth/openclaw-e2e test:e2e
run pnpm -s test:attack
node scripts/summarize-tests.mjs .test-results || status=1
exit "$status"
