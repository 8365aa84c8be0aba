"""What a writer that follows the change feed learns without reading it back:
the receipt of its own write (the entries that write appended, exactly as the feed then
holds them) and, on a SQLite file, the newest seq of a store read on the caller's
thread by the feed probe."""

from __future__ import annotations

import subprocess
import sys
import threading

import pytest

from memfs.core.errors import PathConflict
from memfs.core.model import Actor, MemoryStore
from memfs.store import Engine


def test_each_write_s_receipt_is_what_it_appended_to_the_feed(
    engine: Engine, store: MemoryStore, actor: Actor
) -> None:
    def receipt_matches_feed(write) -> None:  # type: ignore[no-untyped-def]
        before = engine.feed.last_seq(store.id)
        write()
        receipt = engine.feed_receipt()
        assert receipt, "the write appended entries"
        assert receipt == engine.feed.changes_since(store.id, before)

    created: list[str] = []
    receipt_matches_feed(
        lambda: created.append(engine.for_caller(actor=actor).memories.create(
            store.id, "/d/a.md", "a\n"
        ).id)
    )
    receipt_matches_feed(lambda: engine.for_caller(actor=actor).memories.create(
        store.id, "/d/b.md", "b\n"
    ))
    receipt_matches_feed(
        lambda: engine.for_caller(actor=actor).memories.update(store.id, created[0], content="a2\n")
    )
    receipt_matches_feed(
        lambda: engine.for_caller(actor=actor).memories.update(store.id, created[0], path="/d/c.md")
    )
    # A directory rename appends one entry per memory in one statement.
    receipt_matches_feed(lambda: engine.for_caller(actor=actor).memories.rename_prefix(
        store.id, "/d/", "/e/"
    ))
    assert len(engine.feed_receipt()) == 2
    receipt_matches_feed(lambda: engine.for_caller(actor=actor).memories.delete(
        store.id, created[0]
    ))


def test_a_refused_write_or_one_that_changes_nothing_has_an_empty_receipt(
    engine: Engine, store: MemoryStore, actor: Actor
) -> None:
    memory = engine.for_caller(actor=actor).memories.create(store.id, "/a.md", "a\n")
    assert engine.feed_receipt() != []
    with pytest.raises(PathConflict):
        engine.for_caller(actor=actor).memories.create(store.id, "/a.md", "again\n")
    assert engine.feed_receipt() == []
    engine.for_caller(actor=actor).memories.update(store.id, memory.id, content="a\n")  # no change
    assert engine.feed_receipt() == []


def test_a_receipt_belongs_to_the_thread_that_wrote(
    engine: Engine, store: MemoryStore, actor: Actor
) -> None:
    mine = engine.for_caller(actor=actor).memories.create(store.id, "/mine.md", "m\n")
    theirs: list[object] = []

    def write_elsewhere() -> None:
        engine.for_caller(actor=actor).memories.create(store.id, "/theirs.md", "t\n")
        theirs.extend(engine.feed_receipt())

    thread = threading.Thread(target=write_elsewhere)
    thread.start()
    thread.join()
    assert [c.memory_id for c in engine.feed_receipt()] == [mine.id]
    assert [c.path for c in theirs] == ["/theirs.md"]  # type: ignore[attr-defined]


def test_the_probe_reads_the_newest_seq_of_every_connection_s_commits(
    engine: Engine, second_engine: Engine, store: MemoryStore, actor: Actor
) -> None:
    probe = engine.feed_probe()
    if engine.dialect != "sqlite":
        assert probe is None  # PostgreSQL: the counter is read in a worker thread
        return
    assert probe is not None
    try:
        assert probe.last_seq(store.id) == 0
        engine.for_caller(actor=actor).memories.create(store.id, "/a.md", "a\n")
        assert probe.last_seq(store.id) == 1
        # Another engine is another connection pool, as another process would be.
        second_engine.for_caller(actor=actor).memories.create(store.id, "/b.md", "b\n")
        assert probe.last_seq(store.id) == 2 == engine.feed.last_seq(store.id)
        assert probe.last_seq("memstore_unknown") is None
        # It holds no snapshot between calls: a truncating checkpoint does not wait.
        assert engine._db.checkpoint(wait_s=0)
        engine.stores.delete(store.id)
        assert probe.last_seq(store.id) is None  # gone: read the feed for its last entry
    finally:
        probe.close()



def test_the_probe_queries_only_after_a_commit(
    engine: Engine, second_engine: Engine, store: MemoryStore, actor: Actor
) -> None:
    """Between commits the WAL-index header does not change, and the probe answers
    from it without a query; any commit, of any connection, makes it query again."""
    probe = engine.feed_probe()
    if engine.dialect != "sqlite":
        pytest.skip("PostgreSQL has no probe")
    assert probe is not None
    queries: list[str] = []
    try:
        writers = [engine.for_caller(actor=actor), second_engine.for_caller(actor=actor)]
        assert probe.last_seq(store.id) == 0  # opens the connection, maps the header
        assert probe._conn is not None
        probe._conn.set_trace_callback(queries.append)
        assert probe.last_seq(store.id) == 0
        assert len(queries) == 1  # the first answer to keep with the header
        for round_ in range(1, 7):
            writers[round_ % 2].memories.create(store.id, f"/m{round_}.md", "x\n")
            asked = len(queries)
            for _ in range(3):
                assert probe.last_seq(store.id) == round_
            assert len(queries) - asked == 1, "one query after a commit, then none"
        assert probe.last_seq("memstore_unknown") is None
        # A checkpoint that restarts the WAL changes the header, not the answer.
        assert engine._db.checkpoint(wait_s=0)
        assert probe.last_seq(store.id) == 6
        writers[1].memories.create(store.id, "/after.md", "x\n")
        assert probe.last_seq(store.id) == 7 == engine.feed.last_seq(store.id)
    finally:
        probe.close()


_SHM_IN_USE_BYTE = 128  # sqlite's os_unix.c UNIX_SHM_DMS: held shared while connected
_ASK_LOCK = """
import fcntl, os, struct, sys
fd = os.open(sys.argv[1], os.O_RDWR)
asked = struct.pack("hhqqi4x", fcntl.F_WRLCK, os.SEEK_SET, int(sys.argv[2]), 1, 0)
print(struct.unpack("hhqqi4x", fcntl.fcntl(fd, fcntl.F_GETLK, asked))[0] == fcntl.F_UNLCK)
"""


def test_mapping_the_header_leaves_sqlite_s_locks_held(
    engine: Engine, store: MemoryStore, actor: Actor
) -> None:
    """Closing any descriptor of a file drops every POSIX lock the process holds on it:
    the probe must never close one of the -shm, or another process could take the
    file for unused and reset it under this process's connections."""
    probe = engine.feed_probe()
    if engine.dialect != "sqlite":
        pytest.skip("PostgreSQL has no probe")
    assert probe is not None
    try:
        engine.for_caller(actor=actor).memories.create(store.id, "/a.md", "a\n")
        assert probe.last_seq(store.id) == probe.last_seq(store.id) == 1
        assert probe._shm is not None  # mapped
        probe.close()
        assert probe.last_seq(store.id) == probe.last_seq(store.id) == 1  # again
        free = subprocess.run(
            [sys.executable, "-c", _ASK_LOCK, str(probe._shm_path), str(_SHM_IN_USE_BYTE)],
            capture_output=True, text=True, check=True,
        ).stdout.strip()
        assert free == "False", "this process's connections still hold the -shm"
    finally:
        probe.close()
