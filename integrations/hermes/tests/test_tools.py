"""Hermes' other tools through Berth: file tools, background processes, execute_code; timeouts, /stop, cleanup()."""

from __future__ import annotations

import time

from conftest import session_of, unique_user


def test_file_tools_write_and_read_in_the_users_own_sandbox(make_gateway):
    gateway = make_gateway()
    a, b = unique_user(), unique_user()
    content = "line one\nline two with 'quotes' and $dollars\n"
    written = gateway.send(
        {"op": "call", "tool": "write_file", "path": "notes/todo.txt", "content": content, "session": session_of(a)}
    )
    assert written == {"bytes_written": len(content)}
    # Relative paths resolve in /workspace, where Berth's sessions start; ~ is the sandbox's /root.
    assert (
        gateway.sandbox_dir / "docker" / f"telegram@{a}" / "workspace" / "notes" / "todo.txt"
    ).read_text() == content
    home = gateway.send(
        {"op": "call", "tool": "write_file", "path": "~/.profile-note", "content": "h", "session": session_of(a)}
    )
    assert home == {"bytes_written": 1}
    assert (gateway.sandbox_dir / "docker" / f"telegram@{a}" / "home" / ".profile-note").read_text() == "h"
    assert gateway.send(
        {"op": "call", "tool": "read_file", "path": "notes/todo.txt", "session": session_of(a)}
    ) == {"content": content}
    other = gateway.send({"op": "call", "tool": "read_file", "path": "notes/todo.txt", "session": session_of(b)})
    assert "error" in other and "line one" not in str(other)


def test_a_background_process_runs_and_is_polled_in_the_sandbox_of_the_user_who_started_it(make_gateway, engine):
    gateway = make_gateway()
    a = unique_user()
    gateway.terminal("echo A-owns-this > /workspace/owner", session=session_of(a))
    # The job lingers after its output: Hermes reads a job's log before it asks whether the job is
    # alive and never after, so output written in between is lost (stand_in/…/process_registry.py).
    started = gateway.terminal("sleep 1; echo bg-done; cat /workspace/owner; sleep 3", background=True,
                               session=session_of(a))
    assert started["exit_code"] == 0, started
    # Hermes polls from a thread without the message's session; the bridge pinned the job to it.
    finished = gateway.send(
        {"op": "call", "tool": "background_wait", "session_id": started["session_id"], "timeout": 30}
    )
    assert finished["status"] == "exited", finished
    assert finished["output"].splitlines() == ["bg-done", "A-owns-this"], finished
    assert finished["exit_code"] == 0, finished
    kinds = {
        (c["Labels"].get("dev.berth.kind"), c["Labels"].get("dev.berth.user"))
        for c in engine.containers_under(gateway.home)
    }
    assert kinds == {("user", a)}, "a poll ran outside the user's sandbox"


def test_execute_code_writes_and_runs_its_script_in_the_users_sandbox(make_gateway):
    gateway = make_gateway()
    a = unique_user()
    gateway.terminal("echo from-A > /workspace/who", session=session_of(a))
    result = gateway.send(
        {"op": "call", "tool": "execute_code", "code": "cat /workspace/who\n", "interpreter": "sh",
         "session": session_of(a)}
    )
    assert result["status"] == "success", result
    assert result["output"].strip() == "from-A"
    script = result["script"].removeprefix("/workspace/")
    assert (
        gateway.sandbox_dir / "docker" / f"telegram@{a}" / "workspace" / script
    ).read_text() == "cat /workspace/who\n"


def test_a_timeout_kills_the_command_with_exit_124_and_leaves_the_session_usable(make_gateway):
    gateway = make_gateway()
    a = unique_user()
    started = time.monotonic()
    result = gateway.terminal("echo before; sleep 30; echo after", timeout=1, session=session_of(a))
    assert time.monotonic() - started < 15
    assert result["exit_code"] == 124
    lines = result["output"].splitlines()
    assert lines[0] == "before" and lines[-1] == "[Command timed out after 1s]" and "after" not in lines
    assert gateway.terminal("echo still-here", session=session_of(a))["output"] == "still-here"


def test_hermes_interrupt_returns_control_at_once(make_gateway):
    gateway = make_gateway()
    a = unique_user()
    gateway.terminal("true", session=session_of(a))
    started = time.monotonic()
    result = gateway.send(
        {"op": "interrupt_during", "after": 0.5, "tool": "terminal", "command": "sleep 20", "timeout": 25,
         "session": session_of(a)}
    )
    assert time.monotonic() - started < 10
    assert result["exit_code"] == 130 and "[Command interrupted]" in result["output"]


def test_exit_codes_and_stderr_come_back_as_a_terminal_shows_them(make_gateway):
    gateway = make_gateway()
    result = gateway.terminal("echo out; echo err >&2; exit 3", session=session_of(unique_user()))
    assert result["exit_code"] == 3
    assert result["output"].splitlines() == ["out", "err"]


def test_cleanup_releases_the_handle_and_never_deletes_a_sandbox(make_gateway, engine):
    gateway = make_gateway({"container_persistent": False})
    a = unique_user()
    gateway.terminal("echo keep > /workspace/keep.txt", session=session_of(a))
    [before] = engine.containers_under(gateway.home)
    assert gateway.send({"op": "cleanup_all"}) == {"cleaned": 1}
    [after] = engine.containers_under(gateway.home)
    assert after["Id"] == before["Id"]
    assert (gateway.sandbox_dir / "docker" / f"telegram@{a}" / "workspace" / "keep.txt").read_text() == "keep\n"
    # A new handle reaches the same sandbox and files.
    assert gateway.terminal("cat /workspace/keep.txt", session=session_of(a))["output"] == "keep"
