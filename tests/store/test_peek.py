"""The SQLite peek (memfs/store/peek.py) answers exactly as the engine, or not at all.

Each test builds a database with the engine, then asks the same question of both: the
models must be equal field for field, and an error the same class with the same message.
Where only the engine can answer (PostgreSQL, an older schema, a pending erasure, no
file), ``open_peek`` must say so (None) rather than answer differently.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from store_helpers import ACTOR

from memfs.core.config import database_url
from memfs.core.errors import DatabaseUnavailable, InvalidInput, MemfsError
from memfs.core.model import DeleteMode
from memfs.store import Engine, Peek, open_engine, open_peek


@pytest.fixture
def db_file(tmp_path: Path) -> Path:
    return tmp_path / "store.db"


@pytest.fixture
def writer(db_file: Path) -> Iterator[Engine]:
    engine = Engine(database_url(str(db_file)))
    try:
        yield engine
    finally:
        engine.close()


@pytest.fixture
def peek(writer: Engine, db_file: Path) -> Iterator[Peek]:
    opened = open_peek(str(db_file))
    assert opened is not None
    try:
        yield opened
    finally:
        opened.close()


def same(engine_call: Callable[[], Any], peek_call: Callable[[], Any]) -> Any:
    """Both calls' result (equal), or both raised the same error with the same text."""
    def outcome(call: Callable[[], Any]) -> tuple[str, Any]:
        try:
            return ("answer", call())
        except MemfsError as exc:
            return ("error", (type(exc), str(exc)))

    expected = outcome(engine_call)
    assert outcome(peek_call) == expected
    return expected[1]


def _all_stores(engine: Engine, include_archived: bool) -> list[Any]:
    items: list[Any] = []
    cursor = None
    while True:
        page = engine.stores.list(include_archived=include_archived, limit=2, cursor=cursor)
        items += page.items
        cursor = page.next_cursor
        if cursor is None:
            return items


def test_stores_listed_found_and_refused_alike(writer: Engine, peek: Peek) -> None:
    a = writer.stores.create("Project Notes", "d", {"team": "core"})
    b = writer.stores.create("Project Notes")  # the same name: ambiguous by name
    c = writer.stores.create("other", version_retention_s=3600)
    writer.for_caller(actor=ACTOR).memories.create(c.id, "/x.md", "x" * 10)
    d = writer.stores.create("gone")
    writer.stores.archive(d.id)
    fork = writer.for_caller(actor=ACTOR).history.fork(c.id, name="Fork Of Other")

    for archived in (False, True):
        listed = same(
            lambda archived=archived: _all_stores(writer, archived),
            lambda archived=archived: peek.list_stores(include_archived=archived),
        )
        assert len(listed) == (5 if archived else 4)
    for reference in (
        a.id,  # by id
        "other",  # by name
        "fork-of-other",  # by slug
        fork.id,
        d.id,  # archived stores are found
        "Project Notes",  # InvalidInput: two stores share the name
        "project-notes",  # InvalidInput: two stores share the slug
        "nothing",  # NotFound
        b.id,
    ):
        same(
            lambda reference=reference: writer.stores.find(reference),
            lambda reference=reference: peek.find_store(reference),
        )


def test_memories_read_alike_by_path_and_id(writer: Engine, peek: Peek) -> None:
    store = writer.stores.create("s")
    other = writer.stores.create("t")
    mine = writer.for_caller(actor=ACTOR).memories
    kept = mine.create(store.id, "/notes/a.md", "first", metadata={"k": "v"})
    mine.update(store.id, kept.id, content="second: ünïcode ✓\n", path="/notes/b.md")
    deleted = mine.create(store.id, "/gone.md", "bye")
    mine.delete(store.id, deleted.id)
    reborn = mine.create(store.id, "/gone.md", "again")  # a live memory at a deleted one's path
    redacted = mine.create(store.id, "/secret.md", "s3cret")
    mine.delete(store.id, redacted.id, mode=DeleteMode.REDACT)
    mine.create(other.id, "/only-in-t.md", "t")

    for store_id, reference in [
        (store.id, "/notes/b.md"),
        (store.id, kept.id),
        (store.id, "/notes/a.md"),  # the old path: NotFound
        (store.id, "/gone.md"),
        (store.id, reborn.id),
        (store.id, deleted.id),  # soft-deleted: NotFound
        (store.id, redacted.id),  # redacted: NotFound
        (store.id, "/.redacted"),
        (store.id, "/only-in-t.md"),  # another store's path
        (other.id, kept.id),  # another store's id
        (store.id, "mem_nothing"),
        (store.id, "no-slash"),  # InvalidPath
        (store.id, "/a/../b"),  # InvalidPath
        ("memstore_nothing", "/notes/b.md"),  # no such store
    ]:

        def by_engine(store_id: str = store_id, reference: str = reference) -> Any:
            if reference.startswith("mem_"):
                return writer.memories.get(store_id, reference)
            from memfs.core.rules import validate_path

            validate_path(reference)
            return writer.memories.get_by_path(store_id, reference)

        same(by_engine, lambda s=store_id, r=reference: peek.get_memory(s, r))
    assert peek.get_memory(store.id, kept.id).content == "second: ünïcode ✓\n"


