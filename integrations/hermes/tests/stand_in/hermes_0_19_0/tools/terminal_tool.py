"""Stand-in for Hermes 0.19.0's tools/terminal_tool.py (release commit 3ef6bbd): what the bridge touches.

Line numbers are of the real file at that commit; bodies are the stand-in's own.
"""

import json
import logging
import os
import threading
import time
from typing import Any, Dict

from tools.interrupt import is_interrupted  # noqa: F401 - re-exported, as in Hermes

logger = logging.getLogger(__name__)

_active_environments: Dict[str, Any] = {}
_last_activity: Dict[str, float] = {}
_env_lock = threading.Lock()
_creation_locks: Dict[str, threading.Lock] = {}
_creation_locks_lock = threading.Lock()
_task_env_overrides: Dict[str, Dict[str, Any]] = {}


def _get_env_config() -> Dict[str, Any]:
    """From the TERMINAL_* variables the gateway bridged from config.yaml's terminal: section."""
    env_type = os.getenv("TERMINAL_ENV", "local")
    cwd = os.getenv("TERMINAL_CWD", "")
    if env_type == "docker" and (not cwd or not cwd.startswith(("/workspace", "/root"))):
        # A host path would not exist in the sandbox.
        cwd = "/root"
    return {
        "env_type": env_type,
        "docker_image": os.getenv("TERMINAL_DOCKER_IMAGE", "nikolaik/python-nodejs:python3.11-nodejs20"),
        "cwd": cwd or os.getcwd(),
        "timeout": int(os.getenv("TERMINAL_TIMEOUT", "180")),
        "lifetime_seconds": int(os.getenv("TERMINAL_LIFETIME_SECONDS", "300")),
        "container_cpu": float(os.getenv("TERMINAL_CONTAINER_CPU", "1")),
        "container_memory": int(os.getenv("TERMINAL_CONTAINER_MEMORY", "5120")),
        "container_disk": int(os.getenv("TERMINAL_CONTAINER_DISK", "51200")),
        "container_persistent": os.getenv("TERMINAL_CONTAINER_PERSISTENT", "true").lower() in ("true", "1", "yes"),
        "docker_volumes": json.loads(os.getenv("TERMINAL_DOCKER_VOLUMES", "[]")),
        "docker_forward_env": json.loads(os.getenv("TERMINAL_DOCKER_FORWARD_ENV", "[]")),
        "docker_env": json.loads(os.getenv("TERMINAL_DOCKER_ENV", "{}")),
        "docker_mount_cwd_to_workspace": False,
        "docker_run_as_host_user": False,
        "host_cwd": None,
    }


def register_task_env_overrides(task_id: str, overrides: Dict[str, Any]) -> None:
    """:1125-1141 — what an RL environment registers for its rollout (an image: a sandbox of its own)."""
    _task_env_overrides[task_id] = overrides


def _resolve_container_task_id(task_id: str = None) -> str:
    """:1175-1207 — every task id collapses to "default" (one container for every chat, cron job and
    subagent), unless an RL benchmark registered an image override for it."""
    isolation_keys = {"docker_image", "modal_image", "singularity_image", "daytona_image", "env_type"}
    if task_id and set(_task_env_overrides.get(task_id, {})) & isolation_keys:
        return task_id
    return "default"


def _create_environment(env_type: str, image: str, cwd: str, timeout: int,
                        ssh_config: dict = None, container_config: dict = None,
                        local_config: dict = None,
                        task_id: str = "default",
                        host_cwd: str = None):
    """A hard-coded if/elif over the built-in backends; any other name is a ValueError."""
    cc = container_config or {}
    if env_type == "local":
        from tools.environments.local import LocalEnvironment

        return LocalEnvironment(cwd=cwd, timeout=timeout, persistent=bool((local_config or {}).get("persistent")))
    elif env_type == "docker":
        from tools.environments.docker import DockerEnvironment

        return DockerEnvironment(
            image=image, cwd=cwd, timeout=timeout,
            cpu=cc.get("container_cpu", 1), memory=cc.get("container_memory", 5120),
            disk=cc.get("container_disk", 51200), persistent_filesystem=cc.get("container_persistent", True),
            task_id=task_id, volumes=cc.get("docker_volumes", []), forward_env=cc.get("docker_forward_env", []),
            env=cc.get("docker_env", {}), host_cwd=host_cwd,
        )
    elif env_type in ("singularity", "modal", "daytona", "ssh"):
        raise ImportError(f"the {env_type} backend is not part of the stand-in")
    raise ValueError(
        f"Unknown environment type: {env_type}. Use 'local', 'docker', 'singularity', 'modal', 'daytona', or 'ssh'"
    )


