"""0.19.0's stand-in terminal tool, with upstream's plugin backends in _create_environment."""

from pathlib import Path

_BASE = Path(__file__).resolve().parents[2] / "hermes_0_19_0" / "tools" / "terminal_tool.py"
exec(compile(_BASE.read_text(encoding="utf-8"), str(_BASE), "exec"))  # noqa: S102 - the 0.19.0 body

_builtin_create_environment = _create_environment  # noqa: F821 - the 0.19.0 body's, run above
_builtin_check_terminal_requirements = check_terminal_requirements  # noqa: F821 - the 0.19.0 body's, run above


def _create_environment(env_type: str, image: str, cwd: str, timeout: int,
                        ssh_config: dict = None, container_config: dict = None,
                        local_config: dict = None,
                        task_id: str = "default",
                        host_cwd: str = None):
    from agent.terminal_env_registry import BUILTIN_BACKEND_NAMES, get_provider, plugin_backend_names

    if env_type in BUILTIN_BACKEND_NAMES:
        return _builtin_create_environment(env_type, image, cwd, timeout, ssh_config=ssh_config,
                                           container_config=container_config, local_config=local_config,
                                           task_id=task_id, host_cwd=host_cwd)
    provider = get_provider(env_type)
    if provider is None:
        raise ValueError(f"Unknown environment type: {env_type}. Plugin backends: {plugin_backend_names()}")
    env = provider.create_environment(cwd=cwd, timeout=timeout, task_id=task_id, image=image,
                                      container_config=container_config or {}, host_cwd=host_cwd)
    env._hermes_backend_name = provider.name
    return env


def check_terminal_requirements() -> bool:
    from agent.terminal_env_registry import get_provider

    provider = get_provider(_get_env_config()["env_type"])  # noqa: F821 - the 0.19.0 body's, run above
    if provider is not None:
        return bool(provider.check_requirements(_get_env_config()))  # noqa: F821 - the 0.19.0 body's, run above
    return _builtin_check_terminal_requirements()
