"""``register(ctx)``: how Berth takes over the docker environments of a Hermes gateway.

* Hermes 0.19.0 has no way to register a terminal backend, so Berth replaces
  ``tools.terminal_tool._create_environment``: the ``docker`` backend gets Berth's environment,
  every other backend Hermes' original. File tools, background processes and ``execute_code``
  look that function up when they run, so they all get Berth's environment.
* A Hermes whose ``PluginContext`` has ``register_terminal_environment_provider`` gets a provider
  named ``berth_docker`` instead (``terminal.backend: berth_docker``), and nothing is replaced.
* Either way, a background job is pinned to the session that started it, and each run of a cron
  job is marked with the job's id (``session.track_cron_jobs``), since Hermes blanks a job's session.
* Every call is resolved to the profile whose home Hermes bound for the turn (``profiles.py``): its
  own settings and `berth serve`; a profile that does not use Berth keeps Hermes' own handling.
"""

from __future__ import annotations

import functools
import logging
import os
import sys
from typing import Any, Callable

from .environment import create_environment, is_berth_environment
from .errors import BerthNotInstalledError
from .files import deliverable_files, outbox_folder
from .inbound import wrap_inbound_text
from .outbound import guard_delivery, register_media_transform
from .berth_cli import check_node
from .profiles import Profiles, pass_through
from .server import locate_berth, server_for
from .session import read_session, track_cron_jobs, use_variable_names
from .settings import BridgeSettings

logger = logging.getLogger("berth_hermes")

PROVIDER_NAME = "berth_docker"
"""The name Berth's provider takes where Hermes has the provider API (built-in names are reserved; ``[a-z0-9_]``)."""


def register(ctx: Any) -> None:
    """Hermes' plugin entry point: called once, at start-up, with the gateway's ``PluginContext``."""
    settings = BridgeSettings.load()
    use_variable_names(settings.user_env_prefix, settings.forwarded)
    server = server_for(settings.socket, home=settings.home, config_file=settings.config_file)
    try:
        locate_berth(os.environ)
    except BerthNotInstalledError as missing:
        logger.warning("%s", missing)
    register_provider = getattr(ctx, "register_terminal_environment_provider", None)
    profiles = Profiles(settings, server, provider_api=callable(register_provider))
    if callable(register_provider):
        register_provider(create_provider(profiles, settings))
        logger.info(
            "berth: registered the terminal backend %s (set terminal.backend: %s); berth serve on %s",
            PROVIDER_NAME, PROVIDER_NAME, settings.socket,
        )
        if settings.backend == "docker":
            logger.warning(
                "berth: terminal.backend is docker, which this Hermes serves itself; "
                "set terminal.backend: %s for one sandbox per messaging user",
                PROVIDER_NAME,
            )
    elif settings.backend == PROVIDER_NAME:
        logger.warning(
            "berth: this Hermes cannot register terminal backends, so it does not know terminal.backend: %s; "
            "set terminal.backend: docker",
            PROVIDER_NAME,
        )
        replace_create_environment(profiles)
    elif not settings.user_sandbox:
        logger.info(
            "berth: terminal.docker_user_sandbox is false, "
            "so Hermes' own docker backend keeps serving every environment"
        )
        return
    else:
        replace_create_environment(profiles)
        logger.info(
            "berth: docker environments now run in one Berth sandbox per messaging user; berth serve on %s",
            settings.socket,
        )
    bind_background_jobs()
    track_cron_jobs()
    # Files go to and from Berth's sandboxes only for a profile whose backend is the one Berth serves
    # here: else the agent's files are in Hermes' own container, and Hermes' own file handling stays.
    # With the provider API any profile of a multiplexing gateway may choose Berth: each call decides.
    if callable(register_provider) or settings.backend == "docker":
        carry_files(ctx, profiles)


def carry_files(ctx: Any, profiles: Profiles) -> None:
    """Files between the chat and the user's sandbox (docs/hermes.md, "Files in and out").

    Attachments are put into the sender's sandbox as Hermes builds the agent's text; ``MEDIA:``
    paths of the final reply are read from the sandbox; Hermes then sends only files Berth took
    out of a sandbox, never another host file a reply names.
    """
    deliverable_files(outbox_folder(profiles.launch.settings.home))
    register_hook = getattr(ctx, "register_hook", None)
    # Importing gateway.run marks the whole process a gateway (gateway/run.py:1408) and rewrites its
    # TERMINAL_* variables, so the bridge never imports it: it wraps the runner where the gateway
    # has loaded it, else at the gateway's first message (``hermes gateway run`` loads plugins before
    # it imports gateway.run, hermes_cli/main.py:12951-13002; the hook fires first in every message's
    # handler, gateway/run.py:10007-10014). Hermes' CLI never fires it and keeps its environment.
    if "gateway.run" in sys.modules:
        wrap_inbound_text(profiles)
    elif callable(register_hook):

        def wrap_at_first_message(**_: Any) -> None:
            wrap_inbound_text(profiles)

        register_hook("pre_gateway_dispatch", wrap_at_first_message)
    if callable(register_hook):
        register_media_transform(ctx, profiles)
    else:
        logger.warning("berth: this Hermes has no plugin hooks, so MEDIA: files are not read from sandboxes")
    guard_delivery(profiles)


