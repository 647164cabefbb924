"""Stand-in for Hermes 0.19.0's Telegram adapter, plugins/platforms/telegram/adapter.py (commit 3ef6bbd, the
v0.19.0 release), talking to a fake bot.

Bodies of the stand-in's own, behaving as Hermes' do where the bridge can tell; each behaviour
names the lines of Hermes 0.19.0 it models. Inbound, ``event_for`` builds the ``MessageEvent``
``_handle_media_message`` builds for a direct message: the attachment cached in the shared cache,
its **host** path in ``event.media_urls``. Outbound, each ``send_*`` checks that the host path
exists, opens it and hands the open file to the bot. ``FakeBot`` is the tests' own Bot API: it
records each call, with the bytes it read from the file it was handed.
"""

import logging
import os
import re
from types import SimpleNamespace
from typing import Any, Dict, List, Optional
from urllib.parse import unquote

from gateway.platforms.base import (
    BasePlatformAdapter, MessageEvent, MessageType, SendResult, cache_audio_from_bytes, cache_document_from_bytes,
    cache_image_from_bytes, cache_video_from_bytes,
)
from gateway.session import SessionSource
from tools.credential_files import to_agent_visible_cache_path

logger = logging.getLogger(__name__)

# Tables Hermes keeps in its base module and this adapter imports:
# Hermes 0.19.0 gateway/platforms/base.py:925-931, 1364-1387, 1401-1415
SUPPORTED_VIDEO_TYPES = {".mp4": "video/mp4", ".mov": "video/quicktime", ".webm": "video/webm",
                         ".mkv": "video/x-matroska", ".avi": "video/x-msvideo"}
_OFFICE = "application/vnd.openxmlformats-officedocument."
SUPPORTED_DOCUMENT_TYPES = {
    ".pdf": "application/pdf", ".md": "text/markdown", ".txt": "text/plain", ".csv": "text/csv", ".log": "text/plain",
    ".json": "application/json", ".xml": "application/xml", ".yaml": "application/yaml", ".yml": "application/yaml",
    ".toml": "application/toml", ".ini": "text/plain", ".cfg": "text/plain", ".zip": "application/zip",
    ".doc": "application/msword", ".docx": _OFFICE + "wordprocessingml.document", ".xls": "application/vnd.ms-excel",
    ".xlsx": _OFFICE + "spreadsheetml.sheet", ".ppt": "application/vnd.ms-powerpoint",
    ".pptx": _OFFICE + "presentationml.presentation", ".ts": "text/plain", ".py": "text/plain", ".sh": "text/plain",
}
_TEXT_INJECT_EXTENSIONS = set(
    ".txt .md .markdown .csv .tsv .log .json .jsonl .ndjson .xml .yaml .yml .toml .ini .cfg .conf .env .properties "
    ".html .htm .css .scss .sass .less .py .pyi .js .mjs .cjs .ts .tsx .jsx .sh .bash .zsh .fish .ps1 .bat .c .h "
    ".cpp .cc .hpp .cs .java .kt .go .rs .rb .php .pl .lua .r .jl .swift .m .scala .clj .ex .exs .erl .sql .graphql "
    ".proto .tf .hcl .dockerfile .makefile .cmake .gradle .rst .tex .srt .vtt .diff .patch".split())
# Hermes 0.19.0 plugins/platforms/telegram/adapter.py:282-296
_TELEGRAM_IMAGE_EXTENSIONS = {".png", ".jpg", ".jpeg", ".webp", ".gif"}
_TELEGRAM_IMAGE_MIME_TO_EXT = {"image/png": ".png", "image/jpeg": ".jpg", "image/jpg": ".jpg", "image/webp": ".webp",
                               "image/gif": ".gif"}
_TELEGRAM_IMAGE_EXT_TO_MIME = {".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".webp": "image/webp",
                               ".gif": "image/gif"}


