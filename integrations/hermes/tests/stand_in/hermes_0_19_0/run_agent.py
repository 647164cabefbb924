"""Stand-in for Hermes 0.19.0's ``run_agent.AIAgent`` (release commit 3ef6bbd), with a scripted model.

What the bridge can tell of an agent: the session id it publishes, the system prompt's backend
probe, and how its tool calls reach the terminal tool. Line numbers are of the named files at
that commit; bodies are the stand-in's own. The model is the tests': ``model(prompt)`` gets the
turn's text and runs the turn's tool calls itself (a list of ``terminal`` commands by default).
"""

import json
import threading
import uuid
from datetime import datetime
from typing import Any, Callable, Dict, Optional


def scripted_model(prompt: str) -> str:
    """The default model: the prompt is ``{"commands": [...]}``; each runs through the terminal tool, in order."""
    from tools import terminal_tool

    commands = json.loads(prompt).get("commands", [])
    results = [json.loads(terminal_tool.terminal_tool(command, task_id=_TURN.task_id)) for command in commands]
    return json.dumps(results)


class _Turn(threading.local):
    task_id: Optional[str] = None


_TURN = _Turn()


class AIAgent:
    """run_agent.py:400."""

    def __init__(self, *, platform: str = "", session_id: Optional[str] = None,
                 model: Optional[Callable[[str], str]] = None, **kwargs: Any) -> None:
        self.platform = platform
        self._model = model or scripted_model
        self._system_prompt: Optional[str] = None
        # agent/agent_init.py:1274-1292 — the given session id (cron's ``cron_<job>_<time>``), else a
        # new ``%Y%m%d_%H%M%S_<6 hex>``; published to tools as HERMES_SESSION_ID (ContextVar and os.environ).
        self.session_id = session_id or f"{datetime.now():%Y%m%d_%H%M%S}_{uuid.uuid4().hex[:6]}"
        from gateway.session_context import set_current_session_id

        set_current_session_id(self.session_id)

    def run_conversation(self, user_message: str, task_id: Optional[str] = None) -> Dict[str, Any]:
        """run_agent.py:6350 → agent/conversation_loop.py. The system prompt is built once per agent, its
        environment hints included (agent/system_prompt.py:343); tools get the turn's task id, a new
        uuid when none is given (agent/turn_context.py:368), which the terminal tool collapses to
        ``default``. Sequential tool calls run in the agent's own thread (agent/tool_executor.py:1028)."""
        if self._system_prompt is None:
            from agent.prompt_builder import build_environment_hints

            self._system_prompt = build_environment_hints()
        _TURN.task_id = task_id or str(uuid.uuid4())
        try:
            return {"final_response": self._model(user_message), "system_prompt": self._system_prompt}
        finally:
            _TURN.task_id = None
