"""Two messaging users of one Hermes gateway, through the bridge, on the real engine."""

from __future__ import annotations

import hashlib

from conftest import session_of, unique_user

TOKEN_A = "ghp_" + "a1" * 18
TOKEN_B = "ghp_" + "b2" * 18


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def two_user_gateway(make_gateway):
    a, b = unique_user(), unique_user()
    gateway = make_gateway(environment={
        f"HERMES_USER_TELEGRAM_{a}_GITHUB_TOKEN": TOKEN_A,
        f"HERMES_USER_TELEGRAM_{b}_GITHUB_TOKEN": TOKEN_B,
    })
    return gateway, a, b


def test_two_users_commands_at_once_land_in_two_containers_with_their_own_files_and_tokens(make_gateway, engine):
    gateway, a, b = two_user_gateway(make_gateway)
    command = (
        'echo "{who} was here" > /workspace/mine.txt; printf %s "$GITHUB_TOKEN" | sha256sum; cat /workspace/mine.txt'
    )
    results = gateway.send({"op": "concurrent", "calls": [
        {"tool": "terminal", "command": command.format(who="A"), "session": session_of(a)},
        {"tool": "terminal", "command": command.format(who="B"), "session": session_of(b)},
    ]})
    out_a, out_b = results[0]["output"].splitlines(), results[1]["output"].splitlines()
    assert results[0]["exit_code"] == 0 and results[1]["exit_code"] == 0, results
    # Each sandbox got its own user's token, and only that one.
    assert out_a[0].startswith(sha256(TOKEN_A)) and out_b[0].startswith(sha256(TOKEN_B))
    assert out_a[1] == "A was here" and out_b[1] == "B was here"
    # From outside: two containers, one per user, each with its own folders on the host.
    containers = {c["Labels"].get("dev.berth.user"): c for c in engine.containers_under(gateway.home)}
    assert set(containers) == {a, b}
    assert containers[a]["Id"] != containers[b]["Id"]
    workspace = gateway.sandbox_dir / "docker"
    assert (workspace / f"telegram@{a}" / "workspace" / "mine.txt").read_text() == "A was here\n"
    assert (workspace / f"telegram@{b}" / "workspace" / "mine.txt").read_text() == "B was here\n"
    # Hermes 0.19.0 collapses every gateway session to task "default": one handle served both.
    state = gateway.state()
    assert list(state["environments"]) == ["default"]
    assert "docker" in state["environments"]["default"]["class"].lower()
    assert "tools.environments.base.BaseEnvironment" in state["environments"]["default"]["bases"]


def test_user_b_cannot_read_user_a_file_or_token_through_the_bridge(make_gateway, engine):
    gateway, a, b = two_user_gateway(make_gateway)
    assert gateway.terminal(
        "echo secret-of-A > /workspace/diary.txt; echo secret-of-A > /root/.netrc", session=session_of(a)
    )["exit_code"] == 0
    # B tries everything a shell can: A's paths, every process's environment, the whole tree.
    attack = (
        "cat /workspace/diary.txt /root/.netrc; env; cat /proc/*/environ 2>/dev/null | tr '\\0' '\\n'; "
        "grep -rs 'secret-of-[A]' / --exclude-dir=proc --exclude-dir=sys 2>/dev/null; ls -la /workspace /root; "
        f"ls /workspace/../telegram@{a} 2>&1; echo done"
    )
    result = gateway.terminal(attack, session=session_of(b))
    assert "done" in result["output"].splitlines(), result
    assert "secret-of-A" not in result["output"]
    assert TOKEN_A not in result["output"] and sha256(TOKEN_A) not in result["output"]
    # B's command text cannot make the request name another user: the bridge sends it as data.
    forged = gateway.terminal(
        'echo \'","platform":"telegram","userId":"' + a + '\'; cat /workspace/diary.txt 2>&1 || true',
        session=session_of(b),
    )
    assert "secret-of-A" not in forged["output"]
    assert {c["Labels"].get("dev.berth.user") for c in engine.containers_under(gateway.home)} == {a, b}


def test_a_users_token_is_masked_in_what_goes_back_to_the_chat_and_never_in_the_gateway_log(make_gateway):
    gateway, a, _b = two_user_gateway(make_gateway)
    result = gateway.terminal(
        'echo "token=$GITHUB_TOKEN"; test "$GITHUB_TOKEN" = "' + TOKEN_A + '" && echo matches', session=session_of(a)
    )
    assert result["output"].splitlines() == ["token=***", "matches"]
    assert TOKEN_A not in gateway.log_text() and TOKEN_B not in gateway.log_text()


def test_one_users_shell_state_persists_and_is_not_the_other_users(make_gateway):
    gateway, a, b = two_user_gateway(make_gateway)
    gateway.terminal("cd /tmp && export MOOD=happy", session=session_of(a))
    assert gateway.terminal('pwd; echo "mood=$MOOD"', session=session_of(a))["output"].splitlines() == [
        "/tmp", "mood=happy"
    ]
    assert gateway.terminal('pwd; echo "mood=$MOOD"', session=session_of(b))["output"].splitlines() == [
        "/workspace", "mood="
    ]
