"""Stand-in for Hermes 0.19.0's tools/cronjob_tools.py (release commit 3ef6bbd): the agent's cron tool.

Line numbers are of the real file at that commit; bodies are the stand-in's own.
"""

import json
from typing import Dict, Optional


def _origin_from_env() -> Optional[Dict[str, Optional[str]]]:
    """:285-308 — where the job was made, from the message's session: platform and chat (both needed),
    the chat's name and thread, and the sender (kept for delivery mirroring, not used to run the job)."""
    from gateway.session_context import get_session_env

    platform = get_session_env("HERMES_SESSION_PLATFORM")
    chat_id = get_session_env("HERMES_SESSION_CHAT_ID")
    if not (platform and chat_id):
        return None
    return {
        "platform": platform, "chat_id": chat_id,
        "chat_name": get_session_env("HERMES_SESSION_CHAT_NAME") or None,
        "thread_id": get_session_env("HERMES_SESSION_THREAD_ID") or None,
        "user_id": get_session_env("HERMES_SESSION_USER_ID") or None,
    }


def cronjob(action: str, prompt: Optional[str] = None, schedule: Optional[str] = None, name: Optional[str] = None,
            deliver: Optional[str] = None, job_id: Optional[str] = None, **kwargs) -> str:
    """:659 — ``create`` (:728-743, the origin from the session) and ``list`` (:776-778: every job, whoever
    made it; no owner check anywhere in the tool)."""
    from cron.jobs import create_job, list_jobs

    if action == "create":
        job = create_job(prompt=prompt or "", schedule=schedule or "every 1h", name=name, deliver=deliver,
                         origin=_origin_from_env())
        return json.dumps({"success": True, "job_id": job["id"], "job": job})
    if action == "list":
        jobs = list_jobs()
        return json.dumps({"success": True, "count": len(jobs), "jobs": jobs})
    return json.dumps({"success": False, "error": f"the stand-in has no action {action!r}"})
