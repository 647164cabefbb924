"""The terminal environment Hermes gets from Berth: one handle for every chat, the user read per command."""

from __future__ import annotations

import copy
import logging
import os
import posixpath
from typing import Any, Mapping, cast

from .errors import BerthBridgeError
from .profiles import Profile, Profiles, session_for
from .protocol import DEFAULT_COMMAND_TIMEOUT_SECONDS, checked_timeout
from .server import CommandInterrupted, locate_berth
from .session import PROBE_TASK_ID, probe_answer, read_session, scope_variables, session_request


logger = logging.getLogger("berth_hermes")

# Seconds to wait for Berth's answer beyond the command's own timeout (a first command may
# create the container, or pull its image).
ANSWER_GRACE_SECONDS = 300


def _interrupted() -> bool:
    try:
        from tools.interrupt import is_interrupted
    except ImportError:
        return False
    return bool(is_interrupted())


def container_path(path: str) -> str:
    """``~`` means the sandbox's home, ``/root``; everything else is the sandbox's own path."""
    if path == "~":
        return "/root"
    if path.startswith("~/"):
        return "/root/" + path[2:]
    return path


def starting_folder(cwd: str | None) -> str:
    """The folder a handle reports (file tools resolve relative paths there): ``/workspace``, where
    Berth's sessions start, or Hermes' resolved ``cwd`` when the operator put it inside ``/workspace``.

    Hermes' own docker backend starts in ``/root``, and hands container backends a host path
    when ``terminal.cwd`` is a placeholder; neither is where a Berth session starts.
    """
    path = container_path(cwd or "")
    if posixpath.isabs(path):
        normal = posixpath.normpath(path)
        if normal == "/workspace" or normal.startswith("/workspace/"):
            return normal
    return "/workspace"


def _combine(stdout: str, stderr: str) -> str:
    """stdout then stderr, as a terminal (and Hermes' own docker backend) shows them."""
    if stdout and stderr and not stdout.endswith("\n"):
        return f"{stdout}\n{stderr}"
    return stdout + stderr


def _base_environment() -> type:
    try:
        from tools.environments.base import BaseEnvironment

        return cast(type, BaseEnvironment)
    except ImportError:  # a Hermes that moved it: a duck type still serves

        class _Standalone:
            def __init__(self, cwd: str, timeout: int, env: dict[str, str] | None = None) -> None:
                self.cwd = cwd
                self.timeout = timeout
                self.env = env or {}

        return _Standalone


_environment_class: type | None = None


