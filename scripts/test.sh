#!/usr/bin/env bash
# The README's test command: brings Node, pnpm, the dependencies, the engines, the base image
# and a one-node Kubernetes where they are missing, then builds, type-checks and runs every test
# suite.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$BERTH_ROOT"
ensure_dependencies
bash scripts/engines.sh
rm -rf .test-results && mkdir -p .test-results
status=0
run() { say "$*"; "$@" || status=1; }

# The one-node Kubernetes that the Kubernetes tests run against: started in the background while
# the suites that do not need it run (a fresh machine builds it first, about 6 minutes of both
# cores; later runs take the binaries from the cache), and stopped again once the integration
# suites are done, or whenever this script exits. A cluster that already ran is left running.
kubernetes_ours=1
bash scripts/kubernetes.sh status >/dev/null 2>&1 && kubernetes_ours=0
stop_kubernetes() {
  [ "$kubernetes_ours" = 1 ] || return 0
  kubernetes_ours=0
  bash scripts/kubernetes.sh down >>.test-results/kubernetes-down.log 2>&1 || { say "scripts/kubernetes.sh down failed; its log: .test-results/kubernetes-down.log"; return 1; }
}
trap stop_kubernetes EXIT
trap 'exit 130' INT TERM
say "bash scripts/kubernetes.sh up (in the background; log: .test-results/kubernetes-up.log)"
bash scripts/kubernetes.sh up >.test-results/kubernetes-up.log 2>&1 &
kubernetes_up=$!

run pnpm -s build
run pnpm -s typecheck
run pnpm -s test
if ! wait "$kubernetes_up"; then
  status=1
  say "the Kubernetes test cluster did not come up; the end of .test-results/kubernetes-up.log:"
  tail -n 15 .test-results/kubernetes-up.log >&2 || true
fi
run bash scripts/kubernetes.sh status
run pnpm -s test:integration
# Before the suites that restart dockerd: the kubelet's pods live on the same engine.
run stop_kubernetes
run bash packages/backend-podman/scripts/run-rootless-suite.sh
run bash integrations/hermes/scripts/test.sh
run pnpm -s --filter @berth/openclaw-e2e test:e2e
run pnpm -s test:attack
node scripts/summarize-tests.mjs .test-results || status=1
exit "$status"
