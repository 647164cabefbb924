"""Berth's wire contract as TypeScript states it, read from ``request_protocol.json``: the request's limits,
the session variables a request's fields come from, the error codes an answer may carry, and each
request and answer as JSON Schema.

That file is written from ``apps/gateway-plugin/src/socket/wire-contract.ts`` (``pnpm exec tsx
scripts/write-request-protocol.ts``) and a unit test there fails when it is stale, so the bridge
never holds a copy of its own of what TypeScript decides.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Mapping

from .errors import BerthBridgeError, WireErrorCode

_CONTRACT = json.loads(Path(__file__).with_name("request_protocol.json").read_text(encoding="utf-8"))

PROTOCOL_VERSION: int = _CONTRACT["protocolVersion"]
MAX_REQUEST_BYTES: int = _CONTRACT["maxRequestBytes"]
MAX_COMMAND_TIMEOUT_SECONDS: int = _CONTRACT["maxCommandTimeoutSeconds"]
DEFAULT_COMMAND_TIMEOUT_SECONDS: int = _CONTRACT["defaultCommandTimeoutSeconds"]
TIMEOUT_EXIT_CODE: int = _CONTRACT["timeoutExitCode"]
ATTACHMENTS_FOLDER: str = _CONTRACT["attachmentsFolder"]

SESSION_VARIABLE_FIELDS: Mapping[str, str] = dict(_CONTRACT["sessionVariables"])
"""Which of Hermes' session variables is which field of a request (core's ``SESSION_VARIABLE_FIELDS``)."""

ERROR_CODES: frozenset[str] = frozenset(_CONTRACT["errorCodes"])
"""Every code an error answer of ``berth serve`` may carry."""

REQUESTS: Mapping[str, Mapping[str, Any]] = _CONTRACT["requests"]
"""Each request, by its ``op`` (``exec``, ``put-file``, ``get-file``), as JSON Schema."""


def wire_error_code(code: str) -> WireErrorCode:
    """``code``, one of :data:`ERROR_CODES`; a ``KeyError`` when the contract has no such code."""
    if code not in ERROR_CODES:
        raise KeyError(f"{code} is not an error code of request_protocol.json")
    return WireErrorCode(code)


# The contract's codes the bridge itself raises, for the same refusal as berth serve's.
REQUEST_INVALID = wire_error_code("REQUEST_INVALID")
REQUEST_TOO_LARGE = wire_error_code("REQUEST_TOO_LARGE")
SOCKET_PATH = wire_error_code("SOCKET_PATH")


def checked_timeout(seconds: float) -> float:
    """``seconds`` when ``berth serve`` takes it as a command's timeout; else refused as it refuses it.

    A timeout over the ceiling is an error, never cut to the ceiling: the same code and message as
    the server's refusal, before anything is sent.
    """
    if seconds > MAX_COMMAND_TIMEOUT_SECONDS:
        raise BerthBridgeError(
            f"berth: invalid request: field timeout must be at most {MAX_COMMAND_TIMEOUT_SECONDS} seconds",
            code=REQUEST_INVALID,
        )
    return seconds
