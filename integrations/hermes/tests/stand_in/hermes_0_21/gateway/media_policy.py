"""Stand-in for upstream's gateway/media_policy.py."""

import os


def media_delivery_strict() -> bool:
    return os.environ.get("HERMES_MEDIA_DELIVERY_STRICT", "0").strip().lower() in ("1", "true", "yes", "on")
