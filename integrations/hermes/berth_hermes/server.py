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
import shutil
import signal
import socket as sockets
import stat
import struct
import subprocess
import threading
import time
from collections import deque
from pathlib import Path
from typing import IO, Any, Callable, Mapping

from .errors import BerthBridgeError, BerthNotInstalledError
from .protocol import MAX_REQUEST_BYTES

logger = logging.getLogger("berth_hermes")

INSTALL_HINT = "npm install -g @berth/gateway-plugin"
MIN_NODE_MAJOR = 22
READY_TIMEOUT_SECONDS = 60.0
STOP_GRACE_SECONDS = 8.0
# Ends `berth serve` when the gateway that started it is gone, however it went (SIGKILL too).
WATCHDOG = Path(__file__).with_name("exit_with_gateway.mjs")


_PROBLEM = re.compile(r"\b(ignoring|error|cannot|failed|refused|unknown|not )", re.IGNORECASE)


def _socket_folder_fd(socket: Path, *, create: bool) -> int:
    """A descriptor of the socket's folder; the folder is made 0700 when missing and asked for.

    Everything after goes through this descriptor (``/proc/self/fd/N/name``): the folder checked
    is the folder connected to, a link swapped in afterwards changes nothing, and a path longer
    than a Unix socket allows is reached all the same.
    """
    folder = socket.parent
    if create:
        os.makedirs(folder.parent, mode=0o700, exist_ok=True)
        parent_fd = os.open(folder.parent, os.O_RDONLY | os.O_DIRECTORY)
        try:
            try:
                os.mkdir(folder.name, 0o700, dir_fd=parent_fd)
            except FileExistsError:
                pass
            fd = os.open(folder.name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=parent_fd)
        finally:
            os.close(parent_fd)
    else:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    return fd


def _check_folder(fd: int, socket: Path) -> None:
    """Refuses a socket folder another user could write to (and so swap the socket in)."""
    info = os.fstat(fd)
    others_write = info.st_mode & 0o022 and not info.st_mode & stat.S_ISVTX
    if info.st_uid not in (os.geteuid(), 0) or others_write:
        raise BerthBridgeError(
            f"berth: the socket folder {socket.parent} is "
            f"{'writable by other users' if others_write else f'owned by uid {info.st_uid}'}, "
            "so the socket could be replaced; remove it (the bridge makes it again, mode 0700) "
            "or set BERTH_SOCKET to a path of your own",
            code="SOCKET_PATH",
        )


def _by_descriptor(fd: int, socket: Path) -> str:
    return f"/proc/self/fd/{fd}/{socket.name}"


def peer_uid(connection: sockets.socket) -> int:
    """The user id of the process at the other end of a connected Unix socket (``SO_PEERCRED``)."""
    credentials = connection.getsockopt(sockets.SOL_SOCKET, sockets.SO_PEERCRED, struct.calcsize("3i"))
    uid: int = struct.unpack("3i", credentials)[1]
    return uid


class CommandInterrupted(Exception):
    """Hermes' interrupt (the user's /stop) arrived while the command ran."""


def locate_berth(environment: Mapping[str, str]) -> tuple[str, str]:
    """The node binary and Berth's CLI script: ``$BERTH_NODE`` / ``$BERTH_CLI``, else ``node`` and ``berth`` on PATH."""
    search = environment.get("PATH", os.defpath)
    node = environment.get("BERTH_NODE") or shutil.which("node", path=search)
    if not node:
        raise BerthNotInstalledError(
            "berth: Node.js is not installed (no node on PATH); "
            f"install Node.js {MIN_NODE_MAJOR} or newer, then Berth: {INSTALL_HINT}"
        )
    cli = environment.get("BERTH_CLI") or shutil.which("berth", path=search)
    if not cli:
        raise BerthNotInstalledError(
            "berth: Berth is not installed (no berth on PATH); "
            f"install it with: {INSTALL_HINT} (or set BERTH_CLI to its cli.js)"
        )
    script = os.path.realpath(cli)
    if not os.path.isfile(script):
        raise BerthNotInstalledError(
            f"berth: BERTH_CLI names {cli}, which does not exist; "
            f"install Berth with: {INSTALL_HINT}, or correct BERTH_CLI"
        )
    return node, script


