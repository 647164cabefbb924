"""Stand-in for Hermes 0.19.0's gateway/session_context.py: the session ContextVars of a message."""

import os
from contextvars import ContextVar
from typing import List

_UNSET = object()

_SESSION_PLATFORM: ContextVar = ContextVar("HERMES_SESSION_PLATFORM", default=_UNSET)
_SESSION_CHAT_ID: ContextVar = ContextVar("HERMES_SESSION_CHAT_ID", default=_UNSET)
_SESSION_CHAT_NAME: ContextVar = ContextVar("HERMES_SESSION_CHAT_NAME", default=_UNSET)
_SESSION_THREAD_ID: ContextVar = ContextVar("HERMES_SESSION_THREAD_ID", default=_UNSET)
_SESSION_USER_ID: ContextVar = ContextVar("HERMES_SESSION_USER_ID", default=_UNSET)
_SESSION_USER_NAME: ContextVar = ContextVar("HERMES_SESSION_USER_NAME", default=_UNSET)
_SESSION_KEY: ContextVar = ContextVar("HERMES_SESSION_KEY", default=_UNSET)

_VAR_ORDER = [
    _SESSION_PLATFORM,
    _SESSION_CHAT_ID,
    _SESSION_CHAT_NAME,
    _SESSION_THREAD_ID,
    _SESSION_USER_ID,
    _SESSION_USER_NAME,
    _SESSION_KEY,
]
_VAR_MAP = {var.name: var for var in _VAR_ORDER}


def set_session_vars(
    platform: str = "",
    chat_id: str = "",
    chat_name: str = "",
    thread_id: str = "",
    user_id: str = "",
    user_name: str = "",
    session_key: str = "",
) -> List:
    values = [platform, chat_id, chat_name, thread_id, user_id, user_name, session_key]
    return [var.set(value) for var, value in zip(_VAR_ORDER, values)]


def clear_session_vars(tokens: List) -> None:
    if not tokens:
        return
    for var, token in zip(_VAR_ORDER, tokens):
        var.reset(token)


def get_session_env(name: str, default: str = "") -> str:
    """The ContextVar wins when it was ever set in this context (even to ""); else os.environ; else default."""
    var = _VAR_MAP.get(name)
    if var is not None:
        value = var.get()
        if value is not _UNSET:
            return value
    return os.getenv(name, default)
