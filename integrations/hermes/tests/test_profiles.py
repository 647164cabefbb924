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
