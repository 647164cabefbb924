"""Fixtures: the real Docker engine, Berth's built CLI, and stand-in Hermes gateways that use the bridge.

The tests need the engine and Berth's build; without them they fail with how to get them,
never skip.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Iterator
from urllib.parse import quote

import pytest
from docker_engine import Engine
from host_cleanup import NETWORK_POOL, remove_egress_tables, unmount_under
from python_root import PYTHON_ROOT, gateway_argv, start_host_server
from stand_in_gateway import Gateway

HERE = Path(__file__).resolve().parent
PACKAGE_ROOT = HERE.parent
REPOSITORY = PACKAGE_ROOT.parents[1]
CLI = REPOSITORY / "apps" / "gateway-plugin" / "dist" / "cli.js"
IMAGE = os.environ.get("BERTH_BASE_IMAGE", "localhost/berth-busybox:latest")
RUNTIME = REPOSITORY / "packages" / "sandbox-runtime" / "dist" / "driver.js"


@pytest.fixture(scope="session")
def engine() -> Engine:
    host = os.environ.get("DOCKER_HOST", "")
    path = host[len("unix://"):] if host.startswith("unix://") else "/var/run/docker.sock"
    try:
        status, _ = Engine(path).request("GET", "/_ping")
    except OSError as error:
        pytest.fail(
            f"no Docker Engine answers on {path} ({error}); start one with: bash scripts/engines.sh", pytrace=False
        )
    if status != 200:
        pytest.fail(
            f"the Docker Engine on {path} answered {status} to a ping; start it with: bash scripts/engines.sh",
            pytrace=False,
        )
    status, _ = Engine(path).request("GET", f"/images/{quote(IMAGE, safe='')}/json")
    if status != 200:
        pytest.fail(f"the test image {IMAGE} is missing; build it with: bash scripts/engines.sh", pytrace=False)
    return Engine(path)


@pytest.fixture(scope="session")
def berth_cli() -> Path:
    if not CLI.is_file():
        pytest.fail(f"Berth's CLI is not built ({CLI} is missing); build it with: pnpm -s build", pytrace=False)
    return CLI


@pytest.fixture(scope="session")
def node() -> str:
    found = os.environ.get("BERTH_NODE") or shutil.which("node")
    if not found:
        pytest.fail(
            "node is not on PATH; put Node 22+ on PATH (source scripts/lib.sh && ensure_dependencies)", pytrace=False
        )
    return found


def unique_user() -> str:
    """A Telegram-like id of this run only: Berth names containers by scope, and other suites share the engine."""
    return str(7_000_000_000 + secrets.randbelow(999_999_999))


def berth_serve_processes(socket_path: Path) -> list[int]:
    """Pids of processes running `berth serve` on ``socket_path`` (read from /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"serve" in argv and os.fsencode(socket_path) in argv:
            found.append(int(entry.name))
    return found


def wait_until(predicate, timeout: float = 15.0, interval: float = 0.1) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return predicate()


def make_profile(gateway: Gateway, name: str, terminal: dict | None = None, dotenv: dict | None = None) -> Path:
    """A named profile of ``gateway``'s Hermes, where upstream keeps one (``get_profile_dir(name)`` is
    ``{default root}/profiles/{name}``, hermes_cli/profiles.py at 0006718): its own ``config.yaml``
    (Berth's backend unless ``terminal`` says otherwise, no ``sandbox_dir``: its home's) and ``.env``."""
    home = gateway.home / "profiles" / name
    home.mkdir(parents=True)
    section = {"backend": "berth_docker", "docker_image": IMAGE, "lifetime_seconds": 120,
               "docker_network_pool": NETWORK_POOL, **(terminal or {})}
    (home / "config.yaml").write_text(json.dumps({"terminal": section}, indent=2), encoding="utf-8")
    (home / ".env").write_text("".join(f"{key}={value}\n" for key, value in (dotenv or {}).items()), encoding="utf-8")
    if PYTHON_ROOT and section["backend"] == "berth_docker":
        # What the bridge would start for the profile (profiles.routed_environment): the gateway's
        # environment without its TERMINAL_* and users' variables.
        environment = {name: value for name, value in gateway.environment.items()
                       if not name.startswith(("TERMINAL_", "HERMES_USER_", "HERMES_SESSION_"))}
        start_host_server(home, environment, gateway.home.parent / f"berth-serve-{name}.log")
    return home


def launch_only(server: Any) -> Any:
    """The bridge's profiles of a gateway without routed profiles: every call is the launch profile's,
    served by ``server`` (a stand-in of :class:`BerthServer` in the tests that need no engine)."""
    from berth_hermes.profiles import Profiles
    from berth_hermes.settings import BridgeSettings, hermes_home

    settings = BridgeSettings(home=hermes_home(), config_file=None, socket=Path("/nonexistent/berth.sock"),
                              user_sandbox=True, backend="docker")
    return Profiles(settings, server, provider_api=False)


def session_of(user: str, platform: str = "telegram", profile: str = "") -> dict:
    """A direct message's session, as Hermes' gateway sets it; a multiplexed profile's key begins
    ``agent:<profile>`` (gateway/session.py:884-901 at 3ef6bbd) and the profile is bound with it."""
    namespace = "main" if profile in ("", "default") else profile
    key = f"agent:{namespace}:{platform}:dm:{user}"
    session = {"platform": platform, "user_id": user, "chat_id": user, "session_key": key}
    return {**session, "profile": profile} if profile else session


@pytest.fixture
def make_gateway(engine: Engine, berth_cli: Path, node: str) -> Iterator[Any]:
    """Builds gateways: ``make_gateway(terminal={...}, environment={...}, hermes="0.19.0", install="directory")``;
    ``config`` adds top-level sections of Hermes' config.yaml."""
    made: list[tuple[Gateway, Path]] = []

    def make(
        terminal: dict | None = None,
        *,
        environment: dict | None = None,
        hermes: str = "0.19.0",
        install: str = "directory",
        cli_mode: bool = False,
        enabled: list | None = None,
        drop: tuple = (),
        raw_config: str | None = None,
        long_home: bool = False,
        config: dict | None = None,
    ) -> Gateway:
        # Short, unless asked otherwise: the socket lives below it, and a Unix socket's path holds
        # 107 bytes (the bridge and berth serve reach a longer one through its folder's descriptor).
        root = Path(tempfile.mkdtemp(prefix="bh-", dir="/tmp"))
        home = root / ("h" * 120 if long_home else "") / "home"
        home.mkdir(parents=True)
        section = {"backend": "docker", "docker_image": IMAGE, "sandbox_dir": os.fspath(home / "sandboxes"),
                   "lifetime_seconds": 120, "docker_network_pool": NETWORK_POOL}
        section.update(terminal or {})
        plugins = {"enabled": ["berth"] if enabled is None else enabled}
        whole = {"plugins": plugins, "terminal": section, **(config or {})}
        (home / "config.yaml").write_text(
            raw_config if raw_config is not None else json.dumps(whole, indent=2), encoding="utf-8"
        )
        env = {
            key: value for key, value in os.environ.items() if not key.startswith(("HERMES_", "TERMINAL_", "BERTH_"))
        }
        env.update({"HERMES_HOME": os.fspath(home), "BERTH_CLI": os.fspath(berth_cli), "BERTH_NODE": node,
                    "PYTHONUNBUFFERED": "1"})
        if install == "directory":
            shutil.copytree(
                PACKAGE_ROOT / "berth_hermes", home / "plugins" / "berth", ignore=shutil.ignore_patterns("__pycache__")
            )
        elif install == "entrypoint":
            site = root / "site"
            site.mkdir()
            install_with_pip(site)
            env["PYTHONPATH"] = os.fspath(site)
        env.update(environment or {})
        for key in drop:
            env.pop(key, None)
        driver = ["--hermes", hermes] + (["--cli"] if cli_mode else [])
        argv = [sys.executable, os.fspath(HERE / "gateway_driver.py"), *driver]
        log = root / "gateway.log"
        if PYTHON_ROOT:
            # The gateway under Python 3.14 (python_root.py): its launch profile's server from the host.
            start_host_server(home, env, root / "berth-serve.log")
            argv = gateway_argv(env, driver)
        with log.open("w") as log_file:
            process = subprocess.Popen(
                argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log_file, text=True, env=env, cwd=root
            )
        gateway = Gateway(home, process, log)
        gateway.environment = env
        if PYTHON_ROOT:
            assert gateway.send({"op": "python_version"}) == "3.14", gateway.log_text()
        made.append((gateway, root))
        return gateway

    yield make
    for gateway, root in made:
        gateway.stop()
        # The launch profile's berth serve, and each routed profile's (make_profile).
        sockets = [gateway.socket, *(home / "run" / "berth.sock" for home in (gateway.home / "profiles").glob("*"))]
        if PYTHON_ROOT:  # the tests' own servers (python_root.py) do not go with the gateway: stopped as Berth is
            for pid in (pid for path in sockets for pid in berth_serve_processes(path)):
                os.kill(pid, signal.SIGTERM)
        wait_until(lambda: not any(berth_serve_processes(path) for path in sockets), timeout=15)
        for pid in (pid for path in sockets for pid in berth_serve_processes(path)):
            os.kill(pid, signal.SIGKILL)
        engine.remove_under(root)
        for profile_root in (gateway.home / "profiles").glob("*/sandboxes/docker"):
            remove_egress_tables(node, RUNTIME, profile_root, last=False)
        remove_egress_tables(node, RUNTIME, gateway.sandbox_dir / "docker", last=gateway is made[-1][0])
        unmount_under(root)
        shutil.rmtree(root, ignore_errors=True)


def install_with_pip(site: Path) -> None:
    """``pip install`` of this folder into ``site``, with no package index (the build backend is in-tree)."""
    run = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-index", "--no-deps", "--disable-pip-version-check", "--quiet",
         "--target", os.fspath(site), os.fspath(PACKAGE_ROOT)],
        capture_output=True, text=True, check=False,
    )
    if "No module named pip" in run.stderr:
        pytest.fail(
            "pip is missing; install it with: apt-get install python3-pip (integrations/hermes/scripts/test.sh does)",
            pytrace=False,
        )
    assert run.returncode == 0, run.stderr


