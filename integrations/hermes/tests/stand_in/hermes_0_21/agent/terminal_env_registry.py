"""Stand-in for upstream's agent/terminal_env_registry.py."""

import re
import threading
from typing import Dict, List, Optional

from agent.terminal_env_provider import TerminalEnvironmentProvider

BUILTIN_BACKEND_NAMES = frozenset({"local", "docker", "singularity", "modal", "daytona", "vercel_sandbox", "ssh"})
_NAME = re.compile(r"^[a-z0-9_]+$")
_providers: Dict[str, TerminalEnvironmentProvider] = {}
_lock = threading.Lock()


def register_provider(provider: TerminalEnvironmentProvider) -> None:
    if not isinstance(provider, TerminalEnvironmentProvider):
        raise TypeError("a terminal environment provider must be a TerminalEnvironmentProvider")
    name = provider.name.strip().lower()
    if name in BUILTIN_BACKEND_NAMES:
        raise ValueError(f"terminal backend name {name!r} is built in and cannot be registered by a plugin")
    if not _NAME.match(name):
        raise ValueError(f"terminal backend name {name!r} must match [a-z0-9_]+")
    with _lock:
        _providers[name] = provider


def get_provider(name: str) -> Optional[TerminalEnvironmentProvider]:
    with _lock:
        return _providers.get((name or "").strip().lower())


def plugin_backend_names() -> List[str]:
    with _lock:
        return sorted(_providers)