def check_node(node: str) -> None:
    """Refuses a node binary that does not run or is older than Berth needs."""
    try:
        version = subprocess.run(
            [node, "--version"], capture_output=True, text=True, timeout=20, check=False
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        raise BerthNotInstalledError(
            f"berth: {node} does not run; install Node.js {MIN_NODE_MAJOR} or newer, then Berth: {INSTALL_HINT}"
        ) from None
    match = re.match(r"v(\d+)\.", version)
    if not match or int(match.group(1)) < MIN_NODE_MAJOR:
        raise BerthNotInstalledError(
            f"berth: Berth needs Node.js {MIN_NODE_MAJOR} or newer, "
            f"and {node} is {version or 'of an unknown version'}; "
            "install a newer Node.js (or set BERTH_NODE to one)"
        )


class BerthServer:
    """One gateway's `berth serve` on one socket. Thread-safe: commands of many users run at once."""

    def __init__(self, socket: Path, *, home: Path, config_file: Path | None) -> None:
        self.socket = socket
        self.home = home
        self.config_file = config_file
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

    def _answers(self) -> bool:
        try:
            fd = _socket_folder_fd(self.socket, create=False)
        except OSError:
            return False
        probe = sockets.socket(sockets.AF_UNIX, sockets.SOCK_STREAM)
        probe.settimeout(2.0)
        try:
            probe.connect(_by_descriptor(fd, self.socket))
            return True
        except OSError:
            return False
        finally:
            probe.close()
            os.close(fd)

    def ensure_running(self) -> None:
        """Makes sure a server answers on the socket: one already there, or ours, started (again) now."""
        with self._lock:
            if self._answers():
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
            fd = _socket_folder_fd(self.socket, create=True)
        except OSError as error:
            raise BerthBridgeError(
                f"berth: cannot make the socket folder {self.socket.parent} ({error.strerror}); "
                "it must be a folder of this gateway's user, or set BERTH_SOCKET",
                code="SOCKET_PATH",
            ) from None
        try:
            _check_folder(fd, self.socket)
        finally:
            os.close(fd)
        argv = [node, f"--import={WATCHDOG.as_uri()}", cli, "serve", "--socket", os.fspath(self.socket)]
        if self.config_file is not None:
            argv += ["--config", os.fspath(self.config_file)]
        # The gateway's environment carries the operator's HERMES_USER_* credentials and forwarded
        # variables; never a session: each request names its own.
        environment = {name: value for name, value in os.environ.items() if not name.startswith("HERMES_SESSION_")}
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
            if self._answers():
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

    def _open(self) -> sockets.socket:
        fd = _socket_folder_fd(self.socket, create=False)
        try:
            info = os.stat(self.socket.name, dir_fd=fd, follow_symlinks=False)
            if not stat.S_ISSOCK(info.st_mode):
                raise BerthBridgeError(
                    f"berth: {self.socket} is not a socket; remove it or set BERTH_SOCKET to another path",
                    code="SOCKET_PATH",
                )
            if info.st_uid != os.geteuid():
                # Whoever owns it could collect every command and its input.
                raise BerthBridgeError(
                    f"berth: the socket {self.socket} belongs to uid {info.st_uid}, not to this gateway's user; "
                    "remove it or set BERTH_SOCKET to a path of your own",
                    code="SOCKET_PATH",
                )
            _check_folder(fd, self.socket)
            connection = sockets.socket(sockets.AF_UNIX, sockets.SOCK_STREAM)
            try:
                connection.connect(_by_descriptor(fd, self.socket))
                # The server itself must be this gateway's user: whatever happened to the path, a
                # server of anyone else never gets a command, and never answers one.
                uid = peer_uid(connection)
                if uid != os.geteuid():
                    raise BerthBridgeError(
                        f"berth: the server on {self.socket} runs as uid {uid}, not as this gateway's user; "
                        "nothing was sent — remove the socket or set BERTH_SOCKET to a path of your own",
                        code="SOCKET_PEER",
                    )
            except BaseException:
                connection.close()
                raise
            return connection
        finally:
            os.close(fd)

    def _connect(self) -> sockets.socket:
        try:
            return self._open()
        except (FileNotFoundError, ConnectionRefusedError):
            pass
        self.ensure_running()
        try:
            return self._open()
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
                code="REQUEST_TOO_LARGE",
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
            raise BerthBridgeError(
                message if message.startswith("berth:") else f"berth: {message}", code=str(error.get("code") or "ERROR")
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


def server_for(socket: Path, *, home: Path, config_file: Path | None) -> BerthServer:
    """The one :class:`BerthServer` of this process for ``socket``."""
    with _servers_lock:
        server = _servers.get(socket)
        if server is None:
            server = _servers[socket] = BerthServer(socket, home=home, config_file=config_file)
        return server
