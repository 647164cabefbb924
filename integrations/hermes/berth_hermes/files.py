"""Files between the chat and a user's sandbox: ``berth serve``'s ``put-file`` and ``get-file``, the outbox.

Which sandbox a file goes to or comes from is Berth's decision, made from the same session fields
as for a command (``session_request``). Which paths inside it may be read, and how (no link
followed, no FIFO, no file over ``terminal.docker_file_limit``, …), is Berth's too; the bridge
forwards the path exactly as the agent wrote it and never opens a sandbox file by a host path.

What comes out of a sandbox lands in the outbox, ``$HERMES_HOME/cache/documents/berth-outbox``:
a folder of this gateway's user that no sandbox mounts, inside a root Hermes' delivery check
allows (so its strict mode accepts it). Berth writes each file in a new subfolder of its own
(mode 0700, a random name); the bridge removes subfolders older than an hour whenever it asks
for a new one, by name, inside the outbox only, through the outbox's descriptor.
"""

from __future__ import annotations

import errno
import logging
import os
import re
import shutil
import stat
import threading
import time
from pathlib import Path
from typing import Any, Mapping

from .session import session_request
from .errors import BerthBridgeError
from .protocol import ATTACHMENTS_FOLDER as ATTACHMENTS_FOLDER_OF_PROTOCOL
from .server import BerthServer

logger = logging.getLogger("berth_hermes")

OUTBOX_NAME = "berth-outbox"
"""The outbox's folder name, inside Hermes' document cache."""

OUTBOX_MAX_AGE_SECONDS = 3600
"""How long a file taken out of a sandbox stays in the outbox for Hermes to send it."""

ATTACHMENTS_FOLDER: str = ATTACHMENTS_FOLDER_OF_PROTOCOL
"""Where an attachment of a message lands in its sender's sandbox: core's request protocol decides it."""

FILE_ANSWER_SECONDS = 300.0
"""How long to wait for ``berth serve`` to copy one file (the first may create the sandbox)."""

# The subfolders berth serve makes in a target folder: 32 hex digits.
_OUTBOX_ENTRY = re.compile(r"^[0-9a-f]{32}$")


def reason_of(error: BaseException) -> str:
    """Berth's one line without its ``berth:`` prefix, for a line the agent or the user reads."""
    text = str(error)
    return text[len("berth: "):] if text.startswith("berth: ") else text


def put_file(
    server: BerthServer, session: Mapping[str, str], *, source: str, path: str, task_id: str = "default",
    profile: Any = None,
) -> dict[str, Any]:
    """Copies the host file ``source`` (one Hermes cached) to ``path`` in the session's sandbox.

    Berth opens ``source`` without following a link, writes under a temporary name and renames at
    the end, so the sandbox never sees half a file; raises :class:`BerthBridgeError` with Berth's line.
    """
    request = session_request(session, task_id, profile=profile)
    request.update({"op": "put-file", "source": source, "path": path})
    return server.request(request, read_timeout=FILE_ANSWER_SECONDS, answer_field="path")


def get_file(
    server: BerthServer, session: Mapping[str, str], *, path: str, target: Path, task_id: str = "default",
    profile: Any = None,
) -> dict[str, Any]:
    """Copies ``path`` (as the agent wrote it: sandbox-absolute, ``~/``, or relative to ``/workspace``) out
    of the session's sandbox into a new private subfolder of ``target``; returns Berth's answer, whose
    ``hostPath`` is checked to lie inside ``target``."""
    request = session_request(session, task_id, profile=profile)
    request.update({"op": "get-file", "path": path, "target": os.fspath(target)})
    answer = server.request(request, read_timeout=FILE_ANSWER_SECONDS, answer_field="hostPath")
    host_path = str(answer.get("hostPath") or "")
    root = os.path.realpath(target)
    if not os.path.isabs(host_path) or not os.path.realpath(host_path).startswith(root + os.sep):
        raise BerthBridgeError(
            f"berth: berth serve wrote {path} outside {target}; check that BERTH_CLI is Berth's CLI",
            code="BAD_ANSWER",
        )
    return answer


def document_cache(home: Path) -> Path:
    """Hermes' document cache (its active profile's), a root its delivery check always allows."""
    try:
        from gateway.platforms.base import get_document_cache_dir

        return Path(get_document_cache_dir())
    except (ImportError, AttributeError):
        return home / "cache" / "documents"


