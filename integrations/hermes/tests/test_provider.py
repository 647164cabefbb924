"""What Berth's provider answers besides its factory, on a Hermes with the provider API; no engine.

Upstream's base class asks these of a provider (agent/terminal_env_provider.py at
3af739aeceb6cccaeb7e52912fd2d3606f1cee23): ``env_description`` (:78-81), ``strip_env_keys``, "vendor
credential env vars, stripped from every subprocess the agent spawns" (:51-52, :74-76), and
``doctor_checks``, ``hermes doctor``'s rows ``(ok, label, detail)`` (:111-117).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from berth_hermes.plugin import create_provider
from berth_hermes.settings import BridgeSettings


def provider(tmp_path: Path, prefix: str = "HERMES_USER") -> Any:
    settings = BridgeSettings(
        home=tmp_path, config_file=None, socket=tmp_path / "run" / "berth.sock", user_sandbox=True,
        backend="berth_docker", user_env_prefix=prefix,
    )
    return create_provider(object(), settings)  # type: ignore[arg-type]  # never asked for its server here


def test_it_strips_the_users_own_variables_from_host_processes(tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.setenv("HERMES_USER_TELEGRAM_1_TOKEN", "one")
    monkeypatch.setenv("ACME_TELEGRAM_2_TOKEN", "two")
    monkeypatch.setenv("OPENAI_API_KEY", "the gateway's own")
    assert "HERMES_USER_TELEGRAM_1_TOKEN" in provider(tmp_path).strip_env_keys
    assert not {"OPENAI_API_KEY", "ACME_TELEGRAM_2_TOKEN"} & provider(tmp_path).strip_env_keys
    assert provider(tmp_path, prefix="ACME").strip_env_keys >= {"ACME_TELEGRAM_2_TOKEN"}
    assert "HERMES_USER_TELEGRAM_1_TOKEN" not in provider(tmp_path, prefix="ACME").strip_env_keys


def test_it_says_where_commands_run_when_the_prompt_cannot_probe(tmp_path: Path) -> None:
    assert "each messaging user" in provider(tmp_path).env_description


def test_hermes_doctor_gets_a_row_for_berth_and_its_node(tmp_path: Path, monkeypatch: Any) -> None:
    """Each row says what to do when it fails."""
    monkeypatch.setenv("BERTH_NODE", sys.executable)  # runs, but is no Node.js
    monkeypatch.setenv("BERTH_CLI", os.fspath(tmp_path / "missing.js"))
    [(ok, label, detail)] = provider(tmp_path).doctor_checks()
    assert (ok, label) == (False, "Berth") and "does not exist" in detail and "BERTH_CLI" in detail
    cli = tmp_path / "cli.js"
    cli.write_text("", encoding="utf-8")
    monkeypatch.setenv("BERTH_CLI", os.fspath(cli))
    rows = provider(tmp_path).doctor_checks()
    assert rows[0] == (True, "Berth", os.fspath(cli))
    assert rows[1][:2] == (False, "Node.js for Berth") and "Node.js" in rows[1][2]


def test_hermes_doctor_says_both_are_there_when_they_are(tmp_path: Path, monkeypatch: Any, node: str) -> None:
    monkeypatch.setenv("BERTH_NODE", node)
    cli = tmp_path / "cli.js"
    cli.write_text("", encoding="utf-8")
    monkeypatch.setenv("BERTH_CLI", os.fspath(cli))
    assert [row[:2] for row in provider(tmp_path).doctor_checks()] == [(True, "Berth"), (True, "Node.js for Berth")]


def test_it_offers_no_settings_below_terminal_backends_since_berth_reads_the_terminal_section(tmp_path: Path) -> None:
    """Core refuses Berth's keys under ``terminal.backends.berth_docker`` (they belong in ``terminal:``), so the
    dashboard's schema (``get_config_schema``, :119-121) offers none; ``hermes setup`` says where they go."""
    made = provider(tmp_path)
    assert made.get_config_schema() == {}
    assert any("terminal: section" in line for line in made.setup_instructions())
