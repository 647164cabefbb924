"""Stand-in for Hermes 0.19.0's tools/credential_files.py (commit 3ef6bbd, the v0.19.0 release): the cache
folders a docker sandbox gets, and the path the agent is told for a cached file.

Bodies of the stand-in's own; each behaviour names the line of Hermes 0.19.0 it models. Hermes'
docker backend mounts every existing cache folder read-only at ``/root/.hermes/<new name>``
(whichever of the legacy or new host folder is in use), and ``to_agent_visible_cache_path``
rewrites a host cache path to that mount only when ``TERMINAL_ENV`` is ``docker`` — keyed on
nothing else: no session, no environment object.
"""

import os
import posixpath
from pathlib import Path
from typing import Dict, List, Optional

# (new subpath, legacy name), as hermes_constants.get_hermes_dir takes them.
# Hermes 0.19.0 tools/credential_files.py:390-398
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
    """One mount per cache folder that exists on the host, always at the new layout's name.

    Hermes 0.19.0 tools/credential_files.py:401-422
    """
    from hermes_constants import get_hermes_dir

    mounts = []
    for new, legacy in _CACHE_DIRS:
        host = get_hermes_dir(new, legacy)
        if host.is_dir():
            mounts.append({"host_path": str(host), "container_path": f"{container_base.rstrip('/')}/{new}"})
    return mounts


def map_cache_path_to_container(host_path: str, container_base: str = "/root/.hermes") -> Optional[str]:
    """The mounted path of a host cache file, by lexical prefix (no link resolved), or None.

    Hermes 0.19.0 tools/credential_files.py:425-446
    """
    path = Path(host_path)
    for mount in get_cache_directory_mounts(container_base=container_base):
        try:
            relative = path.relative_to(mount["host_path"])
        except ValueError:
            continue
        return posixpath.join(mount["container_path"], relative.as_posix())
    return None


def from_agent_visible_cache_path(container_path: str, container_base: str = "/root/.hermes") -> str:
    """The inverse: a mounted cache path back to its host path, under the docker backend only.

    Hermes 0.19.0 tools/credential_files.py:449-470
    """
    if os.environ.get("TERMINAL_ENV", "local") != "docker":
        return container_path
    for mount in get_cache_directory_mounts(container_base=container_base):
        try:
            relative = Path(container_path).relative_to(mount["container_path"])
        except ValueError:
            continue
        return str(Path(mount["host_path"]) / relative)
    return container_path


def to_agent_visible_cache_path(host_path: str, container_base: str = "/root/.hermes") -> str:
    """The in-container path under the docker backend; the host path otherwise or outside the caches.

    Hermes 0.19.0 tools/credential_files.py:473-491
    """
    if os.environ.get("TERMINAL_ENV", "local") != "docker":
        return host_path
    mapped = map_cache_path_to_container(host_path, container_base=container_base)
    return mapped if mapped is not None else host_path
