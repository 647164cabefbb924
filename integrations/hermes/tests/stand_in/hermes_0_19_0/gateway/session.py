"""Stand-in for Hermes 0.19.0's gateway/session.py: where a message came from."""

from dataclasses import dataclass
from typing import Optional


@dataclass
class SessionSource:
    platform: str
    chat_id: str
    user_id: Optional[str] = None
    chat_type: str = "dm"
    user_name: Optional[str] = None
