"""The bridge's file rules on their own, without an engine: directives, paths, the outbox, the delivery list.

And the naive mapping the attack tests (test_files.py) guard against: sandbox paths mapped to the
user's host folder and opened there by path. Each attack's set-up is shown here to leak through it,
so a test that sees Berth refuse the attack is a test that can fail.
"""

from __future__ import annotations

import asyncio
import os
import stat
import sys
import time
from pathlib import Path

import pytest

PACKAGE_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(PACKAGE_ROOT))
from berth_hermes import files, inbound, outbound  # noqa: E402 - once sys.path holds the package
from berth_hermes.errors import BerthBridgeError  # noqa: E402 - once sys.path holds the package
from berth_hermes.protocol import wire_error_code  # noqa: E402 - once sys.path holds the package

EXTENSIONS = outbound._HERMES_MEDIA_EXTENSIONS


def fetch_table(table: dict[str, str]):
    asked: list[str] = []

    def fetch(path: str) -> str:
        asked.append(path)
        if path in table:
            return table[path]
        raise BerthBridgeError(
            f"berth: {path} is not in your sandbox; check the name", code=wire_error_code("FILE_NOT_FOUND")
        )

    return fetch, asked


def test_every_media_directive_is_read_from_the_sandbox_however_its_path_is_written():
    fetch, asked = fetch_table({
        "/workspace/out.txt": "/h/outbox/a/out.txt", "~/notes.md": "/h/outbox/b/notes.md",
        "report.pdf": "/h/outbox/c/report.pdf", "/workspace/my report.pdf": "/h/outbox/d/my report.pdf",
        "/workspace/Makefile": "/h/outbox/e/Makefile",
    })
    text = ("Here:\nMEDIA:/workspace/out.txt\nMEDIA: ~/notes.md and MEDIA:report.pdf.\n"
            "MEDIA:/workspace/my report.pdf\nMEDIA:`/workspace/Makefile`")
    rewritten = outbound.rewrite_media_directives(text, fetch, EXTENSIONS)
    assert asked == ["/workspace/out.txt", "~/notes.md", "report.pdf", "/workspace/my report.pdf",
                     "/workspace/Makefile"]
    assert rewritten == ("Here:\nMEDIA:/h/outbox/a/out.txt\n"
                         "MEDIA:/h/outbox/b/notes.md and MEDIA:/h/outbox/c/report.pdf\n"
                         'MEDIA:"/h/outbox/d/my report.pdf"\nMEDIA:/h/outbox/e/Makefile')


def test_a_refused_directive_becomes_one_line_the_user_reads_and_no_host_path_is_tried():
    fetch, asked = fetch_table({})
    host = "/tmp/bh-x/home/cache/documents/doc_0123456789ab_secret.txt"
    rewritten = outbound.rewrite_media_directives(f"MEDIA:{host}\nMEDIA:../x.txt", fetch, EXTENSIONS)
    assert asked == [host, "../x.txt"]  # the sandbox's path, for Berth to refuse: never opened on the host
    assert rewritten == (f"[file not sent: {host} is not in your sandbox; check the name]\n"
                         "[file not sent: ../x.txt is not in your sandbox; check the name]")


def test_examples_in_code_and_text_without_directives_are_left_alone():
    fetch, asked = fetch_table({})
    assert outbound.rewrite_media_directives("no files here", fetch, EXTENSIONS) is None
    assert outbound.rewrite_media_directives("use `MEDIA:/workspace/x.txt` to send", fetch, EXTENSIONS) is None
    quoted = "```\nMEDIA:/workspace/x.txt\n```\n> MEDIA:y.txt"
    assert outbound.rewrite_media_directives(quoted, fetch, EXTENSIONS) is None
    assert asked == []


def test_a_file_of_any_type_is_taken_out_as_hermes_sends_any_type():
    # Hermes 0.19.0 sends a MEDIA: file whatever its extension, or without one (gateway/platforms/base.py:1507-1543).
    fetch, asked = fetch_table({"/workspace/a.weird": "/h/outbox/a/a.weird", "/workspace/Makefile": "/h/outbox/b/M"})
    text = "MEDIA:/workspace/a.weird and MEDIA:/workspace/Makefile"
    rewritten = outbound.rewrite_media_directives(text, fetch, EXTENSIONS)
    assert asked == ["/workspace/a.weird", "/workspace/Makefile"]
    assert rewritten == "MEDIA:/h/outbox/a/a.weird and MEDIA:/h/outbox/b/M"


