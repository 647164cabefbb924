"""The two ways the bridge fails, each with a one-line message that names the culprit and the fix, and its codes."""

from __future__ import annotations

from typing import Literal, NewType, get_args

BridgeErrorCode = Literal[
    "BRIDGE",  # the default: a failure of the bridge's own that names no other code
    "NOT_INSTALLED",  # Node.js or Berth's CLI is missing, or too old (BerthNotInstalledError)
    "SERVER_START",  # berth serve exited at start, or did not answer in time
    "SOCKET_CONNECT",  # berth serve's socket is there but cannot be connected to
    "SOCKET_PEER",  # the server on the socket runs as another user
    "ANSWER_TIMEOUT",  # no answer within the command's timeout and the grace after it
    "NO_ANSWER",  # berth serve closed the connection without an answer
    "BAD_ANSWER",  # an answer that is not JSON, lacks its field, or names a host path outside the target
    "ERROR",  # an error answer without a code
]
"""The bridge's own codes, listed once: failures on this side of the socket, never in an answer of ``berth serve``.

Every other code the bridge raises is one of the wire contract's (``protocol.ERROR_CODES``, read
from ``request_protocol.json``): one that ``berth serve`` answered with, or one the bridge gives for
the same refusal before anything is sent. ``tests/test_wire_contract.py`` holds both lists apart.
"""

BRIDGE_ERROR_CODES: frozenset[str] = frozenset(get_args(BridgeErrorCode))

WireErrorCode = NewType("WireErrorCode", str)
"""A code that crosses the socket: one of the wire contract's (``protocol.wire_error_code``), or one ``berth serve``
answered with."""


class BerthBridgeError(RuntimeError):
    """Berth could not run a command: the message is one line, starts with ``berth:``, holds no secret."""

    def __init__(self, message: str, code: BridgeErrorCode | WireErrorCode = "BRIDGE") -> None:
        super().__init__(one_line(message))
        self.code = code


class BerthNotInstalledError(ImportError):
    """Node.js or Berth's CLI is missing.

    An ``ImportError`` on purpose: Hermes' terminal tool shows an ``ImportError`` raised while an
    environment is created as "Terminal tool disabled: environment creation failed (…)" — a
    missing dependency, which is what this is.
    """

    def __init__(self, message: str) -> None:
        super().__init__(one_line(message))
        self.code: BridgeErrorCode = "NOT_INSTALLED"


def one_line(text: str) -> str:
    """Collapses whitespace and line breaks, so a message is always exactly one line."""
    return " ".join(text.split())