def environment_class() -> type:
    """``BerthDockerEnvironment``, a subclass of Hermes' ``BaseEnvironment`` (built when Hermes is importable).

    Its name contains ``docker`` on purpose: Hermes' file tools decide container paths (``~`` is
    ``/root``, no host paths) from the environment's class name.
    """
    global _environment_class
    if _environment_class is not None:
        return _environment_class
    base = _base_environment()

    class BerthDockerEnvironment(base):  # type: ignore[misc, valid-type]  # Hermes' BaseEnvironment, known at run time
        """Runs every command in the sandbox of the user whose message is being handled."""

        def __init__(self, *, profiles: Profiles, cwd: str, timeout: int, task_id: str = "default") -> None:
            super().__init__(cwd=starting_folder(cwd), timeout=timeout or DEFAULT_COMMAND_TIMEOUT_SECONDS, env={})
            self._berth_profiles = profiles
            self._berth_bound_profile: Profile | None = None
            self._berth_task_id = task_id or "default"
            self._berth_bound_session: Mapping[str, str] | None = None
            self._berth_bound_variables: Mapping[str, str] | None = None
            self._berth_released = False

        def execute(
            self,
            command: str,
            cwd: str = "",
            *,
            timeout: int | None = None,
            stdin_data: str | None = None,
            **kwargs: Any,
        ) -> dict[str, Any]:
            """Runs ``command`` in the active user's sandbox; returns ``{"output", "returncode"}`` as Hermes expects.

            The session is read at this moment, so one handle serves every chat: a user's message
            runs in that user's sandbox, a cron job in the job's own, a chat without a user in that
            chat's own. A command whose session names nobody runs in the task layout,
            ``{sandbox_dir}/docker/{task_id}``, in Hermes' CLI, and is refused in its gateway.
            The system prompt's backend probe runs nowhere: it gets what every sandbox is.
            Berth's failures raise one line (``berth: …``), never a traceback.
            """
            if self._berth_task_id == PROBE_TASK_ID:
                return probe_answer(self.cwd)
            effective_timeout = timeout or self.timeout or DEFAULT_COMMAND_TIMEOUT_SECONDS
            profile = self.berth_profile()
            request = session_request(
                self.berth_session(profile), self._berth_task_id, self._berth_bound_variables, profile
            )
            request["command"] = command
            if cwd:
                request["cwd"] = container_path(cwd)
            request["timeout"] = checked_timeout(effective_timeout)
            if stdin_data is not None:
                request["stdin"] = stdin_data
            try:
                answer = profile.server.request(
                    request, read_timeout=float(effective_timeout) + ANSWER_GRACE_SECONDS, interrupted=_interrupted
                )
            except CommandInterrupted:
                return {"output": "[Command interrupted]", "returncode": 130}
            output = _combine(str(answer.get("stdout") or ""), str(answer.get("stderr") or ""))
            # The result carries the status, 124 after a timeout included (the runtime decides it once).
            if answer.get("timedOut"):
                output = f"{output.rstrip()}\n[Command timed out after {effective_timeout}s]".lstrip("\n")
            return {"output": output, "returncode": int(answer["exitCode"])}

        def berth_profile(self) -> Profile:
            """The profile this handle serves now: the one it was pinned to, else the turn's (read now); one
            that does not use Berth is refused (a cached handle must not run another profile's commands)."""
            if self._berth_bound_profile is not None:
                return self._berth_bound_profile
            profiles = self._berth_profiles
            profile = profiles.current()
            if not profiles.uses_berth(profile):
                raise BerthBridgeError(
                    f"berth: profile {profile.name or 'of this gateway'} does not use Berth "
                    f"(its terminal.backend is not {profiles.backend}); refusing to run its command in a Berth sandbox"
                )
            return profile

        def berth_session(self, profile: Profile | None = None) -> dict[str, str]:
            """The session this handle serves now: the one it was pinned to, else the message's (read now),
            naming its profile where the turn runs in a routed profile's home."""
            session = dict(self._berth_bound_session) if self._berth_bound_session is not None else read_session()
            return session_for(profile or self.berth_profile(), session)

        def init_session(self) -> None:
            """Nothing to prepare: Berth keeps one persistent shell per sandbox (Hermes' snapshot is for its
            own backends)."""

        # -- files, for a Hermes whose gateway fetches MEDIA: files from a remote sandbox (0.21) --------

        _remote_home = "/root"
        """The sandbox's home: Hermes' remote fetch reads ``~/`` there (and screens paths against it)."""

        def fetch_realpath(self, remote_path: str) -> str | None:
            """Where ``remote_path`` really is in the sandbox, as Berth reads it; None when Berth refuses it.

            Berth answers this by taking the file out (``get-file``), so the path Hermes then screens is
            the one Berth checked, and the copy waits for :meth:`fetch_file`.
            """
            from .files import pending_copies

            try:
                profile = self.berth_profile()
                session = self.berth_session(profile)
            except BerthBridgeError as refused:  # whose sandbox is unclear: nothing is read
                logger.warning("%s", refused)
                return None
            return pending_copies(profile.server, profile).realpath(session, remote_path, self._berth_task_id)

        def fetch_file(self, remote_path: str, local_dest: Any, *, max_bytes: int) -> None:
            """Copies the sandbox file ``remote_path`` to the host file ``local_dest`` (at most ``max_bytes``).

            Berth reads it without following a link out of the sandbox and refuses FIFOs, devices and
            files over ``terminal.docker_file_limit``; a refusal raises Hermes' ``FileFetchError`` with
            Berth's line. The host copy is recorded as one Hermes may send.
            """
            from .files import file_fetch_error, pending_copies

            try:
                profile = self.berth_profile()
                session = self.berth_session(profile)
            except BerthBridgeError as refused:  # Hermes' remote fetch catches its own error, not ours
                raise file_fetch_error(str(refused)) from None
            pending_copies(profile.server, profile).fetch(
                session, remote_path, os.fspath(local_dest), max_bytes=max_bytes, task_id=self._berth_task_id,
            )

        def bound_to(self, session: Mapping[str, str]) -> "BerthDockerEnvironment":
            """The same handle, pinned to ``session``: for work that outlives the message (a background
            job's poller)."""
            profile = self.berth_profile()
            bound = copy.copy(self)
            bound._berth_bound_profile = profile
            bound._berth_bound_session = session_for(profile, session)
            # The profile's variables of the turn that started it: the poller's thread has no scope.
            variables = scope_variables(profile)
            bound._berth_bound_variables = dict(variables) if variables is not None else None
            return bound

        def cleanup(self) -> None:
            """Releases the handle. Never deletes a sandbox: its container and files stay (Berth stops idle ones)."""
            self._berth_released = True

    _environment_class = BerthDockerEnvironment
    return BerthDockerEnvironment


def create_environment(profiles: Profiles, *, cwd: str, timeout: int, task_id: str = "default") -> Any:
    """A new handle; checks that Node and Berth are installed (one line saying how to install them) but
    starts nothing yet."""
    locate_berth(os.environ)
    return environment_class()(profiles=profiles, cwd=cwd, timeout=timeout, task_id=task_id)


def is_berth_environment(value: Any) -> bool:
    return _environment_class is not None and isinstance(value, _environment_class)
