"""Stand-in for Hermes 0.19.0's config loading (release commit 3ef6bbd): ``$HERMES_HOME/config.yaml``,
read with PyYAML as Hermes does, and the ``terminal:`` section bridged to ``TERMINAL_*`` variables."""

import json
import os
from typing import Any, Dict

import yaml

from hermes_constants import get_hermes_home

# gateway/run.py:1649-1677 and cli.py:657-690 — the same names at both sites (the CLI's backend
# key is ``env_type`` once it copied ``backend`` there, cli.py:640-641).
TERMINAL_ENV_MAP = {
    "backend": "TERMINAL_ENV", "cwd": "TERMINAL_CWD", "timeout": "TERMINAL_TIMEOUT",
    "home_mode": "TERMINAL_HOME_MODE", "lifetime_seconds": "TERMINAL_LIFETIME_SECONDS",
    "docker_image": "TERMINAL_DOCKER_IMAGE", "docker_forward_env": "TERMINAL_DOCKER_FORWARD_ENV",
    "container_cpu": "TERMINAL_CONTAINER_CPU", "container_memory": "TERMINAL_CONTAINER_MEMORY",
    "container_disk": "TERMINAL_CONTAINER_DISK", "container_persistent": "TERMINAL_CONTAINER_PERSISTENT",
    "docker_volumes": "TERMINAL_DOCKER_VOLUMES", "docker_env": "TERMINAL_DOCKER_ENV",
    "docker_extra_args": "TERMINAL_DOCKER_EXTRA_ARGS", "docker_network": "TERMINAL_DOCKER_NETWORK",
    "sandbox_dir": "TERMINAL_SANDBOX_DIR", "persistent_shell": "TERMINAL_PERSISTENT_SHELL",
}


def load_config() -> Dict[str, Any]:
    path = get_hermes_home() / "config.yaml"
    if not path.exists():
        return {}
    return yaml.safe_load(path.read_text(encoding="utf-8")) or {}


def bridge_terminal_config() -> None:
    """gateway/run.py:1678-1698 (cli.py:696-712 likewise): each key present in ``terminal:`` written to its
    variable, lists and maps as JSON, config.yaml winning; a placeholder ``cwd`` (``.``, ``auto``,
    ``cwd``) is skipped."""
    terminal = load_config().get("terminal") or {}
    for key, variable in TERMINAL_ENV_MAP.items():
        if key not in terminal:
            continue
        value = terminal[key]
        if key == "cwd" and str(value) in {".", "auto", "cwd"}:
            continue
        os.environ[variable] = json.dumps(value) if isinstance(value, (list, dict)) else str(value)