# -- which tests need the engine or Berth's build ----------------------------------------------

# Every test that uses one of these fixtures, directly or through another fixture, is marked
# ``engine``: scripts/check.sh runs the others (``-m "not engine"``) under each Python, in phase 1.
NEEDS_ENGINE_OR_BUILD = frozenset({"engine", "berth_cli", "node"})


def pytest_configure(config: Any) -> None:
    config.addinivalue_line("markers", "engine: needs the Docker engine or Berth's build (set by conftest.py)")


def pytest_collection_modifyitems(items: list[Any]) -> None:
    for item in items:
        if NEEDS_ENGINE_OR_BUILD & set(item.fixturenames):
            item.add_marker(pytest.mark.engine)


# -- the repository's test summary (scripts/summarize-tests.mjs reads vitest-shaped JSON) -------

_outcomes: dict[str, str] = {}


def pytest_runtest_logreport(report: Any) -> None:
    if report.when == "call" or report.outcome != "passed":
        previous = _outcomes.get(report.nodeid)
        if previous != "failed":
            _outcomes[report.nodeid] = (
                "failed" if report.outcome == "failed" else ("pending" if report.outcome == "skipped" else "passed")
            )


def pytest_sessionfinish(session: Any, exitstatus: int) -> None:
    folder = os.environ.get("BERTH_TEST_RESULTS")
    if not folder:
        return
    statuses = list(_outcomes.values())
    report = {
        "numPassedTests": statuses.count("passed"),
        "numFailedTests": statuses.count("failed"),
        "numPendingTests": statuses.count("pending"),
        "testResults": [{
            "name": "integrations/hermes" + (" (python 3.14)" if PYTHON_ROOT else ""),
            "status": "failed" if "failed" in statuses else "passed",
            "assertionResults": [{"fullName": node, "status": status} for node, status in _outcomes.items()],
        }],
    }
    Path(folder).mkdir(parents=True, exist_ok=True)
    name = os.environ.get("BERTH_TEST_REPORT", "hermes-bridge")
    (Path(folder) / f"{name}.json").write_text(json.dumps(report, indent=2), encoding="utf-8")
