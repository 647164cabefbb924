"""0.19.0's stand-in prompt builder, with upstream's remote plugin backends (a provider's ``is_remote``)."""

from pathlib import Path

_BASE = Path(__file__).resolve().parents[2] / "hermes_0_19_0" / "agent" / "prompt_builder.py"
exec(compile(_BASE.read_text(encoding="utf-8"), str(_BASE), "exec"))  # noqa: S102 - the 0.19.0 body

_REMOTE_TERMINAL_BACKENDS = frozenset({"ssh", "daytona", "vercel_sandbox", "modal", "singularity"})


def _plugin_backend_is_remote(backend: str) -> bool:
    """A plugin's backend is remote when its provider says so (``is_remote``, True by default)."""
    from agent.terminal_env_registry import get_provider

    provider = get_provider(backend)
    return bool(provider is not None and getattr(provider, "is_remote", False))


def _is_remote(backend: str) -> bool:
    return backend in _REMOTE_TERMINAL_BACKENDS or _plugin_backend_is_remote(backend)
