"""Files the user sends: each attachment goes into the sender's own sandbox, and the agent is told that path.

Hermes caches every attachment in one folder per kind under ``$HERMES_HOME/cache/`` (every user's
files side by side) and tells the agent where: documents, audio files and videos at
``/root/.hermes/cache/<kind>/<file>`` (its docker backend mounts the whole cache there), images and
voice notes at their host path, a replied-to message's attachment at the ``/root/.hermes`` path.
Berth mounts no cache into a sandbox. So the bridge wraps
``GatewayRunner._prepare_inbound_message_text`` — the one coroutine that builds the text the agent
reads, called after the message's session ContextVars are set — and, for each attachment,
copies the cached file into the session's sandbox at ``/workspace/attachments/<its cached name>``
(``put-file``, in a worker thread so the gateway's event loop never waits on it) and replaces
every host path and ``/root/.hermes/cache/…`` path of that file in the text with the sandbox path.
A file Berth refuses (too large, the engine down) leaves one line in the path's place, and
nothing in the sandbox.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import re
import threading
import time
from pathlib import Path
from typing import Any, Callable, Mapping

from .session import read_session
from .errors import BerthBridgeError
from .files import ATTACHMENTS_FOLDER, OUTBOX_MAX_AGE_SECONDS, put_file, reason_of
from .profiles import Profile, Profiles, pass_through, session_for

logger = logging.getLogger("berth_hermes")

# Hermes' cache folders, new names and legacy ones (tools/credential_files.py _CACHE_DIRS).
_CACHE_KINDS = (
    ("cache/documents", "document_cache"), ("cache/images", "image_cache"), ("cache/audio", "audio_cache"),
    ("cache/videos", "video_cache"), ("cache/screenshots", "browser_screenshots"), ("cache/web", "web_cache"),
    ("cache/delegation", "delegation_cache"),
)
CONTAINER_CACHE_BASE = "/root/.hermes"
"""Where Hermes tells the agent its cache is (``to_agent_visible_cache_path``'s ``container_base``)."""


def display_name(host_path: str) -> str:
    """The name Hermes shows for a cached file: ``doc_<uuid>_notes.txt`` → ``notes.txt`` (run.py's rule)."""
    basename = os.path.basename(host_path)
    parts = basename.split("_", 2)
    name = parts[2] if len(parts) >= 3 else basename
    return re.sub(r"[^\w.\- ]", "_", name)


def cache_roots(home: Path) -> list[tuple[str, str]]:
    """``(host folder, agent folder)`` for each of Hermes' cache folders, resolved."""
    roots = []
    for new, legacy in _CACHE_KINDS:
        roots.append((os.path.realpath(home / new), f"{CONTAINER_CACHE_BASE}/{new}"))
        roots.append((os.path.realpath(home / legacy), f"{CONTAINER_CACHE_BASE}/{new}"))
    return roots


def host_path_of(path: str, home: Path) -> str:
    """The host file behind an agent path ``/root/.hermes/cache/<kind>/<file>``, else ``path`` itself.

    A replied-to message's attachment reaches ``event.media_urls`` as that agent path already
    (plugins/platforms/telegram/adapter.py:7828-7872 caches it through ``cache_media_bytes``,
    gateway/platforms/base.py:1671-1734); its file is in the kind's new or legacy folder.
    """
    for new, legacy in _CACHE_KINDS:
        agent_root = f"{CONTAINER_CACHE_BASE}/{new}/"
        if path.startswith(agent_root):
            for folder in (new, legacy):
                candidate = os.path.join(home, folder, path[len(agent_root):])
                if os.path.isfile(candidate):
                    return candidate
    return path


def cached_attachment(path: Any, home: Path) -> tuple[str, list[str]] | None:
    """For a path of ``event.media_urls`` that is a file in Hermes' cache: the file, and every string
    Hermes may have written for it (its host path, the resolved one, the agent path). Else None:
    a URL, or a file anywhere else on the host, is never copied into a sandbox."""
    if not isinstance(path, str) or not os.path.isabs(path):
        return None
    resolved = os.path.realpath(host_path_of(path, home))
    for host_root, agent_root in cache_roots(home):
        if resolved.startswith(host_root + os.sep) and os.path.isfile(resolved):
            relative = resolved[len(host_root) + 1:]
            names = {path, resolved, f"{agent_root}/{relative}"}
            try:
                from tools.credential_files import to_agent_visible_cache_path

                names.add(str(to_agent_visible_cache_path(path)))
            except (ImportError, AttributeError):
                pass
            return resolved, sorted(names, key=len, reverse=True)
    return None


class PutAttachments:
    """Where each attachment went, by host path: Hermes' native image parts name the host path later."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._placed: dict[str, tuple[str, float]] = {}

    def record(self, names: list[str], replacement: str) -> None:
        with self._lock:
            cutoff = time.time() - OUTBOX_MAX_AGE_SECONDS
            self._placed = {key: value for key, value in self._placed.items() if value[1] > cutoff}
            for name in names:
                self._placed[name] = (replacement, time.time())

    def rewrite(self, text: str) -> str:
        """``text`` with each recorded host or agent path replaced by where the file went."""
        with self._lock:
            known = {key: value[0] for key, value in self._placed.items()}
        return replace_paths(text, known)


def replace_paths(text: str, replacements: Mapping[str, str]) -> str:
    """Replaces each key by its value in one pass, longest first, so a replacement is never replaced again."""
    if not replacements or not text:
        return text
    pattern = re.compile("|".join(re.escape(key) for key in sorted(replacements, key=len, reverse=True)))
    return pattern.sub(lambda match: replacements[match.group(0)], text)


async def bring_attachments_in(
    put: Callable[[Mapping[str, str], str, str], Any], text: str, media_urls: list[Any],
    home: Path | tuple[Path, ...], placed: PutAttachments,
) -> str:
    """Puts each cached attachment into the session's sandbox; returns ``text`` with its paths replaced.

    ``home``: the Hermes home whose caches hold attachments, or several (a routed profile's turn: its
    own home's, then the launch home's, wherever its adapter cached the file)."""
    session = read_session()  # the message's ContextVars, set before Hermes builds its text
    homes = home if isinstance(home, tuple) else (home,)
    replacements: dict[str, str] = {}
    for url in media_urls:
        found = next((hit for hit in (cached_attachment(url, each) for each in homes) if hit is not None), None)
        if found is None:
            continue
        source, names = found
        target = f"{ATTACHMENTS_FOLDER}/{os.path.basename(source)}"
        try:
            # A worker thread: berth serve may create the sandbox first, and the event loop serves every chat.
            answer = await asyncio.get_running_loop().run_in_executor(None, put, session, source, target)
            placed_at = answer.get("path") if isinstance(answer, dict) else None
            replacement = placed_at if isinstance(placed_at, str) and placed_at else target
            placed.record(names, replacement)
        except BerthBridgeError as error:
            replacement = f"[attachment {display_name(source)} could not be put in your sandbox: {reason_of(error)}]"
            logger.warning("berth: attachment %s not put in the sandbox: %s", os.path.basename(source), error)
        for name in names:
            replacements[name] = replacement
    return replace_paths(text, replacements)


def wrap_inbound_text(profiles: Profiles) -> PutAttachments | None:
    """Wraps ``gateway.run.GatewayRunner._prepare_inbound_message_text`` (see the module's text), for the
    turn's profile; a profile that does not use Berth keeps Hermes' own text."""
    placed = PutAttachments()
    try:
        from gateway.run import GatewayRunner
    except ImportError:
        return None
    found = getattr(GatewayRunner, "_prepare_inbound_message_text", None)
    if found is None or getattr(found, "__berth_original__", None) is not None:
        return None
    original: Callable[..., Any] = found

    def put(profile: Profile, session: Mapping[str, str], source: str, target: str) -> Any:
        return put_file(profile.server, session_for(profile, session), source=source, path=target,
                        profile=profile)

    @functools.wraps(original)
    async def _prepare_inbound_message_text(self: Any, *args: Any, **kwargs: Any) -> Any:
        text = await original(self, *args, **kwargs)
        event = kwargs.get("event", args[0] if args else None)
        media_urls = list(getattr(event, "media_urls", None) or [])
        if not isinstance(text, str) or not media_urls or pass_through(profiles):
            return text
        profile = profiles.current()
        homes = (profile.settings.home, profiles.launch.settings.home)
        return await bring_attachments_in(functools.partial(put, profile), text, media_urls, homes, placed)

    _prepare_inbound_message_text.__berth_original__ = original  # type: ignore[attr-defined]  # replaced once
    GatewayRunner._prepare_inbound_message_text = _prepare_inbound_message_text
    wrap_native_image_parts(placed)
    return placed


def wrap_native_image_parts(placed: PutAttachments) -> None:
    """Hermes' native image mode adds ``[Image attached at: <host path>]`` to the user's turn later
    (``agent.image_routing.build_native_content_parts``, looked up when called): the sandbox path there too.
    The pixels still come from the host cache, which is what the model is shown."""
    try:
        import agent.image_routing as image_routing
    except ImportError:
        return
    found = getattr(image_routing, "build_native_content_parts", None)
    if found is None or getattr(found, "__berth_original__", None) is not None:
        return
    original: Callable[..., Any] = found

    @functools.wraps(original)
    def build_native_content_parts(*args: Any, **kwargs: Any) -> Any:
        result = original(*args, **kwargs)
        parts = result[0] if isinstance(result, tuple) else result
        for part in parts if isinstance(parts, list) else []:
            if isinstance(part, dict) and part.get("type") == "text" and isinstance(part.get("text"), str):
                part["text"] = placed.rewrite(part["text"])
        return result

    build_native_content_parts.__berth_original__ = original  # type: ignore[attr-defined]  # replaced once
    image_routing.build_native_content_parts = build_native_content_parts
