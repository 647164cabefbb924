"""Stand-in for what Hermes 0.19.0's cron/scheduler.py does around a job that the bridge can see.

The gateway's ticker runs due jobs from a background thread of its own, where no message's
session ContextVars are set. ``run_job`` puts the job's origin (its platform and chat, no user,
no session key) into ``os.environ`` so the agent's tools know the chat, runs the job, and takes
them out again; ``gateway.session_context.get_session_env`` falls back to ``os.environ`` for a
ContextVar that was never set, so that is what the terminal tool sees.
"""

import os
from typing import Any, Callable

_ORIGIN_VARIABLES = ("HERMES_SESSION_PLATFORM", "HERMES_SESSION_CHAT_ID", "HERMES_SESSION_CHAT_NAME")


def _resolve_origin(job: dict) -> dict | None:
    origin = job.get("origin")
    if not origin or not origin.get("platform") or not origin.get("chat_id"):
        return None
    return origin


def run_job(job: dict, run_agent: Callable[[], Any]) -> Any:
    """Runs one job's agent turn (``run_agent``) with the job's origin in ``os.environ``, as Hermes does."""
    origin = _resolve_origin(job)
    try:
        if origin:
            os.environ["HERMES_SESSION_PLATFORM"] = origin["platform"]
            os.environ["HERMES_SESSION_CHAT_ID"] = str(origin["chat_id"])
            if origin.get("chat_name"):
                os.environ["HERMES_SESSION_CHAT_NAME"] = origin["chat_name"]
        return run_agent()
    finally:
        for name in _ORIGIN_VARIABLES:
            os.environ.pop(name, None)
