"""Data safety through the mount: nothing a user wrote is lost, nothing refused poisons the
rest, and what one embedded mount closed, every other one opens (SPEC §4 "Order of
refusals", close-to-open, ``O_EXCL``, atomic save with any temp name).

Every test drives real mounts with real tools in subprocesses.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Callable
from pathlib import Path

from _support.mount import (
    MEMFS,
    Mount,
    Mounter,
    exists,
    live,
    run,
    run_script,
    script_command,
    script_env,
    versions,
    wait_until,
)

from memfs.core.config import MAX_CONTENT_BYTES
from memfs.core.model import MemoryStore, Operation
from memfs.store import Engine


def _store_id(mount: Mount) -> str:
    return str(mount.status["stores"][0]["id"])


def _history(engine: Engine, store_id: str, path: str) -> list[tuple[Operation, str | None]]:
    memory = engine.memories.get_by_path(store_id, path, with_content=False)
    return [
        (v.operation, engine.versions.get(store_id, v.id).content)
        for v in versions(engine, store_id, memory.id)
    ]


# ------------------------------------------------------------------ item 1


def test_an_atomic_save_through_a_mkstemp_name_is_one_version_of_the_target(
    mount: Mount, store_engine: Engine
) -> None:
    store_id = _store_id(mount)
    target = store_engine.memories.get_by_path(store_id, "/hello.md", with_content=False)
    store_engine.memories.update(store_id, target.id, metadata={"kind": "greeting"})
    notes = mount / "notes"
    out = run_script("fuse_data_safety", "mkstemp_save", notes)
    assert out == "hello\nhello again\n['hello.md', 'projects']\n"
    memories = live(store_engine, store_id)
    assert sorted(memories) == ["/hello.md", "/projects/plan.md"]
    saved = memories["/hello.md"]
    assert saved.id == target.id
    assert saved.metadata == {"kind": "greeting"}
    assert _history(store_engine, store_id, "/hello.md") == [
        (Operation.CREATED, "hello\n"), (Operation.MODIFIED, "hello again\n")]


def test_an_atomic_save_over_a_target_changed_elsewhere_keeps_both(
    mounter: Mounter, make_store: Callable[..., MemoryStore], store_engine: Engine
) -> None:
    store = make_store("Notes", {"/f.md": "v1\n"})
    a, b = mounter.mount("Notes"), mounter.mount("Notes")
    a.expect_log("conflict: /f.md was changed by another writer")
    target = store_engine.memories.get_by_path(store.id, "/f.md", with_content=False)
    out = run_script("atomic_save_after_a_change_elsewhere", a / "notes", b / "notes")
    assert out == "v1\ntheirs\n"
    memories = live(store_engine, store.id)
    assert memories["/f.md"].id == target.id
    assert memories["/f.md"].content == "theirs\n"
    [copy] = [p for p in memories if p != "/f.md"]
    assert re.fullmatch(rf"/f\.conflict-\d{{8}}T\d{{6}}\.\d{{6}}Z-{a.session_id}\.md", copy)
    assert memories[copy].content == "mine\n"


# ------------------------------------------------------------------ item 3


def test_deleting_the_store_fails_the_close_of_unsaved_bytes_and_keeps_them(
    mount: Mount, store_engine: Engine, memfs_home: Path
) -> None:
    mount.expect_log("was deleted; its directory is empty now", "refused (EROFS")
    notes = mount / "notes"
    # The writer never forks while its descriptors are open (an exec'd child's
    # close-on-exec would flush them before the store is deleted).
    writer = subprocess.Popen(
        script_command("close_after_store_deleted", notes), env=script_env(),
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )
    assert writer.stdout is not None
    assert writer.stdin is not None
    assert writer.stdout.readline() == "ready\n"
    run(MEMFS, "store", "delete", "Notes", "--yes")
    out, _ = writer.communicate("go\n", timeout=60)
    assert out == "close EROFS\nclose EROFS\n"
    kept = {p.name.split("-", 1)[1]: p.read_bytes()
            for p in (memfs_home / "rejected" / mount.session_id).iterdir()}
    assert kept == {"hello.md": b"hello\nunsaved\n", "new.md": b"also unsaved\n"}
    assert mount.status["rejected_count"] == 2


# ------------------------------------------------------------------ item 4


def test_one_refused_write_fails_the_whole_save(
    mount: Mount, store_engine: Engine, memfs_home: Path
) -> None:
    """SPEC §4 "a save is all or nothing": the bytes accepted before and after a refused
    write are not committed; the close reports the first refusal, and a new file leaves
    nothing in the store (its accepted bytes are kept under ``rejected/``)."""
    mount.expect_log("save of /notes/p.md failed (EFBIG")
    path = mount / "notes" / "p.md"
    out = run_script("fuse_data_safety", "one_refused_write", path)
    assert out == "EFBIG\nEILSEQ\nEFBIG\nclose EFBIG\n"
    # The name goes once the kernel's cached entry is invalidated, just after the close.
    wait_until(lambda: not exists(path), "the failed new file to disappear")
    assert "/p.md" not in live(store_engine, _store_id(mount))
    assert [v.path for v in versions(store_engine, _store_id(mount)) if v.path == "/p.md"] == []
    kept = [p.read_bytes() for p in (memfs_home / "rejected" / mount.session_id).iterdir()]
    assert kept == [b"hello\nafter\n"]
    assert mount.status["rejected_count"] == 1


def test_a_single_oversized_write_is_refused_whole(mount: Mount, store_engine: Engine) -> None:
    path = mount / "notes" / "big.md"
    out = run_script("fuse_data_safety", "oversized_write", path)
    assert out == "EFBIG\nclose EFBIG\n"
    # The name goes once the kernel's cached entry is invalidated, just after the close.
    wait_until(lambda: not exists(path), "the failed new file to disappear")
    assert "/big.md" not in live(store_engine, _store_id(mount))


def test_an_oversized_append_from_mid_page_commits_nothing(
    mount: Mount, store_engine: Engine
) -> None:
    """The kernel splits a write that starts inside a page at the page boundary: the
    first part fits and is accepted (write(2) returns a short count, as a local
    filesystem does at its size limit); the rest, written again, is refused, and with it
    the whole save: the file stays what it was (SPEC §4, no partial file)."""
    mount.expect_log("save of /notes/hello.md failed (EFBIG")
    path = mount / "notes" / "hello.md"
    out = run_script("fuse_data_safety", "oversized_append", path)
    assert out == "wrote 4090\nEFBIG\nclose EFBIG\n"
    assert path.read_text() == "hello\n"
    assert _history(store_engine, _store_id(mount), "/hello.md") == [(Operation.CREATED, "hello\n")]


def test_a_refused_truncate_moves_neither_size_nor_times(mount: Mount) -> None:
    path = mount / "notes" / "hello.md"
    out = run_script("fuse_data_safety", "refused_truncate", path)
    assert out == "EFBIG\n6 True True\n"


def test_a_zero_fill_left_by_an_extending_truncate_fails_the_close_and_keeps_the_bytes(
    mount: Mount, store_engine: Engine, memfs_home: Path
) -> None:
    """An extending ``ftruncate`` is accepted (tools preallocate, then fill; fsx checks
    it), but NUL bytes still there at close are not text: the close fails ``EILSEQ``,
    the head stays what it was, and every byte is kept under ``rejected/`` (README
    "Order of refusals"); filling the extension before close commits normally."""
    mount.expect_log("refused (EILSEQ")
    path = mount / "notes" / "hello.md"
    out = run_script("fuse_data_safety", "zero_fill", path)
    assert out == "20\nclose EILSEQ\nfilled ok\n"
    kept = [p.read_bytes() for p in (memfs_home / "rejected" / mount.session_id).iterdir()]
    assert kept == [b"hello\nmore\n" + b"\0" * 9]
    assert mount.status["rejected_count"] == 1
    assert path.read_text() == "hello\nfilled"
    assert [content for _, content in _history(store_engine, _store_id(mount), "/hello.md")] \
        == ["hello\n", "hello\nfilled"]


def test_cp_of_a_large_binary_reports_eilseq_not_efbig(mount: Mount, store_engine: Engine) -> None:
    assert Path("/bin/ls").stat().st_size > MAX_CONTENT_BYTES
    completed = run("cp", "/bin/ls", mount / "notes" / "ls", check=False)
    assert completed.returncode != 0
    assert "Invalid or incomplete multibyte or wide character" in completed.stderr
    # cp creates with O_EXCL (committed at once); the release after close(2) takes the
    # empty memory away again, a moment after cp exits.
    wait_until(lambda: not exists(mount / "notes" / "ls"), "the refused file to disappear")
    store_id = _store_id(mount)
    assert "/ls" not in live(store_engine, store_id)
    # Nothing at all: no version, no restorable deleted memory (only the audit log
    # keeps that an exclusive create was taken back).
    assert [v.path for v in versions(store_engine, store_id) if v.path == "/ls"] == []
    assert "/ls" not in [m.path for m in store_engine.memories.deleted(store_id)]


# ------------------------------------------------------------------ item 5


def test_a_new_file_whose_every_write_was_refused_leaves_nothing(
    mount: Mount, store_engine: Engine
) -> None:
    path = mount / "notes" / "bell.md"
    out = run_script("fuse_data_safety", "every_write_refused", path)
    assert out == "EILSEQ\nclose EILSEQ\n"
    # The name goes once the kernel's cached entry is invalidated, just after the close.
    wait_until(lambda: not exists(path), "the failed new file to disappear")
    assert "/bell.md" not in live(store_engine, _store_id(mount))


def test_sqlite3_leaves_no_memory_behind(mount: Mount, store_engine: Engine) -> None:
    path = mount / "notes" / "t.db"
    completed = run("sqlite3", path, "create table t(x)", check=False)
    assert completed.returncode != 0
    wait_until(lambda: not exists(path), "the refused database file to disappear")
    assert sorted(live(store_engine, _store_id(mount))) == ["/hello.md", "/projects/plan.md"]


def test_lock_files_are_scratch_and_renaming_one_over_a_file_is_one_version(
    mount: Mount, store_engine: Engine
) -> None:
    notes = mount / "notes"
    (notes / "config.lock").write_text("[core]\n")
    assert "/config.lock" not in live(store_engine, _store_id(mount))
    (notes / "config.lock").rename(notes / "hello.md")
    assert _history(store_engine, _store_id(mount), "/hello.md") == [
        (Operation.CREATED, "hello\n"), (Operation.MODIFIED, "[core]\n")]


# ------------------------------------------------------------------ item 7


def test_close_to_open_across_two_embedded_mounts(
    mounter: Mounter, make_store: Callable[..., MemoryStore]
) -> None:
    make_store("Notes", {"/c.md": "start\n"})
    a, b = mounter.mount("Notes"), mounter.mount("Notes")
    out = run_script("fuse_data_safety", "close_to_open", a / "notes", b / "notes")
    assert out == "start\nstale 0/100, missing 0/50\n"


# ------------------------------------------------------------------ item 8


def test_o_excl_is_exclusive_across_mounts(
    mounter: Mounter, make_store: Callable[..., MemoryStore], store_engine: Engine
) -> None:
    store = make_store("Notes")
    a, b = mounter.mount("Notes"), mounter.mount("Notes")
    out = run_script(
        "fuse_data_safety", "exclusive_create", a / "notes" / "x.lock.md",
        b / "notes" / "x.lock.md",
    )
    assert out == "EEXIST\n"
    assert {p: m.content for p, m in live(store_engine, store.id).items()} == {
        "/x.lock.md": "owner a\n"}
