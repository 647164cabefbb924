"""0.19.0's stand-in plugin loader, whose PluginContext can register a terminal backend."""

from pathlib import Path

_BASE = Path(__file__).resolve().parents[2] / "hermes_0_19_0" / "hermes_cli" / "plugins.py"
exec(compile(_BASE.read_text(encoding="utf-8"), str(_BASE), "exec"))  # noqa: S102 - the 0.19.0 body


class _ProviderPluginContext(PluginContext):  # noqa: F821 - the 0.19.0 body's, run above
    def register_terminal_environment_provider(self, provider) -> None:
        from agent.terminal_env_registry import register_provider

        register_provider(provider)


PluginManager.context_class = _ProviderPluginContext  # noqa: F821 - the 0.19.0 body's, run above
