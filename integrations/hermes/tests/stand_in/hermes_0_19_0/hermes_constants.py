"""Stand-in for Hermes 0.19.0's hermes_constants."""

import os
from pathlib import Path


def get_hermes_home() -> Path:
    return Path(os.getenv("HERMES_HOME") or Path.home() / ".hermes").expanduser()
