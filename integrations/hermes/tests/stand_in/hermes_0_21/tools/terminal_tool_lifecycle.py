"""Stand-in for upstream's tools/terminal_tool_lifecycle.py: the live environment of a task."""


def get_active_env(task_id: str):
    from tools.terminal_tool import _active_environments, _env_lock, _resolve_container_task_id

    with _env_lock:
        return _active_environments.get(_resolve_container_task_id(task_id)) or _active_environments.get(task_id)
