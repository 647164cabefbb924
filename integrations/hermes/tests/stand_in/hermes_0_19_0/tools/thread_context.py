"""Stand-in for Hermes 0.19.0's tools/thread_context.py (release commit 3ef6bbd)."""

import contextvars
from typing import Any, Callable


def propagate_context_to_thread(target: Callable) -> Callable:
    """:64-85 — called on the parent thread: the callable runs in a copy of the parent's context."""
    context = contextvars.copy_context()

    def run(*args: Any, **kwargs: Any) -> Any:
        return context.run(target, *args, **kwargs)

    return run
