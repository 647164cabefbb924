"""Profiles of one multiplexing gateway, each with its own home, config, secrets and policy, on the real engine.

Upstream 0.21 binds a routed profile's turn to its home (``set_hermes_home_override``, which
``get_hermes_home()`` reads first, hermes_constants.py at 0006718), its ``.env`` as the secret scope
and its terminal policy (tools/terminal_scope.py at 0006718); the terminal tool then reads the
backend from that policy and keys the profile's environments apart (tools/terminal_tool.py at
027fc66). The stand-in's driver binds the same three (``gateway_driver._bind_profile_home``).
"""

from __future__ import annotations

import base64
import os
from pathlib import Path
from typing import Any

from conftest import berth_serve_processes, make_profile, session_of, unique_user
from docker_engine import LABEL_WORKSPACE
from python_root import PYTHON_ROOT

MB = 1024 * 1024


def _in(home: Path, user: str, profile: str) -> dict[str, str]:
    return {**session_of(user, profile=profile), "profile_home": os.fspath(home)}


def _memory_of(engine: Any, container: dict[str, Any]) -> int:
    status, inspected = engine.request("GET", f"/containers/{container['Id']}/json")
    assert status == 200, inspected
    return int(inspected["HostConfig"]["Memory"])


def _gateway(make_gateway: Any) -> Any:
    gateway = make_gateway({"backend": "berth_docker"}, hermes="0.21")
    assert gateway.send({"op": "multiplex"}) is True
    return gateway


def test_two_profiles_times_two_users_each_with_its_profiles_config_secrets_and_server(
    make_gateway: Any, engine: Any
) -> None:
    gateway = _gateway(make_gateway)
    a, b = unique_user(), unique_user()
    limits = {"work": 256, "home": 384}
    homes = {
        profile: make_profile(gateway, profile, {"container_memory": limits[profile]}, dotenv={
            f"HERMES_USER_TELEGRAM_{a}_TOKEN": f"{profile}-token-a", f"HERMES_USER_TELEGRAM_{b}_TOKEN": f"{profile}-tb",
        })
        for profile in limits
    }
    cases = [(profile, user) for profile in limits for user in (a, b)]
    who = 'echo "{who}" > /workspace/who.txt; ls /workspace; echo "${{#TOKEN}}"'
    results = gateway.send({"op": "concurrent", "calls": [
        {"tool": "terminal", "command": who.format(who=f"{profile}/{user}"),
         "session": _in(homes[profile], user, profile)}
        for profile, user in cases
    ]})
    for (profile, user), result in zip(cases, results):
        assert result["exit_code"] == 0, result
        # Only its own file, and its own profile's token for that user (lengths: values are masked).
        token = f"{profile}-token-a" if user == a else f"{profile}-tb"
        assert result["output"].splitlines() == ["who.txt", str(len(token))], result
    containers = engine.containers_under(gateway.home)
    assert len(containers) == 4
    for container in containers:
        profile = container["Labels"].get("dev.berth.profile")
        # Made by the profile's own berth serve, from its own config.yaml: its sandbox folder, its limit.
        assert container["Labels"][LABEL_WORKSPACE].startswith(os.fspath(homes[profile] / "sandboxes") + "/"), container
        assert _memory_of(engine, container) == limits[profile] * MB, container
    for profile, home in homes.items():
        assert len(berth_serve_processes(home / "run" / "berth.sock")) == 1, profile
    # The launch profile served no turn here: its berth serve was never started (under Python 3.14 the
    # tests start every server on the host beforehand: python_root.py).
    assert PYTHON_ROOT or berth_serve_processes(gateway.socket) == []


def test_a_session_naming_another_profile_than_the_turns_home_is_refused(make_gateway: Any, engine: Any) -> None:
    gateway = _gateway(make_gateway)
    work = make_profile(gateway, "work")
    user = unique_user()
    result = gateway.terminal("echo ran", session=_in(work, user, "home"))
    assert result["exit_code"] != 0 and "ran" not in result["output"].splitlines(), result
    assert "runs in profile work's home but its session names profile home" in result["error"], result
    assert engine.containers_under(gateway.home) == []


