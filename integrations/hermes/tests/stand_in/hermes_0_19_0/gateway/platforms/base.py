"""Stand-in for Hermes 0.19.0's gateway/platforms/base.py: inbound caching and outbound media delivery.

What the bridge touches, as the research notes (/work/notes/issue25-research.md §1, §3) read
Hermes' source; bodies written for the stand-in, behaving as Hermes' do where the bridge can tell:

- The caches: one folder per kind under ``$HERMES_HOME`` shared by every user and chat;
  ``cache_document_from_bytes`` names a file ``doc_{uuid12}_{name}``, ``cache_image_from_bytes``
  ``img_{uuid12}{ext}`` (refusing non-image bytes), ``cache_audio_from_bytes`` ``audio_{uuid12}{ext}``;
  each returns the absolute host path.
- ``validate_media_delivery_path(path)``, a module function every checker calls by its global
  name: absolute after ``~`` expansion, resolved strictly on the host, a regular file; accepted
  under a cache root (every user's uploads) or, in the default non-strict mode, anywhere not on
  the deny list.
- ``BasePlatformAdapter``'s static ``filter_media_delivery_paths``, ``filter_local_delivery_paths``,
  ``extract_media`` (absolute or ``~/`` paths with a deliverable extension, or extension-less
  ones the validator accepts; code spans, block quotes and JSON strings masked first) and
  ``extract_local_files`` (bare host paths that exist), and ``_process_message_background``, the
  non-streaming delivery: handler, then extraction, then ``send_document`` & co. by host path,
  with ``event.source`` but no session ContextVars (the handler's ``finally`` cleared them).
"""

import enum
import logging
import os
import re
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, List, Optional, Tuple

from hermes_constants import get_hermes_dir, get_hermes_home

logger = logging.getLogger(__name__)


class MessageType(enum.Enum):
    TEXT = "text"
    PHOTO = "photo"
    VOICE = "voice"
    AUDIO = "audio"
    VIDEO = "video"
    DOCUMENT = "document"


@dataclass
class MessageEvent:
    text: str
    message_type: MessageType = MessageType.TEXT
    source: Any = None
    media_urls: List[str] = field(default_factory=list)
    media_types: List[str] = field(default_factory=list)
    message_id: Optional[str] = None


# -- inbound caches ---------------------------------------------------------------------------


def _cache_dir(new: str, legacy: str) -> Path:
    folder = get_hermes_dir(new, legacy)
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def get_image_cache_dir() -> Path:
    return _cache_dir("cache/images", "image_cache")


def get_audio_cache_dir() -> Path:
    return _cache_dir("cache/audio", "audio_cache")


def get_video_cache_dir() -> Path:
    return _cache_dir("cache/videos", "video_cache")


def get_document_cache_dir() -> Path:
    return _cache_dir("cache/documents", "document_cache")


def _looks_like_image(data: bytes) -> bool:
    return data[:8] == b"\x89PNG\r\n\x1a\n" or data[:3] == b"\xff\xd8\xff" or data[:6] in {b"GIF87a", b"GIF89a"}


def cache_image_from_bytes(data: bytes, ext: str = ".jpg") -> str:
    if not _looks_like_image(data):
        raise ValueError(f"Refusing to cache non-image data as {ext}")
    path = get_image_cache_dir() / f"img_{uuid.uuid4().hex[:12]}{ext}"
    path.write_bytes(data)
    return str(path)


def cache_audio_from_bytes(data: bytes, ext: str = ".ogg") -> str:
    path = get_audio_cache_dir() / f"audio_{uuid.uuid4().hex[:12]}{ext}"
    path.write_bytes(data)
    return str(path)


def cache_document_from_bytes(data: bytes, filename: str) -> str:
    cache = get_document_cache_dir()
    name = (Path(filename).name if filename else "document").replace("\x00", "").strip()
    if not name or name in {".", ".."}:
        name = "document"
    path = cache / f"doc_{uuid.uuid4().hex[:12]}_{name}"
    if not path.resolve().is_relative_to(cache.resolve()):
        raise ValueError(f"Path traversal rejected: {filename!r}")
    path.write_bytes(data)
    return str(path)


