"""Fixtures: the real Docker engine, Berth's built CLI, and stand-in Hermes gateways that use the bridge.

The tests need the engine and Berth's build; without them they fail with how to get them,
never skip.
"""

from __future__ import annotations

import http.client
import ipaddress
import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Iterator
from urllib.parse import quote

import pytest

HERE = Path(__file__).resolve().parent
PACKAGE_ROOT = HERE.parent
REPOSITORY = PACKAGE_ROOT.parents[1]
CLI = REPOSITORY / "apps" / "gateway-plugin" / "dist" / "cli.js"
IMAGE = os.environ.get("BERTH_BASE_IMAGE", "localhost/berth-busybox:latest")
LABEL_WORKSPACE = "dev.berth.workspace"
# This run's own docker_network_pool, so the pool's egress table is this run's (another test run on
# the machine, of this or an earlier release, keeps its own); removed after the last test, unless a
# sandbox network of the pool is still on the host: the attack suite picks its pools from the same
# 384 /20s, beside this one.
NETWORK_POOL = f"10.{224 + secrets.randbelow(24)}.{16 * secrets.randbelow(16)}.0/20"
RUNTIME = REPOSITORY / "packages" / "sandbox-runtime" / "dist" / "index.js"


class Engine:
    """The Docker Engine API over its Unix socket, standard library only."""

    def __init__(self, path: str) -> None:
        self.path = path

    def request(self, method: str, url: str) -> tuple[int, Any]:
        class Connection(http.client.HTTPConnection):
            def connect(inner) -> None:  # noqa: N805 - `self` here is the Engine
                inner.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                inner.sock.settimeout(30)
                inner.sock.connect(self.path)

        connection = Connection("localhost")
        try:
            connection.request(method, url)
            response = connection.getresponse()
            body = response.read()
        finally:
            connection.close()
        try:
            return response.status, json.loads(body) if body else None
        except ValueError:
            return response.status, body.decode("utf-8", "replace")

    def containers_under(self, folder: Path) -> list[dict]:
        """Berth's containers whose workspace lies under ``folder`` (this test's own sandbox root)."""
        filters = quote(json.dumps({"label": ["dev.berth.managed-by=berth"]}))
        status, containers = self.request("GET", f"/containers/json?all=1&filters={filters}")
        assert status == 200, containers
        return [c for c in containers if str(c["Labels"].get(LABEL_WORKSPACE, "")).startswith(os.fspath(folder) + "/")]

    def remove_under(self, folder: Path) -> None:
        for container in self.containers_under(folder):
            self.request("DELETE", f"/containers/{container['Id']}?force=1&v=1")


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


