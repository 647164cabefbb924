"""The gateway's one `berth serve`: found or started, restarted when it dies, stopped with the gateway.

Each command is one connection to its Unix socket: one JSON request line, one JSON answer line
(Berth's socket protocol, version 1). Everything beyond forwarding is Berth's, in TypeScript.
"""

from __future__ import annotations

import atexit
import json
import logging
import os
import re
import signal
import socket as sockets
import subprocess
import threading
import time
from collections import deque
from pathlib import Path
from typing import IO, Any, Callable, Mapping

from .berth_cli import INSTALL_HINT, MIN_NODE_MAJOR, check_node, locate_berth
from .errors import BerthBridgeError, BerthNotInstalledError, WireErrorCode
from .protocol import MAX_REQUEST_BYTES, REQUEST_TOO_LARGE, SOCKET_PATH
from .socket_path import check_socket_folder, connect_to_socket, server_answers, socket_folder_fd

# What other modules import from here; `locate_berth` lives in berth_cli.py.
__all__ = ["BerthServer", "CommandInterrupted", "locate_berth", "server_for"]

logger = logging.getLogger("berth_hermes")

READY_TIMEOUT_SECONDS = 60.0
STOP_GRACE_SECONDS = 8.0
# Ends `berth serve` when the gateway that started it is gone, however it went (SIGKILL too).
WATCHDOG = Path(__file__).with_name("exit_with_gateway.mjs")


_PROBLEM = re.compile(r"\b(ignoring|error|cannot|failed|refused|unknown|not )", re.IGNORECASE)


class CommandInterrupted(Exception):
    """Hermes' interrupt (the user's /stop) arrived while the command ran."""


