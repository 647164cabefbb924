"""Two profiles of one Hermes gateway process, two users in each, through the bridge, on the real engine.

A multiplexed gateway binds each message's profile with its session (``profile=source.profile or ""``,
gateway/run.py:16355-16386 at 3ef6bbd; upstream 0.21's gateway/session_context.py at 01937c3 keeps it
in the ``HERMES_SESSION_PROFILE`` ContextVar), and a named profile's session keys begin
``agent:<profile>`` (gateway/session.py:884-901 at 3ef6bbd). The same person writing to two profiles
is two sandboxes; the default profile keeps the folders it had before profiles.
"""

from __future__ import annotations

from typing import Any

from conftest import session_of, unique_user

WHO = 'echo "{who}" > /workspace/who.txt; cat /workspace/who.txt; ls /workspace'


def test_two_profiles_times_two_users_are_four_sandboxes(make_gateway: Any, engine: Any) -> None:
    """Each of the four sees only its own files."""
    gateway = make_gateway()
    a, b = unique_user(), unique_user()
    cases = [(profile, user) for profile in ("work", "home") for user in (a, b)]
    results = gateway.send({"op": "concurrent", "calls": [
        {"tool": "terminal", "command": WHO.format(who=f"{profile}/{user}"),
         "session": session_of(user, profile=profile)}
        for profile, user in cases
    ]})
    for (profile, user), result in zip(cases, results):
        assert result["exit_code"] == 0, result
        # Only its own file: nothing another profile's or another user's sandbox wrote.
        assert result["output"].splitlines() == [f"{profile}/{user}", "who.txt"], result
    # From outside: four containers, each labelled with its profile and user, four folders.
    containers = engine.containers_under(gateway.home)
    owners = {(c["Labels"].get("dev.berth.profile"), c["Labels"].get("dev.berth.user")) for c in containers}
    assert owners == set(cases)
    assert len({c["Id"] for c in containers}) == 4
    root = gateway.sandbox_dir / "docker"
    for profile, user in cases:
        folder = root / f"profile~{profile}~telegram@{user}"
        assert (folder / "workspace" / "who.txt").read_text() == f"{profile}/{user}\n"
    # The default profile's folder of the same person was never made.
    assert not (root / f"telegram@{a}").exists() and not (root / f"telegram@{b}").exists()


def test_the_default_profile_keeps_the_sandbox_a_gateway_without_profiles_had(make_gateway: Any, engine: Any) -> None:
    gateway = make_gateway()
    user = unique_user()
    assert gateway.terminal("echo before > /workspace/old.txt", session=session_of(user))["exit_code"] == 0
    named_default = gateway.terminal("cat /workspace/old.txt", session=session_of(user, profile="default"))
    assert named_default["output"].strip() == "before", named_default
    other = gateway.terminal("cat /workspace/old.txt 2>&1 || echo absent", session=session_of(user, profile="work"))
    assert other["output"].splitlines()[-1] == "absent", other
    assert {c["Labels"].get("dev.berth.profile") for c in engine.containers_under(gateway.home)} == {None, "work"}


def test_a_session_naming_no_profile_id_is_refused_and_makes_nothing(make_gateway: Any, engine: Any) -> None:
    gateway = make_gateway()
    user = unique_user()
    result = gateway.terminal("echo ran", session=session_of(user, profile="../work"))
    assert result["exit_code"] != 0 and "ran" not in result["output"].splitlines(), result
    assert "not a profile id" in result.get("error", ""), result
    assert engine.containers_under(gateway.home) == []


def test_each_profile_gives_its_sandboxes_its_own_secrets(make_gateway: Any, engine: Any) -> None:
    """A multiplexing Hermes keeps each profile's ``.env`` in a scope of the turn: those are the variables,
    never the gateway's own."""
    a = unique_user()
    gateway = make_gateway(
        {"backend": "berth_docker", "docker_forward_env": ["OPENAI_API_KEY"]},
        hermes="0.21",
        # What the gateway process holds: never a profile's to use while profiles are multiplexed.
        environment={f"HERMES_USER_TELEGRAM_{a}_TOKEN": "gateway-token", "OPENAI_API_KEY": "gateway-key"},
    )
    assert gateway.send({"op": "multiplex"}) is True
    secrets = {
        "work": {f"HERMES_USER_TELEGRAM_{a}_TOKEN": "work-token", "OPENAI_API_KEY": "work-key", "BOT_TOKEN": "x"},
        "home": {f"HERMES_USER_TELEGRAM_{a}_TOKEN": "home-token"},
    }
    show = 'echo "token=$TOKEN key=${OPENAI_API_KEY:-none} bot=${BOT_TOKEN:-none}"; env | grep -c gateway-'
    results = gateway.send({"op": "concurrent", "calls": [
        {"tool": "terminal", "command": show,
         "session": {**session_of(a, profile=profile), "secrets": secrets[profile]}}
        for profile in ("work", "home")
    ]})
    # Values are masked in what comes back: the test compares lengths through the shell instead.
    assert [r["output"].splitlines()[-1] for r in results] == ["0", "0"], results
    lengths = 'echo "${#TOKEN} ${#OPENAI_API_KEY} ${BOT_TOKEN:-none}"'
    seen = [
        gateway.terminal(lengths, session={**session_of(a, profile=profile), "secrets": secrets[profile]})["output"]
        for profile in ("work", "home")
    ]
    assert seen == [f"{len('work-token')} {len('work-key')} none", f"{len('home-token')} 0 none"], seen
    # A multiplexed turn without a scope gets no variables at all, not the gateway's.
    bare = gateway.terminal(lengths, session=session_of(a, profile="work"))
    assert bare["output"] == "0 0 none", bare
