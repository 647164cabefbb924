"""Stand-in for Hermes 0.19.0's cron/jobs.py (release commit 3ef6bbd): the job store, in memory.

Line numbers are of the real file at that commit; bodies are the stand-in's own. Hermes keeps
jobs in ``$HERMES_HOME/cron/jobs.json`` and parses schedules; the stand-in keeps them in this
process and makes a new or triggered job due at the next tick, which is all the bridge can see.
"""

import threading
import uuid
from datetime import datetime, timedelta
from typing import Any, Dict, List, Optional

_lock = threading.Lock()
_jobs: List[Dict[str, Any]] = []
_outputs: Dict[str, List[str]] = {}


def create_job(prompt: str, schedule: str, name: Optional[str] = None, deliver: Optional[str] = None,
               origin: Optional[Dict[str, Any]] = None, **kwargs: Any) -> Dict[str, Any]:
    """:1072-1260 — ``deliver`` defaults to ``origin`` when there is one (:1149-1150); the id is 12 hex (:1152)."""
    job = {
        "id": uuid.uuid4().hex[:12], "name": name or prompt[:50], "prompt": prompt, "schedule": schedule,
        "deliver": deliver if deliver is not None else ("origin" if origin else "local"),
        "origin": origin, "enabled": True, "next_run_at": datetime.now().isoformat(), **kwargs,
    }
    with _lock:
        _jobs.append(job)
    return dict(job)


def list_jobs(include_disabled: bool = False) -> List[Dict[str, Any]]:
    """:1317-1335 — every job in the store, whoever made it."""
    with _lock:
        return [dict(job) for job in _jobs if include_disabled or job.get("enabled")]


def get_job(job_id: str) -> Optional[Dict[str, Any]]:
    with _lock:
        return next((dict(job) for job in _jobs if job["id"] == job_id), None)


def trigger_job(job_id: str) -> Optional[Dict[str, Any]]:
    """:1475-1489 — due at the next tick."""
    with _lock:
        for job in _jobs:
            if job["id"] == job_id:
                job["next_run_at"] = datetime.now().isoformat()
                return dict(job)
    return None


def advance_next_run(job_id: str) -> bool:
    """:1705-1740 — moved past now before the run starts (at-most-once)."""
    with _lock:
        for job in _jobs:
            if job["id"] == job_id:
                job["next_run_at"] = (datetime.now() + timedelta(hours=1)).isoformat()
                return True
    return False


def get_due_jobs() -> List[Dict[str, Any]]:
    """:1806-1822 — the enabled jobs whose ``next_run_at`` has come."""
    now = datetime.now().isoformat()
    with _lock:
        return [dict(job) for job in _jobs if job.get("enabled") and job["next_run_at"] <= now]


def create_execution(job_id: str, source: str = "builtin") -> Dict[str, Any]:
    """A run's record (cron/scheduler.py:4023 records it before dispatch)."""
    return {"id": uuid.uuid4().hex, "job_id": job_id, "source": source}


def save_job_output(job_id: str, output: str) -> None:
    """:2208 — Hermes writes a file per run; the stand-in keeps the runs' outputs in order."""
    with _lock:
        _outputs.setdefault(job_id, []).append(output)


def job_outputs(job_id: str) -> List[str]:
    """The stand-in's own reader of what ``save_job_output`` kept."""
    with _lock:
        return list(_outputs.get(job_id, []))
