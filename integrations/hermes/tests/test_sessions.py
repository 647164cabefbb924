"""Sessions without a user, through the bridge: cron jobs, chats without a key, stray ids, no session at all.

Hermes' ``get_session_env`` reads a message's ContextVar first and falls back to ``os.environ``
when it was never set; its cron scheduler puts a job's origin platform and chat (no user, no
key) into ``os.environ`` from a thread without ContextVars. The bridge forwards every field it
reads and Berth decides: a chat without a user gets that chat's own sandbox, a user id without a
platform is refused, and in the gateway a command that names nobody is refused. Nothing ever
runs in the one ``default`` sandbox that every such command would share.
"""

from __future__ import annotations

import secrets

from conftest import session_of, unique_user


def chat_id() -> str:
    """A Telegram group's id of this run only (groups are negative)."""
    return f"-100{secrets.randbelow(10**10):010d}"


def cron_job(chat: str, platform: str = "telegram") -> dict:
    return {
        "id": secrets.token_hex(4), "name": "nightly",
        "origin": {"platform": platform, "chat_id": chat, "chat_name": "a chat"},
    }


def folders(gateway) -> set[str]:
    root = gateway.sandbox_dir / "docker"
    return {entry.name for entry in root.iterdir() if entry.is_dir()} if root.exists() else set()


def test_cron_jobs_of_two_chats_and_a_chat_without_a_user_each_get_their_own_sandbox_never_default(
    make_gateway, engine
):
    gateway = make_gateway()
    chat_a, chat_b, group = unique_user(), unique_user(), chat_id()
    # User A's cron job (its origin is A's chat) writes a file, as the scheduler runs it.
    written = gateway.send({"op": "cron", "job": cron_job(chat_a), "tool": "terminal",
                            "command": "echo secret-of-A-cron > /workspace/a-cron.txt; echo ok"})
    assert written["output"] == "ok", written
    # User B's cron job, a group chat without a key, and user A's own messages look for it.
    attempts = {
        "B's cron job": gateway.send({"op": "cron", "job": cron_job(chat_b), "tool": "terminal",
                                      "command": "cat /workspace/a-cron.txt 2>&1; echo done"}),
        "a group chat without a key": gateway.terminal("cat /workspace/a-cron.txt 2>&1; echo done",
                                                       session={"platform": "telegram", "chat_id": group}),
        "the same group as tg": gateway.terminal("cat /workspace/a-cron.txt 2>&1; echo done",
                                                 session={"platform": "tg", "chat_id": group}),
    }
    for who, result in attempts.items():
        assert result["output"].splitlines()[-1] == "done", (who, result)
        assert "secret-of-A-cron" not in result["output"], who
    # A's cron job sees its own file again: one sandbox per chat, kept across jobs.
    again = gateway.send(
        {"op": "cron", "job": cron_job(chat_a), "tool": "terminal", "command": "cat /workspace/a-cron.txt"}
    )
    assert again["output"] == "secret-of-A-cron"
    # From outside: one sandbox per chat (the alias tg is the same chat), none of them "default".
    tasks = sorted(c["Labels"].get("dev.berth.task") for c in engine.containers_under(gateway.home))
    assert tasks == sorted([f"chat:telegram:{chat_a}", f"chat:telegram:{chat_b}", f"chat:telegram:{group}"])
    assert "default" not in folders(gateway)
    assert (
        gateway.sandbox_dir / "docker" / f"task~chat%3Atelegram%3A{chat_a}" / "workspace" / "a-cron.txt"
    ).read_text() == "secret-of-A-cron\n"


def test_a_message_during_a_cron_job_keeps_its_own_sandbox(make_gateway, engine):
    # The cron job's origin is in os.environ while the message runs: the message's ContextVars win.
    gateway = make_gateway()
    chat, b = unique_user(), unique_user()
    results = gateway.send({
        "op": "cron_during_message", "job": cron_job(chat), "session": session_of(b),
        "cron": {"tool": "terminal", "command": "sleep 1; echo cron > /workspace/who; cat /workspace/who"},
        "message": {"tool": "terminal", "command": "echo message > /workspace/who; sleep 1; cat /workspace/who"},
    })
    assert [result["output"] for result in results] == ["cron", "message"], results
    labels = {
        (c["Labels"].get("dev.berth.kind"), c["Labels"].get("dev.berth.user") or c["Labels"].get("dev.berth.task"))
        for c in engine.containers_under(gateway.home)
    }
    assert labels == {("task", f"chat:telegram:{chat}"), ("user", b)}


def test_a_user_id_without_a_platform_and_a_gateway_command_without_a_session_are_refused(make_gateway, engine):
    gateway = make_gateway()
    a = unique_user()
    assert gateway.terminal("echo A > /workspace/mine; echo ok", session=session_of(a))["output"] == "ok"
    only_user = gateway.terminal("cat /workspace/mine 2>&1; echo ran", session={"user_id": a})
    assert only_user["exit_code"] != 0 and "ran" not in only_user["output"], only_user
    assert "names a sender id but no platform" in (only_user["error"] or ""), only_user
    # No ContextVar set and nothing in os.environ: a command from a thread outside any message.
    nothing = gateway.terminal("echo ran > /workspace/stray; echo ran")
    assert nothing["exit_code"] != 0 and "ran" not in nothing["output"], nothing
    assert "names no platform, user, chat or session key" in (nothing["error"] or ""), nothing
    # Cleared ContextVars (Hermes clears them after a message) name nobody either.
    cleared = gateway.terminal("echo ran", session={})
    assert cleared["exit_code"] != 0 and "ran" not in cleared["output"], cleared
    assert {c["Labels"].get("dev.berth.kind") for c in engine.containers_under(gateway.home)} == {"user"}
    assert "default" not in folders(gateway)


def test_hermes_cli_without_a_messaging_user_keeps_the_task_layout(make_gateway, engine):
    # One local user: the legacy folders are right there and stay in use.
    gateway = make_gateway(cli_mode=True)
    result = gateway.terminal("echo cli > /workspace/cli.txt; echo ok")
    assert result["output"] == "ok", result
    assert (gateway.sandbox_dir / "docker" / "default" / "workspace" / "cli.txt").read_text() == "cli\n"