def test_a_delivery_marker_inside_a_path_is_read_as_hermes_reads_it():
    # Hermes strips [[as_document]] and [[audio_as_voice]] before it reads MEDIA: (gateway/platforms/base.py:1554).
    fetch, asked = fetch_table({"/workspace/report.pdf": "/h/outbox/r/report.pdf"})
    text = "MEDIA:/workspace/rep[[as_document]]ort.pdf and MEDIA:/etc/pass[[audio_as_voice]]wd"
    rewritten = outbound.rewrite_media_directives(text, fetch, EXTENSIONS)
    assert asked == ["/workspace/report.pdf", "/etc/passwd"]
    assert rewritten is not None and rewritten.startswith("MEDIA:/h/outbox/r/report.pdf and [file not sent:")
    assert rewritten.endswith("\n[[audio_as_voice]]\n[[as_document]]")


def test_the_outbox_sweep_removes_old_folders_only_and_never_follows_a_link(tmp_path):
    outbox = tmp_path / "berth-outbox"
    outbox.mkdir()
    old, fresh = outbox / ("a" * 32), outbox / ("b" * 32)
    for folder in (old, fresh):
        folder.mkdir()
        (folder / "out.txt").write_text("x")
    precious = tmp_path / "precious"
    precious.mkdir()
    (precious / "keep.txt").write_text("keep")
    link = outbox / ("c" * 32)
    link.symlink_to(precious)
    stranger = outbox / "not-berths"
    stranger.mkdir()
    hour_ago = time.time() - 2 * files.OUTBOX_MAX_AGE_SECONDS
    for entry in (old, stranger, precious):
        os.utime(entry, (hour_ago, hour_ago))
    os.utime(link, (hour_ago, hour_ago), follow_symlinks=False)
    assert files.sweep_outbox(outbox) == 1
    assert not old.exists() and fresh.is_dir() and stranger.is_dir()
    assert (precious / "keep.txt").read_text() == "keep" and link.is_symlink()


def test_only_files_berth_took_out_are_deliverable(tmp_path):
    outbox = tmp_path / "cache" / "documents" / "berth-outbox"
    (outbox / ("d" * 32)).mkdir(parents=True)
    taken = outbox / ("d" * 32) / "out.txt"
    taken.write_text("mine")
    upload = tmp_path / "cache" / "documents" / "doc_0123456789ab_theirs.txt"
    upload.write_text("theirs")
    fetched = tmp_path / "cache" / "documents" / "remote_0123456789ab_out.txt"
    fetched.write_text("fetched")
    deliverable = files.DeliverableFiles(outbox)
    assert deliverable.allows(str(taken))
    assert not deliverable.allows(str(upload)) and not deliverable.allows(str(fetched))
    deliverable.add(str(fetched))
    assert deliverable.allows(str(fetched))
    # Swapped for another file at the same name: not the file Berth wrote.
    fetched.unlink()
    fetched.write_text("swapped")
    replaced = tmp_path / "cache" / "documents" / "x"
    replaced.write_text("y")
    os.replace(replaced, fetched)
    assert not deliverable.allows(str(fetched))
    # A link into the outbox from elsewhere is judged by where it leads; a link out of it likewise.
    escape = outbox / ("e" * 32)
    escape.symlink_to(upload.parent)
    assert not deliverable.allows(str(escape / upload.name))


def test_attachments_are_put_in_the_sandbox_and_every_path_of_them_in_the_text_replaced(tmp_path):
    home = tmp_path / "home"
    cached = home / "cache" / "documents" / "doc_0123456789ab_notes.txt"
    cached.parent.mkdir(parents=True)
    cached.write_text("hello")
    outside = tmp_path / "elsewhere.txt"
    outside.write_text("not from the cache")
    put: list[tuple[dict, str, str]] = []

    def accept(session, source, target):
        put.append((dict(session), source, target))

    text = (f"[The user sent a document: 'notes.txt'. It is saved at: /root/.hermes/cache/documents/{cached.name}.]\n"
            f"host: {cached}\nother: {outside}")
    result = asyncio.run(inbound.bring_attachments_in(
        accept, text, [str(cached), str(outside), "https://example.org/x.png"], home, inbound.PutAttachments()))
    target = f"/workspace/attachments/{cached.name}"
    assert [(source, where) for _, source, where in put] == [(str(cached), target)]
    assert result == (f"[The user sent a document: 'notes.txt'. It is saved at: {target}.]\n"
                      f"host: {target}\nother: {outside}")


def test_an_attachment_berth_refuses_leaves_one_line_in_its_place(tmp_path):
    home = tmp_path / "home"
    cached = home / "cache" / "documents" / "doc_0123456789ab_notes.txt"
    cached.parent.mkdir(parents=True)
    cached.write_text("hello")

    def refuse(session, source, target):
        raise BerthBridgeError(
            "berth: notes is 60 MB, over terminal.docker_file_limit (50 MB)", code=wire_error_code("FILE_TOO_LARGE")
        )

    result = asyncio.run(inbound.bring_attachments_in(
        refuse, f"saved at: {cached}", [str(cached)], home, inbound.PutAttachments()))
    assert result == ("saved at: [attachment notes.txt could not be put in your sandbox: "
                      "notes is 60 MB, over terminal.docker_file_limit (50 MB)]")