class FakeBot:
    """The tests' Telegram Bot API: ``sent`` holds one record per message, in order."""

    def __init__(self) -> None:
        self.sent: List[Dict[str, Any]] = []

    def _record(self, kind: str, chat_id, handle=None, caption=None, **fields) -> SimpleNamespace:
        if handle is not None:  # what the bot uploads: the bytes read from the file it was handed
            fields.update(file_name=os.path.basename(handle.name), data=handle.read())
        if caption is not None:
            fields["caption"] = caption
        self.sent.append({"kind": kind, "chat_id": str(chat_id), **fields})
        return SimpleNamespace(message_id=len(self.sent))

    async def send_message(self, chat_id, text, **_):
        return self._record("text", chat_id, content=text)

    async def send_document(self, chat_id, document, filename=None, caption=None, **_):
        message = self._record("document", chat_id, document, caption)
        if filename:
            self.sent[-1]["file_name"] = filename
        return message

    async def send_photo(self, chat_id, photo, caption=None, **_):
        return self._record("photo", chat_id, photo, caption)

    async def send_voice(self, chat_id, voice, caption=None, **_):
        return self._record("voice", chat_id, voice, caption)

    async def send_audio(self, chat_id, audio, caption=None, **_):
        return self._record("audio", chat_id, audio, caption)

    async def send_video(self, chat_id, video, caption=None, **_):
        return self._record("video", chat_id, video, caption)

    async def send_media_group(self, chat_id, media, **_):
        return [self._record("photo", chat_id, handle) for handle in media]


