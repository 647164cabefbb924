"""Whose command this is, as Hermes says it: the message's session, a cron job, or nobody.

Every line here about what Hermes sets cites Hermes 0.19.0 at its release commit, 3ef6bbd
("chore: release v0.19.0"). Which sandbox a session means is Berth's decision (core's
``resolveScope``); the bridge only reads what Hermes gives and sends it.
"""

from __future__ import annotations

import contextvars
import functools
import os
import re
from typing import Any, Callable, Mapping

from .protocol import PROTOCOL_VERSION, SESSION_VARIABLE_FIELDS

PROBE_TASK_ID = "prompt-backend-probe"
"""The task id of the system prompt's one probe of the terminal backend (agent/prompt_builder.py:1061)."""

# agent/agent_init.py:1290 publishes the agent's session id as the HERMES_SESSION_ID ContextVar;
# cron/scheduler.py:2910 names a job's agent session ``cron_{job id}_{%Y%m%d_%H%M%S}``.
_CRON_SESSION_ID = re.compile(r"^cron_(?P<job>.+)_\d{8}_\d{6}$", re.DOTALL)

_cron_job: contextvars.ContextVar[str | None] = contextvars.ContextVar("berth_hermes_cron_job", default=None)


def _session_env() -> Callable[[str, str], str]:
    try:
        from gateway.session_context import get_session_env
    except ImportError:  # Hermes without a gateway package: its CLI keeps the session in os.environ

        def get_session_env(name: str, default: str = "") -> str:
            return os.environ.get(name, default)

    return get_session_env  # type: ignore[no-any-return]  # Hermes' function: Any to mypy


def _context_value(name: str) -> str:
    """A session ContextVar's own value, never ``get_session_env``'s fallback to ``os.environ``.

    ``HERMES_SESSION_ID`` is also written to ``os.environ`` by every agent that starts
    (gateway/session_context.py:153), so the process-wide copy names whichever agent started last.
    """
    try:
        from gateway import session_context
    except ImportError:
        return ""
    variables = getattr(session_context, "_VAR_MAP", None)
    variable = variables.get(name) if isinstance(variables, Mapping) else None
    if not isinstance(variable, contextvars.ContextVar):
        return ""
    value = variable.get(None)
    return value if isinstance(value, str) else ""  # unset: Hermes' _UNSET sentinel, not a str


def _cron_execution() -> tuple[str, str] | None:
    """The job id and profile of the cron run Hermes 0.21+ says this code works for, or None.

    Upstream 0.21 binds each fire's ``CronExecution(job_id, job_name, execution_id, source,
    scheduled_instant, started_at, profile)`` in the ContextVar ``hermes_cron_execution`` and gives
    it to plugins by ``current_cron_execution()``, which reads None in a delegated child; its
    ``profile`` is ``current_profile_name("default")`` when the fire began
    (cron/execution_identity.py:17-54 at 542a4982711b9930f6088785a33bd6e2fc2aa927). The profile is
    ``""`` when Hermes gave none: the default profile.
    """
    try:
        from cron.execution_identity import current_cron_execution
    except ImportError:  # Hermes 0.19.0: no such module
        return None
    try:
        execution = current_cron_execution()
    except Exception:  # Hermes' own failure: the other marks decide, else nobody (refused)
        return None
    job = getattr(execution, "job_id", None) if execution is not None else None
    if job is None:
        return None
    profile = getattr(execution, "profile", None)
    return str(job), str(profile) if isinstance(profile, str) else ""


def current_cron_job() -> str | None:
    """The id of the cron job this thread works for, or None outside a job's run.

    On Hermes 0.21+ its own ``current_cron_execution()`` names the job (:func:`_cron_execution`).
    ``run_job`` blanks every ``HERMES_SESSION_*`` ContextVar on purpose, the job's origin being
    delivery routing and not a sender (cron/scheduler.py:2922-2971), and the terminal tool sees task
    ``default`` (tools/terminal_tool.py:1175-1207). What names the job is the bridge's own mark,
    set around ``run_job`` (:func:`track_cron_jobs`) and carried into the job's agent with the
    context Hermes copies (cron/scheduler.py:3431, tools/thread_context.py:64), else the agent's
    session id while it still has its cron form (a conversation compressed by rotation gets a new
    id, agent/conversation_compression.py:1247, and its commands are then refused in the gateway).
    """
    execution = _cron_execution()
    return execution[0] if execution is not None else _marked_cron_job()


