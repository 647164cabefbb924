"""Stand-in for Hermes 0.19.0's gateway/platforms/base.py (commit 3ef6bbd, the v0.19.0 release): the
attachment caches, and how a reply's files reach the chat.

Bodies of the stand-in's own, behaving as Hermes' do where the bridge can tell; each behaviour
names the lines of Hermes 0.19.0 it models (``:N`` alone: this same file).
"""

import enum
import functools
import logging
import os
import re
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, List, Optional, Tuple
from urllib.parse import quote

from hermes_constants import get_default_hermes_root, get_hermes_dir, get_hermes_home

logger = logging.getLogger(__name__)


def should_send_media_as_audio(platform, ext: str, is_voice: bool = False) -> bool:
    # Telegram: .mp3/.m4a, and .ogg/.opus flagged as voice. Hermes 0.19.0 gateway/platforms/base.py:30-35, 118-138
    ext = (ext or "").lower()
    if str(getattr(platform, "value", platform) or "").lower() == "telegram":
        return ext in {".mp3", ".m4a"} or (is_voice and ext in {".ogg", ".opus"})
    return ext in {".ogg", ".opus", ".mp3", ".wav", ".m4a", ".flac"}


# -- inbound caches: one folder per kind, every user's files side by side ----------------------
# Import-time defaults: Hermes 0.19.0 gateway/platforms/base.py:576, 824, 923, 958-959. The getters resolve afresh
# and create the folder at each call, following a profile's home override:
# Hermes 0.19.0 gateway/platforms/base.py:579-588, 680-684, 827-831, 934-938, 1566-1570.
IMAGE_CACHE_DIR = get_hermes_dir("cache/images", "image_cache")
AUDIO_CACHE_DIR = get_hermes_dir("cache/audio", "audio_cache")
VIDEO_CACHE_DIR = get_hermes_dir("cache/videos", "video_cache")
DOCUMENT_CACHE_DIR = get_hermes_dir("cache/documents", "document_cache")
SCREENSHOT_CACHE_DIR = get_hermes_dir("cache/screenshots", "browser_screenshots")


def _cache_dir(new: str, legacy: str) -> Path:
    folder = get_hermes_dir(new, legacy)
    folder.mkdir(parents=True, exist_ok=True)
    return folder


get_image_cache_dir = functools.partial(_cache_dir, "cache/images", "image_cache")
get_audio_cache_dir = functools.partial(_cache_dir, "cache/audio", "audio_cache")
get_video_cache_dir = functools.partial(_cache_dir, "cache/videos", "video_cache")
get_document_cache_dir = functools.partial(_cache_dir, "cache/documents", "document_cache")


def _looks_like_image(data: bytes) -> bool:
    # PNG, JPEG, GIF, BMP or WEBP magic bytes. Hermes 0.19.0 gateway/platforms/base.py:687-701
    return len(data) >= 4 and (
        data[:8] == b"\x89PNG\r\n\x1a\n" or data[:3] == b"\xff\xd8\xff" or data[:6] in {b"GIF87a", b"GIF89a"}
        or data[:2] == b"BM" or (data[:4] == b"RIFF" and data[8:12] == b"WEBP"))


def _write(folder: Path, name: str, data: bytes) -> str:
    (folder / name).write_bytes(data)
    return str(folder / name)  # the host path


def cache_image_from_bytes(data: bytes, ext: str = ".jpg") -> str:
    # img_<uuid12><ext>; bytes that are no image refused. Hermes 0.19.0 gateway/platforms/base.py:704-730
    if not _looks_like_image(data):
        raise ValueError(f"Refusing to cache non-image data as {ext} (starts with: {data[:80]!r})")
    return _write(get_image_cache_dir(), f"img_{uuid.uuid4().hex[:12]}{ext}", data)


def cache_audio_from_bytes(data: bytes, ext: str = ".ogg") -> str:  # Hermes 0.19.0 gateway/platforms/base.py:834-850
    return _write(get_audio_cache_dir(), f"audio_{uuid.uuid4().hex[:12]}{ext}", data)