class BerthServer:
    """One gateway's `berth serve` on one socket. Thread-safe: commands of many users run at once."""

    def __init__(
        self, socket: Path, *, home: Path, config_file: Path | None, environment: Mapping[str, str] | None = None
    ) -> None:
        self.socket = socket
        self.home = home
        self.config_file = config_file
        self._environment = dict(environment) if environment is not None else None
        """What `berth serve` starts with instead of the gateway's environment (a routed profile's)."""
        self._lock = threading.Lock()
        self._process: subprocess.Popen[bytes] | None = None
        self._readers: list[threading.Thread] = []
        self._stderr_tail: deque[str] = deque(maxlen=8)
        self._told_foreign = False
        atexit.register(self.stop)

    # -- the server's life -------------------------------------------------------------------

    @property
    def pid(self) -> int | None:
        """The pid of the `berth serve` this bridge started and still runs, if any."""
        process = self._process
        return process.pid if process is not None and process.poll() is None else None

    def ensure_running(self) -> None:
        """Makes sure a server answers on the socket: one already there, or ours, started (again) now."""
        with self._lock:
            if server_answers(self.socket):
                if self._process is None and not self._told_foreign:
                    self._told_foreign = True
                    logger.info("berth: using the berth serve that already listens on %s", self.socket)
                return
            process = self._process
            if process is not None and process.poll() is None:
                self._wait_ready(process)
                return
            if process is not None:
                logger.warning("berth: berth serve exited (status %s); starting it again", process.returncode)
                self._process = None
            self._start()

    def _start(self) -> None:
        node, cli = locate_berth(os.environ)
        check_node(node)
        # The socket's folder, made owner-only through descriptors before berth serve binds in it.
        try:
            fd = socket_folder_fd(self.socket, create=True)
        except OSError as error:
            raise BerthBridgeError(
                f"berth: cannot make the socket folder {self.socket.parent} ({error.strerror}); "
                "it must be a folder of this gateway's user, or set BERTH_SOCKET",
                code=SOCKET_PATH,
            ) from None
        try:
            check_socket_folder(fd, self.socket)
        finally:
            os.close(fd)
        argv = [node, f"--import={WATCHDOG.as_uri()}", cli, "serve", "--socket", os.fspath(self.socket)]
        if self.config_file is not None:
            argv += ["--config", os.fspath(self.config_file)]
        # The gateway's environment carries the operator's HERMES_USER_* credentials and forwarded
        # variables; never a session: each request names its own.
        source = self._environment if self._environment is not None else os.environ
        environment = {name: value for name, value in source.items() if not name.startswith("HERMES_SESSION_")}
        environment["HERMES_HOME"] = os.fspath(self.home)
        self._stderr_tail.clear()
        try:
            process = subprocess.Popen(
                argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=environment,
                start_new_session=True,
            )
        except OSError as error:
            raise BerthNotInstalledError(
                f"berth: cannot run {node} ({error.strerror}); "
                f"install Node.js {MIN_NODE_MAJOR} or newer, then Berth: {INSTALL_HINT}"
            ) from None
        self._process = process
        self._readers = [
            threading.Thread(
                target=self._forward, args=(process.stdout, False), name="berth-serve-stdout", daemon=True
            ),
            threading.Thread(
                target=self._forward, args=(process.stderr, True), name="berth-serve-stderr", daemon=True
            ),
        ]
        for reader in self._readers:
            reader.start()
        logger.info("berth: started berth serve (pid %s) on %s", process.pid, self.socket)
        self._wait_ready(process)

    def _forward(self, stream: IO[bytes] | None, is_stderr: bool) -> None:
        """Copies berth serve's lines into the gateway's log (they never hold a secret's value)."""
        if stream is None:
            return
        for raw in iter(stream.readline, b""):
            line = raw.decode("utf-8", "replace").rstrip()
            if not line:
                continue
            if is_stderr:
                self._stderr_tail.append(line)
            # berth serve writes progress and problems alike to stderr; problems say so.
            level = logging.WARNING if is_stderr and _PROBLEM.search(line) else logging.INFO
            logger.log(level, "%s", line)

    def _wait_ready(self, process: subprocess.Popen[bytes]) -> None:
        deadline = time.monotonic() + READY_TIMEOUT_SECONDS
        while time.monotonic() < deadline:
            if process.poll() is not None:
                for reader in self._readers:
                    reader.join(timeout=1.0)
                reason = self._stderr_tail[-1] if self._stderr_tail else "it printed nothing"
                reason = reason[len("berth: "):] if reason.startswith("berth: ") else reason
                raise BerthBridgeError(
                    f"berth: {reason} (berth serve exited with status {process.returncode} at start)",
                    code="SERVER_START",
                )
            if server_answers(self.socket):
                return
            time.sleep(0.05)
        raise BerthBridgeError(
            f"berth: berth serve did not answer on {self.socket} within {int(READY_TIMEOUT_SECONDS)} s; "
            "see the gateway log",
            code="SERVER_START",
        )

    def stop(self) -> None:
        """Stops the `berth serve` this bridge started (sandboxes keep running); leaves any other alone."""
        with self._lock:
            process, self._process = self._process, None
        if process is None:
            return
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=STOP_GRACE_SECONDS)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        if process.stdin is not None:
            process.stdin.close()

    # -- one request ---------------------------------------------------------------------------

    def _connect(self) -> sockets.socket:
        try:
            return connect_to_socket(self.socket)
        except (FileNotFoundError, ConnectionRefusedError):
            pass
        self.ensure_running()
        try:
            return connect_to_socket(self.socket)
        except OSError as error:
            raise BerthBridgeError(
                f"berth: cannot connect to berth serve on {self.socket} ({error.strerror}); see the gateway log",
                code="SOCKET_CONNECT",
            ) from None

    def request(
        self,
        payload: Mapping[str, Any],
        *,
        read_timeout: float,
        interrupted: Callable[[], bool] = lambda: False,
        answer_field: str = "exitCode",
    ) -> dict[str, Any]:
        """Sends one request and returns Berth's answer; raises :class:`BerthBridgeError` with Berth's own one line.

        ``answer_field`` is the field every good answer to this operation carries: ``exitCode`` for a
        command, ``hostPath`` or ``path`` for a file (``put-file``, ``get-file``).
        """
        # This bridge keeps its side open until it has the answer, so its leaving (Hermes' /stop,
        # the answer's deadline) stops the command in the sandbox: berth serve's stopOnLeave.
        line = (json.dumps({**payload, "stopOnLeave": True}, ensure_ascii=False) + "\n").encode("utf-8")
        if len(line) > MAX_REQUEST_BYTES + 1:
            raise BerthBridgeError(
                "berth: the command and its input are larger than 1 MiB, more than berth serve takes at once; "
                "send the data in smaller parts",
                code=REQUEST_TOO_LARGE,
            )
        connection = self._connect()
        answer = bytearray()
        try:
            try:
                connection.sendall(line)
            except OSError:
                pass  # refused before it read everything: its answer says why
            connection.settimeout(0.25)
            deadline = time.monotonic() + read_timeout
            while b"\n" not in answer:
                if interrupted():
                    raise CommandInterrupted()
                try:
                    chunk = connection.recv(65536)
                except sockets.timeout:
                    if time.monotonic() > deadline:
                        raise BerthBridgeError(
                            f"berth: berth serve gave no answer within {int(read_timeout)} s; "
                            "so the command was stopped",
                            code="ANSWER_TIMEOUT",
                        ) from None
                    continue
                except OSError:
                    break
                if not chunk:
                    break
                answer += chunk
        finally:
            connection.close()
        if not answer.strip():
            raise BerthBridgeError(
                "berth: berth serve closed the connection without an answer (did it stop?); "
                "the next command starts it again",
                code="NO_ANSWER",
            )
        try:
            response = json.loads(bytes(answer).split(b"\n", 1)[0])
        except ValueError:
            raise BerthBridgeError(
                "berth: berth serve answered with something that is not JSON; check that BERTH_CLI is Berth's CLI",
                code="BAD_ANSWER",
            ) from None
        error = response.get("error") if isinstance(response, dict) else None
        if isinstance(error, dict):
            message = str(error.get("message") or "unknown error")
            answered = error.get("code")
            raise BerthBridgeError(
                message if message.startswith("berth:") else f"berth: {message}",
                code=WireErrorCode(str(answered)) if answered else "ERROR",
            )
        if not isinstance(response, dict) or answer_field not in response:
            raise BerthBridgeError(
                f"berth: berth serve answered without {answer_field}; check that BERTH_CLI is Berth's CLI "
                "(a version that knows this operation)",
                code="BAD_ANSWER",
            )
        return response


_servers: dict[Path, BerthServer] = {}
_servers_lock = threading.Lock()


def server_for(
    socket: Path, *, home: Path, config_file: Path | None, environment: Mapping[str, str] | None = None
) -> BerthServer:
    """The one :class:`BerthServer` of this process for ``socket``."""
    with _servers_lock:
        server = _servers.get(socket)
        if server is None:
            server = _servers[socket] = BerthServer(
                socket, home=home, config_file=config_file, environment=environment
            )
        return server
