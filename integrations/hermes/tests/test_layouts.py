"""Which environment Hermes gets: Berth's per-user one, the task layout, or Hermes' own untouched."""

from __future__ import annotations

import secrets

from conftest import berth_serve_processes, session_of, unique_user


def test_without_a_user_the_command_runs_in_the_task_layout_as_hermes_does_today(make_gateway, engine):
    # Hermes' CLI: no messaging user. Its terminal tool collapses every task id to "default" unless an
    # RL environment registered an image for the task (tools/terminal_tool.py:1175-1207), which then
    # gets a sandbox of its own: both keep the task layout.
    gateway = make_gateway(cli_mode=True)
    task = f"task-{secrets.token_hex(4)}"
    collapsed = gateway.terminal("echo default > /workspace/d.txt; echo ok", task_id=task)
    assert collapsed["output"] == "ok", collapsed
    assert (gateway.sandbox_dir / "docker" / "default" / "workspace" / "d.txt").read_text() == "default\n"
    assert gateway.send({"op": "register_task_env_overrides", "task_id": task, "overrides": {"docker_image": "x"}})
    result = gateway.terminal("echo legacy > /workspace/file.txt; echo home > /root/h.txt; pwd", task_id=task)
    assert result["exit_code"] == 0, result
    assert result["output"] == "/workspace"
    folder = gateway.sandbox_dir / "docker" / task
    assert (folder / "workspace" / "file.txt").read_text() == "legacy\n"
    assert (folder / "home" / "h.txt").read_text() == "home\n"
    labels = [c["Labels"] for c in engine.containers_under(gateway.home)]
    assert sorted((label.get("dev.berth.kind"), label.get("dev.berth.task")) for label in labels) == sorted(
        [("task", "default"), ("task", task)])


def test_docker_off_hermes_own_local_backend_runs_untouched_and_berth_starts_nothing(make_gateway, engine, tmp_path):
    gateway = make_gateway({"backend": "local"})
    marker = tmp_path / "ran-on-the-host"
    result = gateway.terminal(f"echo local > {marker}; echo ok", session=session_of(unique_user()))
    assert result == {"output": "ok", "exit_code": 0, "error": None}
    assert marker.read_text() == "local\n"
    state = gateway.state()
    assert state["environments"]["default"]["module"] == "tools.environments.local"
    assert state["server"]["pid"] is None
    assert not gateway.socket.exists() and not berth_serve_processes(gateway.socket)
    assert engine.containers_under(gateway.home) == []


def test_docker_user_sandbox_false_leaves_hermes_own_docker_backend_in_place(make_gateway, engine):
    gateway = make_gateway({"docker_user_sandbox": False})
    result = gateway.terminal("echo hi", session=session_of(unique_user()))
    assert result["output"] == "hermes-docker ran in the shared container of task default"
    state = gateway.state()
    assert state["create_environment_replaced"] is False
    assert state["environments"]["default"]["module"] == "tools.environments.docker"
    assert "docker_user_sandbox is false" in gateway.log_text()
    assert not gateway.socket.exists() and engine.containers_under(gateway.home) == []


def test_hermes_with_the_provider_api_gets_a_berth_docker_provider_and_nothing_replaced(make_gateway, engine):
    a, b = unique_user(), unique_user()
    gateway = make_gateway({"backend": "berth_docker"}, hermes="0.21")
    assert gateway.ready == {"ready": True, "loaded": ["berth"], "errors": {}}
    results = gateway.send({"op": "concurrent", "calls": [
        {"tool": "terminal", "command": "echo mine-A > /workspace/m; cat /workspace/m", "session": session_of(a)},
        {"tool": "terminal", "command": "cat /workspace/m 2>&1; echo B", "session": session_of(b)},
    ]})
    assert results[0]["output"] == "mine-A"
    assert "mine-A" not in results[1]["output"] and results[1]["output"].endswith("B")
    state = gateway.state()
    assert state["create_environment_replaced"] is False
    [provider] = state["providers"]
    assert provider.startswith("berth_docker:BerthDockerProvider:") and "TerminalEnvironmentProvider" in provider
    # Upstream's terminal tool keys a plugin backend's environments by session (tools/terminal_tool.py's
    # _resolve_container_task_id at 027fc66): one Berth handle per session key.
    keys = {f"session:{session_of(user)['session_key']}" for user in (a, b)}
    assert {key: env["class"] for key, env in state["environments"].items()} == dict.fromkeys(
        keys, "BerthDockerEnvironment")
    assert state["check_terminal_requirements"] is True
    assert {c["Labels"].get("dev.berth.user") for c in engine.containers_under(gateway.home)} == {a, b}


def test_a_plugin_that_is_not_enabled_changes_nothing(make_gateway):
    gateway = make_gateway(enabled=[])
    assert gateway.ready["loaded"] == []
    assert gateway.state()["create_environment_replaced"] is False


def test_each_hermes_says_in_one_line_which_backend_name_it_needs(make_gateway):
    newer = make_gateway({"backend": "docker"}, hermes="0.21")
    assert "set terminal.backend: berth_docker for one sandbox per messaging user" in newer.log_text()
    older = make_gateway({"backend": "berth_docker"})
    assert "does not know terminal.backend: berth_docker; set terminal.backend: docker" in older.log_text()
