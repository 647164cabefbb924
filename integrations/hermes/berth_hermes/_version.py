"""The package's version, stated once: ``version:`` in ``plugin.yaml``, beside this file.

``plugin.yaml`` is the manifest Hermes reads for a directory plugin and cannot read anything
else, so it holds the number; ``__version__`` reads it here, and the in-tree build backend
(``build_backend/``) reads it through this module for the wheel's and the sdist's metadata.
Standard library only: the line is ``version: X.Y.Z``, quoted or not.
"""

from __future__ import annotations

from pathlib import Path

MANIFEST = Path(__file__).with_name("plugin.yaml")


def manifest_version(manifest: Path = MANIFEST) -> str:
    """The ``version:`` that ``manifest`` states at its top level."""
    for line in manifest.read_text(encoding="utf-8").splitlines():
        key, colon, value = line.partition(":")
        if colon and key == "version":
            return value.split(" #", 1)[0].strip().strip("'\"")
    raise RuntimeError(f"{manifest} states no version")


__version__ = manifest_version()
