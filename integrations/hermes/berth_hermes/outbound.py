"""Files the agent sends: ``MEDIA:`` paths read from the user's own sandbox, and nothing else from the host.

Hermes delivers a file the final reply names with ``MEDIA:<path>`` by opening that path **on the
gateway host**. With Berth the agent's files are in its sandbox, and the host holds every user's
cached uploads, so two things change while Berth is on:

* ``transform_llm_output`` (a plugin hook; it runs once per turn in the agent's thread, with the
  message's session set) rewrites every ``MEDIA:`` directive of the final reply: its path, however
  written (absolute, ``~/``, relative), is a path in the user's sandbox; Berth copies that file into
  the outbox (``get-file``) and the directive names the copy. A refusal takes the directive's place
  as one line the user reads: ``[file not sent: …]``.
* Hermes' own checks are narrowed: ``validate_media_delivery_path`` (which ``filter_media_delivery_paths``,
  ``filter_local_delivery_paths`` and ``extract_media`` call by their module's global name, and the
  ``send_message`` tool, cron and ``/background`` reach through ``BasePlatformAdapter``) accepts only
  files Berth took out of a sandbox, and ``extract_local_files`` (bare host paths in a reply) finds
  none. Without that, Hermes would send any host file a reply names that is not on its deny list —
  another user's cached upload included.
"""

from __future__ import annotations

import functools
import logging
import re
from typing import Any, Callable

from .session import read_session
from .errors import BerthBridgeError
from .files import any_deliverable, deliverable_files, get_file, outbox_folder, reason_of, sweep_outbox
from .profiles import Profiles, pass_through, session_for

logger = logging.getLogger("berth_hermes")

# Hermes 0.19.0's own list (gateway/platforms/base.py MEDIA_DELIVERY_EXTS), used when Hermes'
# module cannot be imported: a directive is read with the same grammar either way.
_HERMES_MEDIA_EXTENSIONS = (
    ".png", ".jpg", ".jpeg", ".gif", ".webp", ".bmp", ".tiff", ".svg", ".mp4", ".mov", ".avi", ".mkv", ".webm",
    ".mp3", ".wav", ".ogg", ".opus", ".m4a", ".flac", ".pdf", ".docx", ".doc", ".odt", ".rtf", ".txt", ".md",
    ".epub", ".xlsx", ".xls", ".ods", ".csv", ".tsv", ".json", ".xml", ".yaml", ".yml", ".pptx", ".ppt", ".odp",
    ".key", ".zip", ".tar", ".gz", ".tgz", ".bz2", ".xz", ".7z", ".rar", ".apk", ".ipa", ".html", ".htm",
)


def media_extensions() -> tuple[str, ...]:
    """The extensions Hermes sends a ``MEDIA:`` file with (its ``MEDIA_DELIVERY_EXTS``)."""
    try:
        from gateway.platforms.base import MEDIA_DELIVERY_EXTS

        return tuple(str(extension).lower() for extension in MEDIA_DELIVERY_EXTS)
    except (ImportError, AttributeError):
        return _HERMES_MEDIA_EXTENSIONS


def directive_pattern(extensions: tuple[str, ...]) -> re.Pattern[str]:
    """Hermes' ``MEDIA:`` grammar (a quoted path, or one that runs across spaces up to a known
    extension, or one word), widened to every path: Hermes matches only absolute and ``~/`` paths
    and drops the rest, Berth reads a relative one in ``/workspace``."""
    alternation = "|".join(sorted((e.lstrip(".") for e in extensions), key=len, reverse=True))
    return re.compile(
        r"""[`"']?MEDIA:\s*"""
        r"""(?P<path>`[^`\n]+`|"[^"\n]+"|'[^'\n]+'|"""
        r"""[^\s`"']\S*(?:[^\S\n]+\S+)*?\.(?:""" + alternation + r""")(?=[\s`"',;:)\]}]|$)|"""
        r"""[^\s`"']+)[`"']?""",
        re.IGNORECASE,
    )


def normalize_directive_path(raw: str) -> str:
    """As Hermes' ``_normalize_media_tag_path``: quotes off, trailing punctuation off."""
    path = raw.strip()
    if len(path) >= 2 and path[0] == path[-1] and path[0] in "`\"'":
        path = path[1:-1].strip()
    return path.lstrip("`\"'").rstrip("`\"',.;:)}]")