def test_a_peek_sees_each_call_s_committed_state(writer: Engine, peek: Peek) -> None:
    """Each call is its own read transaction: a write committed between two calls
    (another process's, here the engine's) is seen by the next."""
    assert peek.list_stores() == []
    store = writer.stores.create("s")
    assert [s.id for s in peek.list_stores()] == [store.id]
    writer.for_caller(actor=ACTOR).memories.create(store.id, "/a.md", "1")
    assert peek.find_store("s").entry_count == 1
    assert peek.get_memory(store.id, "/a.md").content == "1"


def _files(directory: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir())}


def test_a_peek_leaves_the_files_as_it_found_them(writer: Engine, db_file: Path) -> None:
    """query_only, and the close removes the WAL and shared memory its open made."""
    store = writer.stores.create("s")
    writer.for_caller(actor=ACTOR).memories.create(store.id, "/a.md", "1")
    writer.close()
    before = _files(db_file.parent)
    assert set(before) == {"store.db"}
    peek = open_peek(str(db_file))
    assert peek is not None
    with peek:
        assert peek.get_memory(store.id, "/a.md").content == "1"
        with pytest.raises(sqlite3.OperationalError, match="readonly"):
            peek._conn.execute("DELETE FROM memories")
    assert _files(db_file.parent) == before


