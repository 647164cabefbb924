"""A PEP 517 build backend in the standard library only.

berth-hermes has no dependencies, and its build must not have any either: `pip install` of this
folder then works where no package index can be reached. It builds a pure-Python wheel (and an
sdist) from pyproject.toml's name, requires-python and entry points, and the version that
berth_hermes/plugin.yaml states (pyproject.toml's is dynamic), read by berth_hermes/_version.py.
"""

from __future__ import annotations

import base64
import hashlib
import importlib.util
import io
import os
import tarfile
import tomllib
import zipfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "berth_hermes"
PACKAGE_FILES = ("*.py", "plugin.yaml", "*.mjs", "*.json")


def _version() -> str:
    """``berth_hermes.__version__``, from its own module alone: importing the package is not needed."""
    spec = importlib.util.spec_from_file_location("_berth_hermes_version", ROOT / PACKAGE / "_version.py")
    if spec is None or spec.loader is None:
        raise RuntimeError(f"cannot load {ROOT / PACKAGE / '_version.py'}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return str(module.__version__)


def _project() -> dict[str, Any]:
    return {**tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"], "version": _version()}


def _dist_name() -> str:
    project = _project()
    return f"{project['name'].replace('-', '_')}-{project['version']}"


def _package_files() -> list[Path]:
    return sorted({path for pattern in PACKAGE_FILES for path in (ROOT / PACKAGE).glob(pattern)})


def _metadata_files() -> dict[str, bytes]:
    project = _project()
    readme = ROOT / project.get("readme", "README.md")
    metadata = (
        "Metadata-Version: 2.1\n"
        f"Name: {project['name']}\n"
        f"Version: {project['version']}\n"
        f"Summary: {project.get('description', '')}\n"
        f"Requires-Python: {project.get('requires-python', '>=3')}\n"
        f"License: {project.get('license', '')}\n"
        "Description-Content-Type: text/markdown\n\n"
        + (readme.read_text(encoding="utf-8") if readme.is_file() else "")
    )
    groups = project.get("entry-points", {})
    entry_points = "".join(
        f"[{group}]\n" + "".join(f"{name} = {target}\n" for name, target in entries.items()) + "\n"
        for group, entries in groups.items()
    )
    wheel = "Wheel-Version: 1.0\nGenerator: berth_hermes_build\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    return {"METADATA": metadata.encode(), "WHEEL": wheel.encode(), "entry_points.txt": entry_points.encode()}


def _record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def get_requires_for_build_wheel(config_settings: dict[str, Any] | None = None) -> list[str]:
    return []


def get_requires_for_build_sdist(config_settings: dict[str, Any] | None = None) -> list[str]:
    return []


def get_requires_for_build_editable(config_settings: dict[str, Any] | None = None) -> list[str]:
    return []


def prepare_metadata_for_build_wheel(metadata_directory: str, config_settings: dict[str, Any] | None = None) -> str:
    dist_info = f"{_dist_name()}.dist-info"
    target = Path(metadata_directory) / dist_info
    target.mkdir(parents=True, exist_ok=True)
    for name, data in _metadata_files().items():
        (target / name).write_bytes(data)
    return dist_info


prepare_metadata_for_build_editable = prepare_metadata_for_build_wheel


def _write_wheel(wheel_directory: str, files: dict[str, bytes]) -> str:
    dist_info = f"{_dist_name()}.dist-info"
    entries = dict(files)
    entries.update({f"{dist_info}/{name}": data for name, data in _metadata_files().items()})
    record = [_record_line(name, data) for name, data in entries.items()] + [f"{dist_info}/RECORD,,"]
    entries[f"{dist_info}/RECORD"] = ("\n".join(record) + "\n").encode()
    filename = f"{_dist_name()}-py3-none-any.whl"
    with zipfile.ZipFile(Path(wheel_directory) / filename, "w", zipfile.ZIP_DEFLATED) as wheel:
        for name, data in entries.items():
            wheel.writestr(zipfile.ZipInfo(name, date_time=(2024, 1, 1, 0, 0, 0)), data)
    return filename


def build_wheel(
    wheel_directory: str, config_settings: dict[str, Any] | None = None, metadata_directory: str | None = None
) -> str:
    return _write_wheel(wheel_directory, {f"{PACKAGE}/{path.name}": path.read_bytes() for path in _package_files()})


def build_editable(
    wheel_directory: str, config_settings: dict[str, Any] | None = None, metadata_directory: str | None = None
) -> str:
    return _write_wheel(wheel_directory, {f"{PACKAGE}.pth": (os.fspath(ROOT) + "\n").encode()})


def build_sdist(sdist_directory: str, config_settings: dict[str, Any] | None = None) -> str:
    base = _dist_name()
    filename = f"{base}.tar.gz"
    members = [
        ROOT / "pyproject.toml", ROOT / "README.md", ROOT / "build_backend" / "berth_hermes_build.py", *_package_files()
    ]
    with tarfile.open(Path(sdist_directory) / filename, "w:gz") as sdist:
        for path in members:
            if path.is_file():
                sdist.add(path, arcname=f"{base}/{path.relative_to(ROOT).as_posix()}")
        info = tarfile.TarInfo(f"{base}/PKG-INFO")
        data = _metadata_files()["METADATA"]
        info.size = len(data)
        sdist.addfile(info, io.BytesIO(data))
    return filename
