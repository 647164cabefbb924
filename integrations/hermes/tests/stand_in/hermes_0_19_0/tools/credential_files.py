"""Stand-in for Hermes 0.19.0's tools/credential_files.py: the cache folders and their in-container paths.

Research notes (docs: /work/notes/issue25-research.md §2): each existing cache folder under
``$HERMES_HOME`` is mounted read-only at ``/root/.hermes/<new name>`` by Hermes' docker backend;
``to_agent_visible_cache_path`` maps a host cache path there only when ``TERMINAL_ENV`` is
``docker``, keyed on nothing else (no session, no environment object).
"""

import os
import posixpath
from pathlib import Path
from typing import Dict, List, Optional

from hermes_constants import get_hermes_dir

_CACHE_DIRS = [
    ("cache/documents", "document_cache"),
    ("cache/images", "image_cache"),
    ("cache/audio", "audio_cache"),
    ("cache/videos", "video_cache"),
    ("cache/screenshots", "browser_screenshots"),
    ("cache/web", "web_cache"),
    ("cache/delegation", "delegation_cache"),
]


def get_cache_directory_mounts(container_base: str = "/root/.hermes") -> List[Dict[str, str]]:
    mounts = []
    for new, legacy in _CACHE_DIRS:
        host = get_hermes_dir(new, legacy)
        if host.is_dir():
            mounts.append({"host_path": str(host), "container_path": posixpath.join(container_base, new)})
    return mounts


def map_cache_path_to_container(host_path: str, container_base: str = "/root/.hermes") -> Optional[str]:
    path = Path(host_path)
    for mount in get_cache_directory_mounts(container_base=container_base):
        try:
            relative = path.relative_to(mount["host_path"])
        except ValueError:
            continue
        return posixpath.join(mount["container_path"], relative.as_posix())
    return None


def to_agent_visible_cache_path(host_path: str, container_base: str = "/root/.hermes") -> str:
    if os.environ.get("TERMINAL_ENV", "local") != "docker":
        return host_path
    mapped = map_cache_path_to_container(host_path, container_base=container_base)
    return mapped if mapped is not None else host_path
