"""What the driver reports about the gateway's insides, for assertions the tests cannot make from outside."""

from __future__ import annotations

import sys
from typing import Any


def describe(terminal_tool: Any) -> dict:
    environments = {
        task_id: {"class": type(env).__name__, "module": type(env).__module__, "id": id(env),
                  "cwd": getattr(env, "cwd", None),
                  "bases": [base.__module__ + "." + base.__name__ for base in type(env).__mro__[1:]]}
        for task_id, env in terminal_tool._active_environments.items()
    }
    create = terminal_tool._create_environment
    server = None
    # The bridge's module is hermes_plugins.berth.server (a directory plugin) or berth_hermes.server (pip).
    for name, module in list(sys.modules.items()):
        if name.endswith(".server") and hasattr(module, "_servers"):
            for instance in module._servers.values():
                server = {"pid": instance.pid, "socket": str(instance.socket)}
    providers: list[str] = []
    try:
        from agent.terminal_env_registry import _providers

        providers = [
            f"{name}:{type(provider).__name__}:{[c.__name__ for c in type(provider).__mro__]}"
            for name, provider in _providers.items()
        ]
    except ImportError:
        pass
    return {
        "environments": environments,
        "create_environment_replaced": getattr(create, "__berth_original__", None) is not None,
        "server": server,
        "providers": providers,
        "check_terminal_requirements": bool(terminal_tool.check_terminal_requirements()),
    }
