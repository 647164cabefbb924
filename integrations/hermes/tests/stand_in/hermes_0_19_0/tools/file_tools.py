"""Stand-in for Hermes 0.19.0's file tools: shell commands through the task's terminal environment."""

import json
import os
import shlex


def _get_env(task_id: str = "default"):
    # Looked up when the tool runs, so a plugin's replacement is seen.
    from tools import terminal_tool

    return terminal_tool.get_or_create_environment(task_id)


class ShellFileOperations:
    def __init__(self, terminal_env, cwd: str = None):
        self.env = terminal_env
        self.cwd = cwd or getattr(terminal_env, "cwd", "") or "/"
        # Container backends are told apart by their class name.
        self.is_container = "docker" in type(terminal_env).__name__.lower()

    def _path(self, path: str) -> str:
        if self.is_container:
            return "/root" + path[1:] if path.startswith("~") else path
        return os.path.expanduser(path)

    def _exec(self, command: str, stdin_data: str = None) -> dict:
        return self.env.execute(command, cwd=self.cwd, stdin_data=stdin_data)

    def read_file(self, path: str) -> dict:
        result = self._exec(f"cat -- {shlex.quote(self._path(path))}")
        if result.get("returncode"):
            return {"error": result.get("output", "").strip() or f"cannot read {path}"}
        return {"content": result.get("output", "")}

    def write_file(self, path: str, content: str) -> dict:
        target = shlex.quote(self._path(path))
        result = self._exec(f"mkdir -p -- \"$(dirname -- {target})\" && cat > {target}", stdin_data=content)
        if result.get("returncode"):
            return {"error": result.get("output", "").strip() or f"cannot write {path}"}
        return {"bytes_written": len(content.encode("utf-8"))}


def read_file_tool(path: str, task_id: str = "default") -> str:
    try:
        return json.dumps(ShellFileOperations(_get_env(task_id)).read_file(path), ensure_ascii=False)
    except Exception as e:
        return json.dumps({"error": str(e)}, ensure_ascii=False)


def write_file_tool(path: str, content: str, task_id: str = "default") -> str:
    try:
        return json.dumps(ShellFileOperations(_get_env(task_id)).write_file(path, content), ensure_ascii=False)
    except Exception as e:
        return json.dumps({"error": str(e)}, ensure_ascii=False)
