"""Stand-in for Hermes 0.19.0's Telegram adapter (plugins/platforms/telegram/adapter.py), with a fake bot.

Inbound, as the research notes read it (§1): an addressed message's attachment is downloaded and
cached with the per-kind helper, its **host** path stored in ``event.media_urls`` and its MIME in
``event.media_types``; a text document of at most 100 KB also has its content put before the
text as ``[Content of <name>]:``. Outbound: ``send_document(chat_id, file_path, …)`` checks
``os.path.exists`` and streams the host file to the bot — here the fake bot records the bytes and
the chat, which is what the tests assert on.
"""

import os
import re
from typing import Any, Dict, List

from gateway.platforms.base import (
    BasePlatformAdapter, MessageEvent, MessageType, SendResult, cache_audio_from_bytes, cache_document_from_bytes,
    cache_image_from_bytes,
)
from gateway.session import SessionSource

_TEXT_INJECT_EXTENSIONS = {".txt", ".md", ".csv", ".log", ".json", ".yaml", ".yml", ".py", ".sh"}


class TelegramAdapter(BasePlatformAdapter):
    name = "telegram"

    def __init__(self) -> None:
        super().__init__()
        self.sent: List[Dict[str, Any]] = []  # what the fake bot was asked to send, in order

    async def send(self, chat_id: str, content: str, reply_to=None, metadata=None) -> SendResult:
        self.sent.append({"kind": "text", "chat_id": str(chat_id), "content": content})
        return SendResult(success=True)

    async def send_document(self, chat_id: str, file_path: str, caption=None, file_name=None, reply_to=None,
                            metadata=None, **kwargs) -> SendResult:
        if not os.path.exists(file_path):
            return SendResult(success=False, error=f"File not found: {file_path}")
        with open(file_path, "rb") as handle:  # by host path, as the real adapter streams it to the bot
            data = handle.read()
        self.sent.append({"kind": "document", "chat_id": str(chat_id),
                          "file_name": file_name or os.path.basename(file_path), "data": data})
        return SendResult(success=True)

    def event_for(self, user_id: str, *, text: str = "", kind: str = "", data: bytes = b"", file_name: str = "",
                  mime_type: str = "") -> MessageEvent:
        """The MessageEvent the adapter builds for a direct message, its attachment cached as Hermes caches it."""
        source = SessionSource(platform="telegram", chat_id=user_id, user_id=user_id, chat_type="dm")
        event = MessageEvent(text=text, source=source)
        if kind == "document":
            path = cache_document_from_bytes(data, file_name or "document.bin")
            ext = os.path.splitext(file_name)[1].lower()
            if len(data) <= 100 * 1024 and (ext in _TEXT_INJECT_EXTENSIONS or mime_type.startswith("text/")):
                display = re.sub(r"[^\w.\- ]", "_", os.path.basename(file_name))
                text_content = data.decode("utf-8", "replace")
                event.text = f"[Content of {display}]:\n{text_content}\n\n{text}".rstrip()
            event.message_type, event.media_urls, event.media_types = MessageType.DOCUMENT, [path], [mime_type]
        elif kind == "photo":
            path = cache_image_from_bytes(data, ".jpg")
            event.message_type, event.media_urls, event.media_types = MessageType.PHOTO, [path], ["image/jpeg"]
        elif kind == "voice":
            path = cache_audio_from_bytes(data, ".ogg")
            event.message_type, event.media_urls, event.media_types = MessageType.VOICE, [path], ["audio/ogg"]
        return event
