"""The bridge against the wire contract TypeScript writes (``request_protocol.json``), without an engine or Node.

What it sends: only fields the contract knows, of the types it states, whichever way a request is
built (a command, a file in, a file out). The codes it raises: the contract's, or its own, listed
once in errors.py and never one of the contract's.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import json
import os
import socket as sockets
import sys
import threading
from pathlib import Path
from typing import Any, Iterator, Mapping

import pytest

PACKAGE_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(PACKAGE_ROOT))
from berth_hermes import environment, errors, files, protocol, session  # noqa: E402 - once sys.path holds the package
from conftest import launch_only  # noqa: E402 - the tests' own helper
from berth_hermes.server import BerthServer  # noqa: E402 - once sys.path holds the package

CONTRACT = json.loads((PACKAGE_ROOT / "berth_hermes" / "request_protocol.json").read_text(encoding="utf-8"))
MODULES = sorted((PACKAGE_ROOT / "berth_hermes").glob("*.py"))


def test_the_bridge_reads_the_session_variables_and_the_codes_from_the_contract(monkeypatch):
    assert protocol.SESSION_VARIABLE_FIELDS == CONTRACT["sessionVariables"]
    assert protocol.ERROR_CODES == set(CONTRACT["errorCodes"])
    assert protocol.REQUESTS == CONTRACT["requests"]
    for variable, field in CONTRACT["sessionVariables"].items():
        monkeypatch.setenv(variable, f"{field}-value")
    assert session.read_session() == {field: f"{field}-value" for field in CONTRACT["sessionVariables"].values()}
    with pytest.raises(KeyError, match="NOT_A_CODE"):
        protocol.wire_error_code("NOT_A_CODE")


def test_the_bridges_own_codes_are_none_of_the_contracts():
    assert errors.BRIDGE_ERROR_CODES and not errors.BRIDGE_ERROR_CODES & protocol.ERROR_CODES


class _Codes:
    """The codes the bridge's source raises: literals (its own), the contract's by name, answers passed on."""

    def __init__(self) -> None:
        self.own: set[str] = set()
        self.contract: set[str] = set()
        self.passed_on: list[str] = []

    def read(self, expression: ast.expr, module: Any, where: str) -> None:
        if isinstance(expression, ast.Constant) and isinstance(expression.value, str):
            assert expression.value in errors.BRIDGE_ERROR_CODES, f"{where}: {expression.value} is not in errors.py"
            self.own.add(expression.value)
        elif isinstance(expression, ast.Name) and expression.id != "code":  # `code`: the parameter, handed on
            value = getattr(module, expression.id)
            assert value in protocol.ERROR_CODES, f"{where}: {expression.id} is {value}, not a code of the contract"
            self.contract.add(value)
        elif isinstance(expression, ast.IfExp):
            self.read(expression.body, module, where)
            self.read(expression.orelse, module, where)
        elif isinstance(expression, ast.Call) and isinstance(expression.func, ast.Name):
            assert expression.func.id == "WireErrorCode", f"{where}: a code made by {expression.func.id}"
            self.passed_on.append(where)
        else:
            assert isinstance(expression, ast.Name), f"{where}: a code the test cannot read: {ast.dump(expression)}"


def test_every_code_the_bridge_raises_is_the_contracts_or_one_of_its_own_and_each_of_its_own_is_raised():
    codes = _Codes()
    for path in MODULES:
        module = importlib.import_module(f"berth_hermes.{path.stem}")
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            where = f"{path.name}:{getattr(node, 'lineno', 0)}"
            if isinstance(node, ast.Call):
                for keyword in node.keywords:
                    if keyword.arg == "code":
                        codes.read(keyword.value, module, where)
            elif isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                if any(isinstance(target, ast.Attribute) and target.attr == "code" for target in targets):
                    codes.read(node.value, module, where)
    default = inspect.signature(errors.BerthBridgeError).parameters["code"].default
    codes.own.add(default)
    assert codes.own == errors.BRIDGE_ERROR_CODES
    assert codes.contract == {"REQUEST_INVALID", "REQUEST_TOO_LARGE", "SOCKET_PATH"}
    assert [where.split(":")[0] for where in codes.passed_on] == ["server.py"]  # an error answer's own code


def _check_value(name: str, value: Any, rule: Mapping[str, Any]) -> None:
    kind = rule["type"]
    if kind == "string":
        assert isinstance(value, str), name
        assert rule.get("minLength", 0) <= len(value) <= rule.get("maxLength", len(value)), name
    elif kind in ("number", "integer"):
        assert isinstance(value, (int, float)) and not isinstance(value, bool), name
        assert kind == "number" or isinstance(value, int), name
        assert value > rule.get("exclusiveMinimum", value - 1) and value <= rule.get("maximum", value), name
    else:
        assert kind == "boolean" and isinstance(value, bool), name
    assert value == rule.get("const", value) and value in rule.get("enum", [value]), name


def _check_request(request: Mapping[str, Any]) -> None:
    schema = protocol.REQUESTS[request.get("op", "exec")]
    unknown, missing = set(request) - set(schema["properties"]), set(schema["required"]) - set(request)
    assert not unknown, f"fields the contract does not know: {unknown}"
    assert not missing, f"required fields missing: {missing}"
    for name, value in request.items():
        _check_value(name, value, schema["properties"][name])


@pytest.fixture
def recording_server(tmp_path: Path) -> Iterator[tuple[BerthServer, list[dict[str, Any]]]]:
    """A stand-in ``berth serve`` on a socket of this user's: records each request line, answers it as Berth would."""
    folder = tmp_path / "run"
    folder.mkdir(mode=0o700)
    path = folder / "berth.sock"
    listener = sockets.socket(sockets.AF_UNIX, sockets.SOCK_STREAM)
    listener.bind(os.fspath(path))
    listener.listen(8)
    received: list[dict[str, Any]] = []

    def answer(request: dict[str, Any]) -> dict[str, Any]:
        found = {"v": 1, "path": request.get("path"), "bytes": 1, "scope": "task:t1"}
        if request.get("op") == "get-file":
            return {**found, "hostPath": os.path.join(request["target"], "0" * 32, "a.txt")}
        if request.get("op") == "put-file":
            return found
        return {"v": 1, "exitCode": 0, "stdout": "", "stderr": "", "timedOut": False, "truncated": False,
                "durationMs": 1, "scope": "task:t1"}

    def serve() -> None:
        while True:
            try:
                connection, _ = listener.accept()
            except OSError:
                return
            with connection:
                line = b""
                while not line.endswith(b"\n"):
                    chunk = connection.recv(65536)
                    if not chunk:
                        break
                    line += chunk
                request = json.loads(line)
                received.append(request)
                connection.sendall((json.dumps(answer(request)) + "\n").encode())

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield BerthServer(path, home=tmp_path, config_file=None), received
    finally:
        listener.close()


