"""A Hermes gateway process built from the stand-in, driven by the tests over stdin/stdout.

It boots as ``hermes gateway run`` does (importing gateway.run bridges the config to TERMINAL_*
and sets _HERMES_GATEWAY; GatewayRunner.start() loads the plugins from $HERMES_HOME/plugins or
entry points), or with --cli as Hermes' CLI does (importing cli bridges the config, then the
plugins load), then answers one JSON action per line with one JSON line.
Each action runs the way Hermes runs a tool call: in a thread of its own, inside a context whose
session ContextVars are set for that message (`session`), or none.

    python3 gateway_driver.py --hermes 0.19.0|0.21 [--cli]
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextvars
import json
import logging
import os
import re
import sys
import threading
from pathlib import Path
from typing import Any, Callable

HERE = Path(__file__).resolve().parent


def _session_call(session: dict | None, call: Callable[[], Any]) -> Callable[[], Any]:
    def run() -> Any:
        if session is not None:
            from gateway.session_context import set_session_vars

            set_session_vars(
                platform=session.get("platform", ""),
                chat_id=session.get("chat_id", ""),
                user_id=session.get("user_id", ""),
                session_key=session.get("session_key", ""),
                # gateway/run.py:16355-16386 at 3ef6bbd binds the source's profile, "" when it has none.
                profile=session.get("profile", ""),
            )
            if "profile_home" in session:
                _bind_profile_home(session["profile_home"])
            if "secrets" in session:
                # Upstream 0.21's multiplexing gateway installs the turn's profile secrets as a scope
                # (agent/secret_scope.py:1-21 at 0474a0e: "set_secret_scope(mapping) installs the active
                # profile's secrets for the current task").
                from agent.secret_scope import set_secret_scope

                set_secret_scope(session["secrets"])
        return call()

    return lambda: contextvars.Context().run(run)


def _bind_profile_home(home: str) -> list:
    """What upstream 0.21 binds for a routed profile's turn (its multiplexed inbound path,
    ``_profile_runtime_scope``): the home override, which ``get_hermes_home()`` reads first
    (hermes_constants.py at 0006718), the profile's ``.env`` as the secret scope
    (``build_profile_secret_scope``, agent/secret_scope.py at 0474a0e) and its terminal policy
    (``install_profile_terminal_scope``, tools/terminal_scope.py at 0006718; "Routed profiles must bind a
    terminal scope", tools/terminal_tool.py ``_ensure_terminal_env_bridged`` at 027fc66). In the current
    context; the tokens undo it."""
    from agent.secret_scope import build_profile_secret_scope, set_secret_scope
    from hermes_constants import set_hermes_home_override
    from tools.terminal_scope import install_profile_terminal_scope

    return [set_hermes_home_override(home), set_secret_scope(build_profile_secret_scope(home)),
            install_profile_terminal_scope(home)]


def _in_thread_without_context(call: Callable[[], Any]) -> Callable[[], Any]:
    """As the gateway's cron ticker runs: a plain thread of its own, no message's ContextVars."""
    return lambda: contextvars.Context().run(call)


def _cron_tick() -> Any:
    """One tick of the scheduler (cron/scheduler.py ``tick``), and what each job that ran answered."""
    from cron import scheduler

    before = len(scheduler.delivered)
    ran = scheduler.tick()
    return {"ran": ran, "outputs": {job_id: json.loads(text) if text.startswith("[") else text
                                    for job_id, _target, text in scheduler.delivered[before:]}}


def _tool(action: dict) -> Callable[[], Any]:
    from tools import code_execution_tool, file_tools, terminal_tool

    kind = action["tool"]
    task_id = action.get("task_id")
    if kind == "terminal":
        return lambda: json.loads(terminal_tool.terminal_tool(
            action["command"], timeout=action.get("timeout"), task_id=task_id, workdir=action.get("workdir"),
            background=action.get("background", False)))
    if kind == "write_file":
        return lambda: json.loads(
            file_tools.write_file_tool(action["path"], action["content"], task_id=task_id or "default")
        )
    if kind == "read_file":
        return lambda: json.loads(file_tools.read_file_tool(action["path"], task_id=task_id or "default"))
    if kind == "execute_code":
        return lambda: json.loads(code_execution_tool.execute_code(
            action["code"], task_id=task_id, interpreter=action.get("interpreter", "python3")
        ))
    if kind == "background_wait":
        def wait() -> Any:
            from tools.process_registry import process_registry

            with process_registry._lock:
                session = process_registry._sessions[action["session_id"]]
            session.done.wait(timeout=action.get("timeout", 30))
            return process_registry.poll(action["session_id"])
        return wait
    raise ValueError(f"unknown tool {kind}")


def _run_in_threads(calls: list[Callable[[], Any]]) -> list[Any]:
    """Starts every call at once (a barrier), each in its own thread, as concurrent messages are."""
    results: list[Any] = [None] * len(calls)
    barrier = threading.Barrier(len(calls))

    def worker(index: int) -> None:
        barrier.wait()
        try:
            results[index] = calls[index]()
        except Exception as error:  # reported, never swallowed
            results[index] = {"raised": f"{type(error).__name__}: {error}"}

    threads = [threading.Thread(target=worker, args=(index,)) for index in range(len(calls))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results


class Chat:
    """The fake Telegram side of the gateway: one adapter, one GatewayRunner, one event loop in a thread.

    A message's agent is a script: ``commands`` run through the terminal tool in the agent's
    thread (the message's session set), ``{told}`` in them and in ``final`` standing for the first
    path the agent's text names for the attachment; ``final`` is the turn's final response.
    """

    def __init__(self) -> None:
        from gateway.run import GatewayRunner
        from plugins.platforms.telegram.adapter import TelegramAdapter

        self.loop = asyncio.new_event_loop()
        threading.Thread(target=self.loop.run_forever, name="gateway-loop", daemon=True).start()
        self.adapter = TelegramAdapter()
        self.script: dict = {}
        self.told = ""
        self.results: list = []
        self.runner = GatewayRunner(self.adapter, self._agent)

    def _agent(self, text: str) -> str:
        from tools import terminal_tool

        told = re.search(r"(?:saved at: |image_url: |voice message: )(\S+)", text)
        self.told = told.group(1).rstrip("].") if told else ""
        self.results = [
            json.loads(terminal_tool.terminal_tool(command.replace("{told}", self.told)))
            for command in self.script.get("commands", [])
        ]
        return str(self.script.get("final", "done")).replace("{told}", self.told)

    def message(self, action: dict) -> dict:
        attachment = action.get("attachment") or {}
        event = self.adapter.event_for(
            str(action["user"]), text=action.get("text", ""), kind=attachment.get("kind", ""),
            data=base64.b64decode(attachment.get("data", "")), file_name=attachment.get("name", ""),
            mime_type=attachment.get("mime", ""), replied_to=_replied(action.get("replied_to")),
        )
        self.script, self.told, self.results, self.runner.last_prompt = action.get("agent") or {}, "", [], None
        before = len(self.adapter.sent)
        if action.get("profile"):
            event.source.profile = action["profile"]
        # The loop's task runs in a copy of this thread's context (call_soon_threadsafe copies it).
        contextvars.Context().run(self._process, event, action.get("profile_home"))
        return {"prompt": self.runner.last_prompt, "told": self.told, "results": self.results,
                "cached": event.media_urls, "sent": _sent(self.adapter.sent[before:])}

    def _process(self, event: Any, profile_home: str | None) -> None:
        if profile_home:
            _bind_profile_home(profile_home)
        asyncio.run_coroutine_threadsafe(self.adapter._process_message_background(event), self.loop).result(600)

    def group_message(self, action: dict) -> dict:
        """A message in a group that carries no sender (a channel post, an anonymous admin)."""
        from gateway.platforms.base import MessageEvent
        from gateway.session import SessionSource

        source = SessionSource(platform="telegram", chat_id=str(action["chat_id"]), chat_type="group", user_id=None)
        event = MessageEvent(text=action.get("text", ""), source=source)
        self.script, self.told, self.results = action.get("agent") or {}, "", []
        asyncio.run_coroutine_threadsafe(self.adapter._process_message_background(event), self.loop).result(600)
        return {"results": self.results}


def _replied(replied: dict | None) -> dict | None:
    return None if replied is None else {**replied, "data": base64.b64decode(replied.get("data", ""))}


def _sent(records: list) -> list:
    return [{**record, "data": base64.b64encode(record["data"]).decode()} if "data" in record else record
            for record in records]


_chat: list = []


def chat() -> Chat:
    if not _chat:
        _chat.append(Chat())
    return _chat[0]


def handle(action: dict) -> Any:
    op = action["op"]
    if op == "message":
        return chat().message(action)
    if op == "sent":
        return _sent(chat().adapter.sent)
    if op == "send_message":
        def send() -> Any:
            from tools.send_message_tool import send_message

            return send_message(chat().adapter, action["chat_id"], action["message"])
        before = len(chat().adapter.sent)
        result = _run_in_threads([_session_call(action.get("session"), send)])[0]
        return {"result": result, "sent": _sent(chat().adapter.sent[before:])}
    if op == "fetch_remote_media":
        def fetch() -> Any:
            from gateway.media_fetch import fetch_remote_media

            local = fetch_remote_media(action["path"])
            return {"local": local, "data": base64.b64encode(Path(local).read_bytes()).decode() if local else None}
        return _run_in_threads([_session_call(action.get("session"), fetch)])[0]
    if op == "python_version":
        return "%d.%d" % sys.version_info[:2]
    if op == "multiplex":
        # Upstream 0.21 sets it once at start-up when gateway.multiplex_profiles is true
        # (agent/secret_scope.py:32-47 at 0474a0e).
        from agent.secret_scope import set_multiplex_active

        set_multiplex_active(True)
        return True
    if op == "call":
        return _run_in_threads([_session_call(action.get("session"), _tool(action))])[0]
    if op == "concurrent":
        return _run_in_threads([_session_call(item.get("session"), _tool(item)) for item in action["calls"]])
    if op == "create_cron":
        # The agent's cron tool in a message's session (its origin is that session's chat).
        def create() -> Any:
            from tools.cronjob_tools import cronjob

            return json.loads(cronjob("create", prompt=json.dumps({"commands": action["commands"]}),
                                      schedule="every 1h", name=action.get("name"), deliver=action.get("deliver")))
        return _run_in_threads([_session_call(action.get("session"), create)])[0]
    if op == "trigger_cron":
        from cron.jobs import trigger_job

        return trigger_job(action["job_id"]) is not None
    if op == "cron_run_unmarked":
        # The job's run through the scheduler's own run_job, past the bridge's mark around it.
        def run_unmarked() -> Any:
            from cron import jobs, scheduler

            run_job = getattr(scheduler.run_job, "__berth_original__", scheduler.run_job)
            success, _output, final_response, error = run_job(jobs.get_job(action["job_id"]))
            return json.loads(final_response) if success else {"raised": error}
        return _run_in_threads([_in_thread_without_context(run_unmarked)])[0]
    if op == "cron_fire":
        # One fire of a job as upstream 0.21 runs it: a thread of the scheduler's, every session variable
        # blanked (``_CronRunScope``, cron/scheduler_run_scope.py:31-48 at 2d55bdc), the job's profile
        # home bound for the fire (its "cron fire helper" binds the terminal scope), and the run's
        # CronExecution (cron/execution_identity.py:31-43 at 542a498). Its agent runs one command.
        def fire() -> Any:
            from cron.execution_identity import enter_cron_execution, exit_cron_execution
            from gateway.session_context import set_session_vars

            set_session_vars(platform="", chat_id="")
            if action.get("profile_home"):
                _bind_profile_home(action["profile_home"])
            token = enter_cron_execution({"id": action["job_id"]}, action.get("execution_id", "exec-1"),
                                         {"source": "builtin"}, profile=action.get("profile", "default"))
            try:
                return _tool({"tool": "terminal", "command": action["command"]})()
            finally:
                exit_cron_execution(token)
        return _run_in_threads([_in_thread_without_context(fire)])[0]
    if op == "cron_tick":
        return _run_in_threads([_in_thread_without_context(_cron_tick)])[0]
    if op == "cron_tick_during_message":
        # A tick runs while someone's message does: each keeps its own sandbox.
        return _run_in_threads([
            _in_thread_without_context(_cron_tick), _session_call(action["session"], _tool(action["message"]))
        ])
    if op == "group_message":
        return chat().group_message(action)
    if op == "probe":
        # The system prompt's backend probe, as an agent builds its first prompt (agent/system_prompt.py:343).
        def probe() -> Any:
            from agent import prompt_builder

            prompt_builder._BACKEND_PROBE_CACHE.clear()
            return prompt_builder.build_environment_hints()
        return _run_in_threads([_session_call(action.get("session"), probe)])[0]
    if op == "register_task_env_overrides":
        from tools import terminal_tool

        terminal_tool.register_task_env_overrides(action["task_id"], action["overrides"])
        return True
    if op == "state":
        from tools import terminal_tool

        from berth_hermes_state import describe  # noqa: PLC0415 - the tests' own helper

        return describe(terminal_tool)
    if op == "interrupt_during":
        from tools.interrupt import set_interrupt

        timer = threading.Timer(action["after"], lambda: set_interrupt(True))
        timer.start()
        try:
            return _run_in_threads([_session_call(action.get("session"), _tool(action))])[0]
        finally:
            timer.cancel()
            set_interrupt(False)
    if op == "cleanup_all":
        from tools import terminal_tool

        return {"cleaned": terminal_tool.cleanup_all_environments()}
    raise ValueError(f"unknown op {op}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--hermes", choices=["0.19.0", "0.21"], default="0.19.0")
    parser.add_argument(
        "--cli", action="store_true", help="Hermes' CLI, not its gateway: sessions are not collapsed to task default"
    )
    arguments = parser.parse_args()
    stand_in = HERE / "stand_in"
    paths = [stand_in / "hermes_0_19_0"]
    if arguments.hermes == "0.21":
        paths.insert(0, stand_in / "hermes_0_21")
    sys.path[:0] = [os.fspath(path) for path in paths] + [os.fspath(HERE)]
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s")

    if arguments.cli:
        import cli  # noqa: F401 - Hermes' CLI: importing it bridges the config (cli.py:408)
        from hermes_cli.plugins import discover_plugins

        manager = discover_plugins()
    else:
        # ``hermes gateway run`` loads the plugins at start-up, before it imports the gateway
        # (hermes_cli/main.py:12951-13002), then the gateway's start loads them again (a no-op).
        from hermes_cli.plugins import discover_plugins

        discover_plugins()
        from gateway.run import GatewayRunner

        manager = GatewayRunner.start()
    print(json.dumps({"ready": True, "loaded": sorted(manager.loaded), "errors": manager.errors}), flush=True)
    for line in sys.stdin:
        if not line.strip():
            continue
        action = json.loads(line)
        if action["op"] == "exit":
            break
        try:
            answer = {"ok": handle(action)}
        except Exception as error:
            answer = {"error": f"{type(error).__name__}: {error}"}
        print(json.dumps(answer), flush=True)
    # Leaving as the gateway does: atexit handlers (the bridge stops its berth serve) run now.


if __name__ == "__main__":
    main()
