"""0.19.0's stand-in plugin loader, whose PluginContext can register a terminal backend, and which skips a
directory plugin whose ``requires_hermes`` the running version does not meet (hermes_cli/plugins_manifest.py
at 0006718: "Unsatisfied plugins are recorded with an error and skipped before import")."""

from pathlib import Path

_BASE = Path(__file__).resolve().parents[2] / "hermes_0_19_0" / "hermes_cli" / "plugins.py"
exec(compile(_BASE.read_text(encoding="utf-8"), str(_BASE), "exec"))  # noqa: S102 - the 0.19.0 body


class _ProviderPluginContext(PluginContext):  # noqa: F821 - the 0.19.0 body's, run above
    def register_terminal_environment_provider(self, provider) -> None:
        from agent.terminal_env_registry import register_provider

        register_provider(provider)


PluginManager.context_class = _ProviderPluginContext  # noqa: F821 - the 0.19.0 body's, run above


_builtin_load_directory_plugin = PluginManager._load_directory_plugin  # noqa: F821 - the 0.19.0 body's


def _load_directory_plugin(self, manifest, plugin_dir) -> None:
    from hermes_cli.plugins_manifest import requires_hermes_error

    data = yaml.safe_load((plugin_dir / "plugin.yaml").read_text(encoding="utf-8")) or {}  # noqa: F821
    refused = requires_hermes_error(str(data.get("requires_hermes") or "").strip())
    if refused:
        self.errors[manifest.name] = refused
        return
    _builtin_load_directory_plugin(self, manifest, plugin_dir)


PluginManager._load_directory_plugin = _load_directory_plugin  # noqa: F821 - the 0.19.0 body's
