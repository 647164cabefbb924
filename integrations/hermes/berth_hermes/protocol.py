"""Berth's request protocol as core states it: its limits, read from ``request_protocol.json``.

That file is written from ``packages/core/src/request-protocol.ts`` (``pnpm exec tsx
scripts/write-request-protocol.ts``) and a unit test there fails when it is stale, so the bridge
never holds a copy of its own of what TypeScript decides.
"""

from __future__ import annotations

import json
from pathlib import Path

from .errors import BerthBridgeError

_CONSTANTS = json.loads(Path(__file__).with_name("request_protocol.json").read_text(encoding="utf-8"))

PROTOCOL_VERSION: int = _CONSTANTS["protocolVersion"]
MAX_REQUEST_BYTES: int = _CONSTANTS["maxRequestBytes"]
MAX_COMMAND_TIMEOUT_SECONDS: int = _CONSTANTS["maxCommandTimeoutSeconds"]
DEFAULT_COMMAND_TIMEOUT_SECONDS: int = _CONSTANTS["defaultCommandTimeoutSeconds"]
TIMEOUT_EXIT_CODE: int = _CONSTANTS["timeoutExitCode"]
ATTACHMENTS_FOLDER: str = _CONSTANTS["attachmentsFolder"]


def checked_timeout(seconds: float) -> float:
    """``seconds`` when ``berth serve`` takes it as a command's timeout; else refused as it refuses it.

    A timeout over the ceiling is an error, never cut to the ceiling: the same code and message as
    the server's refusal, before anything is sent.
    """
    if seconds > MAX_COMMAND_TIMEOUT_SECONDS:
        raise BerthBridgeError(
            f"berth: invalid request: field timeout must be at most {MAX_COMMAND_TIMEOUT_SECONDS} seconds",
            code="REQUEST_INVALID",
        )
    return seconds