def _masked(text: str) -> str:
    """The reply with code spans, block quotes and JSON strings blanked (offsets kept), as Hermes masks
    it before it looks for directives: a ``MEDIA:`` there is an example, not a file to send."""
    try:
        from gateway.platforms.base import BasePlatformAdapter

        masked = BasePlatformAdapter._mask_protected_spans(text)
        return str(BasePlatformAdapter._mask_json_string_media(masked))
    except (ImportError, AttributeError):
        pass
    # Hermes' rule where its module is not there: fenced and inline code (not a MEDIA: path in
    # backticks) and block quotes.
    spans = [m.span() for m in re.finditer(r"```[^\n]*\n.*?```", text, re.DOTALL)]
    spans += [m.span() for m in re.finditer(r"`[^`\n]+`", text)
              if not re.search(r"MEDIA:\s*$", text[max(0, m.start() - 20):m.start()])]
    spans += [m.span() for m in re.finditer(r"^>.*$", text, re.MULTILINE)]
    chars = list(text)
    for start, end in spans:
        chars[start:end] = [" " if char != "\n" else char for char in chars[start:end]]
    return "".join(chars)


def directive_for(host_path: str) -> str | None:
    """A ``MEDIA:`` directive Hermes reads back as exactly ``host_path``, or None when none would."""
    if re.fullmatch(r"[\w./@%+=,-]+", host_path):
        return f"MEDIA:{host_path}"
    for quote in ('"', "`", "'"):
        if quote not in host_path and "\n" not in host_path:
            return f"MEDIA:{quote}{host_path}{quote}"
    return None


def rewrite_media_directives(
    text: str, fetch: Callable[[str], str], extensions: tuple[str, ...] | None = None
) -> str | None:
    """``text`` with each ``MEDIA:`` directive's sandbox path replaced by ``fetch(path)``'s host copy,
    or by ``[file not sent: …]`` when ``fetch`` raises; None when the text has no directive."""
    if "MEDIA:" not in text.upper():
        return None
    # Hermes removes its delivery markers before it reads a directive (gateway/platforms/base.py:1554,
    # :3756-3760), so a marker inside a path would hide it from a grammar that kept them: the
    # directives are read as Hermes reads them, and the markers, flags for the whole reply, go after.
    markers = [marker for marker in _DELIVERY_MARKERS if marker in text]
    for marker in markers:
        text = text.replace(marker, "")
    rewritten = _rewrite_directives(text, fetch, extensions)
    return None if rewritten is None else rewritten + "".join(f"\n{marker}" for marker in markers)


_DELIVERY_MARKERS = ("[[audio_as_voice]]", "[[as_document]]")


def _rewrite_directives(text: str, fetch: Callable[[str], str], extensions: tuple[str, ...] | None) -> str | None:
    known = extensions if extensions is not None else media_extensions()
    pattern = directive_pattern(known)
    spans = [(match.span(), normalize_directive_path(match.group("path"))) for match in pattern.finditer(_masked(text))]
    if not spans:
        return None
    parts: list[str] = []
    end = 0
    for (start, stop), path in spans:
        parts.append(text[end:start])
        parts.append(_delivered(path, fetch))
        end = stop
    parts.append(text[end:])
    return "".join(parts)


def _delivered(path: str, fetch: Callable[[str], str]) -> str:
    """The directive for ``path``'s host copy. Any file type: Hermes 0.19.0 sends a file whose extension it
    does not list once its path check accepts it (gateway/platforms/base.py:1507-1543, its #36060)."""
    if not path:
        return "[file not sent: the MEDIA: directive names no file]"
    try:
        host_path = fetch(path)
    except BerthBridgeError as error:
        return f"[file not sent: {reason_of(error)}]"
    directive = directive_for(host_path)
    if directive is None:
        return f"[file not sent: {path}: its name cannot be written in a MEDIA: directive; rename it to send it]"
    return directive