def cache_video_from_bytes(data: bytes, ext: str = ".mp4") -> str:  # Hermes 0.19.0 gateway/platforms/base.py:941-948
    return _write(get_video_cache_dir(), f"video_{uuid.uuid4().hex[:12]}{ext}", data)


def cache_document_from_bytes(data: bytes, filename: str) -> str:
    # doc_<uuid12>_<base name without NULs>, or _document. Hermes 0.19.0 gateway/platforms/base.py:1573-1602
    cache = get_document_cache_dir()
    name = (Path(filename).name if filename else "document").replace("\x00", "").strip()
    name = "document" if not name or name in {".", ".."} else name
    path = cache / f"doc_{uuid.uuid4().hex[:12]}_{name}"
    if not path.resolve().is_relative_to(cache.resolve()):
        raise ValueError(f"Path traversal rejected: {filename!r}")
    return _write(cache, path.name, data)


# -- outbound: which host files may be sent ---------------------------------------------------
# Fixed when the module is imported. Hermes 0.19.0 gateway/platforms/base.py:971-1001, 1018-1055
_HERMES_HOME, _HERMES_ROOT = get_hermes_home(), get_default_hermes_root()
MEDIA_DELIVERY_SAFE_ROOTS = (
    IMAGE_CACHE_DIR, AUDIO_CACHE_DIR, VIDEO_CACHE_DIR, DOCUMENT_CACHE_DIR, SCREENSHOT_CACHE_DIR,
    *(_HERMES_HOME / old for old in ("image_cache", "audio_cache", "video_cache", "document_cache",
                                     "browser_screenshots")),
    *(_HERMES_HOME / "cache" / sub for sub in ("images", "audio", "videos", "documents", "screenshots")))
_MEDIA_DELIVERY_DENIED_PREFIXES = ("/etc", "/proc", "/sys", "/dev", "/root", "/boot", "/var/log", "/var/lib",
                                   "/var/run")
_MEDIA_DELIVERY_DENIED_HOME_SUBPATHS = (".ssh", ".aws", ".gnupg", ".kube", ".docker", ".config", ".azure", ".gcloud",
                                        "Library/Keychains")
# Credential files and folders at Hermes' home and root: Hermes 0.19.0 gateway/platforms/base.py:1155-1211
_ROOT_CREDENTIALS = (".env", "auth.json", "auth.lock", "credentials", "config.yaml", ".anthropic_oauth.json",
                     "google_token.json", "google_oauth_pending.json", "auth/google_oauth.json",
                     "webhook_subscriptions.json", "cache/bws_cache.json", "pairing", "mcp-tokens")


def _path_under_denied_prefix(resolved: Path) -> bool:
    """Under a denied path — but the running user's own home (``/root`` for a root gateway) is not
    itself denied. Hermes 0.19.0 gateway/platforms/base.py:1155-1244"""
    home = Path(os.path.expanduser("~"))
    denied = [Path(p) for p in _MEDIA_DELIVERY_DENIED_PREFIXES]
    denied += [home / p for p in _MEDIA_DELIVERY_DENIED_HOME_SUBPATHS]
    denied += [root / p for root in (_HERMES_HOME, _HERMES_ROOT) for p in _ROOT_CREDENTIALS]
    own_home = home.resolve(strict=False)
    return any(resolved.is_relative_to(entry) and entry != own_home
               for entry in (d.expanduser().resolve(strict=False) for d in denied))


def validate_media_delivery_path(path: str) -> Optional[str]:
    """The resolved host path when a file may be sent natively, else None: quotes and trailing
    punctuation off, ``~`` expanded, absolute only, resolved strictly (links followed), a regular
    file; accepted under a cache root, else (the default, non-strict mode) anywhere off the deny
    list. Hermes 0.19.0 gateway/platforms/base.py:1272-1350"""
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
    if any(resolved.is_relative_to(Path(root).resolve(strict=False)) for root in MEDIA_DELIVERY_SAFE_ROOTS):
        return str(resolved)
    return None if _path_under_denied_prefix(resolved) else str(resolved)


def _log_safe_path(path: str) -> str:  # Hermes 0.19.0 gateway/platforms/base.py:1356-1361
    return re.sub(r"[\x00-\x1f\x7f\x85\u2028\u2029]", "?", str(path))[:200]


