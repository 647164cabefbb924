"""Stand-in for Hermes 0.19.0's send_message tool (tools/send_message_tool.py ~l.438, research notes §3):
the agent sends a message with MEDIA: files to a chat; the files pass the same class-level checks."""

import asyncio


def send_message(adapter, chat_id: str, message: str) -> dict:
    from gateway.platforms.base import BasePlatformAdapter

    media_files, cleaned = BasePlatformAdapter.extract_media(message)
    media_files = BasePlatformAdapter.filter_media_delivery_paths(media_files)

    async def deliver() -> None:
        if cleaned:
            await adapter.send(chat_id, cleaned)
        for path, _is_voice in media_files:
            await adapter.send_document(chat_id, path)

    asyncio.run(deliver())
    return {"success": True, "media": [path for path, _ in media_files]}
