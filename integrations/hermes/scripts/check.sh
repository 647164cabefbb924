#!/usr/bin/env bash
# The Hermes bridge's static checks and the tests that need neither an engine nor Berth's build:
# mypy (strict, pyproject.toml's [tool.mypy], for the Python that runs it) over the package, its
# build backend and its tests, flake8 (.flake8) over the whole folder, and pytest -m "not engine"
# (conftest.py marks the tests that need the engine or the build). All from Debian's packages
# (python3-mypy, flake8, python3-pytest, python3-yaml, python3-pip), installed when missing.
# scripts/test.sh runs it in phase 1, beside shellcheck, with the host's Python and, through
# check-python-3.14.sh, inside a root with Python 3.14.
source "$(dirname "${BASH_SOURCE[0]}")/../../../scripts/lib.sh"
PYTHON=/usr/bin/python3
missing=()
[ -x "$PYTHON" ] || missing+=(python3)
"$PYTHON" -m mypy --version >/dev/null 2>&1 || missing+=(python3-mypy)
"$PYTHON" -m flake8 --version >/dev/null 2>&1 || missing+=(flake8)
"$PYTHON" -c 'import pytest' >/dev/null 2>&1 || missing+=(python3-pytest)
"$PYTHON" -c 'import yaml' >/dev/null 2>&1 || missing+=(python3-yaml)
"$PYTHON" -m pip --version >/dev/null 2>&1 || missing+=(python3-pip)
install_debian_packages "${missing[@]}"
cd "$BERTH_ROOT/integrations/hermes"
version="$("$PYTHON" -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
status=0
say "python $version: $("$PYTHON" -m mypy --version)"
"$PYTHON" -m mypy --python-version "$version" || status=1
say "python $version: flake8 $("$PYTHON" -m flake8 --version | awk 'NR == 1 { print $1 }')"
"$PYTHON" -m flake8 || status=1
say "python $version: pytest -m 'not engine' (the tests that need no engine and no build)"
"$PYTHON" -m pytest -q -p no:cacheprovider -m 'not engine' tests || status=1
exit "$status"
