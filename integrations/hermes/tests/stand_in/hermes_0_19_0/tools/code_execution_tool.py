"""Stand-in for Hermes 0.19.0's execute_code on a container backend: the script is written into the
sandbox over the environment's stdin and run there with the sandbox's interpreter."""

import json
import uuid


def execute_code(code: str, task_id: str = None, interpreter: str = "python3") -> str:
    from tools import terminal_tool

    env = terminal_tool.get_or_create_environment(task_id)
    script = f"/workspace/.hermes_exec_{uuid.uuid4().hex[:8]}"
    try:
        written = env.execute(f"cat > {script}", stdin_data=code)
        if written.get("returncode"):
            return json.dumps({"status": "error", "error": written.get("output", "")})
        result = env.execute(f"{interpreter} {script}", timeout=60)
        return json.dumps({"status": "success" if result.get("returncode") == 0 else "error",
                           "output": result.get("output", ""), "script": script})
    except Exception as e:
        return json.dumps({"status": "error", "error": str(e)})
