"""How the bridge tells a call's profile, without an engine: the turn's home, the session's name, the
sandbox folders and the environment a routed profile's `berth serve` gets (``berth_hermes/profiles.py``)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from conftest import PACKAGE_ROOT

sys.path.insert(0, str(PACKAGE_ROOT))
from berth_hermes import profiles as profiles_module  # noqa: E402 - once sys.path holds the package
from berth_hermes.errors import BerthBridgeError  # noqa: E402
from berth_hermes.profiles import Profiles, routed_environment, session_for  # noqa: E402
from berth_hermes.settings import BridgeSettings  # noqa: E402


def _home(root: Path, terminal: dict[str, Any]) -> Path:
    root.mkdir(parents=True)
    (root / "config.yaml").write_text(json.dumps({"terminal": terminal}), encoding="utf-8")
    return root


@pytest.fixture
def gateway(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Profiles, dict[str, Path]]:
    """A launch home and three profiles; the turn's home is whatever ``HERMES_HOME`` says (no Hermes here)."""
    launch = _home(tmp_path / "hermes", {"backend": "berth_docker"})
    homes = {
        "work": _home(launch / "profiles" / "work", {"backend": "berth_docker"}),
        "plain": _home(launch / "profiles" / "plain", {"backend": "local"}),
        "copycat": _home(launch / "profiles" / "copycat", {
            "backend": "berth_docker", "sandbox_dir": str(launch / "profiles" / "work" / "sandboxes"),
        }),
    }
    monkeypatch.setenv("HERMES_HOME", str(launch))
    monkeypatch.delenv("TERMINAL_SANDBOX_DIR", raising=False)
    settings = BridgeSettings.load({"HERMES_HOME": str(launch)}, use_hermes=False)
    return Profiles(settings, object(), provider_api=True), {"launch": launch, **homes}  # type: ignore[arg-type]


def test_the_turns_home_picks_the_profile_its_config_and_its_own_socket(gateway: Any, monkeypatch: Any) -> None:
    profiles, homes = gateway
    assert profiles.current() is profiles.launch
    monkeypatch.setenv("HERMES_HOME", str(homes["work"]))
    work = profiles.current()
    assert (work.name, work.routed, work.settings.home, work.server.socket) == (
        "work", True, homes["work"], homes["work"] / "run" / "berth.sock")
    assert work.server.config_file == homes["work"] / "config.yaml"
    assert profiles.current() is work  # made once
    assert profiles.uses_berth(work)
    monkeypatch.setenv("HERMES_HOME", str(homes["plain"]))
    assert not profiles.uses_berth(profiles.current())


def test_a_routed_request_always_names_its_profile_and_never_another(gateway: Any, monkeypatch: Any) -> None:
    profiles, homes = gateway
    monkeypatch.setenv("HERMES_HOME", str(homes["work"]))
    work = profiles.current()
    assert session_for(work, {"userId": "1"}) == {"userId": "1", "profile": "work"}
    assert session_for(work, {"userId": "1", "profile": "work"})["profile"] == "work"
    with pytest.raises(BerthBridgeError, match="runs in profile work's home but its session names profile home"):
        session_for(work, {"userId": "1", "profile": "home"})
    # The launch profile's requests are as the session says, as before profiles.
    assert session_for(profiles.launch, {"userId": "1"}) == {"userId": "1"}


def test_a_home_that_names_no_profile_needs_the_session_to(tmp_path: Path, gateway: Any, monkeypatch: Any) -> None:
    profiles, _ = gateway
    elsewhere = _home(tmp_path / "elsewhere", {"backend": "berth_docker"})
    monkeypatch.setenv("HERMES_HOME", str(elsewhere))
    odd = profiles.current()
    assert odd.name == "" and odd.routed
    with pytest.raises(BerthBridgeError, match="cannot tell which profile the Hermes home"):
        session_for(odd, {"userId": "1"})
    assert session_for(odd, {"userId": "1", "profile": "lab"})["profile"] == "lab"


def test_two_profiles_never_share_a_sandbox_folder(gateway: Any, monkeypatch: Any) -> None:
    profiles, homes = gateway
    monkeypatch.setenv("HERMES_HOME", str(homes["work"]))
    profiles.current()
    monkeypatch.setenv("HERMES_HOME", str(homes["copycat"]))
    copycat = profiles.current()  # never raises: a patch asking which profile this is must not break
    with pytest.raises(BerthBridgeError, match="sandbox folder .* is profile work's too"):
        session_for(copycat, {"userId": "1", "profile": "copycat"})
    assert copycat.server.pid is None  # nothing was started for it


