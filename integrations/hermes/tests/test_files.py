"""Files between the chat and the user's own sandbox, through the stand-in gateway, real `berth serve` and the engine.

A message goes the way Hermes takes it: the fake Telegram adapter caches the attachment in the
shared cache, ``GatewayRunner`` builds the agent's text with the session set, a scripted agent
runs its commands through the terminal tool and answers, ``transform_llm_output`` runs, and the
adapter delivers what the answer names to the fake bot, whose ``send_document`` reads the host
file. Every attack on delivery below leaks through the naive mapping (a sandbox path opened by
its host path): ``test_file_rules.test_the_naive_mapping_leaks_every_attack_of_the_file_tests``.
"""

from __future__ import annotations

import base64
import os
import re
import secrets
import stat
import time
from pathlib import Path

import pytest

from conftest import session_of, unique_user


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def document(name: str, data: bytes, mime: str = "text/plain") -> dict:
    return {"kind": "document", "name": name, "data": b64(data), "mime": mime}


def message(gateway, user: str, *, attachment: dict | None = None, text: str = "", commands=(), final="done") -> dict:
    return gateway.send({"op": "message", "user": user, "text": text, "attachment": attachment,
                         "agent": {"commands": list(commands), "final": final}})


def documents_to(sent: list, chat: str) -> list[bytes]:
    return [base64.b64decode(r["data"]) for r in sent if r["kind"] == "document" and r["chat_id"] == chat]


def text_to(sent: list, chat: str) -> str:
    return "\n".join(r["content"] for r in sent if r["kind"] == "text" and r["chat_id"] == chat)


def user_folder(gateway, user: str) -> Path:
    return gateway.sandbox_dir / "docker" / f"telegram@{user}"


# -- in -------------------------------------------------------------------------------------------


def test_a_document_lands_in_its_senders_sandbox_only_at_the_path_the_agent_is_told(make_gateway):
    gateway = make_gateway()
    a, b = unique_user(), unique_user()
    marker = f"notes-of-A-{secrets.token_hex(8)}"
    body = f"{marker}\nsecond line\n".encode()
    got = message(gateway, a, attachment=document("notes.txt", body), text="what is in it?",
                  commands=["cat {told}"], final="read it")
    [cached] = got["cached"]
    told = got["told"]
    assert re.fullmatch(r"/workspace/attachments/doc_[0-9a-f]{12}_notes\.txt", told), got["prompt"]
    assert told == f"/workspace/attachments/{os.path.basename(cached)}"
    # Neither the host path nor Hermes' in-container cache path reaches the agent.
    assert cached not in got["prompt"] and "/root/.hermes/cache" not in got["prompt"]
    assert got["results"][0]["output"] == body.decode().strip()
    on_disk = user_folder(gateway, a) / "workspace" / told[len("/workspace/"):]
    assert on_disk.read_bytes() == body
    assert [p for p in gateway.sandbox_dir.rglob(os.path.basename(cached))] == [on_disk]
    # B: not at that path, not anywhere a search of the whole tree reaches.
    search = gateway.terminal(
        f"cat {told} 2>&1; find / -name 'doc_*' 2>/dev/null; find / -name '*notes.txt' 2>/dev/null; "
        f"grep -rsl '{marker}' / --exclude-dir=proc --exclude-dir=sys 2>/dev/null; echo done",
        session=session_of(b))
    assert search["output"].splitlines()[-1] == "done", search
    assert marker not in search["output"] and "doc_" not in search["output"].replace(told, "")


