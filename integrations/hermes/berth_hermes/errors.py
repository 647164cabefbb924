"""The two ways the bridge fails, each with a one-line message that names the culprit and the fix."""

from __future__ import annotations


class BerthBridgeError(RuntimeError):
    """Berth could not run a command: the message is one line, starts with ``berth:``, holds no secret."""

    def __init__(self, message: str, code: str = "BRIDGE") -> None:
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
        self.code = "NOT_INSTALLED"


def one_line(text: str) -> str:
    """Collapses whitespace and line breaks, so a message is always exactly one line."""
    return " ".join(text.split())
