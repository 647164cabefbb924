"""Where the bridge finds Hermes' home, the shared config file and the socket of `berth serve`."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping


def hermes_home(environment: Mapping[str, str] = os.environ, *, use_hermes: bool = True) -> Path:
    """Hermes' own answer when Hermes is importable (the turn's profile home where a multiplexing
    gateway bound one, else its active profile), else ``${HERMES_HOME:-~/.hermes}``."""
    if use_hermes:
        try:
            from hermes_constants import get_hermes_home

            return Path(get_hermes_home())
        except ImportError:
            pass
    return Path(environment.get("HERMES_HOME") or Path.home() / ".hermes").expanduser()


def default_socket(home: Path) -> Path:
    """``$HERMES_HOME/run/berth.sock``, however long: both ends reach it through a descriptor of its folder.

    Never a name in a shared folder such as ``/tmp``, which any local user could make first (or
    make a link that flips) and so take the gateway's commands; see ``server.py``.
    """
    return home / "run" / "berth.sock"


def read_terminal_section(config_file: Path) -> dict[str, Any]:
    """The ``terminal:`` mapping of Hermes' config, or ``{}`` when it cannot be read.

    Only ``docker_user_sandbox`` is read here; `berth serve` validates the whole section and
    names any problem in its own one-line error. PyYAML comes with Hermes itself (it pins it);
    without it, a file written as JSON (which is YAML) still reads.
    """
    try:
        text = config_file.read_text(encoding="utf-8")
    except OSError:
        return {}
    document: Any
    try:
        import yaml

        document = yaml.safe_load(text)
    except ImportError:
        try:
            document = json.loads(text)
        except ValueError:
            return {}
    except Exception:  # a malformed file: berth serve names the line
        return {}
    terminal = document.get("terminal") if isinstance(document, dict) else None
    return terminal if isinstance(terminal, dict) else {}


def _names(section: Mapping[str, Any], key: str) -> list[Any]:
    value = section.get(key)
    return value if isinstance(value, list) else []


@dataclass(frozen=True)
class BridgeSettings:
    """What one gateway's bridge uses; read once, in ``register(ctx)``."""

    home: Path
    """Hermes' home (``$HERMES_HOME``): the config file and Berth's default sandbox root live there."""
    config_file: Path | None
    """``$HERMES_HOME/config.yaml``, the one file that configures Hermes and Berth; ``None`` when absent."""
    socket: Path
    """The socket `berth serve` listens on: ``$BERTH_SOCKET``, else ``$HERMES_HOME/run/berth.sock``."""
    user_sandbox: bool
    """``terminal.docker_user_sandbox`` (default true): false leaves Hermes' own docker backend in place."""
    backend: str = "local"
    """``terminal.backend`` as the file says it (Hermes' default is ``local``)."""
    user_env_prefix: str = "HERMES_USER"
    """``terminal.docker_user_env_prefix``: the prefix of the users' own variables."""
    forwarded: tuple[str, ...] = ()
    """``terminal.docker_forward_env`` and ``env_passthrough``: the names forwarded into every sandbox."""

    @classmethod
    def load(cls, environment: Mapping[str, str] = os.environ, *, use_hermes: bool = True) -> "BridgeSettings":
        """``use_hermes=False``: the home ``environment`` names, not the one Hermes has bound now."""
        home = hermes_home(environment, use_hermes=use_hermes)
        config_file = home / "config.yaml"
        terminal = read_terminal_section(config_file) if config_file.is_file() else {}
        socket = (
            Path(environment["BERTH_SOCKET"]).expanduser() if environment.get("BERTH_SOCKET") else default_socket(home)
        )
        return cls(
            home=home,
            config_file=config_file if config_file.is_file() else None,
            socket=socket.absolute(),
            user_sandbox=terminal.get("docker_user_sandbox", True) is not False,
            backend=str(terminal.get("backend") or "local"),
            user_env_prefix=str(terminal.get("docker_user_env_prefix") or "HERMES_USER"),
            forwarded=tuple(
                str(name) for key in ("docker_forward_env", "env_passthrough") for name in _names(terminal, key)
            ),
        )
