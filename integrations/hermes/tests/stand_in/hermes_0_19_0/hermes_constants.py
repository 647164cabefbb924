"""Stand-in for Hermes 0.19.0's hermes_constants."""

import os
from pathlib import Path


def get_hermes_home() -> Path:
    return Path(os.getenv("HERMES_HOME") or Path.home() / ".hermes").expanduser()


def get_hermes_dir(new_subpath: str, old_name: str) -> Path:
    """The legacy folder (``image_cache``…) when it exists with content, else the new one (``cache/images``)."""
    home = get_hermes_home()
    legacy = home / old_name
    if legacy.is_dir() and any(legacy.iterdir()):
        return legacy
    return home / new_subpath
