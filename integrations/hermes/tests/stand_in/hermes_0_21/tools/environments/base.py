"""0.19.0's stand-in BaseEnvironment, with upstream's file methods (upstream PR #103600):
``fetch_file(remote_path, local_dest, *, max_bytes)`` and ``fetch_realpath(remote_path)``, by default
through ``execute()``; a backend may override them. Failures raise ``FileFetchError``."""

import base64
import shlex
from pathlib import Path

_BASE = Path(__file__).resolve().parents[3] / "hermes_0_19_0" / "tools" / "environments" / "base.py"
exec(compile(_BASE.read_text(encoding="utf-8"), str(_BASE), "exec"))  # noqa: S102 - the 0.19.0 body


class FileFetchError(RuntimeError):
    pass


def _fetch_file(self, remote_path: str, local_dest, *, max_bytes: int) -> None:
    quoted = shlex.quote(remote_path)
    result = self.execute(f"[ -f {quoted} ] && head -c {max_bytes + 1} < {quoted} | base64", timeout=300)
    if result.get("returncode"):
        raise FileFetchError(f"cannot read {remote_path}")
    data = base64.b64decode(result.get("output", ""))
    if len(data) > max_bytes:
        raise FileFetchError(f"{remote_path} is larger than {max_bytes} bytes")
    Path(local_dest).write_bytes(data)


def _fetch_realpath(self, remote_path: str):
    result = self.execute(f"readlink -f -- {shlex.quote(remote_path)}", timeout=30)
    return result.get("output", "").strip() or None if not result.get("returncode") else None


BaseEnvironment.fetch_file = _fetch_file  # noqa: F821 - the 0.19.0 body's, run above
BaseEnvironment.fetch_realpath = _fetch_realpath  # noqa: F821 - the 0.19.0 body's, run above
