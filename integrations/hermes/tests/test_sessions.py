"""Commands without a messaging user, as Hermes 0.19.0 really runs them: cron jobs, groups, strays, the probe.

The stand-in follows the real code (each behaviour cites its file and line at the release
commit): the scheduler's tick runs each due job in a context copied for it, blanks every
``HERMES_SESSION_*`` ContextVar on purpose, sets only the delivery variables, names the job's
agent session ``cron_<job>_<time>`` and gives the terminal tool task ``default``; the gateway
marks itself with ``_HERMES_GATEWAY=1`` and never with ``HERMES_GATEWAY_SESSION``. Nothing here
may run in the one ``default`` sandbox, nor in a sandbox another person's job or chat uses.
"""

from __future__ import annotations

import secrets

from conftest import session_of, unique_user


def group_id() -> str:
    """A Telegram group's id of this run only (groups are negative)."""
    return f"-100{secrets.randbelow(10**10):010d}"


def group_session(group: str, user: str) -> dict:
    """A group member's message, as gateway/run.py:16375 sets it (per-user group sessions, the default)."""
    return {"platform": "telegram", "chat_id": group, "user_id": user,
            "session_key": f"agent:main:telegram:group:{group}:{user}"}


def folders(gateway) -> set[str]:
    root = gateway.sandbox_dir / "docker"
    return {entry.name for entry in root.iterdir() if entry.is_dir()} if root.exists() else set()


def labels(engine, gateway) -> set[tuple[str, str]]:
    return {(c["Labels"].get("dev.berth.kind"), c["Labels"].get("dev.berth.user") or c["Labels"].get("dev.berth.task"))
            for c in engine.containers_under(gateway.home)}


def create_job(gateway, session: dict, commands: list[str]) -> str:
    made = gateway.send({"op": "create_cron", "session": session, "commands": commands})
    assert made["success"], made
    assert made["job"]["origin"]["chat_id"] == session["chat_id"], made  # the origin Hermes stored
    return str(made["job_id"])


def tick(gateway, expected: int) -> dict:
    result = gateway.send({"op": "cron_tick"})
    assert result["ran"] == expected, result
    return result["outputs"]


def test_two_users_cron_jobs_in_their_dms_and_in_one_group_never_share_a_sandbox_and_none_runs_in_default(
    make_gateway, engine
):
    gateway = make_gateway()
    a, b, group = unique_user(), unique_user(), group_id()
    writes = ["cat /workspace/a.txt 2>/dev/null; echo secret-of-A-{where} > /workspace/a.txt; "
              "export PLANTED=A-{where}; mkdir -p /root/bin; printf '#!/bin/sh\\necho hijacked\\n' > /root/bin/ls; "
              "chmod +x /root/bin/ls; export PATH=/root/bin:$PATH; echo wrote"]
    looks = ["cat /workspace/a.txt 2>&1; echo \"[$PLANTED]\"; ls /workspace; echo done"]
    # A's jobs, one made in A's direct chat and one in the group, run in one tick and leave a file,
    # a variable and a PATH with a planted ls behind.
    a_dm = create_job(gateway, session_of(a), [writes[0].format(where="dm")])
    a_group = create_job(gateway, group_session(group, a), [writes[0].format(where="group")])
    outputs = tick(gateway, 2)
    assert [result["output"] for result in outputs[a_dm]] == ["wrote"], outputs
    assert [result["output"] for result in outputs[a_group]] == ["wrote"], outputs
    # B's jobs, in B's direct chat and in the same group, then look for all of it.
    b_dm = create_job(gateway, session_of(b), looks)
    b_group = create_job(gateway, group_session(group, b), looks)
    outputs = tick(gateway, 2)
    for job in (b_dm, b_group):
        seen = outputs[job][0]["output"]
        assert seen.splitlines()[-1] == "done", (job, seen)
        assert "secret-of-A" not in seen and "[]" in seen and "hijacked" not in seen, (job, seen)
    # A's own chat is not A's jobs' sandbox either: a job's origin is delivery routing, not a sender.
    own = gateway.terminal("cat /workspace/a.txt 2>&1; echo done", session=session_of(a))
    assert "secret-of-A" not in own["output"] and own["output"].endswith("done"), own
    # Each job keeps its own sandbox across runs: its file is there the next time it runs.
    assert gateway.send({"op": "trigger_cron", "job_id": a_dm}) is True
    again = tick(gateway, 1)
    assert again[a_dm][0]["output"].startswith("secret-of-A-dm"), again
    # From outside: one sandbox per job, plus A's own chat's; nothing in "default".
    jobs = {("task", f"cron:{job}") for job in (a_dm, a_group, b_dm, b_group)}
    assert labels(engine, gateway) == jobs | {("user", a)}
    assert "default" not in folders(gateway)