class Gateway:
    """One stand-in Hermes gateway process with the bridge loaded."""

    def __init__(self, home: Path, process: subprocess.Popen[str], log: Path) -> None:
        self.home = home
        self.process = process
        self.log = log
        self.ready = json.loads(self._read_line())

    @property
    def socket(self) -> Path:
        return self.home / "run" / "berth.sock"

    @property
    def sandbox_dir(self) -> Path:
        return self.home / "sandboxes"

    def _read_line(self) -> str:
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line:
            raise AssertionError(f"the gateway exited ({self.process.poll()}); its log:\n{self.log_text()}")
        return line

    def send(self, action: dict) -> Any:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(action) + "\n")
        self.process.stdin.flush()
        answer = json.loads(self._read_line())
        if "error" in answer:
            raise AssertionError(f"driver error: {answer['error']}")
        return answer["ok"]

    def terminal(self, command: str, session: dict | None = None, **options: Any) -> dict:
        return self.send({"op": "call", "tool": "terminal", "command": command, "session": session, **options})

    def state(self) -> dict:
        return self.send({"op": "state"})

    def log_text(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace") if self.log.exists() else ""

    def stop(self) -> int:
        if self.process.poll() is None:
            try:
                self.send_exit()
                self.process.wait(timeout=20)
            except Exception:
                self.process.kill()
                self.process.wait()
        return self.process.returncode

    def send_exit(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps({"op": "exit"}) + "\n")
        self.process.stdin.flush()
        self.process.stdin.close()

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait()


def session_of(user: str, platform: str = "telegram") -> dict:
    """A direct message's session, as Hermes' gateway sets it."""
    return {"platform": platform, "user_id": user, "chat_id": user, "session_key": f"agent:main:{platform}:dm:{user}"}


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
        argv = [sys.executable, os.fspath(HERE / "gateway_driver.py"), "--hermes", hermes] + (
            ["--cli"] if cli_mode else []
        )
        log = root / "gateway.log"
        with log.open("w") as log_file:
            process = subprocess.Popen(
                argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log_file, text=True, env=env, cwd=root
            )
        gateway = Gateway(home, process, log)
        made.append((gateway, root))
        return gateway

    yield make
    for gateway, root in made:
        gateway.stop()
        wait_until(lambda: not berth_serve_processes(gateway.socket), timeout=15)
        for pid in berth_serve_processes(gateway.socket):
            os.kill(pid, signal.SIGKILL)
        engine.remove_under(root)
        remove_egress_tables(node, gateway.sandbox_dir / "docker", last=gateway is made[-1][0])
        unmount_under(root)
        shutil.rmtree(root, ignore_errors=True)


def remove_egress_tables(node: str, sandbox_root: Path, last: bool) -> None:
    """Removes the nftables tables a test's gateway made: its installation's and, with the test's last
    gateway, the pool's.

    Their names come from Berth's own functions (``@berth/sandbox-runtime``), not a copy of them.
    """
    if not (sandbox_root / ".berth-installation-key").is_file():
        return  # no sandbox was ever named here: no table either
    script = (
        f"import({json.dumps(RUNTIME.as_uri())}).then((m) => console.log(m.installationTableName(m.installationTag("
        f"{{ sandboxRoot: {json.dumps(os.fspath(sandbox_root))}, pool: {json.dumps(NETWORK_POOL)} }})), "
        f"m.egressTableName({json.dumps(NETWORK_POOL)})))"
    )
    names = subprocess.run(
        [node, "--input-type=module", "-e", script], capture_output=True, text=True, check=False
    ).stdout.split()
    for table in names[: 2 if last and not pool_in_use(NETWORK_POOL) else 1]:
        subprocess.run(["nft", "delete", "table", "inet", table], capture_output=True, check=False)


def pool_in_use(pool: str) -> bool:
    """Whether a host interface has an IPv4 address inside ``pool``: a sandbox network of it exists, whoever made it."""
    network = ipaddress.ip_network(pool)
    listing = subprocess.run(["ip", "-o", "-4", "addr", "show"], capture_output=True, text=True, check=False).stdout
    addresses = (field.split("/")[0] for line in listing.splitlines() for field in line.split()[3:4])
    return any(ipaddress.ip_address(address) in network for address in addresses)


def unmount_under(root: Path) -> None:
    """Unmounts what Berth mounted under a test's root (each user's disk), innermost first, so it can be deleted."""
    prefix = os.fspath(root) + os.sep
    try:
        with open("/proc/self/mountinfo", encoding="utf-8") as mountinfo:
            points = [line.split(" ")[4] for line in mountinfo if len(line.split(" ")) > 4]
    except OSError:
        return
    points = [re.sub(r"\\([0-7]{3})", lambda match: chr(int(match.group(1), 8)), point) for point in points]
    for point in sorted((point for point in points if point.startswith(prefix)), key=len, reverse=True):
        subprocess.run(["umount", "--lazy", point], capture_output=True, check=False)


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
            "name": "integrations/hermes", "status": "failed" if "failed" in statuses else "passed",
            "assertionResults": [{"fullName": node, "status": status} for node, status in _outcomes.items()],
        }],
    }
    Path(folder).mkdir(parents=True, exist_ok=True)
    (Path(folder) / "hermes-bridge.json").write_text(json.dumps(report, indent=2), encoding="utf-8")