def _container_config(config: Dict[str, Any]) -> Dict[str, Any]:
    keys = ("container_cpu", "container_memory", "container_disk", "container_persistent", "docker_volumes",
            "docker_mount_cwd_to_workspace", "docker_forward_env", "docker_env", "docker_run_as_host_user")
    return {key: config.get(key) for key in keys}


def get_or_create_environment(task_id: str = None) -> Any:
    """The cached environment of the (collapsed) task, created on first use; shared by tools."""
    config = _get_env_config()
    env_type = config["env_type"]
    effective_task_id = _resolve_container_task_id(task_id)
    with _env_lock:
        env = _active_environments.get(effective_task_id)
        if env is not None:
            _last_activity[effective_task_id] = time.time()
            return env
    with _creation_locks_lock:
        task_lock = _creation_locks.setdefault(effective_task_id, threading.Lock())
    with task_lock:
        with _env_lock:
            env = _active_environments.get(effective_task_id)
            if env is not None:
                return env
        new_env = _create_environment(
            env_type=env_type,
            image=config["docker_image"] if env_type == "docker" else "",
            cwd=config["cwd"],
            timeout=config["timeout"],
            ssh_config=None,
            container_config=_container_config(config) if env_type == "docker" else None,
            local_config={"persistent": False} if env_type == "local" else None,
            task_id=effective_task_id,
            host_cwd=config.get("host_cwd"),
        )
        with _env_lock:
            _active_environments[effective_task_id] = new_env
            _last_activity[effective_task_id] = time.time()
        return new_env


def terminal_tool(command: str, background: bool = False, timeout: int = None, task_id: str = None,
                  force: bool = False, workdir: str = None, check_interval: int = None, pty: bool = False) -> str:
    """The terminal tool: Hermes' JSON answer, errors as one ``error`` string."""
    try:
        config = _get_env_config()
        effective_timeout = timeout or config["timeout"]
        try:
            env = get_or_create_environment(task_id)
        except ImportError as e:
            return json.dumps({
                "output": "",
                "exit_code": -1,
                "error": f"Terminal tool disabled: environment creation failed ({e})",
                "status": "disabled",
            }, ensure_ascii=False)
        if background:
            from gateway.session_context import get_session_env
            from tools.process_registry import process_registry

            session = process_registry.spawn_via_env(
                env, command, cwd=workdir, task_id=_resolve_container_task_id(task_id),
                session_key=get_session_env("HERMES_SESSION_KEY", ""),
            )
            return json.dumps({"output": "Background process started", "session_id": session.id,
                               "pid": session.pid, "exit_code": 0, "error": None}, ensure_ascii=False)
        execute_kwargs = {"timeout": effective_timeout}
        if workdir:
            execute_kwargs["cwd"] = workdir
        result = env.execute(command, **execute_kwargs)
        return json.dumps({"output": result.get("output", "").strip(), "exit_code": result.get("returncode", 0),
                           "error": None}, ensure_ascii=False)
    except Exception as e:
        import traceback

        logger.error("terminal_tool exception:\n%s", traceback.format_exc())
        return json.dumps({
            "output": "",
            "exit_code": -1,
            "error": f"Failed to execute command: {str(e)}",
            "status": "error",
        }, ensure_ascii=False)


def check_terminal_requirements() -> bool:
    """False for any name this if/elif does not know."""
    env_type = _get_env_config()["env_type"]
    if env_type == "local":
        return True
    if env_type == "docker":
        from tools.environments.docker import find_docker

        return bool(find_docker())
    return False


def cleanup_all_environments() -> int:
    """What the gateway calls when it stops: every cached environment's cleanup()."""
    with _env_lock:
        envs = list(_active_environments.items())
        _active_environments.clear()
    for _task_id, env in envs:
        try:
            env.cleanup()
        except Exception:
            logger.debug("cleanup failed", exc_info=True)
    return len(envs)
