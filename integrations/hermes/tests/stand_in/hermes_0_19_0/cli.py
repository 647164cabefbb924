"""Stand-in for Hermes 0.19.0's cli.py (release commit 3ef6bbd): what importing the CLI sets up.

``load_cli_config()`` runs at import and bridges ``terminal:`` to ``TERMINAL_*`` (cli.py:408,
:657-712); the CLI never sets ``_HERMES_GATEWAY`` (only gateway/run.py:1408 does) and loads its
plugins at start-up for agent commands (hermes_cli/main.py:12990-13002).
"""

from hermes_cli.config import bridge_terminal_config


def load_cli_config() -> None:
    bridge_terminal_config()


load_cli_config()
