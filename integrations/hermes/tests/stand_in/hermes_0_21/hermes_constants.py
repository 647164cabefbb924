"""0.19.0's stand-in hermes_constants, with upstream's ``profile_name_for_home`` (hermes_constants.py at
00067189dfecf833d4d009c2dd977ae85cf800e0): the default root is ``default``, a ``<root>/profiles/<name>``
home is ``<name>``, anything else ``None``. The body is the stand-in's own."""

from pathlib import Path

_BASE = Path(__file__).resolve().parent.parent / "hermes_0_19_0" / "hermes_constants.py"
exec(compile(_BASE.read_text(encoding="utf-8"), str(_BASE), "exec"))  # noqa: S102 - the 0.19.0 body


def profile_name_for_home(path):
    if path is None or not str(path).strip():
        return None
    current = Path(path).expanduser()
    root = get_default_hermes_root()  # noqa: F821 - the 0.19.0 body's, run above
    if current == root or current.resolve() == root.resolve():
        return "default"
    if current.parent.name == "profiles" and not current.name.startswith("."):
        return current.name
    return None
