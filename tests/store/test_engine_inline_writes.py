"""Inline writes (:meth:`memfs.store.Engine.inline`): a write that a trio loop may run
itself because it never waits. On a writable SQLite file it commits as any write does;
when another writer of this process has its turn, or another connection holds SQLite's
write lock, it raises ``WouldWait`` at once having written nothing; its commits leave
the WAL to the engine's checkpoint thread, which holds this process's turn while it
copies the WAL so the next writer starts it again. PostgreSQL (and a read-only open)
refuses at once: its writes are network round trips."""

from __future__ import annotations

import sqlite3
import sys
import threading
import time
from pathlib import Path

import pytest

from memfs.core.errors import PathConflict
from memfs.core.model import Actor, MemoryStore
from memfs.store import Engine, WouldWait
from memfs.store._connections import INLINE_CHECKPOINT_EVERY
from memfs.store._db import sqlite_path


def _sqlite_file(engine: Engine) -> Path:
    path = sqlite_path(engine.url)
    if path is None:
        pytest.skip("inline writes run on SQLite files only (PostgreSQL: see the next test)")
    return path


def _frames_not_checkpointed(path: Path) -> int:
    """WAL frames not yet copied into the database file, read from the WAL index
    (``-shm``: the header's ``mxFrame`` and the checkpoint's ``nBackfill``) without
    checkpointing anything itself."""
    header = (path.parent / (path.name + "-shm")).read_bytes()[:100]
    max_frame = int.from_bytes(header[16:20], sys.byteorder)
    backfilled = int.from_bytes(header[96:100], sys.byteorder)
    return max_frame - backfilled


def test_postgresql_refuses_inline_writes_at_once(
    engine: Engine, store: MemoryStore, actor: Actor
) -> None:
    if engine.dialect != "postgresql":
        assert engine.inline_capable
        return
    assert not engine.inline_capable
    with pytest.raises(WouldWait), engine.inline():
        engine.for_caller(actor=actor).memories.create(store.id, "/a.md", "a\n")
    assert engine.memories.all(store.id) == []


def test_an_inline_write_commits_like_any_write(
    engine: Engine, store: MemoryStore, actor: Actor
) -> None:
    path = _sqlite_file(engine)
    caller = engine.for_caller(actor=actor)
    with engine.inline():
        memory = caller.memories.create(store.id, "/notes/a.md", "alpha\n")
        memory = caller.memories.update(store.id, memory.id, content="alpha\nbeta\n")
        assert engine.feed_receipt()[-1].memory_version_id == memory.memory_version_id
    # Another connection, another process's view: committed.
    other = sqlite3.connect(path)
    try:
        (size,) = other.execute(
            "SELECT size_bytes FROM memories WHERE id = ?", (memory.id,)
        ).fetchone()
    finally:
        other.close()
    assert size == len("alpha\nbeta\n")
    # A refused write inside the block is the same error, and changes nothing.
    with pytest.raises(PathConflict), engine.inline():
        caller.memories.create(store.id, "/notes/a.md", "again\n")
    assert [m.path for m in engine.memories.all(store.id)] == ["/notes/a.md"]


def test_another_connection_s_write_lock_makes_an_inline_write_refuse_at_once(
    engine: Engine, store: MemoryStore, actor: Actor
) -> None:
    path = _sqlite_file(engine)
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        started = time.monotonic()
        with pytest.raises(WouldWait), engine.inline():
            engine.for_caller(actor=actor).memories.create(store.id, "/a.md", "a\n")
        assert time.monotonic() - started < 1.0, "it did not wait for the busy timeout"
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert engine.memories.all(store.id) == []
    # Once the lock is free, the same write goes through inline.
    with engine.inline():
        engine.for_caller(actor=actor).memories.create(store.id, "/a.md", "a\n")
    assert [m.path for m in engine.memories.all(store.id)] == ["/a.md"]


def test_a_writer_of_this_process_holding_its_turn_makes_an_inline_write_refuse(
    engine: Engine, store: MemoryStore, actor: Actor
) -> None:
    _sqlite_file(engine)
    caller = engine.for_caller(actor=actor)
    memory = caller.memories.create(store.id, "/a.md", "a\n")
    inside, release = threading.Event(), threading.Event()
    original = engine._db.write  # the write transaction another thread holds open

    def hold_a_write() -> None:
        with original():
            inside.set()
            release.wait(10)

    thread = threading.Thread(target=hold_a_write)
    thread.start()
    try:
        assert inside.wait(10)
        with pytest.raises(WouldWait), engine.inline():
            caller.memories.update(store.id, memory.id, content="b\n")
    finally:
        release.set()
        thread.join()
    assert engine.memories.get(store.id, memory.id).content == "a\n"


def test_inline_commits_leave_the_wal_to_the_checkpoint_thread(
    engine: Engine, store: MemoryStore, actor: Actor
) -> None:
    """SQLite's automatic checkpoint never runs in an inline commit (it copies the WAL
    into the file and syncs it); every INLINE_CHECKPOINT_EVERY commits the engine's
    checkpoint thread does it instead, so the WAL does not grow without end."""
    path = _sqlite_file(engine)
    caller = engine.for_caller(actor=actor)
    memory = caller.memories.create(store.id, "/grows.md", "x\n")
    engine._db.checkpoint(erasing=False)  # start from an empty WAL
    content = "x\n"
    for i in range(INLINE_CHECKPOINT_EVERY - 1):
        content += f"line {i}\n"
        with engine.inline():
            caller.memories.update(store.id, memory.id, content=content)
    piled_up = _frames_not_checkpointed(path)
    assert piled_up >= INLINE_CHECKPOINT_EVERY - 1, "no commit checkpointed the WAL itself"
    fell_back = 0
    seen = []
    for i in range(INLINE_CHECKPOINT_EVERY * 2):
        content += f"more {i}\n"
        try:
            with engine.inline():
                caller.memories.update(store.id, memory.id, content=content)
        except WouldWait:  # the checkpoint has the turn: as the embedded backend does
            fell_back += 1
            caller.memories.update(store.id, memory.id, content=content)
        seen.append(_frames_not_checkpointed(path))
    # Copied whole, with no commit racing it: the next writer started the WAL again
    # (its frame count fell), so it never held much more than one interval's commits;
    # without the thread it would have grown to three times ``piled_up``.
    assert any(later < earlier for earlier, later in zip(seen, seen[1:], strict=False)), seen
    assert max(seen) < 2 * piled_up, seen
    assert any(t.name == "memfs-checkpoint" for t in threading.enumerate())
    assert engine.memories.get(store.id, memory.id).content == content