def test_images_and_voice_notes_go_in_too_and_their_host_paths_never_reach_the_agent(make_gateway):
    # Speech-to-text off: Hermes shows the voice note's host path (gateway/run.py:16593-16612).
    gateway = make_gateway(config={"stt_enabled": False})
    a = unique_user()
    picture = b"\x89PNG\r\n\x1a\n" + secrets.token_bytes(300)
    size = "wc -c < {told} | tr -d ' '"
    got = message(gateway, a, attachment={"kind": "photo", "data": b64(picture)}, commands=[size])
    [cached] = got["cached"]
    assert re.fullmatch(r"/workspace/attachments/img_[0-9a-f]{12}\.jpg", got["told"]), got["prompt"]
    assert cached not in got["prompt"] and got["results"][0]["output"] == str(len(picture))
    voice = secrets.token_bytes(500)
    got = message(gateway, a, attachment={"kind": "voice", "data": b64(voice)}, commands=[size])
    [cached] = got["cached"]
    assert re.fullmatch(r"/workspace/attachments/audio_[0-9a-f]{12}\.ogg", got["told"]), got["prompt"]
    assert cached not in got["prompt"] and got["results"][0]["output"] == str(len(voice))


def test_a_voice_note_hermes_transcribes_goes_in_and_a_replied_to_attachment_too(make_gateway):
    gateway = make_gateway()  # speech-to-text on, Hermes' default (gateway/config.py:866); no provider here
    a = unique_user()
    voice = secrets.token_bytes(400)
    got = message(gateway, a, attachment={"kind": "voice", "data": b64(voice)},
                  commands=["wc -c < /workspace/attachments/$(ls /workspace/attachments) | tr -d ' '"])
    [cached] = got["cached"]
    assert "[voice message could not be transcribed]" in got["prompt"] and cached not in got["prompt"], got["prompt"]
    assert got["results"][0]["output"] == str(len(voice))
    # A text reply to a message with a document: Hermes caches it and names its /root/.hermes path
    # (plugins/platforms/telegram/adapter.py:7828-7872); the agent is told where it is in the sandbox.
    body = f"replied-{secrets.token_hex(6)}".encode()
    got = gateway.send({"op": "message", "user": a, "text": "and this one?", "attachment": None,
                        "replied_to": {"kind": "document", "name": "old.txt", "data": b64(body), "mime": "text/plain"},
                        "agent": {"commands": ["cat {told}"], "final": "done"}})
    assert re.fullmatch(r"/workspace/attachments/doc_[0-9a-f]{12}_old\.txt", got["told"]), got["prompt"]
    assert "/root/.hermes" not in got["prompt"] and got["results"][0]["output"] == body.decode(), got


def test_an_attachment_over_the_limit_gives_the_agent_one_line_and_leaves_nothing_half_written(make_gateway):
    gateway = make_gateway({"docker_file_limit": 1})
    a = unique_user()
    got = message(gateway, a, attachment=document("big.pdf", secrets.token_bytes(1_500_000), "application/pdf"),
                  commands=["ls -A /workspace/attachments 2>/dev/null | wc -l | tr -d ' '"])
    lines = [line for line in got["prompt"].splitlines() if "big.pdf could not be put in your sandbox" in line]
    assert len(lines) == 1 and "[attachment big.pdf could not be put in your sandbox: " in lines[0], got["prompt"]
    assert got["cached"][0] not in got["prompt"] and "/workspace/attachments/" not in got["prompt"]
    assert got["results"][0]["output"] == "0"
    attachments = user_folder(gateway, a) / "workspace" / "attachments"
    assert not attachments.exists() or not any(attachments.iterdir())


# -- out ------------------------------------------------------------------------------------------


def test_a_media_reply_sends_exactly_the_sandbox_files_bytes_to_the_senders_chat_only(make_gateway):
    gateway = make_gateway()
    a, b = unique_user(), unique_user()
    got = message(gateway, a, commands=[
        "head -c 4096 /dev/urandom > /workspace/out.txt && base64 /workspace/out.txt",
        "echo relative > /workspace/rel.txt; echo home > /root/home.md",
    ], final="Here you go\nMEDIA:/workspace/out.txt\nMEDIA:rel.txt\nMEDIA:~/home.md")
    written = base64.b64decode(got["results"][0]["output"])
    assert len(written) == 4096
    assert documents_to(got["sent"], a) == [written, b"relative\n", b"home\n"]
    assert text_to(got["sent"], a) == "Here you go"
    assert documents_to(got["sent"], b) == [] and {r["chat_id"] for r in got["sent"]} == {a}
    # The copies wait in the outbox, private to the gateway's user.
    outbox = gateway.home / "cache" / "documents" / "berth-outbox"
    copies = [p for p in outbox.rglob("*") if p.is_file()]
    assert sorted(p.read_bytes() for p in copies) == sorted([written, b"relative\n", b"home\n"])
    for copy in copies:
        assert stat.S_IMODE(copy.stat().st_mode) == 0o600 and stat.S_IMODE(copy.parent.stat().st_mode) == 0o700


