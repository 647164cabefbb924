"""Stand-in for Hermes 0.19.0's config loading: $HERMES_HOME/config.yaml, read with PyYAML as Hermes does."""

from typing import Any, Dict

import yaml

from hermes_constants import get_hermes_home


def load_config() -> Dict[str, Any]:
    path = get_hermes_home() / "config.yaml"
    if not path.exists():
        return {}
    return yaml.safe_load(path.read_text(encoding="utf-8")) or {}
