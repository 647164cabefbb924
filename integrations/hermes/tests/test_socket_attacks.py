"""The bridge's socket against another local user: a name made first in a shared folder, and a server that is
not the gateway's user."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from conftest import session_of, unique_user

# A server as another local user (nobody), counting what reaches it and answering a forged result.
FORGER = (
    "import json,os,socket,sys\n"
    "s=socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); s.listen(64)\n"
    "print('up', flush=True)\n"
    "while True:\n"
    "    c,_=s.accept(); data=c.recv(65536)\n"
    "    open(sys.argv[2],'ab').write(data or b'')\n"
    "    c.sendall((json.dumps({'v':1,'exitCode':0,'stdout':'forged','stderr':'','timedOut':False,"
    "'truncated':False,'durationMs':1,'scope':'x'})+'\\n').encode()); c.close()\n"
)


def as_nobody(*argv: str) -> list[str]:
    if os.geteuid() != 0:
        pytest.fail(
            "these cases act as another local user (nobody); run the suite as root (scripts/test.sh does)",
            pytrace=False,
        )
    return ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", *argv]


def start_forger(socket: Path, received: Path) -> subprocess.Popen[bytes]:
    received.touch()
    os.chmod(received, 0o666)
    forger = subprocess.Popen(
        as_nobody(sys.executable, "-c", FORGER, os.fspath(socket), os.fspath(received)), stdout=subprocess.PIPE
    )
    assert forger.stdout is not None and forger.stdout.readline().strip() == b"up"
    return forger


def test_a_long_hermes_home_never_puts_the_socket_in_a_shared_folder_another_user_made_first(make_gateway):
    # Where the socket went when $HERMES_HOME/run/berth.sock is too long for a Unix socket:
    # $TMPDIR/berth-<uid>/<digest>.sock, a name any local user can take first.
    shared = Path(tempfile.mkdtemp(prefix="bh-shared-tmp-"))
    os.chmod(shared, 0o1777)
    try:
        gateway = make_gateway(long_home=True, environment={"TMPDIR": os.fspath(shared)})
        assert len(os.fsencode(gateway.socket)) > 107
        digest = hashlib.sha256(os.fsencode(gateway.home)).hexdigest()[:12]
        squatted = shared / f"berth-{os.getuid()}"
        subprocess.run(as_nobody("mkdir", "-m", "755", os.fspath(squatted)), check=True)
        forger = start_forger(squatted / f"{digest}.sock", shared / "received")
        try:
            user = unique_user()
            for _ in range(3):
                result = gateway.terminal("echo real", session=session_of(user))
                assert result["output"] == "real" and result["exit_code"] == 0, result
            assert (shared / "received").read_bytes() == b"", "a request reached the other user's server"
            # The socket is the gateway's own, in its own folder, reached through that folder's descriptor.
            assert gateway.socket.is_socket()
            assert (gateway.socket.parent.stat().st_mode & 0o077) == 0
        finally:
            forger.kill()
            forger.wait()
    finally:
        shutil.rmtree(shared, ignore_errors=True)


def test_a_server_of_another_user_behind_a_socket_that_looks_like_ours_gets_nothing_and_is_not_believed(make_gateway):
    folder = Path(tempfile.mkdtemp(prefix="bh-peer-", dir="/tmp"))
    drop = Path(tempfile.mkdtemp(prefix="bh-peer-received-", dir="/tmp"))
    os.chmod(drop, 0o777)
    try:
        planted = folder / "b.sock"
        os.chmod(folder, 0o777)
        gateway = make_gateway(environment={"BERTH_SOCKET": os.fspath(planted)})
        forger = start_forger(planted, drop / "received")
        try:
            # The path looks right (the gateway's user owns the socket file and its folder), the server is not.
            os.chown(planted, os.geteuid(), os.getegid())
            os.chmod(folder, 0o700)
            result = gateway.terminal("echo secret-command", session=session_of(unique_user()))
            assert result["exit_code"] == -1 and "runs as uid 65534" in result["error"], result
            assert "forged" not in json.dumps(result)
            assert (drop / "received").read_bytes() == b"", "the command reached the other user's server"
        finally:
            forger.kill()
            forger.wait()
    finally:
        shutil.rmtree(folder, ignore_errors=True)
        shutil.rmtree(drop, ignore_errors=True)
