"""Which cron run the current code works for, as upstream Hermes 0.21 says it to plugins.

Written from upstream ``cron/execution_identity.py`` at 542a4982711b9930f6088785a33bd6e2fc2aa927:
``CronExecution`` (:17-25), the ContextVar ``hermes_cron_execution`` (:28), ``enter_cron_execution``
(:31-43), ``exit_cron_execution`` (:46-48) and ``current_cron_execution`` (:51-54), which reads
``None`` in a delegated child (``agent.delegation_context``). Upstream takes the profile from
``profiles.current.current_profile_name("default")`` (:33, :42); the stand-in is given it.
"""

from __future__ import annotations

from contextvars import ContextVar, Token
from dataclasses import dataclass
from typing import Any, Mapping, Optional


@dataclass(frozen=True)
class CronExecution:
    job_id: str
    job_name: str
    execution_id: str
    source: str
    scheduled_instant: Optional[str]
    started_at: Optional[str]
    profile: str


_CURRENT: ContextVar[Optional[CronExecution]] = ContextVar("hermes_cron_execution", default=None)


def enter_cron_execution(
    job: Mapping[str, Any], execution_id: str, record: Mapping[str, Any], profile: str = "default"
) -> Token:
    return _CURRENT.set(CronExecution(
        job_id=str(job["id"]),
        job_name=str(job.get("name") or job["id"]),
        execution_id=str(execution_id),
        source=str(record.get("source") or ""),
        scheduled_instant=record.get("scheduled_instant"),
        started_at=record.get("started_at"),
        profile=profile or "default",
    ))


def exit_cron_execution(token: Optional[Token]) -> None:
    if token is not None:
        _CURRENT.reset(token)


def current_cron_execution() -> Optional[CronExecution]:
    from agent.delegation_context import is_delegated_child_context

    return None if is_delegated_child_context() else _CURRENT.get()
