#!/usr/bin/env bash
# The Hermes bridge's static checks: mypy (strict, pyproject.toml's [tool.mypy]) over the package,
# its build backend and its tests, and flake8 (.flake8) over the whole folder. Both from Debian's
# packages (python3-mypy, flake8), installed when missing, with pytest for the tests' types. Needs
# no engine and no build of Berth: scripts/test.sh runs it in phase 1, beside shellcheck.
source "$(dirname "${BASH_SOURCE[0]}")/../../../scripts/lib.sh"
PYTHON=/usr/bin/python3
missing=()
[ -x "$PYTHON" ] || missing+=(python3)
"$PYTHON" -m mypy --version >/dev/null 2>&1 || missing+=(python3-mypy)
"$PYTHON" -m flake8 --version >/dev/null 2>&1 || missing+=(flake8)
"$PYTHON" -c 'import pytest' >/dev/null 2>&1 || missing+=(python3-pytest)
install_debian_packages "${missing[@]}"
cd "$BERTH_ROOT/integrations/hermes"
status=0
say "$("$PYTHON" -m mypy --version)"
"$PYTHON" -m mypy || status=1
say "flake8 $("$PYTHON" -m flake8 --version | awk 'NR == 1 { print $1 }')"
"$PYTHON" -m flake8 || status=1
exit "$status"
