"""The stand-in gateway under the cached Python 3.14 root (scripts/test-python-3.14.sh sets
``BERTH_HERMES_PYTHON_ROOT``): its command line, and the `berth serve` processes the tests start on the
host for it, since the root has neither Node.js nor an engine (scripts/run-in-python-3.14.sh)."""

from __future__ import annotations

import os
import socket as sockets
import subprocess
import time
from pathlib import Path
from typing import Mapping

PYTHON_ROOT = os.environ.get("BERTH_HERMES_PYTHON_ROOT", "")
"""The root whose ``python3`` runs the gateway; empty: the host's Python, as usual."""

HERE = Path(__file__).resolve().parent
REPOSITORY = HERE.parents[2]
RUN_IN_ROOT = HERE.parent / "scripts" / "run-in-python-3.14.sh"


def gateway_argv(environment: Mapping[str, str], driver_arguments: list[str]) -> list[str]:
    """The gateway's command: ``python3`` of the root, with exactly ``environment`` (PATH the root's)."""
    pairs = [f"{name}={value}" for name, value in environment.items() if name != "PATH"]
    return ["bash", os.fspath(RUN_IN_ROOT), PYTHON_ROOT, os.fspath(REPOSITORY), "/usr/bin/env", "-i",
            "PATH=/usr/local/bin:/usr/bin:/bin", *pairs, "python3", os.fspath(HERE / "gateway_driver.py"),
            *driver_arguments]


def _answers(path: Path) -> bool:
    with sockets.socket(sockets.AF_UNIX, sockets.SOCK_STREAM) as client:
        try:
            client.connect(os.fspath(path))
        except OSError:
            return False
    return True


def start_host_server(home: Path, environment: Mapping[str, str], log: Path) -> None:
    """``berth serve`` on ``{home}/run/berth.sock`` with ``{home}/config.yaml``, as the bridge starts it
    (berth_hermes/server.py), and waits until it answers; the tests' teardown stops it."""
    socket = home / "run" / "berth.sock"
    socket.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    argv = [environment["BERTH_NODE"], environment["BERTH_CLI"], "serve", "--socket", os.fspath(socket),
            "--config", os.fspath(home / "config.yaml")]
    with log.open("a") as output:
        subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=output, stderr=output, start_new_session=True,
                         env={**environment, "HERMES_HOME": os.fspath(home)})
    deadline = time.monotonic() + 60
    while not _answers(socket):
        if time.monotonic() > deadline:
            raise AssertionError(f"berth serve did not answer on {socket} within 60 s; its log:\n{log.read_text()}")
        time.sleep(0.1)