def _marked_cron_job() -> str | None:
    """The job the bridge's own mark names, else the agent's session id in its cron form, else None."""
    marked = _cron_job.get()
    if marked is not None:
        return marked
    found = _CRON_SESSION_ID.match(_context_value("HERMES_SESSION_ID"))
    return found.group("job") if found else None


def read_session() -> dict[str, str]:
    """The session of the command being run now, as the fields Berth reads.

    - During a cron job's run, ``sessionKey: cron:<job id>`` and the job's profile: the job's own
      sandbox in its own profile, whatever else the context holds, so a job never shares a sandbox
      with a chat, another job, or the same job id of another profile. On Hermes 0.21+ the profile
      is the one ``current_cron_execution()`` names (``_CronRunScope`` blanks the session's,
      cron/scheduler_run_scope.py:31-48 at 2d55bdc0fb2f5d0147284ae3e9f953c5b48b50ba); where only
      the bridge's own mark names the job, the session's profile if Hermes gives one.
    - Else the message's session ContextVars, read with Hermes' ``get_session_env`` (the ContextVar
      when it was ever set in this context, even to ``""``; else ``os.environ``,
      gateway/session_context.py:304-327), every field Hermes gives, each as given, the profile
      (``HERMES_SESSION_PROFILE``, gateway/session_context.py at
      01937c3fe1b3cd78834d5fdf23a38faf69fbdfac) included; which variable is which field is the
      wire contract's (``protocol.SESSION_VARIABLE_FIELDS``). Berth decides what a profile means.
    Never taken from Berth's own process environment.
    """
    get_session_env = _session_env()
    execution = _cron_execution()
    job = execution[0] if execution is not None else _marked_cron_job()
    if job is not None:
        if execution is not None:
            profile = execution[1]
        else:
            profile = str(get_session_env("HERMES_SESSION_PROFILE", "") or "").strip()
        return {"sessionKey": f"cron:{job}", **({"profile": profile} if profile else {})}
    session: dict[str, str] = {}
    for name, field in SESSION_VARIABLE_FIELDS.items():
        value = str(get_session_env(name, "") or "").strip()
        if value:
            session[field] = value
    return session


_SWITCH_ON = {"1", "true", "yes", "on"}


def serves_many_people(environment: Mapping[str, str] = os.environ) -> bool:
    """Whether this process runs commands for many people, so a command that names nobody is refused.

    Any of Hermes' own marks: ``_HERMES_GATEWAY=1``, which importing the gateway sets
    (gateway/run.py:1408; ``hermes gateway run`` never sets the next one); ``HERMES_GATEWAY_SESSION``,
    which its TUI gateway sets (tui_gateway/server.py:2338) and its approval code reads
    (tools/approval.py:243); ``HERMES_CRON_SESSION=1``, which every cron run sets for the rest of the
    process (cron/scheduler.py:2920), since the scheduler runs many people's jobs.
    """
    return any(
        str(environment.get(name, "")).strip().lower() in _SWITCH_ON
        for name in ("_HERMES_GATEWAY", "HERMES_GATEWAY_SESSION", "HERMES_CRON_SESSION")
    )


_user_prefix = "HERMES_USER_"
_forwarded: frozenset[str] = frozenset()


def use_variable_names(user_prefix: str, forwarded: "list[str] | tuple[str, ...]") -> None:
    """Which variables of a profile's secrets Berth would use: the user prefix's, and the forwarded
    names (``terminal.docker_user_env_prefix``, ``docker_forward_env`` and ``env_passthrough``, as
    the gateway's config says them); set once, in ``register(ctx)``."""
    global _user_prefix, _forwarded
    _user_prefix = f"{user_prefix or 'HERMES_USER'}_"
    _forwarded = frozenset(str(name) for name in forwarded)


