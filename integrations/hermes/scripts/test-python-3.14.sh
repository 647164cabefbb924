#!/usr/bin/env bash
# The bridge inside a stand-in gateway under Python 3.14, on the real engine: the tests of upstream
# 0.21's seams (tests/test_profile_policy.py: profiles, their config, secrets, policy, attachments
# and cron fires) with the gateway process run by the cached Python 3.14 root's interpreter
# (run-in-python-3.14.sh) and pytest on the host. The `berth serve` processes run on the host,
# started by the tests as an operator would (the root has no Node.js and no engine), so what runs
# under 3.14 is all of the bridge but its server start, which the 3.11 run covers. Expects what
# test.sh expects. docs/testing.md says more.
# shellcheck source=python-3.14-root.sh
source "$(dirname "${BASH_SOURCE[0]}")/python-3.14-root.sh"
ensure_python_root
cd "$BERTH_ROOT/integrations/hermes"
BERTH_HERMES_PYTHON_ROOT="$ROOT" BERTH_TEST_REPORT=hermes-bridge-python-3.14 \
  BERTH_TEST_RESULTS="$BERTH_ROOT/.test-results" exec /usr/bin/python3 -m pytest -q -p no:cacheprovider "$@" \
  tests/test_profile_policy.py