def test_the_bridge_sends_only_fields_the_contract_knows_with_the_types_it_states(
    recording_server, tmp_path, monkeypatch
):
    server, received = recording_server
    monkeypatch.setenv("_HERMES_GATEWAY", "1")  # a gateway: sessionRequired is sent too
    for variable, field in CONTRACT["sessionVariables"].items():
        monkeypatch.setenv(variable, f"{field}-1")
    handle = environment.environment_class()(profiles=launch_only(server), cwd="/workspace", timeout=60, task_id="t1")
    handle.execute("echo hi", cwd="~/notes", timeout=30, stdin_data="input")
    handle.execute("true")
    read = session.read_session()
    source = tmp_path / "attachment.txt"
    source.write_text("a")
    files.put_file(server, read, source=os.fspath(source), path="/workspace/attachments/a.txt", task_id="t1")
    files.get_file(server, read, path="/workspace/a.txt", target=tmp_path / "outbox", task_id="t1")
    assert [request.get("op", "exec") for request in received] == ["exec", "exec", "put-file", "get-file"]
    for request in received:
        _check_request(request)
    # Every field the bridge can send was sent, so the check above saw each one.
    assert set(received[0]) == {"v", *CONTRACT["sessionVariables"].values(), "taskId", "sessionRequired", "stopOnLeave",
                                "command", "cwd", "timeout", "stdin"}
    assert set(received[2]) - set(received[1]) == {"op", "source", "path"}
    assert set(received[3]) - set(received[1]) == {"op", "path", "target"}


def test_a_field_the_contract_does_not_know_or_of_another_type_is_caught():
    good: dict[str, Any] = {"v": 1, "command": "true"}
    _check_request(good)
    bad: list[dict[str, Any]] = [
        {**good, "runAs": "root"}, {**good, "timeout": "30"}, {**good, "stopOnLeave": 1}, {"v": 1},
        {**good, "v": 2}, {**good, "reply": "xml"}, {**good, "timeout": 0}, {**good, "command": ""},
    ]
    for request in bad:
        with pytest.raises(AssertionError):
            _check_request(request)


@pytest.mark.parametrize(
    ("result", "returncode", "says_timeout"),
    [
        ({"exitCode": 124, "timedOut": True}, 124, True),
        # The status is the result's alone: the flag adds the line, it does not make a status.
        ({"exitCode": 137, "timedOut": True}, 137, True),
        ({"exitCode": 124, "timedOut": False}, 124, False),
        ({"exitCode": 3, "timedOut": False}, 3, False),
    ],
)
def test_the_bridge_returns_the_status_the_result_carries(
    recording_server, monkeypatch, result, returncode, says_timeout
):
    server, _ = recording_server
    answer = {"v": 1, "stdout": "out", "stderr": "", "truncated": False, "durationMs": 1, "scope": "task:t1", **result}
    monkeypatch.setattr(server, "request", lambda *_args, **_kwargs: answer)
    handle = environment.environment_class()(profiles=launch_only(server), cwd="/workspace", timeout=60, task_id="t1")
    done = handle.execute("sleep 100", timeout=5)
    assert done["returncode"] == returncode
    assert ("[Command timed out after 5s]" in done["output"]) is says_timeout
