"""A cron run's identity on Hermes 0.21+, without an engine: ``current_cron_execution()`` names the job.

Upstream 0.21 blanks every ``HERMES_SESSION_*`` ContextVar in a cron run, as 0.19.0 did, and says
which job runs by ``cron.execution_identity.current_cron_execution()`` (read from its code:
tests/stand_in/hermes_0_21/cron/execution_identity.py cites the file and commit). Each case runs
in its own interpreter, so the stand-in's packages never reach the other tests.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

PACKAGE_ROOT = Path(__file__).resolve().parents[1]
STAND_IN = Path(__file__).resolve().parent / "stand_in"

SCRIPT = """
import json, sys
sys.path[:0] = sys.argv[1:]
from berth_hermes.session import read_session, session_request
from cron.execution_identity import enter_cron_execution, exit_cron_execution
from agent.delegation_context import delegated_child_context
seen = {"outside": read_session()}
token = enter_cron_execution({"id": "job-7", "name": "digest"}, "exec-1", {"source": "builtin"}, profile="work")
seen["run"] = read_session()
seen["request"] = session_request(read_session(), "cron:job-7:exec-1")
with delegated_child_context():
    seen["delegated"] = read_session()
exit_cron_execution(token)
token = enter_cron_execution({"id": "job-7", "name": "digest"}, "exec-2", {"source": "builtin"}, profile="home")
seen["other profile"] = read_session()
exit_cron_execution(token)
seen["after"] = read_session()
print(json.dumps(seen))
"""


def run_in_hermes_0_21() -> dict[str, Any]:
    paths = [STAND_IN / "hermes_0_21", STAND_IN / "hermes_0_19_0", PACKAGE_ROOT]
    environment = {key: value for key, value in os.environ.items() if not key.startswith("HERMES_")}
    done = subprocess.run(
        [sys.executable, "-I", "-c", SCRIPT, *[os.fspath(path) for path in paths]],
        capture_output=True, text=True, timeout=60, env=environment, check=False,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)  # type: ignore[no-any-return]


def test_a_cron_run_goes_to_its_jobs_own_sandbox_and_nowhere_else() -> None:
    seen = run_in_hermes_0_21()
    # In the job's run: the job's own sandbox in its own profile, whatever task id Hermes gave
    # (cron:{job}:{execution}).
    assert seen["run"] == {"sessionKey": "cron:job-7", "profile": "work"}
    assert seen["request"]["sessionKey"] == "cron:job-7" and seen["request"]["profile"] == "work"
    # The same job id run by another profile names that profile: two sandboxes, never one.
    assert seen["other profile"] == {"sessionKey": "cron:job-7", "profile": "home"}
    # Outside it, before and after, and in a delegated child (upstream reads None there): nobody,
    # which the gateway refuses, never the job's sandbox and never task "default" by a session.
    for moment in ("outside", "delegated", "after"):
        assert seen[moment] == {}, moment