def test_a_media_path_berth_refuses_becomes_one_line_in_the_reply(make_gateway):
    gateway = make_gateway()
    a = unique_user()
    got = message(gateway, a, final="Here:\nMEDIA:/workspace/missing.txt")
    assert documents_to(got["sent"], a) == []
    lines = text_to(got["sent"], a).splitlines()
    assert len(lines) == 2 and lines[0] == "Here:", lines
    assert lines[1].startswith("[file not sent: ") and "/workspace/missing.txt" in lines[1]


# -- attacks on delivery: B names A's files --------------------------------------------------------


def a_with_secrets(gateway, a: str) -> dict:
    """A uploads a document and keeps a file in the sandbox; returns the host paths B's agent aims at."""
    secret = f"A-secret-{secrets.token_hex(12)}".encode()
    got = message(gateway, a, attachment=document("diary.txt", secret),
                  commands=["cat {told} > /workspace/secret.txt"])
    host_file = user_folder(gateway, a) / "workspace" / "secret.txt"
    assert host_file.read_bytes() == secret
    return {"secret": secret, "cached": got["cached"][0], "host_file": os.fspath(host_file),
            "host_workspace": os.fspath(host_file.parent)}


ATTACKS: dict[str, tuple[list[str], str]] = {
    "A's host cache path": ([], "MEDIA:{cached}"),
    "A's host sandbox path": ([], "MEDIA:{host_file}"),
    "../ paths": ([], "MEDIA:/workspace/../../telegram@{a}/workspace/secret.txt\n"
                      "MEDIA:../telegram@{a}/workspace/secret.txt\nMEDIA:/workspace/../../../../{host_file}"),
    "a link in B's workspace to A's host folder": (
        ["ln -s {host_workspace} /workspace/link", "ln -s {host_file} /workspace/direct.txt"],
        "MEDIA:/workspace/link/secret.txt\nMEDIA:/workspace/direct.txt"),
    "a link to /proc/1/environ": (["ln -s /proc/1/environ /workspace/env.txt", "ln -s /proc/self/environ ~/s.txt"],
                                  "MEDIA:/workspace/env.txt\nMEDIA:~/s.txt"),
    "a FIFO": (["mkfifo /workspace/pipe.txt"], "MEDIA:/workspace/pipe.txt"),
}


@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_user_b_naming_user_a_files_gets_a_refusal_and_none_of_their_bytes(make_gateway, attack):
    gateway = make_gateway()
    a, b = unique_user(), unique_user()
    paths = a_with_secrets(gateway, a)
    commands, final = ATTACKS[attack]
    started = time.monotonic()
    got = message(gateway, b, commands=[c.format(a=a, **paths) for c in commands],
                  final="Sure:\n" + final.format(a=a, **paths))
    assert time.monotonic() - started < 120, "delivery hung"
    assert all(r["exit_code"] == 0 for r in got["results"]), got["results"]
    assert documents_to(got["sent"], b) == [], f"{attack}: a file reached B's chat"
    reply = text_to(got["sent"], b)
    assert reply.count("[file not sent: ") == final.count("MEDIA:"), reply
    assert base64.b64encode(paths["secret"]).decode() not in str(got["sent"])
    assert paths["secret"].decode() not in reply


