#!/usr/bin/env bash
# The Hermes bridge's tests: pytest from Debian's python3-pytest (installed when missing) against
# the stand-in Hermes 0.19.0, real `berth serve` and the real Docker engine. Expects Berth built
# (pnpm -s build) and the engine and base image up (bash scripts/engines.sh), as scripts/test.sh does.
source "$(dirname "${BASH_SOURCE[0]}")/../../../scripts/lib.sh"
PYTHON=/usr/bin/python3
missing=()
[ -x "$PYTHON" ] || missing+=(python3)
"$PYTHON" -c 'import pytest' >/dev/null 2>&1 || missing+=(python3-pytest)
# pip installs the package the way an operator does (no index: its build backend is in-tree).
"$PYTHON" -m pip --version >/dev/null 2>&1 || missing+=(python3-pip)
# PyYAML stands in for the copy Hermes itself ships (the stand-in reads config.yaml with it).
"$PYTHON" -c 'import yaml' >/dev/null 2>&1 || missing+=(python3-yaml)
install_debian_packages "${missing[@]}"
cd "$BERTH_ROOT/integrations/hermes"
BERTH_TEST_RESULTS="$BERTH_ROOT/.test-results" exec "$PYTHON" -m pytest -q -p no:cacheprovider "$@" tests
