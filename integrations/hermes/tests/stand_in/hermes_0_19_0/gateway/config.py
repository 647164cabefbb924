"""Stand-in for Hermes 0.19.0's gateway/config.py (release commit 3ef6bbd): the ``Platform`` enum only."""

from enum import Enum


class Platform(Enum):
    """:272-302 — the platforms a session's source names; ``.value`` is what the session ContextVars get."""

    LOCAL = "local"
    TELEGRAM = "telegram"
    DISCORD = "discord"
    WHATSAPP = "whatsapp"
    SLACK = "slack"
    SIGNAL = "signal"
    API_SERVER = "api_server"
    WEBHOOK = "webhook"
