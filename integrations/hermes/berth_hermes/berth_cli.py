"""Finding what runs `berth serve`: the Node.js binary and Berth's CLI, and whether that Node.js is new enough."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from typing import Mapping

from .errors import BerthNotInstalledError

INSTALL_HINT = "npm install -g @berth/gateway-plugin"
MIN_NODE_MAJOR = 22


def locate_berth(environment: Mapping[str, str]) -> tuple[str, str]:
    """The node binary and Berth's CLI script: ``$BERTH_NODE`` / ``$BERTH_CLI``, else ``node`` and ``berth`` on PATH."""
    search = environment.get("PATH", os.defpath)
    node = environment.get("BERTH_NODE") or shutil.which("node", path=search)
    if not node:
        raise BerthNotInstalledError(
            "berth: Node.js is not installed (no node on PATH); "
            f"install Node.js {MIN_NODE_MAJOR} or newer, then Berth: {INSTALL_HINT}"
        )
    cli = environment.get("BERTH_CLI") or shutil.which("berth", path=search)
    if not cli:
        raise BerthNotInstalledError(
            "berth: Berth is not installed (no berth on PATH); "
            f"install it with: {INSTALL_HINT} (or set BERTH_CLI to its cli.js)"
        )
    script = os.path.realpath(cli)
    if not os.path.isfile(script):
        raise BerthNotInstalledError(
            f"berth: BERTH_CLI names {cli}, which does not exist; "
            f"install Berth with: {INSTALL_HINT}, or correct BERTH_CLI"
        )
    return node, script


def check_node(node: str) -> None:
    """Refuses a node binary that does not run or is older than Berth needs."""
    try:
        version = subprocess.run(
            [node, "--version"], capture_output=True, text=True, timeout=20, check=False
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        raise BerthNotInstalledError(
            f"berth: {node} does not run; install Node.js {MIN_NODE_MAJOR} or newer, then Berth: {INSTALL_HINT}"
        ) from None
    match = re.match(r"v(\d+)\.", version)
    if not match or int(match.group(1)) < MIN_NODE_MAJOR:
        raise BerthNotInstalledError(
            f"berth: Berth needs Node.js {MIN_NODE_MAJOR} or newer, "
            f"and {node} is {version or 'of an unknown version'}; "
            "install a newer Node.js (or set BERTH_NODE to one)"
        )