# -- the MEDIA: grammar: Hermes 0.19.0 gateway/platforms/base.py:1469-1543 --------------------
MEDIA_DELIVERY_EXTS: Tuple[str, ...] = (
    ".png", ".jpg", ".jpeg", ".gif", ".webp", ".bmp", ".tiff", ".svg", ".mp4", ".mov", ".avi", ".mkv", ".webm",
    ".mp3", ".wav", ".ogg", ".opus", ".m4a", ".flac", ".pdf", ".docx", ".doc", ".odt", ".rtf", ".txt", ".md",
    ".epub", ".xlsx", ".xls", ".ods", ".csv", ".tsv", ".json", ".xml", ".yaml", ".yml", ".pptx", ".ppt", ".odp",
    ".key", ".zip", ".tar", ".gz", ".tgz", ".bz2", ".xz", ".7z", ".rar", ".apk", ".ipa", ".html", ".htm",
)
_EXTENSIONS = "|".join(sorted((e[1:] for e in MEDIA_DELIVERY_EXTS), key=len, reverse=True))
# Absolute, ~/ or drive paths, quoted or running across spaces up to a known extension: sent as written.
MEDIA_TAG_CLEANUP_RE = re.compile(
    r"[`\"']?MEDIA:\s*(?P<path>`[^`\n]+`|\"[^\"\n]+\"|'[^'\n]+'|"
    r"(?:~/|/|[A-Za-z]:[/\\])\S+(?:[^\S\n]+\S+)*?\.(?:" + _EXTENSIONS + r"))(?=[\s`\"',;:)\]}]|$)[`\"']?",
    re.IGNORECASE)
# Any other absolute path (no extension, or one not listed): sent only once the validator accepts it.
MEDIA_EXTENSIONLESS_TAG_RE = re.compile(
    r"[`\"']?MEDIA:\s*(?P<path>`[^`\n]+`|\"[^\"\n]+\"|'[^'\n]+'|(?:~/|/|[A-Za-z]:[/\\])[^\s`\"']+)[`\"']?\s*",
    re.IGNORECASE)


def _normalize_media_tag_path(raw: str) -> str:
    path = str(raw or "").strip()
    if len(path) >= 2 and path[0] == path[-1] and path[0] in "`\"'":
        path = path[1:-1].strip()
    return path.lstrip("`\"'").rstrip("`\"',.;:)}]")


def _path_lacks_deliverable_extension(path: str) -> bool:
    return Path(path).suffix.lower() not in MEDIA_DELIVERY_EXTS  # none, or one not listed


def _strip_media_directives(text: str) -> str:
    """Markers and known-extension tags removed; other tags only when the validator accepts their path.
    Hermes 0.19.0 gateway/platforms/base.py:1546-1563, 2301-2314"""
    if not text or ("MEDIA:" not in text and "[[audio_as_voice]]" not in text and "[[as_document]]" not in text):
        return text

    def strip_validated(match: re.Match) -> str:
        path = _normalize_media_tag_path(match.group("path"))
        valid = path and _path_lacks_deliverable_extension(path) and validate_media_delivery_path(path)
        return "" if valid else match.group(0)

    cleaned = MEDIA_TAG_CLEANUP_RE.sub("", text.replace("[[audio_as_voice]]", "").replace("[[as_document]]", ""))
    return MEDIA_EXTENSIONLESS_TAG_RE.sub(strip_validated, cleaned)


def _blank(text: str, spans) -> str:  # the spans' characters but newlines made spaces: offsets stay valid
    chars = list(text)
    for start, end in spans:
        chars[start:end] = [c if c == "\n" else " " for c in chars[start:end]]
    return "".join(chars)


def _media_tags(text: str) -> List[Tuple[Tuple[int, int], str, bool]]:  # (span, path, to validate) per tag
    scan = BasePlatformAdapter._mask_json_string_media(BasePlatformAdapter._mask_protected_spans(text))
    tags = [(m.span(), _normalize_media_tag_path(m["path"]), False) for m in MEDIA_TAG_CLEANUP_RE.finditer(scan)]
    for m in MEDIA_EXTENSIONLESS_TAG_RE.finditer(scan):
        path = _normalize_media_tag_path(m.group("path"))
        if path and _path_lacks_deliverable_extension(path):
            tags.append((m.span(), path, True))
    return tags


