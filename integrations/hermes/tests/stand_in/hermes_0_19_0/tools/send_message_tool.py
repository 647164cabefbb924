"""Stand-in for Hermes 0.19.0's send_message tool, tools/send_message_tool.py (commit 3ef6bbd, the v0.19.0
release): the agent sends a message, with ``MEDIA:`` files, to a Telegram chat.

Bodies of the stand-in's own; each behaviour names the lines of Hermes 0.19.0 it models. The
files pass the same class-level checks as a reply's (``BasePlatformAdapter.extract_media`` and
``filter_media_delivery_paths``); then the tool opens each host path itself and hands it to a
Telegram bot — here the fake adapter's bot, so the tests see what was sent.
"""

import asyncio
import logging
import os

logger = logging.getLogger(__name__)

# Hermes 0.19.0 tools/send_message_tool.py:61-83
_IMAGE_EXTS = {".jpg", ".jpeg", ".png", ".webp", ".gif"}
_VIDEO_EXTS = {".mp4", ".mov", ".avi", ".mkv", ".3gp"}
_VOICE_EXTS = {".ogg", ".opus"}
_TELEGRAM_SEND_AUDIO_EXTS = {".mp3", ".m4a"}
_CAPTIONABLE_EXTS = _IMAGE_EXTS | _VIDEO_EXTS | {".pdf", ".doc", ".docx", ".txt", ".md", ".csv", ".xlsx", ".zip"}
_TELEGRAM_CAPTION_LIMIT = 1024


def send_message(adapter, chat_id: str, message: str) -> dict:
    """``send_message(action="send", target="telegram:<chat_id>", message=…)``: Hermes' result (as a dict;
    Hermes returns it as JSON), plus ``media``, the stand-in's own key: the host paths that passed the checks.

    Hermes 0.19.0 tools/send_message_tool.py:355-529 (``_handle_send``): ``[[as_document]]`` noted, the
    ``MEDIA:`` files extracted and checked (Hermes 0.19.0 tools/send_message_tool.py:433-440), then
    ``_send_telegram`` (Hermes 0.19.0 tools/send_message_tool.py:850-860).
    """
    from gateway.platforms.base import BasePlatformAdapter

    if not message:
        return {"error": "Both 'target' and 'message' are required when action='send'"}
    force_document = "[[as_document]]" in message
    media_files, cleaned = BasePlatformAdapter.extract_media(message)
    media_files = BasePlatformAdapter.filter_media_delivery_paths(media_files)
    result = asyncio.run(_send_telegram(adapter._bot, chat_id, cleaned, media_files, force_document))
    return {**result, "media": [path for path, _ in media_files]}


async def _send_telegram(bot, chat_id: str, message: str, media_files, force_document: bool = False) -> dict:
    """The text (unless it rides as the one file's caption), then each file opened by its host path and
    sent by kind; a missing file is a warning. Hermes 0.19.0 tools/send_message_tool.py:1117-1435
    """
    last_msg, warnings, caption = None, [], None
    if _media_caption(message, media_files):  # Hermes 0.19.0 tools/send_message_tool.py:1220-1227
        caption, message = message, ""
    if message.strip():
        last_msg = await bot.send_message(chat_id=chat_id, text=message)
    for media_path, is_voice in media_files:
        if not os.path.exists(media_path):
            warnings.append(f"Media file not found, skipping: {media_path}")
            logger.warning(warnings[-1])
            if caption is not None and last_msg is None:  # the caption still goes, as text
                last_msg, caption = await bot.send_message(chat_id=chat_id, text=caption), None
            continue
        ext = os.path.splitext(media_path)[1].lower()
        kwargs = {"caption": caption} if caption is not None and not (ext in _VOICE_EXTS and is_voice) else {}
        try:
            with open(media_path, "rb") as handle:
                if ext in _IMAGE_EXTS and not force_document:
                    last_msg = await bot.send_photo(chat_id=chat_id, photo=handle, **kwargs)
                elif ext in _VIDEO_EXTS:
                    last_msg = await bot.send_video(chat_id=chat_id, video=handle, **kwargs)
                elif ext in _VOICE_EXTS and is_voice:
                    last_msg = await bot.send_voice(chat_id=chat_id, voice=handle, **kwargs)
                elif ext in _TELEGRAM_SEND_AUDIO_EXTS:
                    last_msg = await bot.send_audio(chat_id=chat_id, audio=handle, **kwargs)
                else:
                    last_msg = await bot.send_document(chat_id=chat_id, document=handle, **kwargs)
        except Exception as error:
            warnings.append(f"Failed to send media {media_path}: {error}")
            logger.error(warnings[-1])
    if last_msg is None:
        error = {"error": "No deliverable text or media remained after processing MEDIA tags"}
        return {**error, "warnings": warnings} if warnings else error
    result = {"success": True, "platform": "telegram", "chat_id": chat_id, "message_id": str(last_msg.message_id)}
    return {**result, "warnings": warnings} if warnings else result


def _media_caption(text: str, media_files) -> bool:
    """True when the text goes as the caption of the one file: a photo, video or common document (not a
    voice note) and at most 1024 characters. Hermes 0.19.0 tools/send_message_tool.py:86-124"""
    if not text.strip() or len(media_files) != 1 or media_files[0][1]:
        return False
    ext = os.path.splitext(media_files[0][0])[1].lower()
    return ext in _CAPTIONABLE_EXTS and len(text.strip()) <= _TELEGRAM_CAPTION_LIMIT
