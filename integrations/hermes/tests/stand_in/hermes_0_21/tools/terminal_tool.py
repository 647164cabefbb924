"""0.19.0's stand-in terminal tool, with upstream's plugin backends in _create_environment, and, as
upstream's tools/terminal_tool.py at 027fc6674891a55bf5745d66391f14ed18b90b2b does, its settings read
through the turn's terminal scope (``_tenv``) and environments keyed per session or routed profile home
(``_resolve_container_task_id``, ``_routed_home_task_key``); the terminal tool refuses under a refusal
scope (tools/terminal_scope.py's ``enforce_no_refusal``: "Execution paths (terminal tool, execute_code)
call this before spawning anything"). Bodies are the stand-in's own."""

from pathlib import Path

_BASE = Path(__file__).resolve().parents[2] / "hermes_0_19_0" / "tools" / "terminal_tool.py"
exec(compile(_BASE.read_text(encoding="utf-8"), str(_BASE), "exec"))  # noqa: S102 - the 0.19.0 body

_builtin_create_environment = _create_environment  # noqa: F821 - the 0.19.0 body's, run above
_builtin_check_terminal_requirements = check_terminal_requirements  # noqa: F821 - the 0.19.0 body's, run above
_builtin_terminal_tool = terminal_tool  # noqa: F821 - the 0.19.0 body's, run above


def _get_env_config():
    """The 0.19.0 projection, each ``TERMINAL_*`` read through ``terminal_env`` (``_tenv``): only the
    turn's scope while one is bound, never the launch process's environment."""
    from tools.terminal_scope import terminal_env as _tenv

    env_type = _tenv("TERMINAL_ENV", "local")
    cwd = _tenv("TERMINAL_CWD", "")
    if env_type == "docker" and (not cwd or not cwd.startswith(("/workspace", "/root"))):
        cwd = "/root"
    return {
        "env_type": env_type,
        "docker_image": _tenv("TERMINAL_DOCKER_IMAGE", "nikolaik/python-nodejs:python3.11-nodejs20"),
        "cwd": cwd or os.getcwd(),  # noqa: F821 - the 0.19.0 body's import
        "timeout": int(_tenv("TERMINAL_TIMEOUT", "180")),
        "lifetime_seconds": int(_tenv("TERMINAL_LIFETIME_SECONDS", "300")),
        "container_cpu": float(_tenv("TERMINAL_CONTAINER_CPU", "1")),
        "container_memory": int(_tenv("TERMINAL_CONTAINER_MEMORY", "5120")),
        "container_disk": int(_tenv("TERMINAL_CONTAINER_DISK", "51200")),
        "container_persistent": _tenv("TERMINAL_CONTAINER_PERSISTENT", "true").lower() in ("true", "1", "yes"),
        "docker_volumes": json.loads(_tenv("TERMINAL_DOCKER_VOLUMES", "[]")),  # noqa: F821
        "docker_forward_env": json.loads(_tenv("TERMINAL_DOCKER_FORWARD_ENV", "[]")),  # noqa: F821
        "docker_env": json.loads(_tenv("TERMINAL_DOCKER_ENV", "{}")),  # noqa: F821
        "docker_mount_cwd_to_workspace": False,
        "docker_run_as_host_user": False,
        "host_cwd": None,
    }


def _routed_home_task_key():
    """``_routed_home_task_key`` (:435-456): a session-less call of a routed profile home keys that home."""
    from hermes_constants import get_hermes_home_override, profile_name_for_home

    override = get_hermes_home_override()
    if not override:
        return None
    profile = profile_name_for_home(override)
    if profile and profile != "default":
        return f"profile:{profile}"
    return f"home:{os.path.realpath(override)}"  # noqa: F821 - the 0.19.0 body's import


def _resolve_container_task_id(task_id: str = None) -> str:
    """``_resolve_container_task_id`` (:459-505): image overrides key their own; a session key keys
    ``session:<key>`` (every backend but persistent Docker); no session key: the routed home's key,
    else ``"default"``."""
    from gateway.session_context import get_session_env

    isolation_keys = {"docker_image", "modal_image", "singularity_image", "daytona_image", "env_type"}
    if task_id and set(_task_env_overrides.get(task_id, {})) & isolation_keys:  # noqa: F821
        return task_id
    session_key = get_session_env("HERMES_SESSION_KEY", "")
    if session_key:
        return f"session:{session_key}"
    return _routed_home_task_key() or "default"


def terminal_tool(command: str, background: bool = False, timeout: int = None, task_id: str = None,
                  force: bool = False, workdir: str = None, check_interval: int = None, pty: bool = False) -> str:
    from tools.terminal_scope import TerminalPolicyUnavailable, enforce_no_refusal

    try:
        enforce_no_refusal()
    except TerminalPolicyUnavailable as error:
        return json.dumps({"output": "", "exit_code": -1, "error": str(error), "status": "error"})  # noqa: F821
    return _builtin_terminal_tool(command, background=background, timeout=timeout, task_id=task_id, force=force,
                                  workdir=workdir, check_interval=check_interval, pty=pty)


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