def test_a_profile_without_berth_keeps_hermes_own_backend_and_files(make_gateway: Any, engine: Any) -> None:
    gateway = _gateway(make_gateway)
    plain = make_profile(gateway, "plain", {"backend": "local"})
    work = make_profile(gateway, "work")
    user = unique_user()
    ran = gateway.terminal("echo $$ > /dev/null; echo plain-ran; test -d /workspace && echo sandboxed || echo host",
                           session=_in(plain, user, "plain"))
    assert ran["exit_code"] == 0 and ran["output"].splitlines()[-2:] == ["plain-ran", "host"], ran
    document = base64.b64encode(b"plain notes\n").decode()
    told = gateway.send({"op": "message", "user": user, "profile": "plain", "profile_home": os.fspath(plain),
                         "attachment": {"kind": "document", "data": document, "name": "notes.txt",
                                        "mime": "text/plain"},
                         "agent": {"commands": []}})
    # Hermes' own text: the path its cache gave, not a sandbox's.
    assert told["told"] and not told["told"].startswith("/workspace/"), told
    assert engine.containers_under(gateway.home) == []
    assert berth_serve_processes(plain / "run" / "berth.sock") == []
    # The same person in a profile that uses Berth: a sandbox of work's, nothing of plain's in it.
    there = gateway.terminal("ls /workspace/attachments 2>&1 || echo none", session=_in(work, user, "work"))
    assert there["output"].splitlines()[-1] == "none", there
    assert len(engine.containers_under(work)) == 1


def test_an_attachment_reaches_the_senders_sandbox_in_the_messages_profile_only(make_gateway: Any, engine: Any) -> None:
    gateway = _gateway(make_gateway)
    homes = {profile: make_profile(gateway, profile) for profile in ("work", "home")}
    user = unique_user()
    document = base64.b64encode(b"work only\n").decode()
    message = gateway.send({
        "op": "message", "user": user, "profile": "work", "profile_home": os.fspath(homes["work"]),
        "attachment": {"kind": "document", "data": document, "name": "notes.txt", "mime": "text/plain"},
        "agent": {"commands": ["cat {told}"]},
    })
    assert message["told"].startswith("/workspace/attachments/"), message
    assert message["results"][0]["output"] == "work only", message
    other = gateway.terminal("find / -name '*notes.txt' 2>/dev/null | grep -v ^/proc || echo none",
                             session=_in(homes["home"], user, "home"))
    assert other["output"].splitlines() == ["none"], other
    owners = {c["Labels"].get("dev.berth.profile") for c in engine.containers_under(gateway.home)}
    assert owners == {"work", "home"}


def test_a_cron_jobs_fires_run_in_its_own_sandbox_of_its_own_profile(make_gateway: Any, engine: Any) -> None:
    """The same job id in two profiles is two sandboxes, each made by its profile's own berth serve."""
    gateway = _gateway(make_gateway)
    homes = {profile: make_profile(gateway, profile) for profile in ("work", "home")}

    def fire(profile: str, command: str, execution: str) -> Any:
        return gateway.send({"op": "cron_fire", "job_id": "job-7", "profile": profile, "command": command,
                             "profile_home": os.fspath(homes[profile]), "execution_id": execution})

    assert fire("work", "echo work > /workspace/mark; cat /workspace/mark", "e1")["output"] == "work"
    # A later fire of the same job (a new execution id, a new task id upstream) finds its files.
    assert fire("work", "cat /workspace/mark", "e2")["output"] == "work"
    assert fire("home", "cat /workspace/mark 2>&1 || echo none", "e3")["output"].splitlines()[-1] == "none"
    containers = engine.containers_under(gateway.home)
    assert len(containers) == 2
    for container in containers:
        profile = container["Labels"].get("dev.berth.profile")
        assert container["Labels"][LABEL_WORKSPACE].startswith(os.fspath(homes[profile] / "sandboxes") + "/")
        assert container["Labels"].get("dev.berth.user") is None, container