def test_a_file_this_user_may_not_write_is_peeked_read_only(
    writer: Engine, db_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = writer.stores.create("s")
    writer.for_caller(actor=ACTOR).memories.create(store.id, "/a.md", "1")
    import memfs.store.peek as peek_module

    monkeypatch.setattr(peek_module.os, "access", lambda path, mode: mode != peek_module.os.W_OK)
    peek = open_peek(str(db_file))
    assert peek is not None
    with peek:
        assert peek.get_memory(store.id, "/a.md").content == "1"
        peek._conn.execute("PRAGMA query_only=OFF")
        with pytest.raises(sqlite3.OperationalError, match="readonly"):
            peek._conn.execute("DELETE FROM memories")


def test_only_the_engine_answers_an_older_schema(writer: Engine, db_file: Path) -> None:
    writer.stores.create("s")
    conn = sqlite3.connect(db_file)
    with conn:
        conn.execute("UPDATE alembic_version SET version_num = '0018_older'")
    conn.close()
    assert open_peek(str(db_file)) is None


def test_only_the_engine_answers_while_an_erasure_is_pending(
    writer: Engine, db_file: Path
) -> None:
    """The close of an engine completes a pending erasure (SPEC §2); a peek can't."""
    writer.stores.create("s")
    marker = db_file.with_name(db_file.name + "-erase-pending")
    marker.write_text("2026-12-06T00:00:00+00:00\n")
    assert open_peek(str(db_file)) is None
    marker.unlink()
    peek = open_peek(str(db_file))
    assert peek is not None
    peek.close()


@pytest.mark.parametrize(
    "database",
    [
        "postgresql://memfs@localhost/memfs",
        "sqlite://",
        "sqlite:///:memory:",
        "sqlite:////tmp/with?mode=ro",
    ],
)
def test_only_the_engine_answers_another_kind_of_database(database: str) -> None:
    assert open_peek(database) is None


def test_only_the_engine_answers_a_missing_empty_or_foreign_file(tmp_path: Path) -> None:
    assert open_peek(str(tmp_path / "missing.db")) is None
    assert not (tmp_path / "missing.db").exists()
    (tmp_path / "empty.db").touch()
    assert open_peek(str(tmp_path / "empty.db")) is None
    (tmp_path / "text.db").write_text("not a database")
    assert open_peek(str(tmp_path / "text.db")) is None
    foreign = sqlite3.connect(tmp_path / "foreign.db")
    foreign.execute("CREATE TABLE t (x)")
    foreign.close()
    assert open_peek(str(tmp_path / "foreign.db")) is None
    assert open_peek(str(tmp_path)) is None  # a directory


def test_a_locked_file_fails_as_the_engine_fails_it(
    writer: Engine, db_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file another connection holds locked: the engine's first look waits 5 s, then
    says so (DatabaseUnavailable); the peek waits as long and says the same, rather than
    standing aside for the engine to wait again (35 s in all, a trial found)."""
    writer.stores.create("s")
    writer.close()
    holder = sqlite3.connect(db_file, isolation_level=None)
    holder.execute("PRAGMA locking_mode=EXCLUSIVE")
    holder.execute("BEGIN EXCLUSIVE")
    holder.execute("SELECT count(*) FROM stores").fetchone()
    try:
        with pytest.raises(DatabaseUnavailable) as by_engine:
            open_engine(str(db_file), create=False)
        import memfs.store.peek as peek_module

        monkeypatch.setattr(peek_module, "OPEN_TIMEOUT_S", 0.2)
        started = time.monotonic()
        with pytest.raises(DatabaseUnavailable) as by_peek:
            open_peek(str(db_file))
        assert time.monotonic() - started < 10  # not the busy timeout's 30 s
    finally:
        holder.close()
    assert str(by_peek.value) == str(by_engine.value)
    assert "database is locked" in str(by_peek.value)
    assert peek_module.OPEN_TIMEOUT_S == 0.2  # the engine's own wait is 5 s (sqlite3's)


def test_a_bad_setting_fails_the_peek_as_it_fails_the_engine(
    writer: Engine, db_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Whichever answers a command, a bad setting fails it the same way (a trial found
    the peek answering where the engine had refused)."""
    writer.stores.create("s")
    for variable, value, error in (
        ("MEMFS_MEMORY_LIMIT", "abc", ValueError),
        ("MEMFS_SQLITE_SYNC", "bogus", InvalidInput),
    ):
        with monkeypatch.context() as patched:
            patched.setenv(variable, value)
            with pytest.raises(error) as by_engine:
                open_engine(str(db_file), create=False)
            with pytest.raises(error) as by_peek:
                open_peek(str(db_file))
        assert type(by_peek.value) is type(by_engine.value)
        assert str(by_peek.value) == str(by_engine.value)


def test_a_database_whose_name_leaves_no_room_for_the_marker_s_suffix(tmp_path: Path) -> None:
    """A file name of 242–247 bytes takes SQLite's ``-journal`` and ``-wal`` but not
    ``-erase-pending`` (NAME_MAX 255): the marker gets a shortened name of its own, so
    the engine records and clears pending erasures there and the peek looks there
    (both had raised ENAMETOOLONG, a trial found)."""
    from memfs.store._light import erase_marker

    long_a = tmp_path / ("d" * 240 + "a.db")  # 244 bytes
    long_b = tmp_path / ("d" * 240 + "b.db")
    marker_a, marker_b = erase_marker(long_a), erase_marker(long_b)
    assert len(marker_a.name.encode()) <= 255
    assert marker_a != marker_b
    assert marker_a.name.endswith("-erase-pending")
    assert erase_marker(tmp_path / "memfs.db").name == "memfs.db-erase-pending"
    unicode_name = tmp_path / ("é" * 122 + ".db")  # 248 bytes: cut inside no character
    assert len(erase_marker(unicode_name).name.encode()) <= 255

    with Engine(database_url(str(long_a))) as engine:
        store = engine.stores.create("s")
        engine.for_caller(actor=ACTOR).memories.create(store.id, "/a.md", "1")
        assert engine.erasure_pending() is None
    peek = open_peek(str(long_a))
    assert peek is not None
    with peek:
        assert peek.get_memory(store.id, "/a.md").content == "1"
    marker_a.write_text("2026-12-06T00:00:00+00:00\n")
    assert open_peek(str(long_a)) is None
    with Engine(database_url(str(long_a))) as engine:
        assert engine.erasure_pending() is not None
        engine.for_caller(actor=ACTOR).memories.create(store.id, "/b.md", "2")
        assert engine.erasure_pending() is None  # a write completed the checkpoint
    assert not marker_a.exists()