class MessageType(enum.Enum):  # Hermes 0.19.0 gateway/platforms/base.py:1737-1747
    TEXT, LOCATION, PHOTO, VIDEO, AUDIO = "text", "location", "photo", "video", "audio"
    VOICE, DOCUMENT, STICKER, COMMAND = "voice", "document", "sticker", "command"


@dataclass
class MessageEvent:  # media_urls: host paths. Hermes 0.19.0 gateway/platforms/base.py:1758-1788
    text: str
    message_type: MessageType = MessageType.TEXT
    source: Any = None
    message_id: Optional[str] = None
    media_urls: List[str] = field(default_factory=list)
    media_types: List[str] = field(default_factory=list)


@dataclass
class SendResult:  # Hermes 0.19.0 gateway/platforms/base.py:1897-1902
    success: bool
    message_id: Optional[str] = None
    error: Optional[str] = None


class BasePlatformAdapter:
    """Hermes 0.19.0 gateway/platforms/base.py:2317, for delivery; send() and send_* are each platform's."""

    platform: Any = "base"
    _message_handler: Any = None

    def set_message_handler(self, handler) -> None:
        self._message_handler = handler  # Hermes 0.19.0 gateway/platforms/base.py:2888-2895

    # Each check calls the module's function by name. Hermes 0.19.0 gateway/platforms/base.py:3612-3642
    @staticmethod
    def validate_media_delivery_path(path: str) -> Optional[str]:
        return validate_media_delivery_path(path)

    @staticmethod
    def filter_media_delivery_paths(media_files) -> List[Tuple[str, bool]]:
        checked = [(validate_media_delivery_path(str(p)), str(p), bool(voice)) for p, voice in media_files or []]
        for _, raw, _ in (item for item in checked if not item[0]):
            logger.warning("Skipping unsafe MEDIA directive path: %s", _log_safe_path(raw))
        return [(safe, voice) for safe, _, voice in checked if safe]

    @staticmethod
    def filter_local_delivery_paths(file_paths) -> List[str]:
        checked = [(validate_media_delivery_path(str(path)), str(path)) for path in file_paths or []]
        for _, raw in (item for item in checked if not item[0]):
            logger.warning("Skipping unsafe local file path: %s", _log_safe_path(raw))
        return [safe for safe, _ in checked if safe]

    @staticmethod
    def _mask_protected_spans(content: str) -> str:
        # Code spans and block quotes blanked. Hermes 0.19.0 gateway/platforms/base.py:3644-3683
        spans = [m.span() for m in re.finditer(r"```[^\n]*\n.*?```", content, re.DOTALL)]
        spans += [m.span() for m in re.finditer(r"`[^`\n]+`", content)
                  if not re.search(r"MEDIA:\s*$", content[max(0, m.start() - 20):m.start()])]
        return _blank(content, spans + [m.span() for m in re.finditer(r"^>.*$", content, re.MULTILINE)])

    @staticmethod
    def _mask_json_string_media(content: str) -> str:
        # JSON string values with a bare-path MEDIA: blanked. Hermes 0.19.0 gateway/platforms/base.py:3685-3723
        if '"' not in content or "MEDIA:" not in content:
            return content
        return _blank(content, [m.span(1) for m in re.finditer(r'(?<=[:,{\[])\s*"((?:[^"\\\n]|\\.)*)"', content)
                                if re.search(r"MEDIA:\s*(?:~/|/|[A-Za-z]:[/\\])", m.group(1))])

    @staticmethod
    def extract_media(content: str) -> Tuple[List[Tuple[str, bool]], str]:
        """``(path, is_voice)`` per MEDIA: tag — a known extension as written (``~`` expanded), any other
        path only once validated — and the text without the tags.
        Hermes 0.19.0 gateway/platforms/base.py:3725-3820"""
        voice = "[[audio_as_voice]]" in content
        cleaned = content.replace("[[audio_as_voice]]", "").replace("[[as_document]]", "")
        media = [(os.path.expanduser(path), voice) for _, path, check in _media_tags(content) if path and not check]
        for _, path, check in _media_tags(content):
            safe = validate_media_delivery_path(path) if check else None
            if safe and safe not in {known for known, _ in media}:
                media.append((safe, voice))
        if media:  # the tags found in the text without markers; every known-extension one goes
            spans = [span for span, p, check in _media_tags(cleaned) if not check or validate_media_delivery_path(p)]
            for start, end in sorted(spans, reverse=True):
                cleaned = cleaned[:start] + cleaned[end:]
            cleaned = re.sub(r"\n{3,}", "\n\n", cleaned).strip() if spans else cleaned
        return media, cleaned

    @staticmethod
    def extract_local_files(content: str) -> Tuple[List[str], str]:
        """Bare absolute or ``~/`` paths with a known extension, outside code, that are files on the host,
        and the text without them. Hermes 0.19.0 gateway/platforms/base.py:3841-3924"""
        pattern = re.compile(r"(?<![/:\w.])(?:~/|/|[A-Za-z]:[/\\])(?:[\w.\-]+[/\\])*[\w.\-]+\.(?:"
                             + "|".join(e[1:] for e in MEDIA_DELIVERY_EXTS) + r")\b", re.IGNORECASE)
        code = [m.span() for m in re.finditer(r"```[^\n]*\n.*?```", content, re.DOTALL)]
        code += [m.span() for m in re.finditer(r"`[^`\n]+`", content)]
        found: dict = {}  # expanded path -> the text that named it first, in order
        for m in pattern.finditer(content):
            if not any(start <= m.start() < end for start, end in code):
                if os.path.isfile(os.path.expanduser(m[0])):
                    found.setdefault(os.path.expanduser(m[0]), m[0])
                else:
                    logger.info("Skipping bare file path in reply (no file on disk): %s", _log_safe_path(m[0]))
        for raw in found.values():
            content = content.replace(raw, "")
        return list(found), re.sub(r"\n{3,}", "\n\n", content).strip() if found else content

    async def _process_message_background(self, event: MessageEvent, session_key: str = "") -> None:
        """The non-streaming delivery, after the handler (which cleared the session ContextVars): the
        text, then images as one batch, then each other file, all by host path.
        Hermes 0.19.0 gateway/platforms/base.py:4985-5380"""
        response = await self._message_handler(event)
        if not response:
            return
        chat_id, as_document = event.source.chat_id, "[[as_document]]" in response
        media_files, response = self.extract_media(response)
        media_files = self.filter_media_delivery_paths(media_files)
        text_content = _strip_media_directives(response).strip()  # unknown-extension tags stay in the text
        local_files, text_content = self.extract_local_files(text_content)
        local_files = self.filter_local_delivery_paths(local_files)
        if text_content:
            await self.send(chat_id, text_content)
        # Images as one album, other files by kind. Hermes 0.19.0 gateway/platforms/base.py:5290-5380
        files = [(p, v, False) for p, v in media_files] + [(p, False, True) for p in local_files]
        image = [Path(p).suffix.lower() in {".jpg", ".jpeg", ".png", ".webp", ".gif"} and not v and not as_document
                 for p, v, _ in files]
        if any(image):
            await self.send_multiple_images(chat_id, [(f"file://{quote(f[0])}", "") for f, i in zip(files, image) if i])
        for (path, is_voice, bare), is_image in zip(files, image):
            ext = Path(path).suffix.lower()
            if is_image:
                continue
            try:
                if not bare and should_send_media_as_audio(self.platform, ext, is_voice=is_voice):
                    result = await self.send_voice(chat_id, path)
                elif ext in {".mp4", ".mov", ".avi", ".mkv", ".webm", ".3gp"}:
                    result = await self.send_video(chat_id, path)
                else:
                    result = await self.send_document(chat_id, path)
                if not result.success:
                    logger.warning("[%s] Failed to send media (%s): %s", self.platform, ext, result.error)
            except Exception as error:
                logger.warning("[%s] Error sending media: %s", self.platform, error)
