"""Stand-in for upstream Hermes' agent/secret_scope.py at 0474a0e932cbb0509001bf2a597fa133c8a35605.

Only what the bridge reads. Line numbers are of the real file at that commit; bodies are the
stand-in's own. A multiplexing gateway keeps each profile's ``.env`` out of ``os.environ`` and
installs it for a turn as a ContextVar scope (the module docstring, :1-21).
"""

from contextvars import ContextVar, Token
from typing import Mapping, Optional

# :32-37 — process-global: set once at gateway start-up when gateway.multiplex_profiles is true.
_MULTIPLEX_ACTIVE: bool = False


def set_multiplex_active(active: bool) -> None:
    """:40-47."""
    global _MULTIPLEX_ACTIVE
    _MULTIPLEX_ACTIVE = bool(active)


def is_multiplex_active() -> bool:
    """:50-52."""
    return _MULTIPLEX_ACTIVE


# :55-58 — the active profile's secrets, None when no scope is installed.
_SECRET_SCOPE: ContextVar[Optional[Mapping[str, str]]] = ContextVar("_SECRET_SCOPE", default=None)


def set_secret_scope(secrets: Optional[Mapping[str, str]]) -> Token:
    """:72-77 — installs the active profile's secret mapping for the current context."""
    return _SECRET_SCOPE.set(secrets)


def reset_secret_scope(token: Token) -> None:
    """:80-82."""
    _SECRET_SCOPE.reset(token)


def current_secret_scope() -> Optional[Mapping[str, str]]:
    """:85-87 — the active secret mapping, or None when no scope is installed."""
    return _SECRET_SCOPE.get()


def load_env_file(path) -> dict:
    """``load_env_file``: ``NAME=value`` lines of a profile's ``.env``; never touches ``os.environ``."""
    from pathlib import Path

    found = {}
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError:
        return found
    for line in text.splitlines():
        name, sep, value = line.partition("=")
        if sep and name.strip() and not name.strip().startswith("#"):
            found[name.strip()] = value.strip()
    return found


def build_profile_secret_scope(hermes_home) -> dict:
    """``build_profile_secret_scope`` (the end of the file): the profile's ``<home>/.env``."""
    from pathlib import Path

    return load_env_file(Path(hermes_home) / ".env")
