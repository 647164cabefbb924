"""Stand-in for Hermes 0.19.0's gateway/session_context.py (release commit 3ef6bbd).

Modelled from the real file, line by line where the bridge can tell the difference; every line
number below is of that file at that commit. Bodies are the stand-in's own.
"""

import os
from contextvars import ContextVar
from typing import Any, List

# :45 — "never set in this context" (falls back to os.environ) versus "" (cleared: no fallback).
_UNSET: Any = object()

# :59 — set by the first set_session_vars() of the process, never cleared.
_session_context_engaged: bool = False

# :73-121 — one ContextVar per session field, each defaulting to _UNSET.
_SESSION_PLATFORM: ContextVar = ContextVar("HERMES_SESSION_PLATFORM", default=_UNSET)
_SESSION_SOURCE: ContextVar = ContextVar("HERMES_SESSION_SOURCE", default=_UNSET)
_SESSION_CHAT_ID: ContextVar = ContextVar("HERMES_SESSION_CHAT_ID", default=_UNSET)
_SESSION_CHAT_NAME: ContextVar = ContextVar("HERMES_SESSION_CHAT_NAME", default=_UNSET)
_SESSION_THREAD_ID: ContextVar = ContextVar("HERMES_SESSION_THREAD_ID", default=_UNSET)
_SESSION_USER_ID: ContextVar = ContextVar("HERMES_SESSION_USER_ID", default=_UNSET)
_SESSION_USER_NAME: ContextVar = ContextVar("HERMES_SESSION_USER_NAME", default=_UNSET)
_SESSION_KEY: ContextVar = ContextVar("HERMES_SESSION_KEY", default=_UNSET)
_SESSION_ID: ContextVar = ContextVar("HERMES_SESSION_ID", default=_UNSET)
_SESSION_UI_SESSION_ID: ContextVar = ContextVar("HERMES_UI_SESSION_ID", default=_UNSET)
_SESSION_MESSAGE_ID: ContextVar = ContextVar("HERMES_SESSION_MESSAGE_ID", default=_UNSET)
_SESSION_PROFILE: ContextVar = ContextVar("HERMES_SESSION_PROFILE", default=_UNSET)
_SESSION_ASYNC_DELIVERY: ContextVar = ContextVar("HERMES_SESSION_ASYNC_DELIVERY", default=_UNSET)
_CRON_AUTO_DELIVER_PLATFORM: ContextVar = ContextVar("HERMES_CRON_AUTO_DELIVER_PLATFORM", default=_UNSET)
_CRON_AUTO_DELIVER_CHAT_ID: ContextVar = ContextVar("HERMES_CRON_AUTO_DELIVER_CHAT_ID", default=_UNSET)
_CRON_AUTO_DELIVER_THREAD_ID: ContextVar = ContextVar("HERMES_CRON_AUTO_DELIVER_THREAD_ID", default=_UNSET)

# :123-139 — the names get_session_env() knows; the async-delivery flag is not among them.
_VAR_MAP = {
    var.name: var
    for var in (
        _SESSION_PLATFORM, _SESSION_SOURCE, _SESSION_CHAT_ID, _SESSION_CHAT_NAME, _SESSION_THREAD_ID,
        _SESSION_USER_ID, _SESSION_USER_NAME, _SESSION_KEY, _SESSION_ID, _SESSION_UI_SESSION_ID,
        _SESSION_MESSAGE_ID, _SESSION_PROFILE, _CRON_AUTO_DELIVER_PLATFORM, _CRON_AUTO_DELIVER_CHAT_ID,
        _CRON_AUTO_DELIVER_THREAD_ID,
    )
}

# :228-241 — what clear_session_vars() sets to "" (the cron delivery variables are not among them).
_CLEARED = (
    _SESSION_PLATFORM, _SESSION_SOURCE, _SESSION_CHAT_ID, _SESSION_CHAT_NAME, _SESSION_THREAD_ID, _SESSION_USER_ID,
    _SESSION_USER_NAME, _SESSION_KEY, _SESSION_ID, _SESSION_UI_SESSION_ID, _SESSION_MESSAGE_ID, _SESSION_PROFILE,
)


def session_context_engaged() -> bool:
    return _session_context_engaged


def set_current_session_id(session_id: str) -> None:
    """:142-154 — the agent's session id, in os.environ (process-wide) and in this context's ContextVar."""
    os.environ["HERMES_SESSION_ID"] = session_id
    _SESSION_ID.set(session_id)


def set_session_vars(platform: str = "", source: str = "", chat_id: str = "", chat_name: str = "",
                     thread_id: str = "", user_id: str = "", user_name: str = "", session_key: str = "",
                     session_id: str = "", message_id: str = "", profile: str = "", cwd: str = "",
                     async_delivery: bool = True, ui_session_id: str = "") -> List:
    """:157-214 — every session field set at once (absent ones to ""); the session id too."""
    global _session_context_engaged
    _session_context_engaged = True
    values = {
        _SESSION_PLATFORM: platform, _SESSION_SOURCE: source, _SESSION_CHAT_ID: chat_id,
        _SESSION_CHAT_NAME: chat_name, _SESSION_THREAD_ID: thread_id, _SESSION_USER_ID: user_id,
        _SESSION_USER_NAME: user_name, _SESSION_KEY: session_key, _SESSION_ID: session_id,
        _SESSION_UI_SESSION_ID: ui_session_id, _SESSION_MESSAGE_ID: message_id, _SESSION_PROFILE: profile,
        _SESSION_ASYNC_DELIVERY: bool(async_delivery),
    }
    return [var.set(value) for var, value in values.items()]


def clear_session_vars(tokens: List) -> None:
    """:217-253 — every field set to "" (not reset: "" stops the os.environ fallback); tokens are ignored."""
    for var in _CLEARED:
        var.set("")
    _SESSION_ASYNC_DELIVERY.set(_UNSET)


def reset_session_vars() -> None:
    """:256-301 — every mapped variable back to _UNSET, at the top of each message's handler."""
    for var in _VAR_MAP.values():
        var.set(_UNSET)
    _SESSION_ASYNC_DELIVERY.set(_UNSET)


def get_session_env(name: str, default: str = "") -> str:
    """:304-327 — the ContextVar when it was ever set here (even to ""); else os.environ; else default."""
    var = _VAR_MAP.get(name)
    if var is not None:
        value = var.get()
        if value is not _UNSET:
            return value
    return os.getenv(name, default)


def async_delivery_supported() -> bool:
    """:355-373."""
    value = _SESSION_ASYNC_DELIVERY.get()
    return True if value is _UNSET else bool(value)
