"""Stand-in for Hermes 0.19.0's gateway/run.py: start-up, and a message's way to the agent and back.

``GatewayRunner`` as the research notes (/work/notes/issue25-research.md §1, §3) read it:
``_handle_message_with_agent`` sets the message's session ContextVars, builds the agent's text
with ``_prepare_profile_scoped_inbound_message_text`` → ``_prepare_inbound_message_text`` (async;
``event.media_urls`` holds host paths), runs the agent in a worker thread with the context
copied, and clears the ContextVars in its ``finally``; the adapter then delivers what the answer
names (``BasePlatformAdapter._process_message_background``). The text templates are Hermes'.
"""

import asyncio
import contextvars
import json
import mimetypes
import os
import re

from hermes_cli.config import load_config

_TERMINAL_ENV_MAP = {
    "backend": "TERMINAL_ENV",
    "cwd": "TERMINAL_CWD",
    "timeout": "TERMINAL_TIMEOUT",
    "lifetime_seconds": "TERMINAL_LIFETIME_SECONDS",
    "docker_image": "TERMINAL_DOCKER_IMAGE",
    "docker_forward_env": "TERMINAL_DOCKER_FORWARD_ENV",
    "container_cpu": "TERMINAL_CONTAINER_CPU",
    "container_memory": "TERMINAL_CONTAINER_MEMORY",
    "container_disk": "TERMINAL_CONTAINER_DISK",
    "container_persistent": "TERMINAL_CONTAINER_PERSISTENT",
    "docker_volumes": "TERMINAL_DOCKER_VOLUMES",
    "docker_env": "TERMINAL_DOCKER_ENV",
    "sandbox_dir": "TERMINAL_SANDBOX_DIR",
}


def boot():
    """Bridges terminal: to TERMINAL_* (config.yaml wins), marks gateway mode, loads the plugins."""
    terminal = load_config().get("terminal") or {}
    for key, variable in _TERMINAL_ENV_MAP.items():
        if key in terminal:
            value = terminal[key]
            if key == "cwd" and str(value) in {".", "auto", "cwd"}:
                continue
            os.environ[variable] = json.dumps(value) if isinstance(value, (list, dict)) else str(value)
    os.environ["HERMES_GATEWAY_SESSION"] = "1"
    os.environ["HERMES_QUIET"] = "1"
    from hermes_cli.plugins import discover_plugins

    return discover_plugins()


def _build_document_context_note(display_name: str, agent_path: str, mtype: str) -> str:
    if mtype.startswith("text/"):
        return (f"[The user sent a text document: '{display_name}'. Its content has been included below. "
                f"The file is also saved at: {agent_path}]")
    return (f"[The user sent a document: '{display_name}'. It is saved at: {agent_path}. Its text is not inlined "
            f"here (it's a binary format such as PDF or DOCX). To read it, extract the document's text yourself — for "
            f"example with the terminal tool or the ocr-and-documents skill — before answering, instead of asking the "
            f"user to paste the contents.]")


def _display_name(path: str) -> str:
    parts = os.path.basename(path).split("_", 2)
    return re.sub(r"[^\w.\- ]", "_", parts[2] if len(parts) >= 3 else os.path.basename(path))


class GatewayRunner:
    """One gateway: its adapter hands each message to ``_handle_message``; ``agent(text) -> str`` is the model."""

    def __init__(self, adapter, agent) -> None:
        self.adapter = adapter
        self.agent = agent
        adapter.set_message_handler(self._handle_message)

    def _set_session_env(self, source, session_key: str) -> list:
        from gateway.session_context import set_session_vars

        return set_session_vars(platform=source.platform, chat_id=str(source.chat_id),
                                user_id=str(source.user_id or ""), session_key=session_key)

    def _clear_session_env(self, tokens: list) -> None:
        from gateway.session_context import clear_session_vars

        clear_session_vars(tokens)

    async def _handle_message(self, event):
        source = event.source
        session_key = f"agent:main:{source.platform}:dm:{source.chat_id}"
        return await self._handle_message_with_agent(event, source, session_key)

    async def _handle_message_with_agent(self, event, source, session_key: str):
        tokens = self._set_session_env(source, session_key)
        try:
            text = await self._prepare_profile_scoped_inbound_message_text(
                event=event, source=source, history=[], session_key=session_key)
            if text is None:
                return None
            self.last_prompt = text
            context = contextvars.copy_context()
            return await asyncio.get_running_loop().run_in_executor(None, context.run, self._run_agent, text)
        finally:
            self._clear_session_env(tokens)

    def _run_agent(self, text: str) -> str:
        from agent.turn_finalizer import finalize_response

        return finalize_response(self.agent(text), platform="telegram")

    async def _prepare_profile_scoped_inbound_message_text(self, *, event, source, history, session_key=None):
        return await self._prepare_inbound_message_text(event=event, source=source, history=history,
                                                        session_key=session_key)

    async def _enrich_message_with_vision(self, message_text: str, image_paths: list) -> str:
        # Hermes runs vision_analyze on the host file; the stand-in's "model" sees a small picture.
        for path in image_paths:
            message_text = (f"[The user sent an image~ Here's what I can see:\na small picture]\n"
                            f"[If you need a closer look, use vision_analyze with image_url: {path} ~]\n\n"
                            f"{message_text}")
        return message_text

    async def _enrich_message_with_transcription(self, message_text: str, audio_paths: list) -> tuple:
        # stt_enabled: false (the stand-in has no speech-to-text): the host path is shown, untranslated.
        for path in audio_paths:
            message_text = f"[The user sent a voice message: {path} (duration: unknown)]\n\n{message_text}"
        return message_text, []

    async def _prepare_inbound_message_text(self, *, event, source, history, session_key=None):
        from gateway.platforms.base import MessageType
        from tools.credential_files import to_agent_visible_cache_path

        message_text = event.text or ""
        images, voices, documents = [], [], []
        for i, path in enumerate(event.media_urls):
            mtype = event.media_types[i] if i < len(event.media_types) else ""
            if mtype.startswith("image/") or (not mtype and event.message_type == MessageType.PHOTO):
                images.append(path)
            elif event.message_type == MessageType.VOICE or mtype.startswith("audio/"):
                voices.append(path)
            else:
                documents.append((path, mtype))
        if images:
            message_text = await self._enrich_message_with_vision(message_text, images)
        if voices:
            message_text, _ = await self._enrich_message_with_transcription(message_text, voices)
        for path, mtype in documents:
            if mtype in {"", "application/octet-stream"}:
                mtype = ("text/plain" if os.path.splitext(path)[1].lower() in {".txt", ".md", ".csv", ".log", ".json"}
                         else (mimetypes.guess_type(path)[0] or "application/octet-stream"))
            note = _build_document_context_note(_display_name(path), to_agent_visible_cache_path(path), mtype)
            message_text = f"{note}\n\n{message_text}"
        return message_text
