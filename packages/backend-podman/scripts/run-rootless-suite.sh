#!/usr/bin/env bash
# Runs the Podman backend's rootless tests (the conformance suite and the file-ownership checks)
# AS an ordinary user against that user's own Podman service, then copies the vitest JSON
# report to <repo>/.test-results/backend-podman-rootless.json. Run as root, after a build.
#
# The checkout may sit below folders that only root can enter, so nothing is run from it: the
# built packages, node_modules and (when needed) the Node binary are copied into a temporary
# folder the user owns, which is removed afterwards. Exits with the tests' status.
#
# Arguments, when given, go to vitest (test files under src/, say: run-rootless-suite.sh src/purge-race.rootless.test.ts).
# Environment: BERTH_ROOTLESS_USER (default berth-rootless), BERTH_TEST_IMAGE, BERTH_ROOTLESS_RUN_ALL=1
# (also run the suite's pids-limit fork bomb test on a cgroup v1 host, where it cannot pass).
set -euo pipefail

say() { printf 'run-rootless-suite: %s\n' "$*" >&2; }
die() { say "$*"; exit 1; }

PACKAGE_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
REPO="$(cd "$PACKAGE_DIR/../.." && pwd)"
RUN_USER="${BERTH_ROOTLESS_USER:-berth-rootless}"

[ "$(id -u)" -eq 0 ] || die "run me as root (I switch to $RUN_USER with runuser)"
id -u "$RUN_USER" >/dev/null 2>&1 || die "user $RUN_USER does not exist; create it with the set-up (scripts/engines.sh) or set BERTH_ROOTLESS_USER"
RUN_UID="$(id -u "$RUN_USER")"
RUN_HOME="$(getent passwd "$RUN_USER" | cut -d: -f6)"
RUNTIME_DIR="/run/user/$RUN_UID"
SOCKET="$RUNTIME_DIR/podman/podman.sock"

as_user() { runuser -u "$RUN_USER" -- env -i HOME="$RUN_HOME" XDG_RUNTIME_DIR="$RUNTIME_DIR" PATH="/usr/local/bin:/usr/bin:/bin" "$@"; }
answers() { as_user curl -fsS --max-time 2 --unix-socket "$SOCKET" http://localhost/_ping >/dev/null 2>&1; }

if ! answers; then
  [ -f "$REPO/scripts/engines.sh" ] && { say "the rootless Podman service of $RUN_USER does not answer on $SOCKET; running scripts/engines.sh"; bash "$REPO/scripts/engines.sh" >&2 || true; }
  answers || die "the rootless Podman service of $RUN_USER does not answer on $SOCKET; start it as that user: podman system service --time=0 unix://$SOCKET"
fi

NODE_BIN="$REPO/.tools/node/bin/node"
[ -x "$NODE_BIN" ] || NODE_BIN="$(command -v node || true)"
[ -n "$NODE_BIN" ] || die "no Node found (neither $REPO/.tools/node/bin/node nor node on PATH); run the set-up"

for built in core sandbox-runtime testkit backend-docker; do
  [ -f "$REPO/packages/$built/dist/index.js" ] || die "packages/$built is not built; run: pnpm --filter @berth/backend-podman... build"
done
[ -f "$REPO/node_modules/vitest/vitest.mjs" ] || die "vitest is not installed in $REPO/node_modules; run pnpm install"

STAGE="$(as_user mktemp -d /tmp/berth-rootless-suite.XXXXXX)"
# shellcheck disable=SC2317 # called by the EXIT trap (shellcheck 0.9 does not see it)
cleanup() { rm -rf "$STAGE"; }
trap cleanup EXIT

say "staging the built packages in $STAGE for $RUN_USER"
cp -a "$REPO/package.json" "$REPO/vitest.shared.ts" "$REPO/tsconfig.base.json" "$STAGE/"
cp -a "$REPO/node_modules" "$STAGE/node_modules"
mkdir -p "$STAGE/packages" "$STAGE/.test-results"
for built in core sandbox-runtime testkit backend-docker; do
  mkdir -p "$STAGE/packages/$built"
  cp -a "$REPO/packages/$built/package.json" "$REPO/packages/$built/dist" "$STAGE/packages/$built/"
  [ -d "$REPO/packages/$built/node_modules" ] && cp -a "$REPO/packages/$built/node_modules" "$STAGE/packages/$built/"
done
mkdir -p "$STAGE/packages/backend-podman"
cp -a "$PACKAGE_DIR/package.json" "$PACKAGE_DIR/tsconfig.json" "$PACKAGE_DIR/vitest.rootless.config.ts" "$PACKAGE_DIR/src" "$PACKAGE_DIR/node_modules" "$STAGE/packages/backend-podman/"

# The Node binary stays where it is when the user can run it there; else it is copied too.
if ! as_user "$NODE_BIN" --version >/dev/null 2>&1; then
  mkdir -p "$STAGE/.node/bin"
  cp "$NODE_BIN" "$STAGE/.node/bin/node"
  NODE_BIN="$STAGE/.node/bin/node"
fi
chown -R "$RUN_USER:" "$STAGE"

say "running the rootless suite as $RUN_USER (uid $RUN_UID) against $SOCKET"
set +e
(cd "$STAGE/packages/backend-podman" && runuser -u "$RUN_USER" -- env -i \
  HOME="$RUN_HOME" XDG_RUNTIME_DIR="$RUNTIME_DIR" PATH="$(dirname "$NODE_BIN"):/usr/local/bin:/usr/bin:/bin" \
  ${BERTH_TEST_IMAGE:+BERTH_TEST_IMAGE="$BERTH_TEST_IMAGE"} ${BERTH_ROOTLESS_RUN_ALL:+BERTH_ROOTLESS_RUN_ALL="$BERTH_ROOTLESS_RUN_ALL"} \
  BERTH_ROOTLESS_REPORT="$STAGE/.test-results/backend-podman-rootless.json" \
  "$NODE_BIN" "$STAGE/node_modules/vitest/vitest.mjs" run --config vitest.rootless.config.ts "$@")
status=$?
set -e

mkdir -p "$REPO/.test-results"
if [ -f "$STAGE/.test-results/backend-podman-rootless.json" ]; then
  cp "$STAGE/.test-results/backend-podman-rootless.json" "$REPO/.test-results/backend-podman-rootless.json"
  say "report: .test-results/backend-podman-rootless.json"
else
  say "vitest wrote no report"
  [ "$status" -ne 0 ] || status=1
fi
exit "$status"
