"""A stand-in Hermes gateway with the bridge loaded (``gateway_driver.py``, in a process of its own),
driven one JSON line at a time.
"""

from __future__ import annotations

import json
import signal
import subprocess
from pathlib import Path
from typing import Any


class Gateway:
    """One stand-in Hermes gateway process with the bridge loaded."""

    def __init__(self, home: Path, process: subprocess.Popen[str], log: Path) -> None:
        self.home = home
        self.process = process
        self.log = log
        self.environment: dict[str, str] = {}
        """The gateway process's environment (conftest.make_gateway)."""
        self.ready = json.loads(self._read_line())

    @property
    def socket(self) -> Path:
        return self.home / "run" / "berth.sock"

    @property
    def sandbox_dir(self) -> Path:
        return self.home / "sandboxes"

    def _read_line(self) -> str:
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line:
            raise AssertionError(f"the gateway exited ({self.process.poll()}); its log:\n{self.log_text()}")
        return line

    def send(self, action: dict) -> Any:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(action) + "\n")
        self.process.stdin.flush()
        answer = json.loads(self._read_line())
        if "error" in answer:
            raise AssertionError(f"driver error: {answer['error']}")
        return answer["ok"]

    def terminal(self, command: str, session: dict | None = None, **options: Any) -> dict:
        return self.send({"op": "call", "tool": "terminal", "command": command, "session": session, **options})

    def state(self) -> dict:
        return self.send({"op": "state"})

    def log_text(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace") if self.log.exists() else ""

    def stop(self) -> int:
        if self.process.poll() is None:
            try:
                self.send_exit()
                self.process.wait(timeout=20)
            except Exception:
                self.process.kill()
                self.process.wait()
        return self.process.returncode

    def send_exit(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps({"op": "exit"}) + "\n")
        self.process.stdin.flush()
        self.process.stdin.close()

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait()
