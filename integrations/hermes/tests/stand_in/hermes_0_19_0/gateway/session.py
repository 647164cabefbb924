"""Stand-in for Hermes 0.19.0's gateway/session.py (release commit 3ef6bbd): a message's source and its key.

Line numbers are of the real file at that commit; bodies are the stand-in's own.
"""

from dataclasses import dataclass
from typing import Optional

from gateway.config import Platform


@dataclass
class SessionSource:
    """:148-182 — where a message came from. ``user_id`` is None for a message without a sender."""

    platform: Platform
    chat_id: str
    chat_name: Optional[str] = None
    chat_type: str = "dm"  # "dm", "group", "channel", "thread"
    user_id: Optional[str] = None
    user_name: Optional[str] = None
    thread_id: Optional[str] = None
    user_id_alt: Optional[str] = None
    message_id: Optional[str] = None
    profile: Optional[str] = None

    def __post_init__(self) -> None:
        # The stand-in's adapters may pass the platform's name; Hermes' own pass the enum member.
        if isinstance(self.platform, str):
            self.platform = Platform(self.platform)


@dataclass
class SessionContext:
    """:298-316 — what the gateway builds for a message (``build_session_context``, :2780)."""

    source: SessionSource
    session_key: str = ""
    session_id: str = ""


def _session_key_namespace(profile: Optional[str]) -> str:
    """:884-901 — ``agent:main`` unless a named profile is multiplexed."""
    return "agent:main" if not profile or profile == "default" else f"agent:{profile}"


def build_session_key(source: SessionSource, group_sessions_per_user: bool = True,
                      thread_sessions_per_user: bool = False, profile: Optional[str] = None) -> str:
    """:904-990 — DMs by chat (else sender), groups and channels by chat, plus thread, plus sender when
    the group isolates participants (threads are shared unless ``thread_sessions_per_user``).
    The WhatsApp id canonicalisation of :942 and :955 is left out (the tests use Telegram)."""
    namespace = _session_key_namespace(profile)
    platform = source.platform.value
    if source.chat_type == "dm":
        peer = source.chat_id or source.user_id_alt or source.user_id
        if peer:
            return f"{namespace}:{platform}:dm:{peer}" + (f":{source.thread_id}" if source.thread_id else "")
        return f"{namespace}:{platform}:dm" + (f":{source.thread_id}" if source.thread_id else "")
    participant = source.user_id_alt or source.user_id
    parts = [namespace, platform, source.chat_type]
    if source.chat_id:
        parts.append(source.chat_id)
    if source.thread_id:
        parts.append(source.thread_id)
    isolate = group_sessions_per_user and not (source.thread_id and not thread_sessions_per_user)
    if isolate and participant:
        parts.append(str(participant))
    return ":".join(parts)
