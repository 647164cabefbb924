"""Berth for Hermes Agent: each messaging user of a Hermes gateway gets their own Docker sandbox.

Install it as a directory plugin (copy this folder to ``$HERMES_HOME/plugins/berth/``) or as a
pip package (entry point ``berth`` in group ``hermes_agent.plugins``), then enable it with
``plugins.enabled: [berth]``. Standard library only; the sandboxes are Berth's, reached through
``berth serve``. See docs/hermes.md.
"""

from . import _version
from .plugin import PROVIDER_NAME, register

__all__ = ["PROVIDER_NAME", "register"]
__version__ = _version.__version__
