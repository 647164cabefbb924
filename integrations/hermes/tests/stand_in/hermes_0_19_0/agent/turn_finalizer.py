"""Stand-in for the end of an agent turn in Hermes 0.19.0 (agent/turn_finalizer.py, research notes §3).

Once per turn, only when there is a final response and the turn was not interrupted, the
``transform_llm_output`` hook gets ``response_text, session_id, model, platform``; the first
non-empty string returned replaces the final response. It runs in the agent's thread, where the
message's session ContextVars are set.
"""

import logging

logger = logging.getLogger(__name__)


def finalize_response(final_response: str, *, session_id: str = "", model: str = "stand-in", platform: str = "",
                      interrupted: bool = False) -> str:
    if final_response and not interrupted:
        try:
            from hermes_cli.plugins import invoke_hook

            for result in invoke_hook("transform_llm_output", response_text=final_response, session_id=session_id,
                                      model=model, platform=platform):
                if isinstance(result, str) and result:
                    final_response = result
                    break
        except Exception as exc:
            logger.warning("transform_llm_output hook failed: %s", exc)
    return final_response