class TelegramAdapter(BasePlatformAdapter):
    platform = "telegram"
    # Documents over 20 MB (Telegram's getFile cap; 2 GB with extra.base_url) are not downloaded.
    # Hermes 0.19.0 plugins/platforms/telegram/adapter.py:790-797
    _max_doc_bytes = 20 * 1024 * 1024

    def __init__(self) -> None:
        self._bot = FakeBot()

    @property
    def sent(self) -> List[Dict[str, Any]]:
        return self._bot.sent  # what the fake bot was asked to send, in order

    @staticmethod
    def _missing_media_path_error(label: str, path: str) -> str:
        # Hermes 0.19.0 plugins/platforms/telegram/adapter.py:6360-6373
        error = f"{label} file not found: {path}"
        if path.startswith(("/workspace/", "/output/", "/outputs/")):
            error += (" (path may only exist inside the Docker sandbox. Bind-mount a host directory and emit the "
                      "host-visible path in MEDIA: for gateway file delivery.)")
        return error

    async def _notice(self, chat_id, what: str, caption=None) -> SendResult:
        # The base adapter's fallback: a notice, never the host path. Hermes 0.19.0 gateway/platforms/base.py:3473-3610
        text = f"⚠️ Couldn't deliver the {what}."
        return await self.send(chat_id, f"{caption}\n{text}" if caption else text)

    async def _upload(self, label: str, path: str, send, field: str, **kwargs) -> SendResult:
        """The host path checked with ``os.path.exists``, then opened (links followed) and handed to the bot."""
        if not os.path.exists(path):
            return SendResult(success=False, error=self._missing_media_path_error(label, path))
        with open(path, "rb") as handle:
            message = await send(**kwargs, **{field: handle})
        return SendResult(success=True, message_id=str(message.message_id))

    async def send(self, chat_id: str, content: str, reply_to=None, metadata=None) -> SendResult:
        message = await self._bot.send_message(chat_id=chat_id, text=content)
        return SendResult(success=True, message_id=str(message.message_id))

    async def send_document(self, chat_id: str, file_path: str, caption=None, file_name=None, reply_to=None,
                            metadata=None, **kwargs) -> SendResult:
        # Hermes 0.19.0 plugins/platforms/telegram/adapter.py:6728-6780
        try:
            return await self._upload("File", file_path, self._bot.send_document, "document", chat_id=chat_id,
                                      filename=file_name or os.path.basename(file_path), caption=caption)
        except Exception as error:
            logger.warning("[telegram] Failed to send document: %s", error)
            return await self._notice(chat_id, f"file attachment ({file_name})" if file_name else "file attachment",
                                      caption)

    async def send_image_file(self, chat_id: str, image_path: str, caption=None, reply_to=None, metadata=None,
                              **kwargs) -> SendResult:
        # As a photo, else as a document. Hermes 0.19.0 plugins/platforms/telegram/adapter.py:6635-6726
        try:
            return await self._upload("Image", image_path, self._bot.send_photo, "photo", chat_id=chat_id,
                                      caption=caption)
        except Exception:
            return await self.send_document(chat_id, image_path, caption=caption,
                                            file_name=os.path.basename(image_path))

    async def send_voice(self, chat_id: str, audio_path: str, caption=None, reply_to=None, metadata=None,
                         **kwargs) -> SendResult:
        # .ogg/.opus as voice, .mp3/.m4a as audio, others as a document.
        # Hermes 0.19.0 plugins/platforms/telegram/adapter.py:6401-6498
        ext = os.path.splitext(audio_path)[1].lower()
        if os.path.exists(audio_path) and ext not in {".ogg", ".opus", ".mp3", ".m4a"}:
            return await self.send_document(chat_id, audio_path, caption=caption)
        voice = ext in {".ogg", ".opus"}
        try:
            return await self._upload("Audio", audio_path, self._bot.send_voice if voice else self._bot.send_audio,
                                      "voice" if voice else "audio", chat_id=chat_id, caption=caption)
        except Exception:
            return await self._notice(chat_id, "audio attachment", caption)

    async def send_video(self, chat_id: str, video_path: str, caption=None, reply_to=None, metadata=None,
                         **kwargs) -> SendResult:
        # Hermes 0.19.0 plugins/platforms/telegram/adapter.py:6782-6830
        try:
            return await self._upload("Video", video_path, self._bot.send_video, "video", chat_id=chat_id,
                                      caption=caption)
        except Exception:
            return await self._notice(chat_id, "video attachment", caption)

    async def send_multiple_images(self, chat_id: str, images, metadata=None, human_delay: float = 0.0) -> None:
        """Albums of up to 10: each ``file://`` host path that exists opened and handed to ``send_media_group``;
        a failed album sent photo by photo. Hermes 0.19.0 plugins/platforms/telegram/adapter.py:6500-6634"""
        for start in range(0, len(images), 10):
            chunk = [unquote(url[7:]) for url, _ in images[start:start + 10] if url.startswith("file://")]
            handles: List[Any] = []
            try:
                for path in chunk:
                    if os.path.exists(path):
                        handles.append(open(path, "rb"))
                    else:
                        logger.warning("[telegram] Skipping missing image in media group: %s", path)
                if handles:
                    await self._bot.send_media_group(chat_id=chat_id, media=handles)
            except Exception:
                for path in chunk:
                    await self.send_image_file(chat_id, path)
            finally:
                for handle in handles:
                    handle.close()

    # -- inbound --------------------------------------------------------------------------------
    def event_for(self, user_id: str, *, text: str = "", kind: str = "", data: bytes = b"", file_name: str = "",
                  mime_type: str = "", replied_to: Optional[Dict[str, Any]] = None) -> MessageEvent:
        """The MessageEvent for a direct message from ``user_id``, its caption ``text`` and its attachment
        of ``kind`` (photo, voice, audio, video, document or none) cached as Hermes caches it.
        Hermes 0.19.0 plugins/platforms/telegram/adapter.py:7758-7770, 8372-8650

        ``replied_to`` (``kind``, ``data``, ``name``, ``mime``): a text message that replies to a message
        with that attachment, which Hermes caches too (see ``_cache_replied_media``)."""
        if replied_to is not None and not kind:
            event = self.event_for(user_id, text=text)
            self._cache_replied_media(event, replied_to)
            return event
        source = SessionSource(platform="telegram", chat_id=user_id, user_id=user_id, chat_type="dm")
        kinds = {"photo": MessageType.PHOTO, "voice": MessageType.VOICE, "audio": MessageType.AUDIO,
                 "video": MessageType.VIDEO, "document": MessageType.DOCUMENT}
        event = MessageEvent(text=text, message_type=kinds.get(kind, MessageType.TEXT), source=source)
        # Photo: .jpg unless Telegram's file path names another; voice .ogg; audio .mp3; video .mp4.
        # Hermes 0.19.0 plugins/platforms/telegram/adapter.py:8419-8449, 8451-8467, 8468-8484, 8486-8509
        if kind == "photo":
            event.media_urls, event.media_types = [cache_image_from_bytes(data, ".jpg")], ["image/jpg"]
        elif kind == "voice":
            event.media_urls, event.media_types = [cache_audio_from_bytes(data, ".ogg")], ["audio/ogg"]
        elif kind == "audio":
            event.media_urls, event.media_types = [cache_audio_from_bytes(data, ".mp3")], ["audio/mp3"]
        elif kind == "video":
            event.media_urls, event.media_types = [cache_video_from_bytes(data, ".mp4")], ["video/mp4"]
        elif kind == "document":
            self._cache_document(event, data, file_name, mime_type)
        return event

    def _cache_document(self, event: MessageEvent, raw: bytes, original_filename: str, mime_type: str) -> None:
        # Hermes 0.19.0 plugins/platforms/telegram/adapter.py:8511-8643
        ext = os.path.splitext(original_filename)[1].lower() if original_filename else ""
        doc_mime = (mime_type or "").lower()
        if not ext and doc_mime:
            ext = _TELEGRAM_IMAGE_MIME_TO_EXT.get(doc_mime) or {v: k for k, v in SUPPORTED_DOCUMENT_TYPES.items()}.get(
                doc_mime, "")
        # Too large, or of unknown (or zero) size: not downloaded.
        # Hermes 0.19.0 plugins/platforms/telegram/adapter.py:8532-8542
        if not raw or len(raw) > self._max_doc_bytes:
            event.text = ("The document is too large or its size could not be verified. "
                          f"Maximum: {self._max_doc_bytes // (1024 * 1024)} MB.")
            return
        # An image sent as a file goes to the image cache. Hermes 0.19.0 plugins/platforms/telegram/adapter.py:8544-8575
        if ext in _TELEGRAM_IMAGE_EXTENSIONS or doc_mime.startswith("image/"):
            image_ext = ext if ext in _TELEGRAM_IMAGE_EXTENSIONS else _TELEGRAM_IMAGE_MIME_TO_EXT.get(doc_mime, ".jpg")
            try:
                path = cache_image_from_bytes(raw, ext=image_ext)
            except ValueError:
                event.text = (f"Image document '{original_filename or doc_mime or ext or 'unknown'}' "
                              "could not be read as an image.")
                return
            event.message_type, event.media_urls = MessageType.PHOTO, [path]
            event.media_types = [doc_mime if doc_mime.startswith("image/")
                                 else _TELEGRAM_IMAGE_EXT_TO_MIME.get(image_ext, "image/jpeg")]
            return
        if not ext and mime_type:
            ext = {v: k for k, v in SUPPORTED_VIDEO_TYPES.items()}.get(mime_type, "")
        if ext in SUPPORTED_VIDEO_TYPES:  # Hermes 0.19.0 plugins/platforms/telegram/adapter.py:8577-8596
            event.message_type, event.media_urls = MessageType.VIDEO, [cache_video_from_bytes(raw, ext=ext)]
            event.media_types = [SUPPORTED_VIDEO_TYPES[ext]]
            return
        # Any other file: cached, with its known MIME, else Telegram's, else octet-stream.
        # Hermes 0.19.0 plugins/platforms/telegram/adapter.py:8603-8614
        event.media_urls = [cache_document_from_bytes(raw, original_filename or f"document{ext or '.bin'}")]
        event.media_types = [SUPPORTED_DOCUMENT_TYPES.get(ext) or mime_type or "application/octet-stream"]
        # A text file of 100 KB or less that decodes as UTF-8 also goes before the caption.
        # Hermes 0.19.0 plugins/platforms/telegram/adapter.py:8616-8637
        if (ext in _TEXT_INJECT_EXTENSIONS or doc_mime.startswith("text/")) and len(raw) <= 100 * 1024:
            try:
                text_content = raw.decode("utf-8")
            except UnicodeDecodeError:
                return
            display_name = re.sub(r"[^\w.\- ]", "_", original_filename or f"document{ext or '.txt'}")
            injection = f"[Content of {display_name}]:\n{text_content}"
            event.text = f"{injection}\n\n{event.text}" if event.text else injection

    def _cache_replied_media(self, event: MessageEvent, replied: Dict[str, Any]) -> None:
        """The replied-to message's attachment cached through ``cache_media_bytes``, whose path is the
        **agent-visible** one (``/root/.hermes/cache/…`` under the docker backend): that path, not the host
        path, goes into ``event.media_urls`` and into a note after the text.
        Hermes 0.19.0 plugins/platforms/telegram/adapter.py:7828-7887, 7889-7895"""
        kind, data = replied.get("kind", ""), bytes(replied.get("data") or b"")
        # What _observed_media_source gives (Hermes 0.19.0 plugins/platforms/telegram/adapter.py:7874-7887).
        filename, mime, default_kind = {
            "photo": ("", "", "image"), "video": ("", "video/mp4", "video"),
            "voice": ("voice.ogg", "audio/ogg", "audio"), "audio": (replied.get("name") or "", "", "audio"),
            "document": (replied.get("name") or "", (replied.get("mime") or "").lower(), None),
        }.get(kind, (None, "", None))
        if filename is None or not 0 < len(data) <= self._max_doc_bytes:
            return
        # No name: the base name of the fake Bot API's getFile path.
        filename = filename or {"photo": "file_0.jpg", "video": "file_0.mp4", "audio": "file_0.mp3"}.get(kind, "file_0")
        cached = _cache_media_bytes(data, filename=filename, mime_type=mime, default_kind=default_kind)
        if cached is None:
            return
        path, media_type, cached_kind, display = cached
        event.media_urls.append(path)
        event.media_types.append(media_type)
        if len(event.media_urls) == 1 and cached_kind in ("image", "video"):
            event.message_type = MessageType.PHOTO if cached_kind == "image" else MessageType.VIDEO
        note = f"[Replied-to {cached_kind} '{display}' saved at: {path}]"
        event.text = f"{event.text}\n\n{note}" if event.text else note


