"""Stand-in for Hermes 0.19.0's hermes_constants.py (commit 3ef6bbd, the v0.19.0 release): where Hermes' home is.

Bodies of the stand-in's own; each behaviour names the line of Hermes 0.19.0 it models.
"""

import os
import stat
from contextvars import ContextVar, Token
from pathlib import Path
from typing import Optional, Union

# A per-task home (a multiplexed gateway's profile), never os.environ.
# Hermes 0.19.0 hermes_constants.py:17-20
_UNSET = object()
_HERMES_HOME_OVERRIDE: ContextVar[object] = ContextVar("_HERMES_HOME_OVERRIDE", default=_UNSET)


def set_hermes_home_override(path: Union[str, Path, None]) -> Token:
    # Hermes 0.19.0 hermes_constants.py:23-30
    return _HERMES_HOME_OVERRIDE.set(_UNSET if path is None else str(path))


def reset_hermes_home_override(token: Token) -> None:
    # Hermes 0.19.0 hermes_constants.py:33-35
    _HERMES_HOME_OVERRIDE.reset(token)


def get_hermes_home_override() -> Optional[str]:
    # Hermes 0.19.0 hermes_constants.py:38-43
    override = _HERMES_HOME_OVERRIDE.get()
    return None if override is _UNSET or not override else str(override)


def _hermes_home_from_env() -> Path:
    """``HERMES_HOME`` stripped (no ``~`` expansion), else ``~/.hermes``.

    Hermes 0.19.0 hermes_constants.py:46-67 (the POSIX default).
    """
    value = os.environ.get("HERMES_HOME", "").strip()
    return Path(value) if value else Path.home() / ".hermes"


def get_hermes_home() -> Path:
    """The context's override first, then the process's ``HERMES_HOME``.

    Hermes 0.19.0 hermes_constants.py:107-132
    """
    override = get_hermes_home_override()
    return Path(override) if override else _hermes_home_from_env()


def get_default_hermes_root() -> Path:
    """``~/.hermes`` when ``HERMES_HOME`` is under it; ``<root>`` for ``<root>/profiles/<name>``; else
    ``HERMES_HOME`` itself. Hermes 0.19.0 hermes_constants.py:154-191
    """
    native = Path.home() / ".hermes"
    env_home = os.environ.get("HERMES_HOME", "")
    if not env_home:
        return native
    env_path = Path(env_home)
    if env_path.resolve().is_relative_to(native.resolve()):
        return native
    return env_path.parent.parent if env_path.parent.name == "profiles" else env_path


def _legacy_path_has_content(path: Path) -> bool:
    """A non-empty folder, or a file, counts; an empty folder or a dangling link does not; an
    unreadable one does. Hermes 0.19.0 hermes_constants.py:623-669
    """
    try:
        mode = path.stat().st_mode  # follows a link: a dangling one is "not found"
    except FileNotFoundError:
        return False
    except OSError:
        return True
    if not stat.S_ISDIR(mode):
        return True
    try:
        next(path.iterdir())
    except StopIteration:
        return False
    except OSError:
        return True
    return True


def get_hermes_dir(new_subpath: str, old_name: str) -> Path:
    """The legacy folder (``image_cache``…) when it has content, else the new one (``cache/images``).

    Hermes 0.19.0 hermes_constants.py:267-294
    """
    home = get_hermes_home()
    legacy = home / old_name
    return legacy if _legacy_path_has_content(legacy) else home / new_subpath
