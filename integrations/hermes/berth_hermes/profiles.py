"""Which Hermes profile a call serves, with that profile's own settings and its own `berth serve`.

Upstream Hermes 0.21+ serves several profiles from one gateway process. For each turn it binds
the profile's home as a context-local override, which ``get_hermes_home()`` reads before
``HERMES_HOME`` (``set_hermes_home_override`` / ``get_hermes_home``, hermes_constants.py at
00067189dfecf833d4d009c2dd977ae85cf800e0). Its terminal tool keys a session-less call of such a
"routed" profile by that override (``_routed_home_task_key``) and never reads the launch process's
``TERMINAL_*`` for it (``_ensure_terminal_env_bridged``), and it takes the backend from the turn's
terminal scope (``_session_scope``: ``_tenv("TERMINAL_ENV")``; all three in tools/terminal_tool.py
at 027fc6674891a55bf5745d66391f14ed18b90b2b; the scope is tools/terminal_scope.py at 0006718).

The bridge resolves the same way on every call (docs/hermes.md, "Several profiles in one gateway"):

- the turn's home is its profile's; the launch home keeps the settings and server it had;
- another home gets its own ``config.yaml`` and its own `berth serve` on ``{home}/run/berth.sock``,
  started without the launch process's ``TERMINAL_*`` and users' variables, so each profile's
  image, limits, caps and sandbox folder are its own;
- a request of a routed home always names its profile, and a session that names another is refused;
- whether a profile uses Berth is the turn's terminal scope's ``TERMINAL_ENV`` where Hermes binds
  one, else its ``config.yaml``. Every patch passes through for a profile that does not.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

from .errors import BerthBridgeError
from .server import BerthServer, server_for
from .settings import BridgeSettings, hermes_home, read_terminal_section


@dataclass(frozen=True)
class Profile:
    """One profile as the bridge serves it."""

    name: str
    """The profile's id for a routed home (``work``), ``""`` for the launch home (the session decides)."""
    settings: BridgeSettings
    server: BerthServer
    routed: bool = False
    """A home other than the launch process's: Hermes bound it for this turn."""
    refused: str = ""
    """Why no request of this profile may be sent (its sandbox folder is another profile's): every
    request refuses with it (:func:`session_for`), so no caller has to catch it elsewhere."""


def _profile_name(home: Path) -> str:
    """Hermes' own ``profile_name_for_home`` where it has one, else ``<root>/profiles/<name>``'s name."""
    try:
        from hermes_constants import profile_name_for_home

        found = profile_name_for_home(home)
        return str(found) if isinstance(found, str) else ""
    except ImportError:
        return home.name if home.parent.name == "profiles" and not home.name.startswith(".") else ""
    except Exception:  # Hermes' own failure: no name, so the request is refused unless the session names one
        return ""


def sandbox_root(settings: BridgeSettings, environment: Mapping[str, str]) -> Path:
    """Where `berth serve` puts this profile's sandboxes: ``terminal.sandbox_dir``, else (the launch
    home only) ``$TERMINAL_SANDBOX_DIR``, else ``{home}/sandboxes`` (core's host-layout rule)."""
    section = read_terminal_section(settings.config_file) if settings.config_file is not None else {}
    configured = str(section.get("sandbox_dir") or "").strip()
    chosen = configured or str(environment.get("TERMINAL_SANDBOX_DIR") or "").strip()
    path = Path(chosen).expanduser() if chosen else settings.home / "sandboxes"
    return Path(os.path.realpath(path))


def routed_environment(prefix: str) -> dict[str, str]:
    """The environment a routed profile's `berth serve` starts with: the gateway's, without its
    ``TERMINAL_*`` (the launch profile's policy) and without users' variables (``{prefix}_*``), which a
    multiplexed turn carries in its own request."""
    head = f"{prefix or 'HERMES_USER'}_"
    return {
        name: value for name, value in os.environ.items()
        if not name.startswith(("TERMINAL_", "HERMES_SESSION_", head))
    }