# -- outbound: which host files may be sent ---------------------------------------------------

MEDIA_DELIVERY_EXTS: Tuple[str, ...] = (
    ".png", ".jpg", ".jpeg", ".gif", ".webp", ".bmp", ".tiff", ".svg", ".mp4", ".mov", ".avi", ".mkv", ".webm",
    ".mp3", ".wav", ".ogg", ".opus", ".m4a", ".flac", ".pdf", ".docx", ".doc", ".odt", ".rtf", ".txt", ".md",
    ".epub", ".xlsx", ".xls", ".ods", ".csv", ".tsv", ".json", ".xml", ".yaml", ".yml", ".pptx", ".ppt", ".odp",
    ".key", ".zip", ".tar", ".gz", ".tgz", ".bz2", ".xz", ".7z", ".rar", ".apk", ".ipa", ".html", ".htm",
)
_EXTENSIONS = "|".join(sorted((e[1:] for e in MEDIA_DELIVERY_EXTS), key=len, reverse=True))
# Absolute, ~/ or drive paths only, quoted or running across spaces up to a deliverable extension.
MEDIA_TAG_CLEANUP_RE = re.compile(
    r"[`\"']?MEDIA:\s*(?P<path>`[^`\n]+`|\"[^\"\n]+\"|'[^'\n]+'|"
    r"(?:~/|/|[A-Za-z]:[/\\])\S+(?:[^\S\n]+\S+)*?\.(?:" + _EXTENSIONS + r"))(?=[\s`\"',;:)\]}]|$)[`\"']?",
    re.IGNORECASE,
)
MEDIA_EXTENSIONLESS_TAG_RE = re.compile(
    r"[`\"']?MEDIA:\s*(?P<path>`[^`\n]+`|\"[^\"\n]+\"|'[^'\n]+'|(?:~/|/|[A-Za-z]:[/\\])[^\s`\"']+)[`\"']?\s*",
    re.IGNORECASE,
)

_MEDIA_DELIVERY_DENIED_PREFIXES = ("/etc", "/proc", "/sys", "/dev", "/root", "/boot", "/var/log", "/var/lib",
                                   "/var/run")
_MEDIA_DELIVERY_DENIED_HOME_SUBPATHS = (".ssh", ".aws", ".gnupg", ".kube", ".docker", ".config", ".azure")
_ROOT_CREDENTIAL_FILES = (".env", "auth.json", "config.yaml", "pairing", "mcp-tokens")


def _media_delivery_allowed_roots() -> List[Path]:
    roots = [get_hermes_dir(new, legacy) for new, legacy in (
        ("cache/images", "image_cache"), ("cache/audio", "audio_cache"), ("cache/videos", "video_cache"),
        ("cache/documents", "document_cache"), ("cache/screenshots", "browser_screenshots"))]
    for raw in os.environ.get("HERMES_MEDIA_ALLOW_DIRS", "").replace(",", os.pathsep).split(os.pathsep):
        if raw.strip() and os.path.isabs(os.path.expanduser(raw.strip())):
            roots.append(Path(os.path.expanduser(raw.strip())))
    return roots


def _media_delivery_strict_mode() -> bool:
    return os.environ.get("HERMES_MEDIA_DELIVERY_STRICT", "0").strip().lower() in ("1", "true", "yes", "on")