def test_a_job_is_its_own_even_where_the_bridge_could_not_mark_its_run(make_gateway, engine):
    # A Hermes whose scheduler runs jobs by another path than the module's run_job (which the bridge
    # marks): the agent's session id, cron_<job>_<time> (cron/scheduler.py:2910), still names the job.
    gateway = make_gateway()
    a = unique_user()
    job = create_job(gateway, session_of(a), ["echo unmarked > /workspace/u.txt; echo ok"])
    result = gateway.send({"op": "cron_run_unmarked", "job_id": job})
    assert [item["output"] for item in result] == ["ok"], result
    assert labels(engine, gateway) == {("task", f"cron:{job}")}


def test_a_message_during_a_cron_tick_keeps_its_own_sandbox(make_gateway, engine):
    gateway = make_gateway()
    a, b = unique_user(), unique_user()
    job = create_job(gateway, session_of(a), ["sleep 1; echo cron > /workspace/who; cat /workspace/who"])
    results = gateway.send({
        "op": "cron_tick_during_message", "session": session_of(b),
        "message": {"tool": "terminal", "command": "echo message > /workspace/who; sleep 1; cat /workspace/who"},
    })
    assert results[0]["outputs"][job][0]["output"] == "cron", results
    assert results[1]["output"] == "message", results
    assert labels(engine, gateway) == {("task", f"cron:{job}"), ("user", b)}


def test_a_group_message_without_a_sender_gets_the_conversations_own_sandbox(make_gateway, engine):
    # A channel post or an anonymous admin: the gateway sets the platform, the chat and the key
    # agent:main:telegram:group:<chat> (gateway/session.py:957-990), and no user.
    gateway = make_gateway()
    member, group = unique_user(), group_id()
    mine = gateway.terminal("echo mine > /workspace/m.txt; echo ok", session=group_session(group, member))
    assert mine["output"] == "ok", mine
    command = "cat /workspace/m.txt 2>&1; echo post > /workspace/p.txt; echo done"
    posted = gateway.send({"op": "group_message", "chat_id": group, "text": "hello", "agent": {"commands": [command]}})
    seen = posted["results"][0]
    assert seen["output"].endswith("done") and "mine" not in seen["output"], posted
    again = gateway.terminal("cat /workspace/p.txt 2>&1; echo done", session=group_session(group, member))
    assert not again["output"].startswith("post"), again
    assert labels(engine, gateway) == {("user", member), ("task", f"agent:main:telegram:group:{group}")}
    assert "default" not in folders(gateway)


def test_commands_that_name_nobody_in_the_gateway_are_refused(make_gateway, engine):
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
    # What a message leaves once its handler cleared the session (every field "", gateway/session_context.py:217).
    cleared = gateway.terminal("echo ran", session={})
    assert cleared["exit_code"] != 0 and "ran" not in cleared["output"], cleared
    assert labels(engine, gateway) == {("user", a)}
    assert "default" not in folders(gateway)


def test_the_prompt_builders_probe_runs_in_no_sandbox_and_holds_no_ones_files(make_gateway, engine):
    # Hermes probes the backend once per process (agent/prompt_builder.py:986-1110) and puts the
    # answer into every user's system prompt: it must cost nothing and hold nothing of anyone.
    gateway = make_gateway()
    a = unique_user()
    for session in (None, session_of(a)):
        hints = gateway.send({"op": "probe", "session": session})
        assert "User: root" in hints and "Home: /root" in hints and "Working directory: /workspace" in hints, hints
    assert engine.containers_under(gateway.home) == []
    assert folders(gateway) == set()


def test_hermes_cli_without_a_messaging_user_keeps_the_task_layout(make_gateway, engine):
    # One local user: the legacy folders are right there and stay in use. The bridge must not make
    # the CLI a gateway (importing gateway.run would set _HERMES_GATEWAY, gateway/run.py:1408).
    gateway = make_gateway(cli_mode=True)
    result = gateway.terminal("echo cli > /workspace/cli.txt; echo ok")
    assert result["output"] == "ok", result
    assert (gateway.sandbox_dir / "docker" / "default" / "workspace" / "cli.txt").read_text() == "cli\n"
