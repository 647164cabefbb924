"""The delegated-child mark of upstream Hermes, only as far as ``current_cron_execution`` reads it.

Written from upstream ``agent/delegation_context.py`` at fc368b1f785e7c4d856e6b817c6f5c1ab18d8cf1:
the ContextVar ``hermes_delegated_child_context``, default False (:20-23); ``delegated_child_context``
(:48-65), which sets it for a ``delegate_task`` child (upstream also scopes the child's session id
there, :58-63, which the stand-in leaves out); and ``is_delegated_child_context`` (:68-70).
"""

from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar
from typing import Iterator

_DELEGATED_CHILD_CONTEXT: ContextVar[bool] = ContextVar("hermes_delegated_child_context", default=False)


@contextmanager
def delegated_child_context() -> Iterator[None]:
    token = _DELEGATED_CHILD_CONTEXT.set(True)
    try:
        yield
    finally:
        _DELEGATED_CHILD_CONTEXT.reset(token)


def is_delegated_child_context() -> bool:
    return bool(_DELEGATED_CHILD_CONTEXT.get())
