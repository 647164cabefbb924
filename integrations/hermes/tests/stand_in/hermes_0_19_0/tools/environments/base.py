"""Stand-in for Hermes 0.19.0's tools/environments/base.py."""

import os
import subprocess
from abc import ABC, abstractmethod
from pathlib import Path


def get_sandbox_dir() -> Path:
    from hermes_constants import get_hermes_home

    custom = os.getenv("TERMINAL_SANDBOX_DIR")
    path = Path(custom) if custom else get_hermes_home() / "sandboxes"
    path.mkdir(parents=True, exist_ok=True)
    return path


class BaseEnvironment(ABC):
    """Subclasses implement ``_run_bash()`` and ``cleanup()``, or override ``execute()``."""

    def get_temp_dir(self) -> str:
        return "/tmp"

    def __init__(self, cwd: str, timeout: int, env: dict = None):
        self.cwd = cwd
        self.timeout = timeout
        self.env = env or {}
        self._snapshot_path = f"{self.get_temp_dir()}/hermes-snap.sh"

    def _run_bash(self, cmd_string: str, *, login: bool = False, timeout: int = 120, stdin_data: str | None = None):
        raise NotImplementedError(f"{type(self).__name__} must implement _run_bash()")

    @abstractmethod
    def cleanup(self):
        ...

    def execute(
        self,
        command: str,
        cwd: str = "",
        *,
        timeout: int | None = None,
        stdin_data: str | None = None,
        rewrite_compound_background: bool = True,
        bounded_capture: bool = False,
    ) -> dict:
        effective_timeout = timeout or self.timeout
        effective_cwd = cwd or self.cwd
        proc = self._run_bash(f"cd {effective_cwd!r} && {command}", timeout=effective_timeout, stdin_data=stdin_data)
        try:
            output, _ = proc.communicate(input=stdin_data, timeout=effective_timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            output, _ = proc.communicate()
            return {"output": (output or "") + f"\n[Command timed out after {effective_timeout}s]", "returncode": 124}
        return {"output": output or "", "returncode": proc.returncode}

    def __del__(self):
        try:
            self.cleanup()
        except Exception:
            pass
