"""Stand-in for Hermes 0.19.0's gateway/run.py (release commit 3ef6bbd): start-up and a message's way.

Line numbers are of the real file at that commit; bodies are the stand-in's own. What the
bridge can tell of the gateway:

- importing the module marks the process a gateway (``_HERMES_GATEWAY=1``, :1408) and bridges
  ``terminal:`` to ``TERMINAL_*`` (:1617-1698); it never sets ``HERMES_GATEWAY_SESSION`` (only
  tui_gateway/server.py:2338 does);
- ``GatewayRunner.start()`` loads the plugins (:7488-7492);
- ``_handle_message`` first drops any session inherited from the task that spawned it (:9974),
  fires the ``pre_gateway_dispatch`` hook (:10007-10014), then ``_handle_message_with_agent``
  sets the message's session ContextVars (:12128, ``_set_session_env`` :16355-16386), builds the
  agent's text with the session set, runs the agent in a worker thread with the context copied
  (``_run_in_executor_with_context``, :16393), and clears the ContextVars to "" in its
  ``finally`` (:13630, :16388-16391); the adapter then delivers what the answer names.
"""

import asyncio
import contextvars
import mimetypes
import os
import re
import uuid
from datetime import datetime

from hermes_cli.config import bridge_terminal_config

# :1408
os.environ["_HERMES_GATEWAY"] = "1"
# :1617-1698
bridge_terminal_config()
# :1874, :1877
os.environ["HERMES_QUIET"] = "1"
os.environ["HERMES_EXEC_ASK"] = "1"


# :11713
_TEXT_EXTENSIONS = {".txt", ".md", ".csv", ".log", ".json", ".xml", ".yaml", ".yml", ".toml", ".ini", ".cfg"}


def _build_document_context_note(display_name: str, agent_path: str, mtype: str) -> str:
    """:2279-2303 — Hermes' two templates, word for word as the agent reads them."""
    if mtype.startswith("text/"):
        return (f"[The user sent a text document: '{display_name}'. Its content has been included below. "
                f"The file is also saved at: {agent_path}]")
    return (f"[The user sent a document: '{display_name}'. It is saved at: {agent_path}. Its text is not inlined "
            f"here (it's a binary format such as PDF or DOCX). To read it, extract the document's text yourself — for "
            f"example with the terminal tool or the ocr-and-documents skill — before answering, instead of asking the "
            f"user to paste the contents.]")


def _display_name(path: str) -> str:
    """The name shown for a cached file, as :11673-11676, :11692-11695 and :11743-11746 each inline it."""
    parts = os.path.basename(path).split("_", 2)
    return re.sub(r"[^\w.\- ]", "_", parts[2] if len(parts) >= 3 else os.path.basename(path))


def _media_type_at(event, index: int) -> str:
    """:2205-2212."""
    return event.media_types[index] if index < len(event.media_types) else ""


def _media_is(event, index: int, prefix: str, message_types: set) -> bool:
    """:2215-2254 (``_event_media_is_image`` / ``_audio`` / ``_video``): the attachment's MIME first, the
    message's type only when the MIME is unknown."""
    mtype = _media_type_at(event, index)
    return mtype.startswith(prefix) if mtype else event.message_type in message_types


def _attachment_note(kind: str, what: str, act: str, path: str) -> str:
    """:11671-11707 — the note of an audio file or a video: its agent-visible path, not its content."""
    from tools.credential_files import to_agent_visible_cache_path

    return (f"[The user sent {kind}: '{_display_name(path)}'. It is saved at: {to_agent_visible_cache_path(path)}. "
            f"Its content is not inlined here. If the user's request involves what the {what} contains, {act} "
            f"instead of asking the user to describe it. Only ask what to do with it if their intent is genuinely "
            f"unclear.]")