# -- the naive mapping the attack tests guard against -------------------------------------------


def naive_host_path(user_folder: Path, media_path: str) -> Path:
    """What a naive bridge would do: a sandbox path becomes the same path under the user's host folder."""
    if media_path.startswith("/workspace/"):
        return user_folder / "workspace" / media_path[len("/workspace/"):]
    if media_path.startswith(("~/", "/root/")):
        return user_folder / "home" / media_path.split("/", 2)[-1]
    if os.path.isabs(media_path):
        return Path(media_path)  # and a host path stays a host path
    return user_folder / "workspace" / media_path


def naive_read(user_folder: Path, media_path: str, limit: int = 1 << 20) -> bytes | str:
    """Opens the mapped path on the host, following links, as ``open()`` does."""
    path = naive_host_path(user_folder, media_path)
    if stat.S_ISFIFO(os.stat(path).st_mode):
        return "blocks"  # open() of a FIFO waits for a writer: the gateway's delivery hangs
    return path.read_bytes()[: limit + 1]


def test_the_naive_mapping_leaks_every_attack_of_the_file_tests(tmp_path):
    sandboxes = tmp_path / "sandboxes" / "docker"
    a, b = sandboxes / "telegram@1" / "workspace", sandboxes / "telegram@2" / "workspace"
    a.mkdir(parents=True)
    b.mkdir(parents=True)
    (a / "secret.txt").write_bytes(b"A's secret")
    user_b = b.parent
    # ../ out of B's folder into A's.
    assert naive_read(user_b, "/workspace/../../telegram@1/workspace/secret.txt") == b"A's secret"
    assert naive_read(user_b, "../../telegram@1/workspace/secret.txt") == b"A's secret"
    # A link in B's workspace to A's host folder: the host follows it.
    (b / "link").symlink_to(a)
    assert naive_read(user_b, "/workspace/link/secret.txt") == b"A's secret"
    # A link to /proc/…/environ: on the host, the gateway's own environment (every user's credentials).
    (b / "env.txt").symlink_to("/proc/self/environ")
    assert naive_read(user_b, "/workspace/env.txt") == Path("/proc/self/environ").read_bytes()
    # A FIFO: the naive open blocks the delivery.
    os.mkfifo(b / "pipe.txt")
    assert naive_read(user_b, "/workspace/pipe.txt") == "blocks"
    # A host path (another user's cached upload): read as is.
    assert naive_read(user_b, os.fspath(a / "secret.txt")) == b"A's secret"
    # Over the limit: read whole (up to what the caller would buffer).
    (b / "big.bin").write_bytes(b"x" * 2_000_000)
    assert len(naive_read(user_b, "/workspace/big.bin", limit=10 << 20)) == 2_000_000
    # The race: checked as a regular file, then swapped for a link before the open.
    race = b / "race.txt"
    race.write_bytes(b"B's own")
    assert naive_host_path(user_b, "/workspace/race.txt").is_file()
    race.unlink()
    race.symlink_to(a / "secret.txt")
    assert naive_read(user_b, "/workspace/race.txt") == b"A's secret"


@pytest.mark.parametrize("path", ["/workspace/x.txt", "a b.txt", 'quote".txt'])
def test_a_directive_is_written_so_hermes_reads_back_the_same_path(path):
    directive = outbound.directive_for(f"/h/outbox/{path}")
    assert directive is not None
    assert outbound.normalize_directive_path(directive[len("MEDIA:"):]) == f"/h/outbox/{path}"


def test_native_image_mode_names_the_sandbox_path_too(monkeypatch):
    import types

    routing = types.ModuleType("agent.image_routing")

    def build_native_content_parts(user_text, image_paths, image_urls=None):
        text = user_text + "".join(f"\n\n[Image attached at: {path}]" for path in image_paths)
        return [{"type": "text", "text": text}, {"type": "image_url", "image_url": {"url": "data:..."}}], []

    routing.build_native_content_parts = build_native_content_parts  # type: ignore[attr-defined]
    package = types.ModuleType("agent")
    package.image_routing = routing  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "agent", package)
    monkeypatch.setitem(sys.modules, "agent.image_routing", routing)
    placed = inbound.PutAttachments()
    placed.record(["/h/cache/images/img_0123456789ab.jpg"], "/workspace/attachments/img_0123456789ab.jpg")
    inbound.wrap_native_image_parts(placed)
    parts, skipped = routing.build_native_content_parts("look", ["/h/cache/images/img_0123456789ab.jpg"])
    assert parts[0]["text"] == "look\n\n[Image attached at: /workspace/attachments/img_0123456789ab.jpg]"
    assert skipped == []