class Profiles:
    """The launch profile and every routed one this process has served, made once each."""

    def __init__(self, launch: BridgeSettings, server: BerthServer, *, provider_api: bool) -> None:
        self.launch = Profile(name="", settings=launch, server=server)
        self.backend = "berth_docker" if provider_api else "docker"
        """The ``terminal.backend`` that means Berth in this Hermes."""
        self._lock = threading.Lock()
        self._launch_home = os.path.realpath(launch.home)
        self._routed: dict[Path, Profile] = {}
        self._roots: dict[Path, str] = {sandbox_root(launch, os.environ): "the launch profile"}

    def current(self) -> Profile:
        """The profile of this call: the one whose home Hermes bound for the turn, else the launch one."""
        real = os.path.realpath(hermes_home())
        if real == self._launch_home:
            return self.launch
        key = Path(real)
        with self._lock:
            found = self._routed.get(key)
            if found is None:
                found = self._routed[key] = self._make(key)
            return found

    def _make(self, home: Path) -> Profile:
        # Its own home's config.yaml and socket: never $BERTH_SOCKET, which names the launch profile's.
        settings = BridgeSettings.load({"HERMES_HOME": os.fspath(home)}, use_hermes=False)
        name = _profile_name(home) or ""
        root = sandbox_root(settings, {})
        owner = self._roots.get(root)
        refused = "" if owner is None else (
            f"berth: profile {name or home}'s sandbox folder {root} is {owner}'s too; give each profile "
            "a terminal.sandbox_dir of its own, or none (its home's sandboxes/)"
        )
        if owner is None:
            self._roots[root] = f"profile {name or home}"
        # Never started for a refused profile: every request refuses before it is sent.
        server = server_for(settings.socket, home=home, config_file=settings.config_file,
                            environment=routed_environment(settings.user_env_prefix))
        return Profile(name=name, settings=settings, server=server, routed=True, refused=refused)

    def uses_berth(self, profile: Profile) -> bool:
        """Whether Berth serves this profile's terminal now, as Hermes' terminal tool decides it
        (``_tenv("TERMINAL_ENV")``): the turn's terminal scope; without one, the launch process's
        ``TERMINAL_ENV`` (Hermes bridges ``config.yaml`` to it at start-up) for the launch profile;
        else the profile's ``config.yaml``. A refusal scope raises Hermes' own error."""
        backend = _scoped_backend()
        if backend is None:
            ambient = "" if profile.routed else os.environ.get("TERMINAL_ENV", "").strip()
            backend = ambient or profile.settings.backend
            if backend == "docker" and not profile.settings.user_sandbox:
                return False
        return backend == self.backend


def _scoped_backend() -> str | None:
    """``TERMINAL_ENV`` of the turn's terminal scope where Hermes bound one (it raises under a refusal
    scope: the profile's policy could not be read), else None."""
    try:
        from tools.terminal_scope import get_terminal_scope, terminal_env
    except ImportError:
        return None
    if get_terminal_scope() is None:
        return None
    return str(terminal_env("TERMINAL_ENV", "local"))


def session_for(profile: Profile, session: Mapping[str, str]) -> dict[str, str]:
    """The session a request of ``profile`` sends: a routed profile's always names it."""
    if profile.refused:
        raise BerthBridgeError(profile.refused)
    result = dict(session)
    if not profile.routed:
        return result
    named = result.get("profile", "")
    if named and profile.name and named != profile.name:
        raise BerthBridgeError(
            f"berth: this turn runs in profile {profile.name}'s home but its session names profile {named}; "
            "refusing rather than guess whose sandbox it is"
        )
    chosen = named or profile.name
    if not chosen:
        raise BerthBridgeError(
            f"berth: cannot tell which profile the Hermes home {profile.settings.home} is "
            "(not <root>/profiles/<name>) and the session names none; refusing"
        )
    result["profile"] = chosen
    return result


def pass_through(profiles: Profiles) -> bool:
    """True when a patch must leave this call to Hermes: the turn's profile does not use Berth, or its
    terminal policy could not be read (Hermes' own path then refuses, as upstream designed it)."""
    try:
        return not profiles.uses_berth(profiles.current())
    except Exception:  # noqa: BLE001 - Hermes' refusal scope (TerminalPolicyUnavailable): Hermes decides
        return True
