"""Stand-in for what Hermes 0.19.0's gateway/run.py does at start-up that the bridge can see."""

import json
import os

from hermes_cli.config import load_config

_TERMINAL_ENV_MAP = {
    "backend": "TERMINAL_ENV",
    "cwd": "TERMINAL_CWD",
    "timeout": "TERMINAL_TIMEOUT",
    "lifetime_seconds": "TERMINAL_LIFETIME_SECONDS",
    "docker_image": "TERMINAL_DOCKER_IMAGE",
    "docker_forward_env": "TERMINAL_DOCKER_FORWARD_ENV",
    "container_cpu": "TERMINAL_CONTAINER_CPU",
    "container_memory": "TERMINAL_CONTAINER_MEMORY",
    "container_disk": "TERMINAL_CONTAINER_DISK",
    "container_persistent": "TERMINAL_CONTAINER_PERSISTENT",
    "docker_volumes": "TERMINAL_DOCKER_VOLUMES",
    "docker_env": "TERMINAL_DOCKER_ENV",
    "sandbox_dir": "TERMINAL_SANDBOX_DIR",
}


def boot():
    """Bridges terminal: to TERMINAL_* (config.yaml wins), marks gateway mode, loads the plugins."""
    terminal = load_config().get("terminal") or {}
    for key, variable in _TERMINAL_ENV_MAP.items():
        if key in terminal:
            value = terminal[key]
            if key == "cwd" and str(value) in {".", "auto", "cwd"}:
                continue
            os.environ[variable] = json.dumps(value) if isinstance(value, (list, dict)) else str(value)
    os.environ["HERMES_GATEWAY_SESSION"] = "1"
    os.environ["HERMES_QUIET"] = "1"
    from hermes_cli.plugins import discover_plugins

    return discover_plugins()