def register_media_transform(ctx: Any, profiles: Profiles) -> None:
    """Registers Berth's ``transform_llm_output`` hook: ``MEDIA:`` paths are read from the user's sandbox,
    into the outbox of the turn's profile; a profile that does not use Berth keeps Hermes' own answer."""

    def transform_llm_output(response_text: str = "", **_: Any) -> str | None:
        if not isinstance(response_text, str) or not response_text or pass_through(profiles):
            return None
        profile = profiles.current()
        outbox = outbox_folder(profile.settings.home)
        deliverable_files(outbox)  # Hermes may send what lands there (guard_delivery)
        session = read_session()  # the agent's thread: the message's session is set

        def fetch(path: str) -> str:
            sweep_outbox(outbox)
            answer = get_file(profile.server, session_for(profile, session), path=path, target=outbox,
                              profile=profile)
            return str(answer["hostPath"])

        return rewrite_media_directives(response_text, fetch)

    ctx.register_hook("transform_llm_output", transform_llm_output)


def guard_delivery(profiles: Profiles) -> None:
    """Narrows Hermes' delivery checks to files Berth took out of a sandbox (see the module's text), for
    a profile that uses Berth; another profile's deliveries keep Hermes' own checks."""
    try:
        import gateway.platforms.base as base
    except ImportError:
        return
    adapter = getattr(base, "BasePlatformAdapter", None)
    found = getattr(base, "validate_media_delivery_path", None)
    if adapter is None or found is None or getattr(found, "__berth_original__", None) is not None:
        return
    original: Callable[..., Any] = found

    @functools.wraps(original)
    def validate_media_delivery_path(path: str, *args: Any, **kwargs: Any) -> str | None:
        safe = original(path, *args, **kwargs)
        if pass_through(profiles) or (safe and any_deliverable(str(safe))):
            return str(safe) if safe else None
        if safe:
            logger.warning("berth: not sending a host file that Berth did not take out of a sandbox: %s",
                           _log_safe(str(path)))
        return None

    validate_media_delivery_path.__berth_original__ = original  # type: ignore[attr-defined]  # replaced once
    setattr(base, "validate_media_delivery_path", validate_media_delivery_path)  # noqa: B010 - Hermes' module
    # Hermes' other module that imported the function by name (its API server), when loaded.
    import sys

    api_server = sys.modules.get("gateway.platforms.api_server")
    if api_server is not None and getattr(api_server, "validate_media_delivery_path", None) is original:
        setattr(api_server, "validate_media_delivery_path", validate_media_delivery_path)  # noqa: B010

    def filter_media_delivery_paths(media_files: Any, *args: Any, **kwargs: Any) -> Any:
        kept = filter_media_original(media_files, *args, **kwargs)
        return kept if pass_through(profiles) else [item for item in kept if any_deliverable(str(item[0]))]

    def filter_local_delivery_paths(file_paths: Any, *args: Any, **kwargs: Any) -> Any:
        kept = filter_local_original(file_paths, *args, **kwargs)
        return kept if pass_through(profiles) else [item for item in kept if any_deliverable(str(item))]

    def extract_local_files(content: str, *args: Any, **kwargs: Any) -> Any:
        # Bare host paths in a reply: Hermes would send any existing host file a reply mentions.
        # With Berth, files are named with MEDIA: (read from the sandbox); the text stays as written.
        if pass_through(profiles):
            return extract_local_original(content, *args, **kwargs)
        return [], content

    filter_media_original = adapter.filter_media_delivery_paths
    filter_local_original = adapter.filter_local_delivery_paths
    extract_local_original = adapter.extract_local_files
    # Defence in depth: a newer Hermes whose filters stop calling the module function (0.21's also
    # fetches from a remote sandbox, through Berth's fetch_file, and registers what it fetched).
    adapter.filter_media_delivery_paths = staticmethod(filter_media_delivery_paths)
    adapter.filter_local_delivery_paths = staticmethod(filter_local_delivery_paths)
    adapter.extract_local_files = staticmethod(extract_local_files)
    adapter.validate_media_delivery_path = staticmethod(validate_media_delivery_path)


def _log_safe(path: str) -> str:
    return re.sub(r"[\x00-\x1f\x7f\x85\u2028\u2029]", "?", path)[:200]
