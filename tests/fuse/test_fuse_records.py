"""Records through a real mount (SPEC §6), driven by real tools: a record
written with cp/sh is indexed and stored byte for byte; a bad header is EINVAL at
close, the head unchanged, the bytes kept, the message in the mount log and
``memfs status``; ordinary front matter is untouched; ``mv`` of a target keeps the
relation."""

from __future__ import annotations

from pathlib import Path

from _support.mount import MEMFS, Mount, errno_of, run, run_python, run_script, wait_until

from memfs.core.model import MemoryStore
from memfs.store import Engine

RECORD = """---
type: preference
importance: 0.92
tags: [tone]
relations:
  - {type: related_to, target: /old.md}
x-unknown:   {kept: "verbatim"}   # a comment, kept too
---
Be brief and funny.
"""
# The access log writes within ACCESS_FLUSH_INTERVAL_S (2 s); slack for a busy CI box.
ACCESS_TIMEOUT_S = 20.0
BAD = "---\ntype: preference\nimportance: 1.5\ntags: [tone]\n---\nBe brief.\n"


def _records(engine: Engine, store: MemoryStore) -> dict[str, object]:
    return {record.path: record for record in engine.records.list([store.id])}


def test_records_written_by_tools_are_indexed_byte_for_byte(
    mount: Mount, store_engine: Engine, tmp_path: Path
) -> None:
    (store,) = [s for s in store_engine.stores.list().items if s.name == "Notes"]
    source = tmp_path / "tone.md"
    source.write_text(RECORD)
    run("cp", source, mount / "notes" / "tone.md")
    run("sh", "-c", f"printf 'plain\\n' > {mount / 'notes' / 'old.md'}")
    post = "---\ntype: post\nimportance: 7\n---\nnot a record\n"
    (tmp_path / "post.md").write_text(post)
    run("cp", tmp_path / "post.md", mount / "notes" / "post.md")
    records = store_engine.records.list([store.id])
    assert [r.path for r in records] == ["/tone.md"]
    (record,) = records
    assert record.importance == 0.92
    assert (mount / "notes" / "tone.md").read_text() == RECORD
    assert store_engine.memories.get_by_path(store.id, "/tone.md").content == RECORD
    assert store_engine.memories.get_by_path(store.id, "/post.md").content == post
    old = store_engine.memories.get_by_path(store.id, "/old.md")
    assert record.relations[0].target_memory_id == old.id
    # mv of the target: the relation follows it (stored by id).
    run("mv", mount / "notes" / "old.md", mount / "notes" / "older.md")
    (record,) = store_engine.records.list([store.id])
    assert record.relations[0].target_path == "/older.md"


def test_a_bad_header_is_einval_at_close_and_reported(
    mount: Mount, store_engine: Engine, tmp_path: Path, memfs_home: Path
) -> None:
    mount.expect_log("refused (EINVAL")
    path = mount / "notes" / "hello.md"
    (store,) = [s for s in store_engine.stores.list().items if s.name == "Notes"]
    code = f"""
        fd = os.open({str(path)!r}, os.O_WRONLY | os.O_TRUNC)
        os.write(fd, {BAD.encode()!r})
        os.close(fd)
    """
    assert errno_of(code) == "EINVAL"
    assert path.read_text() == "hello\n"
    assert store_engine.memories.get_by_path(store.id, "/hello.md").content == "hello\n"
    assert _records(store_engine, store) == {}
    # A real tool says so too. The new file cp created (its O_EXCL create committed an
    # empty memory at open, SPEC §4) leaves again at its release: nothing was accepted.
    (tmp_path / "bad.md").write_text(BAD)
    copied = run("cp", tmp_path / "bad.md", mount / "notes" / "bad.md", check=False)
    assert copied.returncode != 0
    assert "Invalid argument" in copied.stderr
    wait_until(lambda: not (mount / "notes" / "bad.md").exists(), "the refused file to go")
    assert "/bad.md" not in {m.path for m in store_engine.memories.list(store.id).items}
    message = "invalid record header: importance: must be a number from 0 to 1"
    status = mount.status
    assert status["rejected_count"] == 2
    events = status["rejected_writes"]
    assert [e["errno"] for e in events] == ["EINVAL", "EINVAL"]
    assert all(e["message"] == message for e in events)
    assert Path(events[0]["saved_to"]).read_text() == BAD  # nothing a user wrote is lost
    assert message in mount.log_file.read_text()
    printed = run(MEMFS, "status", mount.path).stdout
    assert f"EINVAL: {message}; kept in " in printed


def test_an_open_for_reading_moves_last_accessed_and_xattrs_show_it(
    mount: Mount, store_engine: Engine
) -> None:
    (store,) = [s for s in store_engine.stores.list().items if s.name == "Notes"]
    memory = store_engine.memories.create(store.id, "/tone.md", RECORD)
    created = store_engine.records.get([memory.id])[memory.id].last_accessed
    path = mount / "notes" / "tone.md"
    wait_until(path.exists, "the new record to show in the mount")
    shown = run_script(
        "fuse_namespace", "print_xattrs", path, "user.memfs.last_accessed", "user.memfs.decay"
    ).split()
    assert shown[0] == created.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    assert 0.91 < float(shown[1]) <= 0.92
    assert "user.memfs.decay" not in run_python(f"import os; print(os.listxattr({str(path)!r}))")
    assert errno_of(f"os.getxattr({str(mount / 'notes' / 'hello.md')!r}, 'user.memfs.decay')") == (
        "ENODATA"
    )
    run("ls", "-l", mount / "notes")  # no open: no read
    run("cat", path)

    def moved() -> bool:
        record = store_engine.records.get([memory.id])[memory.id]
        return record.last_accessed > created

    wait_until(moved, "last_accessed to move after cat", ACCESS_TIMEOUT_S)
    assert store_engine.memories.get(store.id, memory.id).memory_version_id == (
        memory.memory_version_id
    )
