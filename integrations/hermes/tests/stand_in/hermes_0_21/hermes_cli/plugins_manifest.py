"""Stand-in for upstream Hermes' hermes_cli/plugins_manifest.py at 00067189dfecf833d4d009c2dd977ae85cf800e0:
its ``requires_hermes`` version gate only. ``PluginManifest.requires_hermes``: "Hermes version requirement
(``">=0.19"``, comma-separated clauses allowed). Unsatisfied plugins are recorded with an error and
skipped before import"; ``parse_manifest_file`` reads it as ``str(data.get("requires_hermes") or "").strip()``.
Bodies are the stand-in's own, each modelling the upstream function it is named after."""

import os
import re
from typing import Optional

_VERSION_COMPARATOR_RE = re.compile(r"^\s*(>=|<=|==|!=|>|<)\s*(.+?)\s*$")

RUNNING_VERSION = "0.21.3"
"""pyproject.toml's version at 0006718; the tests may claim another (HERMES_STAND_IN_VERSION)."""


def running_hermes_version() -> str:
    return os.environ.get("HERMES_STAND_IN_VERSION") or RUNNING_VERSION


def _version_tuple(v: str) -> Optional[tuple]:
    """``v1.2.3-rc1`` -> ``(1, 2, 3)``; None when a part is not a number."""
    parts = re.split(r"[-+]", str(v).strip().lstrip("v"), maxsplit=1)[0].split(".")
    parts += ["0"] * (3 - len(parts))
    try:
        return tuple(int(x) for x in parts[:3])
    except ValueError:
        return None


def version_satisfies(spec: str, current: str) -> bool:
    """Comma-separated clauses, all must hold; a bare version means ``>=``; unparseable is permissive."""
    cur = _version_tuple(current)
    if cur is None:
        return True
    ops = {">=": cur.__ge__, "<=": cur.__le__, "==": cur.__eq__, "!=": cur.__ne__, ">": cur.__gt__, "<": cur.__lt__}
    for clause in filter(None, (c.strip() for c in spec.split(","))):
        found = _VERSION_COMPARATOR_RE.match(clause)
        op, target = (found.group(1), found.group(2)) if found else (">=", clause)
        wanted = _version_tuple(target)
        if wanted is not None and not ops[op](wanted):
            return False
    return True


def requires_hermes_error(spec: str) -> Optional[str]:
    """The reason a plugin is not loaded, or None."""
    if not spec:
        return None
    current = running_hermes_version()
    return None if version_satisfies(spec, current) else f"requires hermes {spec}, running {current}"
