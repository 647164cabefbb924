"""Stand-in for Hermes 0.19.0's agent/prompt_builder.py (release commit 3ef6bbd): the backend probe.

Line numbers are of the real file at that commit; bodies are the stand-in's own.
"""

import logging
import os
from typing import Dict, Optional, Tuple

logger = logging.getLogger(__name__)

# :947-950
_REMOTE_TERMINAL_BACKENDS = frozenset({"docker", "singularity", "modal", "daytona", "ssh", "managed_modal"})

# :972 — one answer per process and (backend, TERMINAL_CWD), put into every later system prompt.
_BACKEND_PROBE_CACHE: Dict[Tuple[str, str], str] = {}

PROBE_COMMAND = (
    "printf 'os=%s\\nkernel=%s\\nhome=%s\\ncwd=%s\\nuser=%s\\n' "
    "\"$(uname -s 2>/dev/null || echo unknown)\" \"$(uname -r 2>/dev/null || echo unknown)\" "
    "\"$HOME\" \"$(pwd)\" \"$(whoami 2>/dev/null || id -un 2>/dev/null || echo unknown)\""
)


def _is_remote(backend: str) -> bool:
    return backend in _REMOTE_TERMINAL_BACKENDS


def _probe_remote_backend(env_type: str) -> Optional[str]:
    """:986-1110 — ``_create_environment`` with task ``prompt-backend-probe`` (:1052-1062), one command
    with a 4 s timeout, its ``key=value`` lines parsed; ``unknown`` values and failures dropped."""
    cache_key = (env_type, os.getenv("TERMINAL_CWD", ""))
    cached = _BACKEND_PROBE_CACHE.get(cache_key)
    if cached is not None:
        return cached or None
    try:
        from tools.terminal_tool import _create_environment, _get_env_config

        config = _get_env_config()
        env = _create_environment(
            env_type=env_type, image=config.get("docker_image", "") if env_type == "docker" else "",
            cwd=config.get("cwd", ""), timeout=config.get("timeout", 180), ssh_config=None,
            container_config={"container_disk": config.get("container_disk", 51200)}, task_id="prompt-backend-probe",
            host_cwd=config.get("host_cwd"),
        )
        result = env.execute(PROBE_COMMAND, timeout=4)
    except Exception as error:  # :1085-1088
        logger.debug("Backend probe failed: %s", error)
        _BACKEND_PROBE_CACHE[cache_key] = ""
        return None
    output = (result.get("output") or "").strip()
    if result.get("returncode") != 0 or not output:
        _BACKEND_PROBE_CACHE[cache_key] = ""
        return None
    parsed = dict(line.split("=", 1) for line in output.splitlines() if "=" in line)
    pieces = []
    os_bits = " ".join(v for v in (parsed.get("os"), parsed.get("kernel")) if v and v != "unknown")
    if os_bits:
        pieces.append(f"OS: {os_bits}")
    if parsed.get("user") and parsed["user"] != "unknown":
        pieces.append(f"User: {parsed['user']}")
    if parsed.get("home"):
        pieces.append(f"Home: {parsed['home']}")
    if parsed.get("cwd"):
        pieces.append(f"Working directory: {parsed['cwd']}")
    formatted = "\n".join(f"  {piece}" for piece in pieces)
    _BACKEND_PROBE_CACHE[cache_key] = formatted
    return formatted or None


def build_environment_hints() -> str:
    """:1118-1200 — for a remote backend, the probe's answer (else a fallback sentence); host facts otherwise."""
    backend = (os.getenv("TERMINAL_ENV") or "local").strip().lower()
    if not _is_remote(backend):
        return f"Host: {os.uname().sysname}"
    probe = _probe_remote_backend(backend)
    if probe:
        return f"Terminal backend: {backend}. ... only the following backend state matters:\n{probe}"
    return f"Terminal backend: {backend}. The backend probe didn't respond at prompt-build time."
