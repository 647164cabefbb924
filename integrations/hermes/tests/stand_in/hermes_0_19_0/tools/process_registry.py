"""Stand-in for Hermes 0.19.0's tools/process_registry.py: background jobs of container backends.

As in Hermes, the job is started through the environment's execute() in the tool's thread, and
then polled from a thread of its own, which does not carry the message's session ContextVars.
Every ":N" below is a line of upstream's tools/process_registry.py at commit 7e3acd02d.
"""

import shlex
import threading
import time
import uuid
from dataclasses import dataclass, field

POLL_SECONDS = 0.5


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
    exit_code: int = None
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
        exit_path = f"{temp_dir}/hermes_bg_{session.id}.exit"
        # Upstream's wrapper (tools/process_registry.py:869-874 at 7e3acd02d), with `sh -c` for its
        # `nohup bash -lc`: the base image has no bash.
        wrapped = (f"mkdir -p {shlex.quote(temp_dir)} && ( sh -c {shlex.quote(command)} > {log_path} 2>&1; "
                   f"rc=$?; printf '%s\\n' \"$rc\" > {exit_path} ) & echo $! > {pid_path} && cat {pid_path}")
        result = env.execute(wrapped, timeout=timeout)
        # The pid is the first line of digits; none is a failed start (:884-898).
        for line in result.get("output", "").strip().splitlines():
            if line.strip().isdigit():
                session.pid = int(line.strip())
                break
        if session.pid is None:
            session.output = result.get("output", "").strip()
            session.exited = True
            session.done.set()
            return session
        with self._lock:
            self._sessions[session.id] = session
        # A poller thread of its own, without the message's ContextVars (:909-916).
        threading.Thread(target=self._env_poller_loop, args=(session, env, log_path, pid_path, exit_path),
                         daemon=True, name=f"proc-poller-{session.id}").start()
        return session

    def _env_poller_loop(self, session: ProcessSession, env, log_path: str, pid_path: str, exit_path: str) -> None:
        # As upstream's loop (tools/process_registry.py:981-1037 at 7e3acd02d), every POLL_SECONDS
        # (upstream: 2 s, :990): the log is read, then the job's liveness asked in a second command, and
        # only a last line other than 0 ends it, so an empty answer does not; an exception loses the
        # job. Upstream reads no more after the end: output written between the two commands is lost.
        while not session.exited:
            time.sleep(POLL_SECONDS)
            try:
                text = env.execute(f"cat {log_path} 2>/dev/null", timeout=10).get("output", "")
                if text:
                    session.output = text.strip()
                check = env.execute(f'kill -0 "$(cat {pid_path} 2>/dev/null)" 2>/dev/null; echo $?', timeout=5)
                lines = check.get("output", "").strip().splitlines()
                if lines and lines[-1].strip() != "0":
                    try:
                        session.exit_code = int(env.execute(f"cat {exit_path} 2>/dev/null", timeout=5)
                                                .get("output", "").strip().splitlines()[-1])
                    except (ValueError, IndexError):
                        session.exit_code = -1
                    session.exited = True
                    session.done.set()
                    return
            except Exception:
                session.exit_code = -1
                session.exited = True
                session.done.set()
                return

    def poll(self, session_id: str) -> dict:
        # Upstream's answer carries the exit code once the job ended (:1333-1357), output trimmed here.
        with self._lock:
            session = self._sessions.get(session_id)
        if session is None:
            return {"status": "not_found"}
        return {"status": "exited" if session.exited else "running", "output": session.output,
                "exit_code": session.exit_code}


process_registry = ProcessRegistry()