def _within(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def _path_under_denied_prefix(resolved: Path) -> bool:
    home = Path(os.path.expanduser("~")).resolve()
    denied = [Path(p) for p in _MEDIA_DELIVERY_DENIED_PREFIXES]
    denied += [home / s for s in _MEDIA_DELIVERY_DENIED_HOME_SUBPATHS]
    denied += [get_hermes_home() / name for name in _ROOT_CREDENTIAL_FILES]
    for entry in denied:
        entry = entry.resolve()
        if _within(resolved, entry) and entry != home:  # the gateway user's own home is not denied
            return True
    return False


def _normalize_media_tag_path(raw: str) -> str:
    path = str(raw or "").strip()
    if len(path) >= 2 and path[0] == path[-1] and path[0] in "`\"'":
        path = path[1:-1].strip()
    return path.lstrip("`\"'").rstrip("`\"',.;:)}]")


def validate_media_delivery_path(path: str) -> Optional[str]:
    candidate = _normalize_media_tag_path(path) if path else ""
    if not candidate:
        return None
    try:
        expanded = Path(os.path.expanduser(candidate))
        if not expanded.is_absolute():
            return None
        resolved = expanded.resolve(strict=True)
    except (OSError, RuntimeError, ValueError):
        return None
    if not resolved.is_file():
        return None
    for root in _media_delivery_allowed_roots():
        if _within(resolved, root.expanduser().resolve()):
            return str(resolved)
    if not _media_delivery_strict_mode():
        return None if _path_under_denied_prefix(resolved) else str(resolved)
    window = float(os.environ.get("HERMES_MEDIA_TRUST_RECENT_SECONDS", "600") or 0)
    if window > 0 and not _path_under_denied_prefix(resolved) and time.time() - resolved.stat().st_mtime <= window:
        return str(resolved)
    return None


@dataclass
class SendResult:
    success: bool
    message_id: Optional[str] = None
    error: Optional[str] = None


class BasePlatformAdapter:
    name = "base"

    def __init__(self) -> None:
        self._message_handler = None

    def set_message_handler(self, handler) -> None:
        self._message_handler = handler

    @staticmethod
    def validate_media_delivery_path(path: str) -> Optional[str]:
        return validate_media_delivery_path(path)

    @staticmethod
    def filter_media_delivery_paths(media_files) -> List[Tuple[str, bool]]:
        safe = []
        for media_path, is_voice in media_files or []:
            checked = validate_media_delivery_path(str(media_path))
            if checked:
                safe.append((checked, bool(is_voice)))
            else:
                logger.warning("Skipping unsafe MEDIA directive path: %s", str(media_path)[:200])
        return safe

    @staticmethod
    def filter_local_delivery_paths(file_paths) -> List[str]:
        safe = []
        for file_path in file_paths or []:
            checked = validate_media_delivery_path(str(file_path))
            if checked:
                safe.append(checked)
            else:
                logger.warning("Skipping unsafe local file path: %s", str(file_path)[:200])
        return safe

    @staticmethod
    def _mask_protected_spans(content: str) -> str:
        """Fenced code, inline code (but not a MEDIA: path in backticks) and block quotes blanked, offsets kept."""
        chars = list(content)
        spans = [m.span() for m in re.finditer(r"```[^\n]*\n.*?```", content, re.DOTALL)]
        for m in re.finditer(r"`[^`\n]+`", content):
            if not re.search(r"MEDIA:\s*$", content[max(0, m.start() - 20):m.start()]):
                spans.append(m.span())
        spans += [m.span() for m in re.finditer(r"^>.*$", content, re.MULTILINE)]
        for start, end in spans:
            for i in range(start, end):
                if chars[i] != "\n":
                    chars[i] = " "
        return "".join(chars)

    @staticmethod
    def _mask_json_string_media(content: str) -> str:
        """A bare-path MEDIA: inside a JSON string value (stored tool output) blanked, offsets kept."""
        if '"' not in content or "MEDIA:" not in content:
            return content
        chars = list(content)
        for m in re.finditer(r'(?<=[:,{\[])\s*"((?:[^"\\\n]|\\.)*)"', content):
            if re.search(r"MEDIA:\s*(?:~/|/|[A-Za-z]:[/\\])", m.group(1)):
                for i in range(m.start(1), m.end(1)):
                    if chars[i] != "\n":
                        chars[i] = " "
        return "".join(chars)

    @staticmethod
    def extract_media(content: str) -> Tuple[List[Tuple[str, bool]], str]:
        voice = "[[audio_as_voice]]" in content
        cleaned = content.replace("[[audio_as_voice]]", "").replace("[[as_document]]", "")
        scan = BasePlatformAdapter._mask_json_string_media(BasePlatformAdapter._mask_protected_spans(cleaned))
        media, spans = [], []
        for m in MEDIA_TAG_CLEANUP_RE.finditer(scan):
            path = _normalize_media_tag_path(m.group("path"))
            if path:
                media.append((os.path.expanduser(path), voice))
                spans.append(m.span())
        seen = {p for p, _ in media}
        for m in MEDIA_EXTENSIONLESS_TAG_RE.finditer(scan):
            path = _normalize_media_tag_path(m.group("path"))
            if not path or Path(path).suffix:
                continue
            safe = validate_media_delivery_path(path)
            if safe and safe not in seen:
                media.append((safe, voice))
                seen.add(safe)
                spans.append(m.span())
        chars = list(cleaned)
        for start, end in sorted(spans, reverse=True):
            del chars[start:end]
        return media, re.sub(r"\n{3,}", "\n\n", "".join(chars)).strip() if spans else cleaned

    @staticmethod
    def extract_images(content: str) -> Tuple[List[Tuple[str, str]], str]:
        return [], content

    @staticmethod
    def extract_local_files(content: str) -> Tuple[List[str], str]:
        pattern = re.compile(r"(?<![/:\w.])(?:~/|/)(?:[\w.\-]+/)*[\w.\-]+\.(?:" + _EXTENSIONS + r")\b", re.IGNORECASE)
        code = [m.span() for m in re.finditer(r"```[^\n]*\n.*?```", content, re.DOTALL)]
        code += [m.span() for m in re.finditer(r"`[^`\n]+`", content)]
        found = []
        for m in pattern.finditer(content):
            if any(start <= m.start() < end for start, end in code):
                continue
            expanded = os.path.expanduser(m.group(0))
            if os.path.isfile(expanded):
                if expanded not in [e for _, e in found]:
                    found.append((m.group(0), expanded))
            else:
                logger.info("Skipping bare file path in reply (no file on disk): %s", m.group(0)[:200])
        cleaned = content
        for raw, _ in found:
            cleaned = cleaned.replace(raw, "")
        return [e for _, e in found], cleaned

    async def send(self, chat_id: str, content: str, reply_to=None, metadata=None) -> SendResult:
        raise NotImplementedError

    async def send_document(self, chat_id: str, file_path: str, caption=None, file_name=None, reply_to=None,
                            metadata=None, **kwargs) -> SendResult:
        raise NotImplementedError

    async def send_image_file(self, chat_id: str, image_path: str, caption=None, reply_to=None, metadata=None,
                              **kwargs) -> SendResult:
        return await self.send_document(chat_id, image_path, caption=caption)

    async def send_voice(self, chat_id: str, audio_path: str, caption=None, reply_to=None, metadata=None,
                         **kwargs) -> SendResult:
        return await self.send_document(chat_id, audio_path, caption=caption)

    async def _process_message_background(self, event: MessageEvent, session_key: str = "") -> None:
        """The non-streaming delivery: the handler's answer, then every file it names, by host path."""
        response = await self._message_handler(event)
        if not response:
            return
        chat_id = event.source.chat_id
        media_files, response = self.extract_media(response)
        media_files = self.filter_media_delivery_paths(media_files)
        _, text_content = self.extract_images(response)
        local_files, text_content = self.extract_local_files(text_content)
        local_files = self.filter_local_delivery_paths(local_files)
        if text_content:
            await self.send(chat_id, text_content)
        for path, is_voice in media_files:
            if is_voice or Path(path).suffix.lower() in {".ogg", ".opus"}:
                await self.send_voice(chat_id, path)
            elif Path(path).suffix.lower() in {".jpg", ".jpeg", ".png", ".webp", ".gif"}:
                await self.send_image_file(chat_id, path)
            else:
                await self.send_document(chat_id, path)
        for path in local_files:
            await self.send_document(chat_id, path)
