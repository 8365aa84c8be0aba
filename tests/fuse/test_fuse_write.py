"""Writing through a mount: SPEC §4 "write, truncate, then close (or fsync): one new
version per close when the content changed; none when unchanged", and the content rows
of the errno table (EFBIG, EILSEQ, ENOSPC) with rejected writes kept locally."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from _support.mount import (
    Mounter,
    errno_of,
    exists,
    live,
    run,
    run_python,
    run_script,
    versions,
    wait_until,
)

from memfs.core.config import MAX_CONTENT_BYTES
from memfs.core.model import Operation
from memfs.fuse.room import ROOM_MARGIN
from memfs.store import Engine


def _store_id(mount) -> str:
    return str(mount.status["stores"][0]["id"])


def _history(engine: Engine, mount, path: str) -> list[tuple[Operation, str | None]]:
    """(operation, content) of every version of the memory at ``path``, oldest first."""
    store_id = _store_id(mount)
    memory = engine.memories.get_by_path(store_id, path, with_content=False)
    return [
        (v.operation, engine.versions.get(store_id, v.id).content)
        for v in versions(engine, store_id, memory.id)
    ]


def test_echo_creates_and_appends_one_version_per_close(mount, store_engine: Engine) -> None:
    notes = mount / "notes"
    run("sh", "-c", f"echo first > {notes}/log.md")
    run("sh", "-c", f"echo second >> {notes}/log.md")
    assert run("cat", notes / "log.md").stdout == "first\nsecond\n"
    assert _history(store_engine, mount, "/log.md") == [
        (Operation.CREATED, "first\n"),
        (Operation.MODIFIED, "first\nsecond\n"),
    ]


def test_many_writes_then_close_make_one_version(mount, store_engine: Engine) -> None:
    path = mount / "notes" / "hello.md"
    run_script("fuse_write", "many_writes", path)
    history = _history(store_engine, mount, "/hello.md")
    assert [op for op, _ in history] == [Operation.CREATED, Operation.MODIFIED]
    assert history[-1][1] == "hello\n" + "".join(f"line {i}\n" for i in range(50))


def test_unchanged_content_writes_no_version(mount, store_engine: Engine) -> None:
    path = mount / "notes" / "hello.md"
    run("sh", "-c", f"echo hello > {path}")  # O_TRUNC, then the same bytes again
    run_python(f"open({str(path)!r}, 'r+').close()")  # opened for writing, nothing written
    run("touch", path)
    assert _history(store_engine, mount, "/hello.md") == [(Operation.CREATED, "hello\n")]


def test_fsync_commits_and_the_following_close_adds_nothing(mount, store_engine) -> None:
    path = mount / "notes" / "synced.md"
    out = run_script("fuse_write", "fsync_then_close", path)
    assert out == "synced\n"
    assert _history(store_engine, mount, "/synced.md") == [(Operation.CREATED, "durable\n")]


def test_close_to_open_a_new_reader_sees_the_closed_content(mount) -> None:
    path = mount / "notes" / "hello.md"
    out = run_script("fuse_write", "rewrite_then_read", path)
    assert out == "rewritten\n"


def test_truncate_of_a_closed_file_is_one_version(mount, store_engine: Engine) -> None:
    path = mount / "notes" / "projects" / "plan.md"
    run_python(f"import os; os.truncate({str(path)!r}, 2)")
    run("truncate", "-s", "0", path)
    assert _history(store_engine, mount, "/projects/plan.md") == [
        (Operation.CREATED, "# Plan\n"),
        (Operation.MODIFIED, "# "),
        (Operation.MODIFIED, ""),
    ]


def test_cp_r_copies_a_tree_one_content_version_per_file(
    mount, store_engine, tmp_path: Path
) -> None:
    source = tmp_path / "src"
    (source / "deep" / "er").mkdir(parents=True)
    (source / "a.md").write_text("a\n")
    (source / "deep" / "b.md").write_text("b\n")
    (source / "deep" / "er" / "c.md").write_text("c" * 70_000)
    run("cp", "-r", source, mount / "notes" / "copy")
    memories = live(store_engine, _store_id(mount))
    assert {p: m.content for p, m in memories.items() if p.startswith("/copy/")} == {
        "/copy/a.md": "a\n",
        "/copy/deep/b.md": "b\n",
        "/copy/deep/er/c.md": "c" * 70_000,
    }
    # cp creates with O_EXCL, which commits a claim on the name at once (SPEC §4:
    # exclusive across mounts); the close turns the claim into the memory's one
    # `created` version, holding the content.
    for path, content in memories.items():
        if path.startswith("/copy/"):
            assert _history(store_engine, mount, path) == [(Operation.CREATED, content.content)]
    assert run("diff", "-r", source, mount / "notes" / "copy").returncode == 0


def test_cp_of_a_binary_file_is_refused_with_eilseq_and_nothing_is_stored(
    mount, store_engine: Engine, tmp_path: Path
) -> None:
    binary = tmp_path / "image.png"
    binary.write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4)
    completed = run("cp", binary, mount / "notes" / "image.png", check=False)
    assert completed.returncode != 0
    assert "Invalid or incomplete multibyte or wide character" in completed.stderr
    # The kernel sends RELEASE after close(2) has returned, so the refused file (cp
    # creates with O_EXCL: an empty memory at once) leaves a moment after cp exits.
    wait_until(lambda: not exists(mount / "notes" / "image.png"), "the refused file to disappear")
    assert "/image.png" not in live(store_engine, _store_id(mount))


def test_a_big_binary_renamed_from_a_scratch_name_is_refused_as_not_text(
    mount, store_engine: Engine, tmp_path: Path
) -> None:
    """SPEC §4 order of refusals: not-text (EILSEQ) before too large (EFBIG), for a
    binary over the size limit made under a scratch name and renamed into the store (as
    rsync does; a trial got EFBIG), as for a ``cp`` of it."""
    binary = tmp_path / "big.bin"
    binary.write_bytes(os.urandom(MAX_CONTENT_BYTES + 50_000))
    scratch = mount / "notes" / "big.bin.tmp"
    run("cp", binary, scratch)
    completed = run("mv", scratch, mount / "notes" / "big.bin", check=False)
    assert completed.returncode != 0
    assert "Invalid or incomplete multibyte or wide character" in completed.stderr
    assert "/big.bin" not in live(store_engine, _store_id(mount))
    run("rm", "-f", scratch)


def test_a_forbidden_control_byte_is_refused_at_write(mount, store_engine: Engine) -> None:
    path = mount / "notes" / "hello.md"
    out = run_script("fuse_write", "control_byte", path)
    # A refused write changes nothing, and fails its save (SPEC §4): the close says so.
    assert out == "write EILSEQ\nclose EILSEQ\n"
    assert path.read_text() == "hello\n"
    assert _history(store_engine, mount, "/hello.md") == [(Operation.CREATED, "hello\n")]


def test_invalid_utf8_is_refused_at_close_and_kept_locally(
    mount, store_engine: Engine, memfs_home: Path
) -> None:
    mount.expect_log("refused (EILSEQ")
    path = mount / "notes" / "hello.md"
    out = run_script("fuse_write", "cut_utf8", path)
    assert out == "EILSEQ\n"
    assert path.read_text() == "hello\n"  # the head is unchanged
    assert _history(store_engine, mount, "/hello.md") == [(Operation.CREATED, "hello\n")]
    status = mount.status
    assert status["rejected_count"] == 1
    [event] = status["rejected_writes"]
    saved = Path(event["saved_to"])
    assert saved.parent == memfs_home / "rejected" / mount.session_id
    assert saved.name.endswith("-hello.md")
    assert saved.read_bytes() == b"caf\xc3"
    assert event["errno"] == "EILSEQ"
    assert event["path"] == "/notes/hello.md"
    assert f"kept in {saved}" in mount.log_file.read_text()


def test_content_beyond_102400_bytes_is_efbig_at_write(mount, store_engine: Engine) -> None:
    path = mount / "notes" / "big.md"
    out = run_script("fuse_write", "one_byte_too_many", path, MAX_CONTENT_BYTES)
    mount.expect_log("save of /notes/big.md failed (EFBIG")
    assert out == "write EFBIG\nclose EFBIG\n"
    assert _history(store_engine, mount, "/big.md") == [
        (Operation.CREATED, "x" * MAX_CONTENT_BYTES)
    ]
    assert errno_of(f"os.truncate({str(path)!r}, {MAX_CONTENT_BYTES + 1})") == "EFBIG"


def test_a_full_store_gives_enospc(
    mounter: Mounter, make_store, store_engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = make_store("Notes", {"/one.md": "1\n", "/two.md": "2\n"})
    monkeypatch.setenv("MEMFS_MEMORY_LIMIT", "2")
    mount = mounter.mount("Notes")
    mount.expect_log("refused (ENOSPC")
    assert (
        errno_of(f"""
        with open({str(mount / "notes" / "three.md")!r}, "w") as f:
            f.write("3\\n")
    """)
        == "ENOSPC"
    )
    assert sorted(live(store_engine, store.id)) == ["/one.md", "/two.md"]
    assert not exists(mount / "notes" / "three.md")
    assert os.statvfs(mount.path).f_ffree == 0
    # Overwriting an existing memory still works.
    (mount / "notes" / "two.md").write_text("2, again\n")
    assert live(store_engine, store.id)["/two.md"].content == "2, again\n"


def test_creating_a_file_in_a_full_store_is_refused_at_create(
    mounter: Mounter, make_store, store_engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = make_store("Notes", {"/one.md": "1\n", "/two.md": "2\n"})
    monkeypatch.setenv("MEMFS_MEMORY_LIMIT", "2")
    mount = mounter.mount("Notes")
    notes = mount / "notes"
    # bash ignores errors of close(2): only a refused open(2) makes `echo x > f` fail.
    completed = run("bash", "-c", f"echo x > {notes / 'new.md'}", check=False)
    assert completed.returncode == 1
    assert "No space left on device" in completed.stderr
    assert errno_of(f"open({str(notes / 'new.md')!r}, 'w')") == "ENOSPC"
    assert not exists(notes / "new.md")
    assert sorted(live(store_engine, store.id)) == ["/one.md", "/two.md"]
    assert mount.status["rejected_count"] == 0  # nothing was accepted, so nothing kept
    # Scratch names live only in the mount: still allowed (editors need them)...
    run("bash", "-c", f"echo x > {notes / 'draft.tmp'}")
    # ...and so is vim's save (`f` renamed to `f~`, a new `f`: the memory is reused).
    os.rename(notes / "two.md", notes / "two.md~")
    run("bash", "-c", f"echo 2 again > {notes / 'two.md'}")
    os.unlink(notes / "two.md~")
    assert live(store_engine, store.id)["/two.md"].content == "2 again\n"
    # After a delete there is room again.
    os.unlink(notes / "one.md")
    run("bash", "-c", f"echo x > {notes / 'new.md'}")
    assert sorted(live(store_engine, store.id)) == ["/new.md", "/two.md"]
    os.unlink(notes / "draft.tmp")


def test_the_store_s_last_free_memories_are_counted_exactly_at_create(
    mounter: Mounter, make_store, store_engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Far from the limit the mount remembers the store's room for a moment instead of
    # asking at every create (ROOM_CACHE_S); its estimate must still reach the limit
    # exactly: the first create beyond it is refused at open, not at close.
    limit = ROOM_MARGIN + 5
    store = make_store("Notes", {})
    monkeypatch.setenv("MEMFS_MEMORY_LIMIT", str(limit))
    mount = mounter.mount("Notes")
    run_script("fuse_write", "create_many", mount / "notes", limit)
    assert errno_of(f"open({str(mount / 'notes' / 'over.md')!r}, 'w')") == "ENOSPC"
    assert len(live(store_engine, store.id)) == limit
    assert mount.status["rejected_count"] == 0
