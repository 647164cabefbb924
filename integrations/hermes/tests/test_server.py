"""The gateway's one `berth serve`: started, restarted, stopped with the gateway; and its errors, one line each."""

from __future__ import annotations

import json
import shutil
import os
import signal
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from conftest import CLI, berth_serve_processes, session_of, unique_user, wait_until

# Hermes 0.19.0's own terminal: section, every key as its default config has it.
HERMES_0_19_0_TERMINAL = {
    "modal_mode": "auto", "cwd": ".", "timeout": 180, "lifetime_seconds": 300, "env_passthrough": [],
    "shell_init_files": [], "auto_source_bashrc": True, "docker_forward_env": [], "docker_env": {},
    "singularity_image": "docker://nikolaik/python-nodejs:python3.11-nodejs20",
    "modal_image": "nikolaik/python-nodejs:python3.11-nodejs20",
    "daytona_image": "nikolaik/python-nodejs:python3.11-nodejs20",
    "container_cpu": 1, "container_memory": 5120, "container_disk": 51200, "container_persistent": True,
    "docker_volumes": [], "docker_mount_cwd_to_workspace": False, "docker_extra_args": [],
    "docker_run_as_host_user": False, "docker_network": True, "docker_persist_across_processes": True,
    "docker_orphan_reaper": True, "persistent_shell": True, "daemon_term_grace_seconds": 2.0, "home_mode": "auto",
    "ssh_host": None, "ssh_user": None, "ssh_port": 22, "ssh_key": None,
}


def refuses(path: Path) -> bool:
    probe = socket.socket(socket.AF_UNIX)
    try:
        probe.connect(os.fspath(path))
        return False
    except ConnectionRefusedError:
        return True
    finally:
        probe.close()


def assert_one_line_error(result: dict, *needles: str) -> str:
    error = result["error"]
    assert result["exit_code"] == -1 and isinstance(error, str), result
    assert "\n" not in error and "Traceback" not in error, error
    for needle in needles:
        assert needle in error, error
    return error


def test_a_real_hermes_0_19_0_config_works_and_the_ignored_keys_are_named_once(make_gateway):
    gateway = make_gateway(HERMES_0_19_0_TERMINAL)
    result = gateway.terminal("echo fine", session=session_of(unique_user()))
    assert result["output"] == "fine", result
    warnings = [line for line in gateway.log_text().splitlines() if "berth: ignoring" in line]
    assert len(warnings) == 1 and warnings[0].startswith("WARNING")
    for key in ("docker_orphan_reaper", "modal_mode", "daemon_term_grace_seconds", "home_mode", "shell_init_files",
                "auto_source_bashrc", "docker_run_as_host_user", "docker_extra_args",
                "docker_persist_across_processes"):
        assert f"terminal.{key}" in warnings[0]


def test_a_key_neither_hermes_nor_berth_knows_reaches_the_agent_as_one_line(make_gateway):
    gateway = make_gateway({"docker_imagee": "busybox"})
    result = gateway.terminal("echo never", session=session_of(unique_user()))
    assert_one_line_error(
        result, "Failed to execute command: berth: unknown key terminal.docker_imagee",
        "remove it or check its spelling",
    )


def test_missing_node_gives_the_line_that_says_how_to_install_it(make_gateway):
    gateway = make_gateway(environment={"PATH": "/nonexistent"}, drop=("BERTH_NODE",))
    result = gateway.terminal("echo never", session=session_of(unique_user()))
    assert_one_line_error(
        result, "Terminal tool disabled: environment creation failed (berth: Node.js is not installed",
        "npm install -g @berth/gateway-plugin",
    )
    assert "Node.js is not installed" in gateway.log_text()  # said once at start-up too


def test_missing_berth_gives_the_line_that_says_how_to_install_it(make_gateway, node):
    gateway = make_gateway(environment={"PATH": os.path.dirname(node)}, drop=("BERTH_CLI",))
    result = gateway.terminal("echo never", session=session_of(unique_user()))
    assert_one_line_error(result, "berth: Berth is not installed", "npm install -g @berth/gateway-plugin")