def replace_create_environment(profiles: Profiles) -> None:
    """Hermes 0.19.0's seam: ``_create_environment`` for ``docker`` is Berth's, for anything else Hermes' own."""
    import tools.terminal_tool as terminal_tool

    original: Callable[..., Any] = terminal_tool._create_environment
    if getattr(original, "__berth_original__", None) is not None:
        return  # registered twice in one process: one replacement is enough

    # Hermes 0.19.0's exact signature, so every caller's arguments mean what they meant.
    @functools.wraps(original)
    def _create_environment(
        env_type: str,
        image: str,
        cwd: str,
        timeout: int,
        ssh_config: dict[str, Any] | None = None,
        container_config: dict[str, Any] | None = None,
        local_config: dict[str, Any] | None = None,
        task_id: str = "default",
        host_cwd: str | None = None,
    ) -> Any:
        if env_type != "docker" or pass_through(profiles):
            return original(
                env_type,
                image,
                cwd,
                timeout,
                ssh_config=ssh_config,
                container_config=container_config,
                local_config=local_config,
                task_id=task_id,
                host_cwd=host_cwd,
            )
        # image and container_config come from the same terminal: section that berth serve reads.
        return create_environment(profiles, cwd=cwd, timeout=timeout, task_id=task_id)

    _create_environment.__berth_original__ = original  # type: ignore[attr-defined]  # a mark: replaced once
    terminal_tool._create_environment = _create_environment


def create_provider(profiles: Profiles, settings: BridgeSettings) -> Any:
    """A ``TerminalEnvironmentProvider`` named ``berth_docker`` (a duck type when Hermes has no such class).

    Besides the factory it answers what upstream's base class asks of a provider
    (agent/terminal_env_provider.py at 3af739aeceb6cccaeb7e52912fd2d3606f1cee23): ``env_description``,
    the prompt's fallback when its live probe fails (:78-81); ``strip_env_keys``, "vendor credential
    env vars, stripped from every subprocess the agent spawns" (:51-52, :74-76); ``doctor_checks``,
    ``hermes doctor``'s rows ``(ok, label, detail)`` (:111-117).
    """
    try:
        from agent.terminal_env_provider import TerminalEnvironmentProvider
    except ImportError:
        TerminalEnvironmentProvider = object  # noqa: N806 - Hermes' name for the base class

    class BerthDockerProvider(TerminalEnvironmentProvider):  # type: ignore[misc]  # Hermes' class: Any to mypy
        """One Docker sandbox per messaging user, served by Berth."""

        is_remote = True
        is_container = True
        session_isolated_when_nonpersistent = False

        @property
        def name(self) -> str:
            return PROVIDER_NAME

        @property
        def display_name(self) -> str:
            return "Berth (a Docker sandbox per messaging user)"

        @property
        def env_description(self) -> str:
            return "a Berth sandbox: a Linux container of its own for each messaging user"

        @property
        def strip_env_keys(self) -> frozenset[str]:
            """The users' own variables (``terminal.docker_user_env_prefix``) in the gateway's environment:
            each is for one user's sandbox only, never for a process Hermes starts on the host."""
            head = f"{settings.user_env_prefix}_"
            return frozenset(name for name in os.environ if name.startswith(head))

        def doctor_checks(self) -> list[tuple[bool, str, str]]:
            """Whether Berth and a Node.js it runs on are installed; one row each, one line of what to do."""
            try:
                node, cli = locate_berth(os.environ)
            except BerthNotInstalledError as missing:
                return [(False, "Berth", str(missing))]
            try:
                check_node(node)
            except BerthNotInstalledError as old:
                return [(True, "Berth", cli), (False, "Node.js for Berth", str(old))]
            return [(True, "Berth", cli), (True, "Node.js for Berth", node)]

        def get_config_schema(self) -> dict[str, dict[str, Any]]:
            """Nothing below ``terminal.backends.berth_docker`` (the dashboard's schema, :119-121): Berth reads
            its settings from the ``terminal:`` section itself and refuses them there, so none is offered."""
            return {}

        def setup_instructions(self) -> list[str]:
            """What ``hermes setup`` prints after the backend is chosen."""
            return [
                "Berth reads its settings from the terminal: section (docker_image, container_memory, ...);",
                "each profile's own config.yaml configures that profile's sandboxes. See Berth's docs/hermes.md.",
            ]

        def is_available(self) -> bool:
            """Node and Berth are installed; no process is started and nothing is asked over the network."""
            try:
                locate_berth(os.environ)
                return True
            except BerthNotInstalledError:
                return False

        def create_environment(
            self,
            *,
            cwd: str,
            timeout: int,
            task_id: str = "default",
            image: str | None = None,
            container_config: dict[str, Any] | None = None,
            **kwargs: Any,
        ) -> Any:
            return create_environment(profiles, cwd=cwd, timeout=timeout, task_id=task_id)

    return BerthDockerProvider()


def bind_background_jobs() -> None:
    """Pins a background job to the session that started it.

    Hermes polls a background job of a container backend from a thread of its own, where the
    message's session ContextVars are not set; without this, the poller's commands would run
    in the task's sandbox instead of the user's.
    """
    try:
        import tools.process_registry as process_registry
    except ImportError:
        return
    registry = getattr(process_registry, "ProcessRegistry", None)
    found = getattr(registry, "spawn_via_env", None)
    if registry is None or found is None or getattr(found, "__berth_original__", None) is not None:
        return
    original: Callable[..., Any] = found

    @functools.wraps(original)
    def spawn_via_env(self: Any, *args: Any, **kwargs: Any) -> Any:
        if args and is_berth_environment(args[0]):
            args = (args[0].bound_to(read_session()), *args[1:])
        elif is_berth_environment(kwargs.get("env")):
            kwargs["env"] = kwargs["env"].bound_to(read_session())
        return original(self, *args, **kwargs)

    spawn_via_env.__berth_original__ = original  # type: ignore[attr-defined]  # a mark: replaced once
    registry.spawn_via_env = spawn_via_env