def scope_variables(profile: Any = None) -> dict[str, str] | None:
    """The variables of this turn's profile that Berth uses, when Hermes serves several profiles.

    Hermes 0.21+ keeps a profile's ``.env`` out of ``os.environ`` while it multiplexes profiles
    (``is_multiplex_active()``) and gives it to the turn as a secret scope
    (``current_secret_scope()``, agent/secret_scope.py at 0474a0e932cbb0509001bf2a597fa133c8a35605):
    then these, and only these, are the variables Berth may give the profile's sandboxes, never the
    gateway's environment, which may hold another profile's values. A multiplexed turn with no scope
    (upstream's ``get_secret`` raises there) gets ``{}``: no variables, never someone else's. None
    when Hermes does not multiplex (or has no secret scopes): ``berth serve`` reads its own
    environment, as before. ``profile`` (``profiles.Profile``) names the variables its own
    ``config.yaml`` uses (without it, those :func:`use_variable_names` was given); a routed profile's
    turn always gets its scope's or ``{}``, multiplexing flag or not: the gateway's environment is the
    launch profile's.
    """
    prefix, forwarded = _user_prefix, _forwarded
    settings = getattr(profile, "settings", None)
    routed = bool(getattr(profile, "routed", False))
    if settings is not None:
        prefix = f"{settings.user_env_prefix or 'HERMES_USER'}_"
        forwarded = frozenset(settings.forwarded)
    try:
        from agent.secret_scope import current_secret_scope, is_multiplex_active
    except ImportError:
        return {} if routed else None
    try:
        if not routed and not is_multiplex_active():
            return None
        scope = current_secret_scope()
    except Exception:  # Hermes' own failure: nothing, never the gateway's environment
        return {}
    if not isinstance(scope, Mapping):
        return {}
    return {
        name: value for name, value in scope.items()
        if isinstance(name, str) and isinstance(value, str) and (name.startswith(prefix) or name in forwarded)
    }


def session_request(
    session: Mapping[str, str], task_id: str = "default", variables: Mapping[str, str] | None = None,
    profile: Any = None,
) -> dict[str, Any]:
    """The fields every request to ``berth serve`` starts with: the protocol version, the session as
    ``read_session()`` gave it, the task, ``sessionRequired`` where many people are served, and the
    profile's ``variables`` where Hermes gives them (``variables``, else :func:`scope_variables` now, for
    ``profile``).

    Commands and files (``put-file``, ``get-file``) send exactly these, so whose sandbox a file goes
    to or comes from is decided as for a command, by core.
    """
    request: dict[str, Any] = {"v": PROTOCOL_VERSION, **session, "taskId": task_id or "default"}
    if serves_many_people():
        request["sessionRequired"] = True
    scoped = dict(variables) if variables is not None else scope_variables(profile)
    if scoped is not None:
        request["variables"] = scoped
    return request


def _job_id(job: Any) -> str:
    identifier = job.get("id") if isinstance(job, Mapping) else None
    return str(identifier) if identifier is not None else ""


def track_cron_jobs() -> None:
    """Marks each cron job's run with its job id (:func:`current_cron_job`).

    Wraps ``cron.scheduler.run_job(job, …)``, which the scheduler calls by its module global for every
    due job (``run_one_job``, cron/scheduler.py:3778), each in a context copied for that job
    (cron/scheduler.py:4025). A job record without an id is marked ``""``, which Berth refuses.
    """
    try:
        import cron.scheduler as scheduler
    except ImportError:
        return
    found = getattr(scheduler, "run_job", None)
    if found is None or getattr(found, "__berth_original__", None) is not None:
        return
    original: Callable[..., Any] = found

    @functools.wraps(original)
    def run_job(job: Any, *args: Any, **kwargs: Any) -> Any:
        token = _cron_job.set(_job_id(job))
        try:
            return original(job, *args, **kwargs)
        finally:
            _cron_job.reset(token)

    run_job.__berth_original__ = original  # type: ignore[attr-defined]  # a mark: replaced once
    scheduler.run_job = run_job


def probe_answer(cwd: str) -> dict[str, Any]:
    """What the system prompt's backend probe gets, without a sandbox being made for it.

    Hermes asks once per process and puts the answer into every user's system prompt
    (agent/prompt_builder.py:986-1110, cached in ``_BACKEND_PROBE_CACHE``), so it must hold nothing
    of any one user; it is what every Berth sandbox is. ``unknown`` values are dropped by Hermes.
    """
    lines = ("os=Linux", "kernel=unknown", "home=/root", f"cwd={cwd}", "user=root")
    return {"output": "\n".join(lines) + "\n", "returncode": 0}
