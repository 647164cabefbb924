"""Stand-in for Hermes 0.19.0's cron/scheduler.py (release commit 3ef6bbd): how a job's agent runs.

Every behaviour the bridge can see, with the line of the real file at that commit it models;
bodies are the stand-in's own. The gateway's ticker thread (a plain thread: no message's
ContextVars) calls ``tick()``; each due job runs in a context copied for it, with every
``HERMES_SESSION_*`` ContextVar blanked on purpose — the job's origin is delivery routing, not a
sender — and the agent's tools see task ``default``.
"""

import concurrent.futures
import contextvars
import logging
import os
import threading
from datetime import datetime
from typing import Any, Dict, List, Optional, Tuple

from cron.jobs import advance_next_run, create_execution, get_due_jobs, save_job_output

logger = logging.getLogger(__name__)

_CRON_DELIVERY_VARS = (
    "HERMES_CRON_AUTO_DELIVER_PLATFORM", "HERMES_CRON_AUTO_DELIVER_CHAT_ID", "HERMES_CRON_AUTO_DELIVER_THREAD_ID",
)

_running_lock = threading.Lock()
_running_job_ids: set = set()

# What _deliver_result would send (job id, target, text): the stand-in delivers nowhere.
delivered: List[Tuple[str, Optional[Dict[str, Any]], str]] = []


def _resolve_origin(job: dict) -> Optional[dict]:
    """:602-622 — the job's stored origin when it names a platform and a chat."""
    origin = job.get("origin")
    if isinstance(origin, dict) and origin.get("platform") and origin.get("chat_id"):
        return origin
    return None


def _resolve_delivery_target(job: dict) -> Optional[dict]:
    """:1136-1330 — ``origin`` (the default) is the stored origin, ``platform:chat[:thread]`` names one
    explicitly, ``local`` is none. (Home-channel fallbacks and fan-out are left out.)"""
    deliver = str(job.get("deliver") or "local").split(",")[0].strip()
    if deliver == "origin":
        origin = _resolve_origin(job)
        return {"platform": origin["platform"], "chat_id": str(origin["chat_id"]),
                "thread_id": origin.get("thread_id")} if origin else None
    if ":" in deliver:
        platform, rest = deliver.split(":", 1)
        chat_id, _, thread_id = rest.partition(":")
        return {"platform": platform.lower(), "chat_id": chat_id, "thread_id": thread_id or None}
    return None


def run_job(job: dict, *, defer_agent_teardown: Optional[list] = None) -> Tuple[bool, str, str, Optional[str]]:
    """:2659 — one job's agent turn. Returns (success, output document, final response, error)."""
    from gateway.session_context import _VAR_MAP, clear_session_vars, set_session_vars
    from run_agent import AIAgent

    job_id = job["id"]
    prompt = job.get("prompt") or ""
    # :2910 — the agent's session id.
    cron_session_id = f"cron_{job_id}_{datetime.now():%Y%m%d_%H%M%S}"
    # :2920 — process-wide, and never taken out again.
    os.environ["HERMES_CRON_SESSION"] = "1"
    # :2947-2965 — every HERMES_SESSION_* ContextVar set to "" on purpose (no os.environ fallback).
    tokens = set_session_vars(platform="", chat_id="", chat_name="", async_delivery=False)
    # :2966-2971 — the delivery variables blanked, then set when a target resolves (:3041-3048).
    for name in _CRON_DELIVERY_VARS:
        _VAR_MAP[name].set("")
    try:
        target = _resolve_delivery_target(job)
        if target:
            _VAR_MAP["HERMES_CRON_AUTO_DELIVER_PLATFORM"].set(target["platform"])
            _VAR_MAP["HERMES_CRON_AUTO_DELIVER_CHAT_ID"].set(str(target["chat_id"]))
            _VAR_MAP["HERMES_CRON_AUTO_DELIVER_THREAD_ID"].set(
                "" if target.get("thread_id") is None else str(target["thread_id"]))
        # :3340-3371 — the agent, made in this context: it publishes its session id here.
        agent = AIAgent(platform="cron", session_id=cron_session_id)
        # :3427-3432 — the turn runs in a worker thread, in a copy of this context.
        pool = concurrent.futures.ThreadPoolExecutor(max_workers=1)
        try:
            result = pool.submit(contextvars.copy_context().run, agent.run_conversation, prompt).result()
        finally:
            pool.shutdown(wait=False)
        final_response = str(result.get("final_response") or "")
        return True, f"# Cron Job: {job.get('name')}\n\n{final_response}", final_response, None
    except Exception as error:
        logger.exception("Job '%s' failed", job_id)
        return False, "", "", str(error)
    finally:
        # :3625-3628 — the job's session and delivery variables cleared again.
        clear_session_vars(tokens)
        for name in _CRON_DELIVERY_VARS:
            _VAR_MAP[name].set("")


def run_one_job(job: dict, *, adapters: Any = None, loop: Any = None, verbose: bool = False) -> bool:
    """:3711 — run (by this module's global ``run_job``, :3778), save the output, deliver to the target."""
    success, output, final_response, error = run_job(job, defer_agent_teardown=[])
    save_job_output(job["id"], final_response if success else f"error: {error}")
    delivered.append((job["id"], _resolve_delivery_target(job), final_response or str(error)))
    return True


def tick(verbose: bool = True, adapters: Any = None, loop: Any = None) -> int:
    """:3888 — every due job advanced first (:3948-3949), then run in parallel, each in a context
    copied for it (:4025) after its execution record (:4023); returns how many ran."""
    due_jobs = get_due_jobs()
    for job in due_jobs:
        advance_next_run(job["id"])
    if not due_jobs:
        return 0
    futures = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=len(due_jobs)) as pool:
        for job in due_jobs:
            with _running_lock:
                if job["id"] in _running_job_ids:
                    continue
                _running_job_ids.add(job["id"])
            execution = create_execution(job["id"], source="builtin")
            dispatched = dict(job, execution_id=execution["id"])
            context = contextvars.copy_context()

            def run_and_release(j: dict = dispatched, ctx: contextvars.Context = context) -> bool:
                try:
                    return ctx.run(run_one_job, j, adapters=adapters, loop=loop, verbose=verbose)
                finally:
                    with _running_lock:
                        _running_job_ids.discard(j["id"])

            futures.append(pool.submit(run_and_release))
    for future in futures:
        future.result()
    return len(futures)
