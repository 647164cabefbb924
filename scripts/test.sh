#!/usr/bin/env bash
# The README's test command: brings Node, pnpm, the dependencies, the engines, the base image
# and a one-node Kubernetes where they are missing, then builds, type-checks, runs shellcheck
# and the Hermes bridge's Python checks, and runs every test suite. docs/testing.md says what
# runs when, and why in that order.
#
# Three phases:
#   1. set-up and build (restored from the machine's turbo cache where this tree was built), then
#      the unit tests with the static checks beside them (type-check, Biome's lint and format
#      check, the 350-line size check, shellcheck, the Python checks: mypy, flake8 and the engine-free tests under 3.11 and 3.14), while the test cluster's binaries build (nice 19, a new machine
#      only) and the cluster then starts, and OpenClaw downloads into its cache;
#   2. two lanes side by side: the Docker and Podman integration suites (Docker's conformance
#      suite a second time under gVisor), the attack cases that depend on the kernel under the
#      sandbox a second time under gVisor and the Hermes bridge; and the Kubernetes suite, OpenClaw
#      end to end, the attack cases that may share the machine, the install test and rootless Podman. Fork
#      bombs take one machine-wide lock (testkit's whileSaturating), so two never run at once;
#   3. the attack cases that must be alone: they restart dockerd or flood the machine (under runc,
#      then those that depend on the kernel under gVisor).
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$BERTH_ROOT"
run_started="$(date +%s)"
ensure_dependencies
rm -rf .test-results && mkdir -p .test-results
TIMINGS=.test-results/timings.txt
status=0

# Runs a step, says so, records its wall time (seconds) in .test-results/timings.txt.
step() {
  local name="$1" started; shift
  started="$(date +%s)"
  say "$name: $*"
  if ! "$@"; then status=1; say "$name failed"; fi
  echo "$name $(($(date +%s) - started))" >>"$TIMINGS"
}

# A lane runs its steps in order, its output prefixed with its name; its status lands in a file.
lane() {
  local name="$1"; shift
  (
    lane_status=0
    for command in "$@"; do
      started="$(date +%s)"
      say "[$name] $command"
      eval "$command" || { lane_status=1; say "[$name] failed: $command"; }
      echo "$name: $command $(($(date +%s) - started))" >>"$TIMINGS"
    done
    echo "$lane_status" >".test-results/lane-$name.status"
  ) 2>&1 | sed -u "s/^/[$name] /"
}

# The one-node Kubernetes the Kubernetes suite runs against. A cluster that already runs is left
# alone (and left running); otherwise ours is built (once per machine) in phase 1, started in
# phase 2 and stopped again when its suite is done or whenever this script exits.
kubernetes_ours=1
bash scripts/kubernetes.sh status >/dev/null 2>&1 && kubernetes_ours=0
# Called from the Kubernetes lane (a subshell) and from this shell's exit: a file says it is done.
# shellcheck disable=SC2317 # called from a trap and from a lane's eval, which shellcheck does not see
stop_kubernetes() {
  [ "$kubernetes_ours" = 1 ] && [ ! -e .test-results/kubernetes-stopped ] || return 0
  touch .test-results/kubernetes-stopped
  bash scripts/kubernetes.sh down >>.test-results/kubernetes-down.log 2>&1 || { say "scripts/kubernetes.sh down failed; its log: .test-results/kubernetes-down.log"; return 1; }
}
trap stop_kubernetes EXIT
trap 'exit 130' INT TERM

# Runs a step in the background, its output in .test-results/NAME.log; the pid is in $!.
background() {
  local name="$1"; shift
  say "$name: $* (in the background; log: .test-results/$name.log)"
  (
    started="$(date +%s)"
    if "$@"; then code=0; else code=$?; fi
    echo "$name $(($(date +%s) - started))" >>"$TIMINGS"
    echo "$code" >".test-results/$name.status"
    exit "$code"
  ) >".test-results/$name.log" 2>&1 &
}

# Waits until one of the files exists.
# shellcheck disable=SC2317 # called from prepare_kubernetes and kubernetes_ready, which run indirectly
wait_for_file() {
  local file
  while :; do
    for file in "$@"; do [ -e "$file" ] && return 0; done
    sleep 1
  done
}

# The test cluster, in the background from the start: its binaries (built once per machine: the
# long step of a new one), then — once the engines run — the cluster itself.
# shellcheck disable=SC2317 # called through `background`, which shellcheck does not see
prepare_kubernetes() {
  bash scripts/kubernetes.sh build || return 1
  touch .test-results/kubernetes-built
  wait_for_file .test-results/engines.status
  [ "$(cat .test-results/engines.status)" = 0 ] || return 1
  local started; started="$(date +%s)"
  bash scripts/kubernetes.sh up || return 1
  echo "kubernetes-up $(($(date +%s) - started))" >>"$TIMINGS"
}

# Phase 1.
if [ "$kubernetes_ours" = 1 ]; then
  background kubernetes prepare_kubernetes
else
  touch .test-results/kubernetes-built && echo 0 >.test-results/kubernetes.status
fi
background openclaw-install bash tests/openclaw-e2e/scripts/install-openclaw.sh
openclaw_install=$!

