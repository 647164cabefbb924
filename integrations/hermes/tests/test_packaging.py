"""berth-hermes as Hermes finds it: a directory plugin or a pip package; and the bridge's small rules."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import tomllib
import zipfile
from pathlib import Path
from typing import Any

import pytest
import yaml

from conftest import HERE, PACKAGE_ROOT, install_with_pip, launch_only, session_of, unique_user

sys.path.insert(0, str(PACKAGE_ROOT))
sys.path.insert(0, str(PACKAGE_ROOT / "build_backend"))
import berth_hermes_build  # noqa: E402 - once sys.path holds the package
import berth_hermes  # noqa: E402 - once sys.path holds the package
from berth_hermes import environment, errors, protocol, server  # noqa: E402 - once sys.path holds the package

VERSION = berth_hermes.__version__


def test_the_wheel_carries_the_plugin_its_entry_point_and_a_valid_record():
    with tempfile.TemporaryDirectory() as folder:
        name = berth_hermes_build.build_wheel(folder)
        assert name == f"berth_hermes-{VERSION}-py3-none-any.whl"
        with zipfile.ZipFile(Path(folder) / name) as wheel:
            files = set(wheel.namelist())
            assert {"berth_hermes/__init__.py", "berth_hermes/plugin.py", "berth_hermes/server.py",
                    "berth_hermes/environment.py", "berth_hermes/settings.py", "berth_hermes/errors.py",
                    "berth_hermes/plugin.yaml", "berth_hermes/exit_with_gateway.mjs", "berth_hermes/protocol.py",
                    "berth_hermes/request_protocol.json", "berth_hermes/files.py", "berth_hermes/inbound.py",
                    "berth_hermes/outbound.py"} <= files
            dist_info = f"berth_hermes-{VERSION}.dist-info"
            assert wheel.read(f"{dist_info}/entry_points.txt").decode() == (
                "[hermes_agent.plugins]\nberth = berth_hermes\n\n"
            )
            metadata = wheel.read(f"{dist_info}/METADATA").decode()
            assert "Name: berth-hermes\n" in metadata and "Requires-Python: >=3.11\n" in metadata
            assert f"Version: {VERSION}\n" in metadata
            for line in wheel.read(f"{dist_info}/RECORD").decode().splitlines():
                path, digest, size = line.split(",")
                if digest:
                    data = wheel.read(path)
                    assert digest == (
                        "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
                    )
                    assert int(size) == len(data)


def test_the_version_is_stated_once_in_the_manifest_and_read_everywhere_else():
    manifest = yaml.safe_load((PACKAGE_ROOT / "berth_hermes" / "plugin.yaml").read_text(encoding="utf-8"))
    assert isinstance(manifest["version"], str) and VERSION == manifest["version"]
    project = tomllib.loads((PACKAGE_ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert "version" not in project and "version" in project["dynamic"]


def test_installed_with_pip_the_package_and_its_metadata_carry_the_manifests_version(tmp_path):
    install_with_pip(tmp_path / "site")
    script = ("import sys; sys.path.insert(0, sys.argv[1]); import importlib.metadata, berth_hermes; "
              "print(berth_hermes.__file__, berth_hermes.__version__, importlib.metadata.version('berth-hermes'))")
    run = subprocess.run([sys.executable, "-I", "-c", script, os.fspath(tmp_path / "site")],
                         capture_output=True, text=True, check=True, cwd=tmp_path)
    assert run.stdout.split() == [os.fspath(tmp_path / "site" / "berth_hermes" / "__init__.py"), VERSION, VERSION]


def test_the_directory_plugins_manifest_is_named_berth_as_plugins_enabled_says():
    manifest = (PACKAGE_ROOT / "berth_hermes" / "plugin.yaml").read_text()
    assert manifest.splitlines()[0] == "name: berth"


def test_installed_with_pip_hermes_loads_it_from_its_entry_point(make_gateway, engine):
    gateway = make_gateway(install="entrypoint")
    assert gateway.ready == {"ready": True, "loaded": ["berth"], "errors": {}}
    a = unique_user()
    assert gateway.terminal("echo via-pip", session=session_of(a))["output"] == "via-pip"
    assert gateway.state()["environments"]["default"]["module"] == "berth_hermes.environment"
    assert [c["Labels"].get("dev.berth.user") for c in engine.containers_under(gateway.home)] == [a]


@pytest.mark.parametrize(("given", "folder"), [
    ("/root", "/workspace"), ("/home/operator/project", "/workspace"), ("", "/workspace"), (".", "/workspace"),
    ("/workspace/project", "/workspace/project"), ("/workspace/../etc", "/workspace"), ("/workspacefoo", "/workspace"),
])
def test_a_handle_reports_a_folder_that_exists_in_every_sandbox(given, folder):
    assert environment.starting_folder(given) == folder


def test_tilde_is_the_sandboxs_home():
    assert environment.container_path("~") == "/root"
    assert environment.container_path("~/notes") == "/root/notes"
    assert environment.container_path("/tmp") == "/tmp"


def test_errors_are_one_line_whatever_they_are_given():
    assert str(errors.BerthBridgeError("berth: a\nb\r\n  c")) == "berth: a b c"
    assert isinstance(errors.BerthNotInstalledError("x"), ImportError)


def test_a_request_over_one_mebibyte_is_refused_before_anything_is_sent(tmp_path):
    instance = server.BerthServer(tmp_path / "none.sock", home=tmp_path, config_file=None)
    with pytest.raises(errors.BerthBridgeError, match="larger than 1 MiB"):
        instance.request(
            {"v": 1, "command": "cat", "stdin": "x" * (1024 * 1024 + 10)}, read_timeout=1, interrupted=lambda: False
        )
    assert not (tmp_path / "none.sock").exists()


class _RecordingServer:
    """Stands in for ``BerthServer``: records what would be sent, answers a finished command."""

    def __init__(self) -> None:
        self.sent: list[dict] = []

    def request(self, payload, *, read_timeout, interrupted):
        self.sent.append(dict(payload))
        return {"v": 1, "exitCode": 0, "stdout": "", "stderr": "", "timedOut": False}


def test_the_bridge_reads_berths_limits_from_the_protocol_file_core_writes():
    written = json.loads((PACKAGE_ROOT / "berth_hermes" / "request_protocol.json").read_text(encoding="utf-8"))
    assert (
        protocol.PROTOCOL_VERSION, protocol.MAX_REQUEST_BYTES, protocol.MAX_COMMAND_TIMEOUT_SECONDS,
        protocol.TIMEOUT_EXIT_CODE,
    ) == (
        written["protocolVersion"], written["maxRequestBytes"], written["maxCommandTimeoutSeconds"],
        written["timeoutExitCode"],
    )
    assert server.MAX_REQUEST_BYTES == written["maxRequestBytes"]  # type: ignore[attr-defined]  # server's own import


def test_a_timeout_over_berths_ceiling_is_refused_as_berth_serve_refuses_it_never_cut():
    recording = _RecordingServer()
    handle = environment.environment_class()(profiles=launch_only(recording), cwd="/workspace", timeout=60)
    ceiling = protocol.MAX_COMMAND_TIMEOUT_SECONDS
    handle.execute("true", timeout=ceiling)
    assert recording.sent[-1]["timeout"] == ceiling
    with pytest.raises(
        errors.BerthBridgeError, match=f"^berth: invalid request: field timeout must be at most {ceiling} seconds$"
    ) as refused:
        handle.execute("true", timeout=ceiling + 1)
    assert refused.value.code == "REQUEST_INVALID"
    assert len(recording.sent) == 1


def test_the_manifest_asks_for_hermes_0_19_or_newer_in_upstreams_own_terms() -> None:
    """Upstream 0.21's gate (hermes_cli/plugins_manifest.py at 0006718, its stand-in's version_satisfies)."""
    import importlib.util

    path = HERE / "stand_in" / "hermes_0_21" / "hermes_cli" / "plugins_manifest.py"
    spec = importlib.util.spec_from_file_location("stand_in_plugins_manifest", path)
    assert spec is not None and spec.loader is not None
    gate = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gate)
    manifest = yaml.safe_load((PACKAGE_ROOT / "berth_hermes" / "plugin.yaml").read_text(encoding="utf-8"))
    wanted = manifest["requires_hermes"]
    assert [gate.version_satisfies(wanted, version) for version in ("0.19.0", "0.21.3", "1.0", "0.18.9")] == [
        True, True, True, False]


def test_a_hermes_older_than_the_manifest_asks_skips_the_plugin_with_its_reason(make_gateway: Any) -> None:
    gateway = make_gateway(hermes="0.21", environment={"HERMES_STAND_IN_VERSION": "0.18.0"})
    assert gateway.ready == {"ready": True, "loaded": [],
                             "errors": {"berth": "requires hermes >=0.19, running 0.18.0"}}
