"""Reaching the socket of `berth serve` safely: through a descriptor of its folder, which must be this
gateway user's own, and only to a server that runs as that user.
"""

from __future__ import annotations

import os
import socket as sockets
import stat
import struct
from pathlib import Path

from .errors import BerthBridgeError
from .protocol import SOCKET_PATH


def socket_folder_fd(socket: Path, *, create: bool) -> int:
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


def check_socket_folder(fd: int, socket: Path) -> None:
    """Refuses a socket folder another user could write to (and so swap the socket in)."""
    info = os.fstat(fd)
    others_write = info.st_mode & 0o022 and not info.st_mode & stat.S_ISVTX
    if info.st_uid not in (os.geteuid(), 0) or others_write:
        raise BerthBridgeError(
            f"berth: the socket folder {socket.parent} is "
            f"{'writable by other users' if others_write else f'owned by uid {info.st_uid}'}, "
            "so the socket could be replaced; remove it (the bridge makes it again, mode 0700) "
            "or set BERTH_SOCKET to a path of your own",
            code=SOCKET_PATH,
        )


def by_descriptor(fd: int, socket: Path) -> str:
    return f"/proc/self/fd/{fd}/{socket.name}"


def peer_uid(connection: sockets.socket) -> int:
    """The user id of the process at the other end of a connected Unix socket (``SO_PEERCRED``)."""
    credentials = connection.getsockopt(sockets.SOL_SOCKET, sockets.SO_PEERCRED, struct.calcsize("3i"))
    uid: int = struct.unpack("3i", credentials)[1]
    return uid


def server_answers(socket: Path) -> bool:
    """Whether something accepts a connection on ``socket`` (checked before a server is started)."""
    try:
        fd = socket_folder_fd(socket, create=False)
    except OSError:
        return False
    probe = sockets.socket(sockets.AF_UNIX, sockets.SOCK_STREAM)
    probe.settimeout(2.0)
    try:
        probe.connect(by_descriptor(fd, socket))
        return True
    except OSError:
        return False
    finally:
        probe.close()
        os.close(fd)


def connect_to_socket(socket: Path) -> sockets.socket:
    """A connection to the server on ``socket``, after checking the socket, its folder and the server's user.

    Raises ``FileNotFoundError`` or ``ConnectionRefusedError`` when no server is there yet.
    """
    fd = socket_folder_fd(socket, create=False)
    try:
        info = os.stat(socket.name, dir_fd=fd, follow_symlinks=False)
        if not stat.S_ISSOCK(info.st_mode):
            raise BerthBridgeError(
                f"berth: {socket} is not a socket; remove it or set BERTH_SOCKET to another path",
                code=SOCKET_PATH,
            )
        if info.st_uid != os.geteuid():
            # Whoever owns it could collect every command and its input.
            raise BerthBridgeError(
                f"berth: the socket {socket} belongs to uid {info.st_uid}, not to this gateway's user; "
                "remove it or set BERTH_SOCKET to a path of your own",
                code=SOCKET_PATH,
            )
        check_socket_folder(fd, socket)
        connection = sockets.socket(sockets.AF_UNIX, sockets.SOCK_STREAM)
        try:
            connection.connect(by_descriptor(fd, socket))
            # The server itself must be this gateway's user: whatever happened to the path, a
            # server of anyone else never gets a command, and never answers one.
            uid = peer_uid(connection)
            if uid != os.geteuid():
                raise BerthBridgeError(
                    f"berth: the server on {socket} runs as uid {uid}, not as this gateway's user; "
                    "nothing was sent — remove the socket or set BERTH_SOCKET to a path of your own",
                    code="SOCKET_PEER",
                )
        except BaseException:
            connection.close()
            raise
        return connection
    finally:
        os.close(fd)