def test_a_routed_profiles_server_gets_neither_the_launch_policy_nor_users_variables(monkeypatch: Any) -> None:
    monkeypatch.setenv("TERMINAL_ENV", "berth_docker")
    monkeypatch.setenv("TERMINAL_SANDBOX_DIR", "/srv/launch")
    monkeypatch.setenv("HERMES_USER_TELEGRAM_1_TOKEN", "launch-secret")
    monkeypatch.setenv("HERMES_SESSION_USER_ID", "1")
    monkeypatch.setenv("PATH", "/usr/bin")
    environment = routed_environment("HERMES_USER")
    assert environment["PATH"] == "/usr/bin"
    assert not {"TERMINAL_ENV", "TERMINAL_SANDBOX_DIR", "HERMES_USER_TELEGRAM_1_TOKEN", "HERMES_SESSION_USER_ID"} & set(
        environment)


def test_a_refusal_scope_leaves_the_patches_to_hermes(gateway: Any, monkeypatch: Any) -> None:
    profiles, _ = gateway

    def refused() -> str:
        raise RuntimeError("terminal policy unavailable for this profile: cannot parse config.yaml")

    monkeypatch.setattr(profiles_module, "_scoped_backend", refused)
    assert profiles_module.pass_through(profiles) is True
    monkeypatch.setattr(profiles_module, "_scoped_backend", lambda: "berth_docker")
    assert profiles_module.pass_through(profiles) is False
    monkeypatch.setattr(profiles_module, "_scoped_backend", lambda: "local")
    assert profiles_module.pass_through(profiles) is True


def test_a_routed_turn_sends_its_scopes_variables_or_none_never_the_gateways(
    gateway: Any, monkeypatch: Any
) -> None:
    import types

    from berth_hermes.session import scope_variables

    profiles, homes = gateway
    monkeypatch.setenv("HERMES_HOME", str(homes["work"]))
    work = profiles.current()
    monkeypatch.setenv("HERMES_USER_TELEGRAM_1_TOKEN", "the gateway's")
    fake = types.ModuleType("agent.secret_scope")
    fake.is_multiplex_active = lambda: False  # type: ignore[attr-defined]  # a routed turn needs no flag
    fake.current_secret_scope = lambda: None  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "agent", types.ModuleType("agent"))
    monkeypatch.setitem(sys.modules, "agent.secret_scope", fake)
    assert scope_variables(work) == {}
    assert scope_variables(profiles.launch) is None  # the launch profile, unmultiplexed: berth serve's own
    fake.current_secret_scope = lambda: {  # type: ignore[attr-defined]
        "HERMES_USER_TELEGRAM_1_TOKEN": "work's", "UNRELATED": "x"}
    assert scope_variables(work) == {"HERMES_USER_TELEGRAM_1_TOKEN": "work's"}


def test_a_refused_profile_reads_no_file_and_fails_hermes_fetch_in_its_own_terms(
    gateway: Any, monkeypatch: Any, tmp_path: Path
) -> None:
    """Hermes' remote fetch (fetch_realpath, then fetch_file) of a turn whose profile is unclear: nothing is
    asked of any server; realpath answers None and fetch_file raises the error Hermes catches."""
    from berth_hermes.environment import environment_class

    profiles, homes = gateway
    monkeypatch.setenv("HERMES_HOME", str(homes["work"]))
    monkeypatch.setenv("HERMES_SESSION_USER_ID", "1")
    monkeypatch.setenv("HERMES_SESSION_PROFILE", "home")  # another profile than the turn's home
    handle = environment_class()(profiles=profiles, cwd="/workspace", timeout=60)
    assert handle.fetch_realpath("/workspace/report.pdf") is None
    with pytest.raises(RuntimeError, match="session names profile home"):
        handle.fetch_file("/workspace/report.pdf", tmp_path / "copy", max_bytes=1024)
    assert not (tmp_path / "copy").exists()


def test_the_launch_profile_uses_berth_as_hermes_terminal_env_says(gateway: Any, monkeypatch: Any) -> None:
    """Without a terminal scope Hermes reads ``TERMINAL_ENV`` from the process (its config bridged there, or
    set by the operator); a routed profile never takes the launch process's."""
    profiles, homes = gateway
    monkeypatch.setenv("TERMINAL_ENV", "local")
    assert not profiles.uses_berth(profiles.launch)
    monkeypatch.setenv("TERMINAL_ENV", "berth_docker")
    assert profiles.uses_berth(profiles.launch)
    monkeypatch.setenv("HERMES_HOME", str(homes["plain"]))
    assert not profiles.uses_berth(profiles.current())  # plain's config.yaml: local
