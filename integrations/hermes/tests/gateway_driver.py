"""A Hermes gateway process built from the stand-in, driven by the tests over stdin/stdout.

It boots as Hermes' gateway does (config bridged to TERMINAL_*, plugins loaded from
$HERMES_HOME/plugins or entry points), then answers one JSON action per line with one JSON line.
Each action runs the way Hermes runs a tool call: in a thread of its own, inside a context whose
session ContextVars are set for that message (`session`), or none.

    python3 gateway_driver.py --hermes 0.19.0|0.21 [--cli]
"""

from __future__ import annotations

import argparse
import contextvars
import json
import logging
import os
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
            )
        return call()

    return lambda: contextvars.Context().run(run)


def _cron_call(job: dict, call: Callable[[], Any]) -> Callable[[], Any]:
    """A job as the gateway's cron ticker runs it: in a context where no message's ContextVars are set."""

    def run() -> Any:
        from cron.scheduler import run_job

        return run_job(job, call)

    return lambda: contextvars.Context().run(run)


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


def handle(action: dict) -> Any:
    op = action["op"]
    if op == "call":
        return _run_in_threads([_session_call(action.get("session"), _tool(action))])[0]
    if op == "concurrent":
        return _run_in_threads([_session_call(item.get("session"), _tool(item)) for item in action["calls"]])
    if op == "cron":
        return _run_in_threads([_cron_call(action["job"], _tool(action))])[0]
    if op == "cron_during_message":
        # A cron job's origin sits in os.environ while a message of someone else runs: each must
        # keep its own sandbox (the message's ContextVars win over os.environ).
        return _run_in_threads([
            _cron_call(action["job"], _tool(action["cron"])), _session_call(action["session"], _tool(action["message"]))
        ])
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

    from gateway.run import boot

    manager = boot()
    if arguments.cli:
        os.environ.pop("HERMES_GATEWAY_SESSION", None)
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