def test_one_berth_serve_per_gateway_started_on_the_first_command_and_stopped_with_the_gateway(make_gateway):
    gateway = make_gateway()
    assert not berth_serve_processes(gateway.socket), "started before it was needed"
    users = [unique_user() for _ in range(4)]
    results = gateway.send({
        "op": "concurrent",
        "calls": [{"tool": "terminal", "command": "echo up", "session": session_of(u)} for u in users],
    })
    assert [r["output"] for r in results] == ["up"] * 4
    [pid] = berth_serve_processes(gateway.socket)
    assert gateway.state()["server"]["pid"] == pid
    # Its environment is the gateway's (HERMES_HOME, credentials), without any session variable.
    entries = (item.partition(b"=") for item in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0"))
    environment = {name: value for name, equals, value in entries if equals}
    assert environment[b"HERMES_HOME"] == os.fsencode(gateway.home)
    assert not [name for name in environment if name.startswith(b"HERMES_SESSION_")]
    assert gateway.stop() == 0
    assert wait_until(lambda: not berth_serve_processes(gateway.socket))
    assert not gateway.socket.exists()


def test_a_berth_serve_that_dies_is_started_again_and_the_users_files_are_intact(make_gateway):
    gateway = make_gateway()
    a = unique_user()
    gateway.terminal("echo survives > /workspace/f", session=session_of(a))
    first = gateway.state()["server"]["pid"]
    os.kill(first, signal.SIGKILL)
    # Gone for good: a dying process's cmdline empties before its socket closes.
    assert wait_until(lambda: refuses(gateway.socket))
    result = gateway.terminal("cat /workspace/f", session=session_of(a))
    assert result["output"] == "survives", result
    second = gateway.state()["server"]["pid"]
    assert second not in (None, first)
    assert "berth serve exited" in gateway.log_text()


def test_a_gateway_killed_with_sigkill_takes_its_berth_serve_with_it(make_gateway):
    gateway = make_gateway()
    gateway.terminal("true", session=session_of(unique_user()))
    [pid] = berth_serve_processes(gateway.socket)
    gateway.kill()
    assert wait_until(lambda: not berth_serve_processes(gateway.socket), timeout=20), "berth serve outlived its gateway"
    assert not gateway.socket.exists()


def test_a_berth_serve_already_listening_is_used_and_left_running(make_gateway, node):
    gateway = make_gateway()
    config = gateway.home / "config.yaml"
    operator = subprocess.Popen(
        [node, os.fspath(CLI), "serve", "--socket", os.fspath(gateway.socket), "--config", os.fspath(config)],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env={**os.environ, "HERMES_HOME": os.fspath(gateway.home)},
    )
    try:
        assert operator.stdout is not None and "listening" in operator.stdout.readline().decode()
        assert gateway.terminal("echo via-operator", session=session_of(unique_user()))["output"] == "via-operator"
        assert gateway.state()["server"]["pid"] is None, "the bridge started its own"
        assert berth_serve_processes(gateway.socket) == [operator.pid]
        gateway.stop()
        assert operator.poll() is None, "the bridge stopped a server it did not start"
    finally:
        operator.send_signal(signal.SIGTERM)
        operator.wait(timeout=15)


def test_a_socket_owned_by_another_user_is_refused(make_gateway):
    if os.geteuid() != 0:
        pytest.fail(
            "this case plants a socket as another user; run the suite as root (scripts/test.sh does)", pytrace=False
        )
    folder = Path(tempfile.mkdtemp(prefix="bh-planted-", dir="/tmp"))
    os.chmod(folder, 0o777)
    planted = folder / "planted.sock"
    gateway = make_gateway(environment={"BERTH_SOCKET": os.fspath(planted)})
    planter = (
        "import socket,sys,time; s=socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); s.listen(); "
        "print('up', flush=True); time.sleep(60)"
    )
    stand_in = subprocess.Popen(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", sys.executable, "-c",
                                 planter, os.fspath(planted)], stdout=subprocess.PIPE)
    try:
        assert stand_in.stdout is not None and stand_in.stdout.readline().strip() == b"up"
        result = gateway.terminal("echo never", session=session_of(unique_user()))
        assert_one_line_error(result, "belongs to uid 65534", "BERTH_SOCKET")
    finally:
        stand_in.kill()
        stand_in.wait()
        shutil.rmtree(folder, ignore_errors=True)


def test_the_gateway_log_carries_berth_serve_lines_but_no_secret(make_gateway):
    token = "ghp_" + "z9" * 18
    a = unique_user()
    gateway = make_gateway(
        environment={f"HERMES_USER_TELEGRAM_{a}_GITHUB_TOKEN": token, "TEAM_KEY": "team-secret-value-123"},
        terminal={"docker_forward_env": ["TEAM_KEY"]},
    )
    result = gateway.terminal("echo $GITHUB_TOKEN $TEAM_KEY; exit 7", session=session_of(a))
    assert result["output"] == "*** ***" and result["exit_code"] == 7
    log = gateway.log_text()
    assert "berth serve: listening on" in log
    assert token not in log and "team-secret-value-123" not in log
    assert json.dumps(token) not in log
