"""Stand-in for upstream Hermes' tools/terminal_scope.py at 00067189dfecf833d4d009c2dd977ae85cf800e0.

Only what the bridge and the stand-in's terminal tool read; bodies are the stand-in's own, each
behaviour naming the upstream symbol it models and its lines (counted in the stored text, as in
docs/hermes-0.21.md). A multiplexing gateway binds, for each turn, the
profile's COMPLETE ``TERMINAL_*`` policy in a ContextVar; while bound, ``terminal_env`` reads only it,
never ``os.environ``; a policy that cannot be read installs a refusal scope, under which terminal
execution raises (the module docstring).
"""

import json
import logging
import os
from contextvars import ContextVar, Token
from pathlib import Path
from typing import Any, Dict, Optional

logger = logging.getLogger(__name__)

# ``_terminal_scope_var`` (:23): None = no scope bound; a dict = the policy; a refusal = resolution failed.
_terminal_scope_var: ContextVar = ContextVar("hermes_terminal_scope", default=None)


class TerminalPolicyUnavailable(Exception):
    """``TerminalPolicyUnavailable`` (:35-44, with the refusal marker): the routed profile's
    ``.env``/``config.yaml`` cannot be read/parsed."""


class TerminalPolicyRefusal(Dict[str, str]):
    """``TerminalPolicyRefusal``: the marker scope installed when policy resolution failed."""

    def __init__(self, reason: str) -> None:
        super().__init__()
        self.reason = reason


def set_terminal_scope(mapping: Optional[Dict[str, str]]) -> Token:
    return _terminal_scope_var.set(mapping)


def reset_terminal_scope(token: Token) -> None:
    _terminal_scope_var.reset(token)


def get_terminal_scope() -> Optional[Dict[str, str]]:
    return _terminal_scope_var.get()


def enforce_no_refusal() -> None:
    """``enforce_no_refusal`` (:61-72): raise under a refusal scope; the terminal tool calls it before spawning."""
    scope = _terminal_scope_var.get()
    if isinstance(scope, TerminalPolicyRefusal):
        raise TerminalPolicyUnavailable(f"terminal policy unavailable for this profile: {scope.reason}")


def terminal_env(name: str, default: str = "") -> str:
    """``terminal_env`` (:75-86): no scope: the process env; a refusal: raise; a policy: only the policy."""
    scope = _terminal_scope_var.get()
    if scope is None:
        return os.environ.get(name, default)
    enforce_no_refusal()
    value = scope.get(name)
    return default if value is None else str(value)


# A part of ``TERMINAL_CONFIG_ENV_MAP`` (hermes_cli/config.py at 0006718): ``backend`` is
# ``TERMINAL_ENV``, the others ``TERMINAL_<KEY>``.
_MAPPED = ("backend", "docker_image", "timeout", "lifetime_seconds", "container_cpu", "container_memory",
           "container_disk", "container_persistent", "docker_forward_env", "docker_env", "docker_volumes",
           "sandbox_dir", "cwd")


def _env_var(key: str) -> str:
    return "TERMINAL_ENV" if key == "backend" else f"TERMINAL_{key.upper()}"


def _value(value: Any) -> str:
    """``_terminal_env_value``: lists and dicts as JSON."""
    return json.dumps(value) if isinstance(value, (list, dict)) else str(value)


def build_profile_terminal_scope(hermes_home: Any) -> Dict[str, str]:
    """``build_profile_terminal_scope`` (:89-104, its files :124-156): defaults <- the profile's
    ``.env`` ``TERMINAL_*`` <- its ``config.yaml`` ``terminal:``; a present file that cannot be read or
    parsed raises."""
    home = Path(hermes_home)
    scope: Dict[str, str] = {"TERMINAL_ENV": "local"}
    env_path = home / ".env"
    if env_path.exists():
        try:
            lines = env_path.read_text(encoding="utf-8").splitlines()
        except Exception as exc:
            raise TerminalPolicyUnavailable(f"cannot read {env_path}: {exc}") from exc
        for line in lines:
            key, _, value = line.partition("=")
            if key.strip().startswith("TERMINAL_"):
                scope[key.strip()] = value.strip()
    config_path = home / "config.yaml"
    if config_path.exists():
        try:
            import yaml

            raw = yaml.safe_load(config_path.read_text(encoding="utf-8-sig"))
        except Exception as exc:
            raise TerminalPolicyUnavailable(f"cannot parse {config_path}: {exc}") from exc
        terminal = raw.get("terminal") if isinstance(raw, dict) else None
        for key, value in (terminal or {}).items() if isinstance(terminal, dict) else ():
            if key in _MAPPED and value is not None:
                scope[_env_var(key)] = _value(value)
    return scope


def install_profile_terminal_scope(hermes_home: Any) -> Token:
    """``install_profile_terminal_scope`` (:193-200): build and install; on failure the refusal scope. Never raises."""
    try:
        return set_terminal_scope(build_profile_terminal_scope(hermes_home))
    except TerminalPolicyUnavailable as exc:
        logger.warning("terminal policy unavailable: %s", exc)
        return _terminal_scope_var.set(TerminalPolicyRefusal(str(exc)))
