"""Stand-in for Hermes 0.19.0's tools/process_registry.py: background jobs of container backends.

As in Hermes, the job is started through the environment's execute() in the tool's thread, and
then polled from a thread of its own, which does not carry the message's session ContextVars.
"""

import shlex
import threading
import time
import uuid
from dataclasses import dataclass, field


@dataclass
class ProcessSession:
    id: str
    command: str
    task_id: str = ""
    session_key: str = ""
    cwd: str = None
    pid: int = None
    output: str = ""
    exited: bool = False
    env_ref: object = None
    done: threading.Event = field(default_factory=threading.Event)


class ProcessRegistry:
    def __init__(self):
        self._sessions = {}
        self._lock = threading.Lock()

    def spawn_via_env(self, env, command: str, cwd: str = None, task_id: str = "", session_key: str = "",
                      timeout: int = 10) -> ProcessSession:
        session = ProcessSession(id=f"proc_{uuid.uuid4().hex[:12]}", command=command, task_id=task_id,
                                 session_key=session_key, cwd=cwd, env_ref=env)
        temp_dir = env.get_temp_dir() if hasattr(env, "get_temp_dir") else "/tmp"
        log_path = f"{temp_dir}/hermes_bg_{session.id}.log"
        pid_path = f"{temp_dir}/hermes_bg_{session.id}.pid"
        wrapped = f"(sh -c {shlex.quote(command)}) > {log_path} 2>&1 & echo $! > {pid_path}; cat {pid_path}"
        result = env.execute(wrapped, timeout=timeout)
        try:
            session.pid = int(result.get("output", "").strip().splitlines()[-1])
        except (ValueError, IndexError):
            session.output = result.get("output", "")
            session.exited = True
            session.done.set()
            return session
        with self._lock:
            self._sessions[session.id] = session
        threading.Thread(target=self._env_poller_loop, args=(session, env, log_path, pid_path), daemon=True,
                         name=f"proc-poller-{session.id}").start()
        return session

    def _env_poller_loop(self, session: ProcessSession, env, log_path: str, pid_path: str) -> None:
        while not session.exited:
            result = env.execute(
                f"cat {log_path} 2>/dev/null; "
                f"kill -0 $(cat {pid_path}) 2>/dev/null && echo __RUNNING__ || echo __EXITED__",
                timeout=10,
            )
            text = result.get("output", "")
            if "__EXITED__" in text or "__RUNNING__" not in text:
                session.output = text.replace("__EXITED__", "").strip()
                session.exited = True
                session.done.set()
                return
            time.sleep(0.2)

    def poll(self, session_id: str) -> dict:
        with self._lock:
            session = self._sessions.get(session_id)
        if session is None:
            return {"status": "not_found"}
        return {"status": "exited" if session.exited else "running", "output": session.output}


process_registry = ProcessRegistry()