def _cache_media_bytes(data: bytes, *, filename: str = "", mime_type: str = "", default_kind=None):
    """``(agent-visible path, MIME, kind, display name)`` of the bytes cached by kind, or None for an image
    that is none. Hermes 0.19.0 gateway/platforms/base.py:1651-1734 (``cache_media_bytes``)"""
    ext, mime = os.path.splitext(filename)[1].lower(), (mime_type or "").lower()
    # SUPPORTED_IMAGE_DOCUMENT_TYPES, as _TELEGRAM_IMAGE_EXT_TO_MIME: Hermes 0.19.0 gateway/platforms/base.py:1428-1434
    if not ext and mime:
        tables = (_TELEGRAM_IMAGE_EXT_TO_MIME, SUPPORTED_VIDEO_TYPES, SUPPORTED_DOCUMENT_TYPES)
        ext = next((e for table in tables for e, m in table.items() if m == mime), "")
    display = re.sub(r"[^\w.\- ]", "_", filename) if filename else (ext.lstrip(".") or "file")
    if mime.startswith("image/") or ext in _TELEGRAM_IMAGE_EXT_TO_MIME or default_kind == "image":
        image_ext = ext if ext in _TELEGRAM_IMAGE_EXT_TO_MIME else ".jpg"
        try:
            path = cache_image_from_bytes(data, ext=image_ext)
        except ValueError:
            return None
        out = mime if mime.startswith("image/") else _TELEGRAM_IMAGE_EXT_TO_MIME.get(image_ext, "image/jpeg")
        return to_agent_visible_cache_path(path), out, "image", display
    if mime.startswith("video/") or ext in SUPPORTED_VIDEO_TYPES or default_kind == "video":
        video_ext = ext if ext in SUPPORTED_VIDEO_TYPES else ".mp4"
        path = cache_video_from_bytes(data, ext=video_ext)
        return to_agent_visible_cache_path(path), SUPPORTED_VIDEO_TYPES.get(video_ext, "video/mp4"), "video", display
    if mime.startswith("audio/") or default_kind == "audio":
        audio_ext = ext if ext in {".ogg", ".mp3", ".wav", ".m4a", ".opus", ".flac"} else ".ogg"
        out = mime if mime.startswith("audio/") else f"audio/{audio_ext.lstrip('.')}"
        return to_agent_visible_cache_path(cache_audio_from_bytes(data, ext=audio_ext)), out, "audio", display
    fallback_name = filename or (f"document{ext}" if ext else "document.bin")
    path = cache_document_from_bytes(data, fallback_name)
    out = SUPPORTED_DOCUMENT_TYPES.get(ext) or mime or "application/octet-stream"
    return to_agent_visible_cache_path(path), out, "document", display or fallback_name
