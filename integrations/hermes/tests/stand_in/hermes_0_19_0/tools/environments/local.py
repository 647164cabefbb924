"""Stand-in for Hermes 0.19.0's tools/environments/local.py: commands run on the gateway host."""

import subprocess

from tools.environments.base import BaseEnvironment


class LocalEnvironment(BaseEnvironment):
    is_local = True

    def __init__(self, cwd: str = "", timeout: int = 60, env: dict = None, persistent: bool = False):
        super().__init__(cwd=cwd or "/tmp", timeout=timeout, env=env)

    def _run_bash(self, cmd_string, *, login=False, timeout=120, stdin_data=None):
        return subprocess.Popen(
            ["sh", "-c", cmd_string],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )

    def cleanup(self):
        pass
