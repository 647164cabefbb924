"""0.19.0's stand-in delivery checks, with upstream's remote fetch: a MEDIA: path that fails host
validation is tried in the active remote sandbox (``gateway.media_fetch.fetch_remote_media``,
upstream's gateway/media_fetch.py: it "runs only after host validation failed")."""

from pathlib import Path

_BASE = Path(__file__).resolve().parents[3] / "hermes_0_19_0" / "gateway" / "platforms" / "base.py"
exec(compile(_BASE.read_text(encoding="utf-8"), str(_BASE), "exec"))  # noqa: S102 - the 0.19.0 body

DOCUMENT_CACHE_DIR = get_document_cache_dir()  # noqa: F821 - the 0.19.0 body's, run above


def _filter_media_delivery_paths(media_files):
    from gateway.media_fetch import fetch_remote_media

    safe = []
    for media_path, is_voice in media_files or []:
        checked = validate_media_delivery_path(str(media_path)) or fetch_remote_media(str(media_path))  # noqa: F821
        if checked:
            safe.append((checked, bool(is_voice)))
        else:
            logger.warning("Skipping unsafe MEDIA directive path: %s", str(media_path)[:200])  # noqa: F821
    return safe


BasePlatformAdapter.filter_media_delivery_paths = staticmethod(_filter_media_delivery_paths)  # noqa: F821
