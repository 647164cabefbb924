"""Stand-in for the end of an agent turn in Hermes 0.19.0's agent/turn_finalizer.py (commit 3ef6bbd, the
v0.19.0 release).

Hermes' ``finalize_turn(agent, *, final_response, interrupted, …)`` runs at the end of
``run_conversation``, in the agent's thread, where the message's session ContextVars are set.
The stand-in's ``finalize_response`` takes just what its ``transform_llm_output`` step reads.
"""

import logging

logger = logging.getLogger(__name__)


def finalize_response(final_response: str, *, session_id: str = "", model: str = "stand-in", platform: str = "",
                      interrupted: bool = False) -> str:
    """The final response after the ``transform_llm_output`` hook.

    Hermes 0.19.0 agent/turn_finalizer.py:455-475: once per turn, only with a final response and
    no interruption; keyword arguments ``response_text, session_id, model, platform``; the first
    non-empty string any hook returns replaces the response; a hook's exception is logged, and
    the response is left as it was.
    """
    if final_response and not interrupted:
        try:
            from hermes_cli.plugins import invoke_hook

            for result in invoke_hook("transform_llm_output", response_text=final_response, session_id=session_id or "",
                                      model=model, platform=platform or ""):
                if isinstance(result, str) and result:
                    final_response = result
                    break
        except Exception as exc:
            logger.warning("transform_llm_output hook failed: %s", exc)
    return final_response