class GatewayRunner:
    """One gateway: its adapter hands each message to ``_handle_message``; ``agent`` is the tests' model."""

    def __init__(self, adapter, agent) -> None:
        self.adapter = adapter
        self.agent = agent
        self._session_ids: dict = {}
        adapter.set_message_handler(self._handle_message)

    @staticmethod
    def start():
        """:7488-7492 — the plugins, loaded as the gateway starts."""
        from hermes_cli.plugins import discover_plugins

        return discover_plugins()

    def _set_session_env(self, context) -> list:
        """:16355-16386 — every field of the message's source; "" where the source has none."""
        from gateway.session_context import set_session_vars

        source = context.source
        return set_session_vars(
            platform=source.platform.value, chat_id=source.chat_id, chat_name=source.chat_name or "",
            thread_id=str(source.thread_id) if source.thread_id else "",
            user_id=str(source.user_id) if source.user_id else "",
            user_name=str(source.user_name) if source.user_name else "",
            session_key=context.session_key, message_id=str(source.message_id) if source.message_id else "",
            profile=source.profile or "",
        )

    def _clear_session_env(self, tokens: list) -> None:
        """:16388-16391."""
        from gateway.session_context import clear_session_vars

        clear_session_vars(tokens)

    async def _handle_message(self, event):
        """:9947 — the session inherited from the spawning task dropped (:9974-9975), the plugins'
        ``pre_gateway_dispatch`` hook fired (:10007-10014; its skip/rewrite answers are left out)."""
        from gateway.session_context import reset_session_vars
        from hermes_cli.plugins import invoke_hook

        reset_session_vars()
        invoke_hook("pre_gateway_dispatch", event=event, gateway=self, session_store=None)
        return await self._handle_message_with_agent(event, event.source, "", 0)

    async def _handle_message_with_agent(self, event, source, _quick_key: str, run_generation: int):
        """:11956 — the session key from the source (gateway/session.py:904; groups per user, threads
        shared: the defaults), its session id (``%Y%m%d_%H%M%S_<hex>``) kept per key."""
        from gateway.session import SessionContext, build_session_key

        session_key = build_session_key(source)
        session_id = self._session_ids.setdefault(
            session_key, f"{datetime.now():%Y%m%d_%H%M%S}_{uuid.uuid4().hex[:8]}")
        context = SessionContext(source=source, session_key=session_key, session_id=session_id)
        tokens = self._set_session_env(context)
        try:
            text = await self._prepare_profile_scoped_inbound_message_text(
                event=event, source=source, history=[], session_key=session_key)
            if text is None:
                return None
            self.last_prompt = text
            copied = contextvars.copy_context()
            return await asyncio.get_running_loop().run_in_executor(
                None, copied.run, self._run_agent, text, session_id, source.platform.value)
        finally:
            self._clear_session_env(tokens)

    def _run_agent(self, text: str, session_id: str, platform: str) -> str:
        """The agent, made in the worker thread (it publishes its session id there), and the turn's end."""
        from agent.turn_finalizer import finalize_response
        from run_agent import AIAgent

        result = AIAgent(platform=platform, session_id=session_id, model=self.agent).run_conversation(text)
        return finalize_response(result["final_response"], session_id=session_id, platform=platform)

    async def _prepare_profile_scoped_inbound_message_text(self, *, event, source, history, session_key=None):
        return await self._prepare_inbound_message_text(event=event, source=source, history=history,
                                                        session_key=session_key)

    async def _enrich_message_with_vision(self, message_text: str, image_paths: list) -> str:
        """:16502-16569 — one part per image, in order, before the text. Hermes describes the host file with
        ``vision_analyze``; the stand-in's "model" sees a small picture."""
        parts = [f"[The user sent an image~ Here's what I can see:\na small picture]\n"
                 f"[If you need a closer look, use vision_analyze with image_url: {path} ~]" for path in image_paths]
        prefix = "\n\n".join(parts)
        return f"{prefix}\n\n{message_text}" if message_text else prefix

    async def _enrich_message_with_transcription(self, message_text: str, audio_paths: list) -> tuple:
        """:16571-16658 — with ``stt_enabled`` (True unless the config says otherwise, gateway/config.py:866)
        and no speech-to-text provider (the stand-in has none) only a marker, no path (:16641-16646); with it
        off, each voice note's host path (:16593-16612; the duration probe left out)."""
        from hermes_cli.config import load_config

        config = load_config()
        enabled = config.get("stt_enabled", (config.get("stt") or {}).get("enabled", True))
        if enabled:
            parts = ["[voice message could not be transcribed]" for _ in audio_paths]
        else:
            parts = [f"[The user sent a voice message: {os.path.abspath(path)}]" for path in audio_paths]
        if not parts:
            return message_text, []
        prefix = "\n\n".join(parts)
        if message_text.strip() == "(The user sent a message with no text content)":
            return prefix, []
        return (f"{prefix}\n\n{message_text}" if message_text else prefix), []

    async def _prepare_inbound_message_text(self, *, event, source, history, session_key=None):
        """:11497-11880 — per attachment (:11562-11581): images to vision, voice notes to speech-to-text,
        audio files and videos to a path note each, everything else to a document note (:11709-11754);
        each note put before the text. The ``@`` context references (:11791-11878) are left out."""
        from gateway.platforms.base import MessageType as Type
        from tools.credential_files import to_agent_visible_cache_path

        message_text = event.text or ""
        urls = list(event.media_urls)
        images = [p for i, p in enumerate(urls) if _media_is(event, i, "image/", {Type.PHOTO})]
        audio_files = urls if event.message_type == Type.AUDIO else []
        voices = [p for i, p in enumerate(urls) if event.message_type not in {Type.AUDIO, Type.DOCUMENT}
                  and (event.message_type == Type.VOICE or _media_type_at(event, i).startswith("audio/"))]
        videos = [p for i, p in enumerate(urls)
                  if _media_type_at(event, i).startswith("video/")
                  or (not _media_type_at(event, i) and event.message_type == Type.VIDEO)]
        if images:
            message_text = await self._enrich_message_with_vision(message_text, images)
        if voices:
            message_text, _ = await self._enrich_message_with_transcription(message_text, voices)
        for path in audio_files:
            note = _attachment_note("an audio file attachment", "audio", "transcribe or process it yourself — for "
                                    "example by passing the path to a transcription or media tool —", path)
            message_text = f"{note}\n\n{message_text}"
        for path in videos:
            note = _attachment_note("a video attachment", "video", "inspect or process it yourself — for example by "
                                    "passing the path to a video analysis or media tool —", path)
            message_text = f"{note}\n\n{message_text}"
        for i, path in enumerate(urls):
            if (_media_is(event, i, "image/", {Type.PHOTO}) or _media_is(event, i, "audio/", {Type.VOICE, Type.AUDIO})
                    or _media_is(event, i, "video/", {Type.VIDEO})):
                continue
            mtype = _media_type_at(event, i)
            if mtype in {"", "application/octet-stream"}:
                mtype = ("text/plain" if os.path.splitext(path)[1].lower() in _TEXT_EXTENSIONS
                         else (mimetypes.guess_type(path)[0] or "application/octet-stream"))
            note = _build_document_context_note(_display_name(path), to_agent_visible_cache_path(path), mtype)
            message_text = f"{note}\n\n{message_text}"
        return message_text
