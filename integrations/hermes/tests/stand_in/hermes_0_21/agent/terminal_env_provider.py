"""Stand-in for upstream's agent/terminal_env_provider.py."""

import abc
from typing import Any, Dict, Optional


class TerminalEnvironmentProvider(abc.ABC):
    is_remote: bool = True
    is_container: bool = True
    session_isolated_when_nonpersistent: bool = False

    @property
    @abc.abstractmethod
    def name(self) -> str:
        ...

    @property
    def display_name(self) -> str:
        return self.name

    @abc.abstractmethod
    def is_available(self) -> bool:
        ...

    def check_requirements(self, config: Dict[str, Any]) -> bool:
        return self.is_available()

    @abc.abstractmethod
    def create_environment(self, *, cwd: str, timeout: int, task_id: str = "default", image: Optional[str] = None,
                           container_config: Optional[Dict[str, Any]] = None, **kwargs: Any):
        ...