def outbox_folder(home: Path) -> Path:
    """``$HERMES_HOME/cache/documents/berth-outbox``: where files taken out of sandboxes wait to be sent."""
    return document_cache(home) / OUTBOX_NAME


def sweep_outbox(outbox: Path, *, max_age: float = OUTBOX_MAX_AGE_SECONDS, now: float | None = None) -> int:
    """Removes the outbox's subfolders older than ``max_age`` seconds; returns how many.

    Only names berth serve makes (32 hex digits) that are real folders (``lstat``) are touched,
    each removed through the outbox's descriptor (``shutil.rmtree`` with ``dir_fd`` never follows a
    link), so nothing outside the outbox can be reached whatever its entries are.
    """
    moment = time.time() if now is None else now
    try:
        folder = os.open(outbox, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError:
        return 0  # not made yet, or not a folder of ours: nothing to sweep
    removed = 0
    try:
        for name in os.listdir(folder):
            if not _OUTBOX_ENTRY.match(name):
                continue
            try:
                info = os.stat(name, dir_fd=folder, follow_symlinks=False)
                if not stat.S_ISDIR(info.st_mode) or moment - info.st_mtime < max_age:
                    continue
                shutil.rmtree(name, dir_fd=folder)
                removed += 1
            except OSError:
                continue  # gone meanwhile, or busy: the next sweep tries again
    finally:
        os.close(folder)
    return removed


def remove_outbox_folder(outbox: Path, host_path: str) -> None:
    """Removes the (now empty) subfolder a delivered file was written to, by name inside the outbox."""
    name = os.path.basename(os.path.dirname(host_path))
    if os.path.dirname(os.path.dirname(host_path)) != os.fspath(outbox) or not _OUTBOX_ENTRY.match(name):
        return
    try:
        folder = os.open(outbox, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError:
        return
    try:
        os.rmdir(name, dir_fd=folder)
    except OSError:
        pass
    finally:
        os.close(folder)


class DeliverableFiles:
    """The host files Hermes may send while Berth is on: those Berth took out of a sandbox.

    A file is deliverable when it lies in the outbox, or when the bridge moved one there on
    Hermes' behalf (``fetch_file`` on a newer Hermes writes where Hermes asks) and it is still
    that very file (same device and inode). Nothing else on the host qualifies: not Hermes'
    shared caches, which hold every user's uploads, nor any path a reply names.
    """

    def __init__(self, outbox: Path) -> None:
        self.outbox = outbox
        self._lock = threading.Lock()
        self._moved: dict[str, tuple[int, int, float]] = {}

    def add(self, path: str) -> None:
        """Records a file the bridge wrote outside the outbox for Hermes to send."""
        info = os.lstat(path)
        with self._lock:
            cutoff = time.time() - OUTBOX_MAX_AGE_SECONDS
            self._moved = {key: value for key, value in self._moved.items() if value[2] > cutoff}
            self._moved[os.path.realpath(path)] = (info.st_dev, info.st_ino, time.time())

    def allows(self, path: str) -> bool:
        """Whether ``path`` (a host path Hermes is about to send) is a file Berth took out of a sandbox."""
        try:
            resolved = os.path.realpath(path)
            info = os.stat(resolved)
        except (OSError, ValueError):
            return False
        if not stat.S_ISREG(info.st_mode):
            return False
        root = os.path.realpath(self.outbox)
        if resolved.startswith(root + os.sep):
            return True
        with self._lock:
            known = self._moved.get(resolved)
        return (
            known is not None
            and (known[0], known[1]) == (info.st_dev, info.st_ino)
            and time.time() - known[2] < OUTBOX_MAX_AGE_SECONDS
        )


_deliverables: dict[Path, DeliverableFiles] = {}
_deliverables_lock = threading.Lock()


def deliverable_files(outbox: Path) -> DeliverableFiles:
    """The one :class:`DeliverableFiles` of this process for ``outbox``."""
    with _deliverables_lock:
        found = _deliverables.get(outbox)
        if found is None:
            found = _deliverables[outbox] = DeliverableFiles(outbox)
        return found


def file_fetch_error(message: str) -> Exception:
    """Hermes' ``FileFetchError`` (what its remote fetch catches and logs), or a ``RuntimeError`` without it."""
    try:
        from tools.environments.base import FileFetchError

        return FileFetchError(message)  # type: ignore[no-any-return]
    except ImportError:
        return RuntimeError(message)


PENDING_SECONDS = 120.0
"""How long a copy taken out for ``fetch_realpath`` waits for the ``fetch_file`` that follows it."""


class PendingCopies:
    """``fetch_realpath`` then ``fetch_file``, as Hermes' remote fetch calls them, with one copy out of the sandbox.

    Copies are kept per session: one handle serves every chat, and a copy taken out of one user's
    sandbox is never handed to another's request for the same path.
    """

    def __init__(self, server: BerthServer, outbox: Path, profile: Any = None) -> None:
        self.server = server
        self.outbox = outbox
        self.profile = profile
        """The ``profiles.Profile`` served: which of its turn's variables a sandbox made here gets."""
        self._lock = threading.Lock()
        self._copies: dict[tuple[tuple[tuple[str, str], ...], str], tuple[str, float]] = {}

    def _take_out(self, session: Mapping[str, str], path: str, task_id: str) -> dict[str, Any]:
        sweep_outbox(self.outbox)
        return get_file(self.server, session, path=path, target=self.outbox, task_id=task_id, profile=self.profile)

    def realpath(self, session: Mapping[str, str], path: str, task_id: str = "default") -> str | None:
        try:
            answer = self._take_out(session, path, task_id)
        except BerthBridgeError as error:
            logger.warning("berth: %s not taken out of the sandbox: %s", path, reason_of(error))
            return None
        resolved = str(answer.get("path") or path)
        with self._lock:
            now = time.time()
            self._copies = {key: value for key, value in self._copies.items() if now - value[1] < PENDING_SECONDS}
            self._copies[(tuple(sorted(session.items())), resolved)] = (str(answer["hostPath"]), now)
        return resolved

    def fetch(
        self, session: Mapping[str, str], path: str, local_dest: str, *, max_bytes: int, task_id: str = "default"
    ) -> None:
        with self._lock:
            pending = self._copies.pop((tuple(sorted(session.items())), path), None)
        host_path = pending[0] if pending is not None and time.time() - pending[1] < PENDING_SECONDS else None
        if host_path is None or not os.path.isfile(host_path):
            try:
                host_path = str(self._take_out(session, path, task_id)["hostPath"])
            except BerthBridgeError as error:
                raise file_fetch_error(reason_of(error)) from None
        try:
            size = os.lstat(host_path).st_size
            if size > max_bytes:
                raise file_fetch_error(f"{path} is {size} bytes, more than the {max_bytes} this delivery takes")
            _move(host_path, local_dest)
            deliverable_files(self.outbox).add(local_dest)
        finally:
            if os.path.lexists(host_path):
                os.unlink(host_path)
            remove_outbox_folder(self.outbox, host_path)


def _move(source: str, destination: str) -> None:
    """Moves Berth's copy to where Hermes asked: a rename on one file system, else a copy beside it renamed in."""
    try:
        os.rename(source, destination)
        return
    except OSError as error:
        if error.errno != errno.EXDEV:
            raise
    partial = f"{destination}.berth-{os.getpid()}-{threading.get_ident()}"
    try:
        with open(source, "rb") as reading, open(partial, "xb") as writing:
            shutil.copyfileobj(reading, writing)
        os.replace(partial, destination)
    finally:
        if os.path.lexists(partial):
            os.unlink(partial)


_pending: dict[Path, PendingCopies] = {}


def pending_copies(server: BerthServer, profile: Any = None) -> PendingCopies:
    """The one :class:`PendingCopies` of this process for ``server``'s profile (its home's outbox)."""
    outbox = outbox_folder(server.home)
    with _deliverables_lock:
        found = _pending.get(outbox)
        if found is None or found.server is not server:
            found = _pending[outbox] = PendingCopies(server, outbox, profile)
        return found


def any_deliverable(path: str) -> bool:
    """Whether ``path`` is a file Berth took out of a sandbox for any profile of this process."""
    with _deliverables_lock:
        known = list(_deliverables.values())
    return any(deliverable.allows(path) for deliverable in known)
