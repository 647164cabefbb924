"""Stand-in for upstream's gateway/media_fetch.py (NousResearch/hermes-agent @33f64d7f).

``fetch_remote_media(path)``: only when host validation failed, not in strict mode, and the
terminal backend is remote (a built-in one, or a plugin provider with ``is_remote``). The active
environment is looked up by the session's id or key (``get_active_env``, which collapses gateway
sessions as the terminal tool does); ``~/`` needs the environment's ``_remote_home``; the path is
screened against the host deny list before and after ``env.fetch_realpath``; then
``env.fetch_file(resolved, DOCUMENT_CACHE_DIR / "remote_<uuid12>_<name>", max_bytes=50 MiB)`` and
the host copy is validated like any other delivery.
"""

import logging
import posixpath
import re
import uuid
from pathlib import Path, PurePosixPath
from typing import Optional

logger = logging.getLogger(__name__)

_FETCH_MAX_BYTES = 50 * 1024 * 1024
_DENIED_PREFIXES = ("/etc", "/proc", "/sys", "/dev", "/root", "/boot", "/var/log", "/var/lib", "/var/run")
_DENIED_HOME_RELATIVE = (".ssh", ".aws", ".gnupg", ".kube", ".docker", ".config", ".azure", ".hermes/.env")


def remote_path_is_denied(path: str, remote_home: Optional[str]) -> bool:
    target = PurePosixPath(posixpath.normpath(path))
    if not target.is_absolute():
        return True
    home = PurePosixPath(posixpath.normpath(remote_home)) if remote_home else None

    def under(root: PurePosixPath) -> bool:
        return target == root or root in target.parents

    if any(under(PurePosixPath(p)) for p in _DENIED_PREFIXES if PurePosixPath(p) != home):
        return True
    if home is not None:
        return any(under(home / rel) for rel in _DENIED_HOME_RELATIVE)
    return any(rel in target.parts for rel in _DENIED_HOME_RELATIVE)


def _active_remote_env():
    import os

    from agent.prompt_builder import _REMOTE_TERMINAL_BACKENDS, _plugin_backend_is_remote
    from gateway.session_context import get_session_env
    from tools.terminal_tool_lifecycle import get_active_env

    backend = os.getenv("TERMINAL_ENV", "local").strip().lower()
    if backend not in _REMOTE_TERMINAL_BACKENDS and not _plugin_backend_is_remote(backend):
        return None
    return get_active_env(get_session_env("HERMES_SESSION_ID") or get_session_env("HERMES_SESSION_KEY") or "default")


def fetch_remote_media(path: str) -> Optional[str]:
    from gateway.media_policy import media_delivery_strict

    if media_delivery_strict():
        return None
    env = _active_remote_env()
    if env is None:
        return None
    from gateway.platforms.base import DOCUMENT_CACHE_DIR, _normalize_media_tag_path, validate_media_delivery_path
    from tools.environments.base import FileFetchError

    remote_home = getattr(env, "_remote_home", None)
    candidate = posixpath.normpath(_normalize_media_tag_path(str(path)) or "")
    if candidate == "~" or candidate.startswith("~/"):
        if not remote_home:
            return None
        candidate = posixpath.normpath(posixpath.join(remote_home, candidate[2:]))
    if not candidate.startswith("/") or remote_path_is_denied(candidate, remote_home):
        return None
    try:
        resolved = env.fetch_realpath(candidate)
        if resolved is None or remote_path_is_denied(resolved, remote_home):
            return None
        basename = re.sub(r"[^\w.\-]", "_", posixpath.basename(resolved)) or "file"
        dest = Path(DOCUMENT_CACHE_DIR) / f"remote_{uuid.uuid4().hex[:12]}_{basename}"
        dest.parent.mkdir(parents=True, exist_ok=True)
        env.fetch_file(resolved, dest, max_bytes=_FETCH_MAX_BYTES)
    except FileFetchError as exc:
        logger.warning("Remote media fetch of %s skipped: %s", candidate, exc)
        return None
    except Exception:
        logger.warning("Remote media fetch of %s failed", candidate, exc_info=True)
        return None
    validated = validate_media_delivery_path(str(dest))
    if not validated:
        dest.unlink(missing_ok=True)
        return None
    return validated
