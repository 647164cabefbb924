"""Stand-in for Hermes 0.19.0's plugin loader (hermes_cli/plugins.py at release commit 3ef6bbd).

Directory plugins ($HERMES_HOME/plugins/<name>/ with plugin.yaml and register(ctx) in
__init__.py) and pip packages with an entry point in group ``hermes_agent.plugins``; every
plugin is opt-in through ``plugins.enabled``. 0.19.0's PluginContext has no way to register a
terminal backend.
"""

import importlib.metadata
import importlib.util
import logging
import sys
import types
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, List

import yaml

from hermes_constants import get_hermes_home
from hermes_cli.config import load_config

logger = logging.getLogger(__name__)

ENTRY_POINTS_GROUP = "hermes_agent.plugins"


@dataclass
class PluginManifest:
    name: str
    version: str = ""
    description: str = ""
    author: str = ""
    requires_env: List[Any] = field(default_factory=list)
    provides_tools: List[str] = field(default_factory=list)
    provides_hooks: List[str] = field(default_factory=list)
    kind: str = "standalone"
    source: str = ""


class PluginContext:
    """What register(ctx) receives in 0.19.0."""

    def __init__(self, manifest: PluginManifest, manager: "PluginManager"):
        self.manifest = manifest
        self._manager = manager

    def register_tool(self, name: str, toolset: str, schema: dict, handler: Callable, check_fn: Callable = None,
                      **kwargs) -> None:
        self._manager.tools[name] = {"toolset": toolset, "schema": schema, "handler": handler}

    def register_hook(self, hook_name: str, callback: Callable) -> None:
        self._manager.hooks.setdefault(hook_name, []).append(callback)

    def register_middleware(self, middleware: Any) -> None:
        self._manager.middleware.append(middleware)


class PluginManager:
    context_class = PluginContext

    def __init__(self):
        self.loaded: Dict[str, Any] = {}
        self.errors: Dict[str, str] = {}
        self.tools: Dict[str, Any] = {}
        self.hooks: Dict[str, List[Callable]] = {}
        self.middleware: List[Any] = []
        self._discovered = False

    def _enabled(self) -> List[str]:
        plugins = (load_config().get("plugins") or {})
        return list(plugins.get("enabled") or [])

    def discover_and_load(self) -> None:
        # hermes_cli/plugins.py:1279-1287 — once per process: a second call changes nothing.
        if self._discovered:
            return
        self._discovered = True
        enabled = set(self._enabled())
        plugins_dir = get_hermes_home() / "plugins"
        if plugins_dir.is_dir():
            for plugin_dir in sorted(plugins_dir.iterdir()):
                manifest_file = plugin_dir / "plugin.yaml"
                if not manifest_file.is_file():
                    continue
                data = yaml.safe_load(manifest_file.read_text(encoding="utf-8")) or {}
                manifest = PluginManifest(**{k: v for k, v in data.items() if k in PluginManifest.__dataclass_fields__})
                manifest.source = "user"
                if manifest.name in enabled:
                    self._load_directory_plugin(manifest, plugin_dir)
        for entry_point in importlib.metadata.entry_points(group=ENTRY_POINTS_GROUP):
            if entry_point.name not in enabled or entry_point.name in self.loaded:
                continue
            manifest = PluginManifest(name=entry_point.name, source="entrypoint")
            self._call_register(manifest, lambda: entry_point.load())

    def _load_directory_plugin(self, manifest: PluginManifest, plugin_dir: Path) -> None:
        def load() -> types.ModuleType:
            if "hermes_plugins" not in sys.modules:
                namespace = types.ModuleType("hermes_plugins")
                namespace.__path__ = []
                sys.modules["hermes_plugins"] = namespace
            module_name = f"hermes_plugins.{manifest.name}"
            spec = importlib.util.spec_from_file_location(
                module_name, plugin_dir / "__init__.py", submodule_search_locations=[str(plugin_dir)]
            )
            module = importlib.util.module_from_spec(spec)
            sys.modules[module_name] = module
            spec.loader.exec_module(module)
            return module

        self._call_register(manifest, load)

    def _call_register(self, manifest: PluginManifest, load: Callable[[], Any]) -> None:
        try:
            module = load()
            register = getattr(module, "register")
            register(self.context_class(manifest, self))
            self.loaded[manifest.name] = module
        except Exception as e:  # a plugin that fails is disabled; Hermes keeps running
            logger.warning("Plugin '%s' failed to load: %s", manifest.name, e)
            self.errors[manifest.name] = str(e)

    def invoke_hook(self, hook_name: str, **kwargs: Any) -> List[Any]:
        """Every callback of ``hook_name`` with ``kwargs``; non-None returns collected, exceptions logged and
        swallowed, as Hermes' ``PluginManager.invoke_hook`` (hermes_cli/plugins.py:1892 at 3ef6bbd)."""
        kwargs.setdefault("telemetry_schema_version", 1)
        results: List[Any] = []
        for callback in self.hooks.get(hook_name, []):
            try:
                value = callback(**kwargs)
                if value is not None:
                    results.append(value)
            except Exception as e:
                name = getattr(callback, "__name__", callback)
                logger.warning("Hook '%s' callback %s raised: %s", hook_name, name, e)
        return results


_manager: PluginManager = None


def get_plugin_manager() -> PluginManager:
    global _manager
    if _manager is None:
        _manager = PluginManager()
    return _manager


def discover_plugins() -> PluginManager:
    manager = get_plugin_manager()
    manager.discover_and_load()
    return manager


def invoke_hook(hook_name: str, **kwargs: Any) -> List[Any]:
    return get_plugin_manager().invoke_hook(hook_name, **kwargs)