def test_a_file_over_the_limit_is_refused(make_gateway):
    gateway = make_gateway({"docker_file_limit": 1})
    b = unique_user()
    got = message(gateway, b, commands=["head -c 1500000 /dev/zero > /workspace/big.txt"], final="MEDIA:big.txt")
    assert documents_to(got["sent"], b) == []
    assert text_to(got["sent"], b).startswith("[file not sent: ")


def test_a_file_swapped_for_a_link_to_a_users_file_while_it_is_delivered_never_delivers_their_bytes(make_gateway):
    gateway = make_gateway()
    a, b = unique_user(), unique_user()
    paths = a_with_secrets(gateway, a)
    swapper = (
        "i=0; while [ $i -lt 20000 ]; do echo B-own > /workspace/r.tmp; mv -f /workspace/r.tmp /workspace/race.txt; "
        f"ln -sfn {paths['host_file']} /workspace/r.lnk; mv -f /workspace/r.lnk /workspace/race.txt; "
        "i=$((i+1)); echo $i > /workspace/s.tmp; mv -f /workspace/s.tmp /workspace/swaps; done"
    )
    got = message(gateway, b, commands=[f"sh -c '{swapper}' </dev/null >/dev/null 2>&1 & sleep 1; "
                                        "cat /workspace/swaps"],
                  final="\n".join(["MEDIA:/workspace/race.txt"] * 20))
    swaps_before = int(got["results"][0]["output"] or 0)
    swaps_after = int(gateway.terminal("cat /workspace/swaps", session=session_of(b))["output"] or 0)
    assert swaps_after > swaps_before > 0, "the file was not being swapped during delivery"
    delivered = documents_to(got["sent"], b)
    assert set(delivered) <= {b"B-own\n"}, "a swapped-in link was followed"
    assert paths["secret"] not in b"".join(delivered)
    assert len(delivered) + text_to(got["sent"], b).count("[file not sent: ") == 20


def test_bare_host_paths_in_a_reply_and_in_the_send_message_tool_are_not_sent(make_gateway):
    gateway = make_gateway()
    a, b = unique_user(), unique_user()
    paths = a_with_secrets(gateway, a)
    got = message(gateway, b, final=f"Look: {paths['cached']} and {paths['host_file']}")
    assert documents_to(got["sent"], b) == []
    tool = gateway.send({"op": "send_message", "session": session_of(b), "chat_id": b,
                         "message": f"files MEDIA:{paths['cached']} MEDIA:{paths['host_file']}"})
    assert tool["result"]["media"] == [] and documents_to(tool["sent"], b) == []
    assert paths["secret"].decode() not in str(tool) + str(got)


# -- newer Hermes: its own remote fetch, through Berth ---------------------------------------------


def test_newer_hermes_fetches_media_through_berth_from_the_users_own_sandbox_only(make_gateway):
    gateway = make_gateway({"backend": "berth_docker"}, hermes="0.21")
    a, b = unique_user(), unique_user()
    assert gateway.terminal("printf from-A > /workspace/out.txt; ln -s /proc/1/environ /workspace/env.txt",
                            session=session_of(a))["exit_code"] == 0
    fetched = gateway.send({"op": "fetch_remote_media", "session": session_of(a), "path": "/workspace/out.txt"})
    assert fetched["local"] and base64.b64decode(fetched["data"]) == b"from-A"
    assert os.path.basename(fetched["local"]).startswith("remote_")
    assert gateway.send({"op": "fetch_remote_media", "session": session_of(b), "path": "/workspace/out.txt"}) == {
        "local": None, "data": None}
    assert gateway.send({"op": "fetch_remote_media", "session": session_of(a), "path": "/workspace/env.txt"}) == {
        "local": None, "data": None}
    # The inbound side is the same wrapper as on 0.19.0.
    got = message(gateway, a, attachment=document("n.txt", b"hi\n"), commands=["cat {told}"])
    assert got["told"].startswith("/workspace/attachments/doc_") and got["results"][0]["output"] == "hi"
