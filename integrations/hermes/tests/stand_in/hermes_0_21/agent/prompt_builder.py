"""Stand-in for upstream's agent/prompt_builder.py: which terminal backends keep files on another machine."""

_REMOTE_TERMINAL_BACKENDS = frozenset({"ssh", "daytona", "vercel_sandbox", "modal", "singularity"})


def _plugin_backend_is_remote(backend: str) -> bool:
    """A plugin's backend is remote when its provider says so (``is_remote``, True by default)."""
    from agent.terminal_env_registry import get_provider

    provider = get_provider(backend)
    return bool(provider is not None and getattr(provider, "is_remote", False))