step engines bash scripts/engines.sh
echo "$status" >.test-results/engines.status
# The image with HTTP clients for the brokered-secrets cases (phase 2), beside the build and the
# unit tests: about 75 s on a new machine (debootstrap), nothing once it is there.
background egress-image bash scripts/egress-test-image.sh
egress_image=$!
# turbo keeps each package's build under the machine's cache, keyed by its sources, the lockfile
# and the shared build config: a machine that built this tree before restores dist/ at once.
export TURBO_CACHE_DIR="${BERTH_CACHE_DIR:-/var/cache/berth}/turbo"
# Builds of trees not built for two weeks go.
[ -d "$TURBO_CACHE_DIR" ] && find "$TURBO_CACHE_DIR" -type f -mtime +14 -delete
step build pnpm -s build
# The static checks run beside the unit tests, which leave part of the two cores idle; their
# output is printed once both are done.
(
  status=0
  step typecheck pnpm -s typecheck
  step lint pnpm -s lint
  step sizes node scripts/check-sizes.mjs
  step shellcheck bash scripts/shellcheck.sh
  step python-checks bash integrations/hermes/scripts/check.sh
  # The same under Python 3.14, upstream Hermes 0.21's, in a Debian root cached by version
  # (2 to 3 min once, to build it; about 11 s after).
  step python-checks-3.14 bash integrations/hermes/scripts/check-python-3.14.sh
  exit "$status"
) >.test-results/checks.log 2>&1 &
checks=$!
step unit pnpm -s test
wait "$checks" || { status=1; say "a static check failed"; }
say "the static checks (.test-results/checks.log):"
cat .test-results/checks.log >&2

wait "$openclaw_install" || say "installing OpenClaw in the background failed (.test-results/openclaw-install.log); the end-to-end test tries again"
wait "$egress_image" || { status=1; say "building the egress test image failed; its log: .test-results/egress-image.log"; cat .test-results/egress-image.log >&2; }

# Phase 2: two lanes of about equal length, from now on. A compile of the test cluster's binaries
# still running (a new machine) shares the cores evenly with them from here: it goes back to nice 0.
phase2_started="$(date +%s)"
build_pid="$(cat "${BERTH_CACHE_DIR:-/var/cache/berth}/kubernetes-build.pid" 2>/dev/null || true)"
# Every thread of it and of its compilers: a niceness is a thread's, and go build starts each
# compiler from a thread of its own, so renicing its pid alone left them all at 19 (seen: the
# compile starved behind two busy cores for over half an hour).
renice_tree() {
  local task child
  for task in /proc/"$1"/task/*; do renice -n 0 -p "${task##*/}" >/dev/null 2>&1 || true; done
  for child in $(pgrep -P "$1" 2>/dev/null); do renice_tree "$child"; done
}
if [ -n "$build_pid" ]; then renice_tree "$build_pid"; fi
# shellcheck disable=SC2317 # called from a lane's eval, which shellcheck does not see
kubernetes_ready() {
  wait_for_file .test-results/kubernetes.status
  [ "$(cat .test-results/kubernetes.status)" = 0 ] && return 0
  say "the test cluster did not come up, so the Kubernetes suite does not run; the end of .test-results/kubernetes.log:"
  tail -n 15 .test-results/kubernetes.log
  return 1
}
kubernetes_suite=(
  "kubernetes_ready && bash scripts/kubernetes.sh status && pnpm -s --filter @berth/backend-kubernetes test:integration"
  "stop_kubernetes"
)
# The Kubernetes suite mostly waits on the kubelet, so its lane also takes the OpenClaw end-to-end
# test and the attack cases that may share the machine (the others run alone in phase 3). Where the binaries are cached the cluster is up at once and its suite goes first;
# where they are still compiling, it goes last.
kubernetes_others=(
  "pnpm -s --filter @berth/openclaw-e2e test:e2e"
  "BERTH_ATTACK_PART=shared pnpm -s --filter @berth/adversarial test:attack"
  "pnpm -s --filter @berth/openclaw test:attack"
  "pnpm -s --filter @berth/install-test test:integration"
  # Here rather than in the engines lane, which was the longer by about its length (1342 s against 1184 s).
  "bash packages/backend-podman/scripts/run-rootless-suite.sh"
)
if [ -e .test-results/kubernetes-built ]; then
  kubernetes_lane=("${kubernetes_suite[@]}" "${kubernetes_others[@]}")
else
  kubernetes_lane=("${kubernetes_others[@]}" "${kubernetes_suite[@]}")
fi
engines_lane=(
  "pnpm -s exec turbo run test:integration --concurrency=1 --continue --filter=!@berth/backend-kubernetes --filter=!@berth/install-test"
  "BERTH_ATTACK_PART=gvisor pnpm -s --filter @berth/adversarial test:attack"
  "bash integrations/hermes/scripts/test.sh"
  # The 0.21 seams' tests again with the stand-in gateway under Python 3.14 (about 15 s).
  "bash integrations/hermes/scripts/test-python-3.14.sh"
)
lane engines "${engines_lane[@]}" &
engines_lane_pid=$!
lane kubernetes "${kubernetes_lane[@]}" &
kubernetes_lane_pid=$!
wait "$engines_lane_pid" "$kubernetes_lane_pid" || true
for name in engines kubernetes; do
  [ "$(cat ".test-results/lane-$name.status" 2>/dev/null)" = 0 ] || { status=1; say "the $name lane failed"; }
done
echo "lanes $(($(date +%s) - phase2_started))" >>"$TIMINGS"

# Phase 3: the attack cases that restart the Docker daemon (the kubelet's pods live on it) or
# flood the machine while they hold a bound on answers, alone (tests/adversarial/vitest.attack.config.ts).
step stop-kubernetes stop_kubernetes
step attack env BERTH_ATTACK_PART=alone pnpm -s --filter @berth/adversarial test:attack
step attack-gvisor env BERTH_ATTACK_PART=gvisor-alone pnpm -s --filter @berth/adversarial test:attack

echo "total $(($(date +%s) - run_started))" >>"$TIMINGS"
say "wall times in seconds (.test-results/timings.txt):"
sed 's/^/  /' "$TIMINGS" >&2
node scripts/summarize-tests.mjs .test-results || status=1
exit "$status"
