"""Opening a database: a missing file is an error unless the caller
asks to create it, a foreign database is refused by name and never modified, and a
read-only open reads without writing anything (no journal-mode switch, no checkpoint)."""

from __future__ import annotations

import hashlib
import os
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text

from memfs.core.config import database_url
from memfs.core.errors import (
    DatabaseNotFound,
    DatabaseReadOnly,
    DatabaseUnavailable,
    ForeignDatabase,
)
from memfs.core.model import Actor
from memfs.store import Engine, open_engine

ACTOR = Actor.api_key("apikey_tests")


def files_of(directory: Path) -> dict[str, str]:
    """Every file in ``directory`` with the SHA-256 of its bytes."""
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(directory.iterdir())}


def test_a_missing_database_is_not_created_unless_asked(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "memfs.db"
    with pytest.raises(DatabaseNotFound) as info:
        Engine(f"sqlite:///{path}", create=False)
    assert str(info.value).startswith(f"no memfs database at {path} ")
    with pytest.raises(DatabaseNotFound):
        open_engine(str(path), create=False)
    with pytest.raises(DatabaseNotFound):
        Engine(f"sqlite:///{path}", read_only=True)
    assert not path.parent.exists()
    with Engine(f"sqlite:///{path}") as engine:  # create=True, the default
        engine.stores.create("s")
    with Engine(f"sqlite:///{path}", create=False) as engine:
        assert [s.name for s in engine.stores.list().items] == ["s"]


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (
            lambda db: db.execute("CREATE TABLE notes (body TEXT)"),
            "holds tables (notes) but is not a memfs database (no memfs schema revision); "
            "memfs left it alone",
        ),
        (
            lambda db: db.executescript(
                "CREATE TABLE alembic_version (version_num TEXT);"
                "INSERT INTO alembic_version VALUES ('ae1027a6acf');"
                "CREATE TABLE stores (id TEXT);"
            ),
            "is at schema revision 'ae1027a6acf', which is not one of memfs's; memfs left it alone",
        ),
    ],
)
def test_a_foreign_sqlite_database_is_refused_and_left_untouched(
    tmp_path: Path,
    make,
    message: str,  # type: ignore[no-untyped-def]
) -> None:
    path = tmp_path / "other.db"
    with sqlite3.connect(path) as db:
        make(db)
    before = files_of(tmp_path)
    with pytest.raises(ForeignDatabase) as info:
        Engine(f"sqlite:///{path}")
    assert str(info.value) == f"{path} {message}"
    assert files_of(tmp_path) == before  # same bytes, no -wal or -shm
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA journal_mode").fetchone() == ("delete",)


def test_a_file_that_is_no_database_is_refused_and_left_untouched(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("my shopping list, not a database\n" * 100)
    before = files_of(tmp_path)
    with pytest.raises(ForeignDatabase, match=f"^{path} is not a SQLite database; "):
        Engine(f"sqlite:///{path}")
    assert files_of(tmp_path) == before


def test_a_foreign_postgresql_database_is_refused(
    pg_database_url: Callable[..., str],
) -> None:
    url = database_url(pg_database_url(empty=True))
    raw = create_engine(url)
    try:
        with raw.begin() as conn:
            conn.execute(text("CREATE TABLE invoices (id integer)"))
        with pytest.raises(ForeignDatabase, match=r"holds tables \(invoices\) but is not a memfs"):
            Engine(url)
        with raw.connect() as conn:
            assert conn.execute(text("SELECT to_regclass('stores')")).scalar() is None
    finally:
        raw.dispose()


def test_a_read_only_open_reads_and_writes_nothing(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'memfs.db'}"
    with Engine(url) as engine:
        store = engine.stores.create("s")
        memory = engine.for_caller(actor=ACTOR).memories.create(store.id, "/a.md", "kept")
    before = files_of(tmp_path)

    with Engine(url, read_only=True) as reader:
        assert reader.read_only
        assert reader.memories.get(store.id, memory.id).content == "kept"
        assert list(reader.iter_fsck_findings()) == []
        with pytest.raises(DatabaseReadOnly, match="is open read-only; nothing was changed$"):
            reader.for_caller(actor=ACTOR).memories.create(store.id, "/b.md", "refused")

    assert {k: v for k, v in files_of(tmp_path).items() if k == "memfs.db"} == {
        "memfs.db": before["memfs.db"]
    }
    with Engine(url) as engine:
        assert [m.path for m in engine.memories.all(store.id)] == ["/a.md"]


def test_a_file_this_process_may_not_write_opens_read_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = f"sqlite:///{tmp_path / 'memfs.db'}"
    with Engine(url) as engine:
        store = engine.stores.create("s")
    real_access = os.access

    def no_write(path: object, mode: int, **kwargs: object) -> bool:
        return False if mode & os.W_OK else real_access(path, mode)  # type: ignore[arg-type]

    # Root may write any file, so the test takes the place of a user who may not.
    monkeypatch.setattr(os, "access", no_write)
    with Engine(url) as reader:
        assert reader.read_only
        assert reader.stores.get(store.id).name == "s"


def test_a_database_that_cannot_be_opened_names_why(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(DatabaseUnavailable) as info:
        Engine(f"sqlite:///{blocker / 'memfs.db'}")
    expected = f"cannot open the store database: Not a directory ({blocker / 'memfs.db'})"
    assert str(info.value) == expected
    with pytest.raises(
        DatabaseUnavailable,
        match="^cannot open the store database: Can't load plugin: sqlalchemy.dialects:nosuch ",
    ):
        Engine("nosuch://x")


def test_closing_an_engine_that_only_read_does_not_wait_behind_a_reader(
    tmp_path: Path,
) -> None:
    """A command that only read (``memfs store list``, ``memfs memory cat``) leaves the
    WAL to its writers: its close runs no checkpoint, which would wait up to
    ERASE_WAIT_S for another reader and hold every writer meanwhile. An engine that
    wrote still checkpoints at close."""
    import time

    from memfs.store._connections import ERASE_WAIT_S

    path = tmp_path / "memfs.db"
    with Engine(f"sqlite:///{path}") as writer:
        store = writer.stores.create("Notes")
        writer.for_caller(actor=ACTOR).memories.create(store.id, "/a.md", "a\n")
    reader = sqlite3.connect(path)
    reader.execute("BEGIN")
    reader.execute("SELECT count(*) FROM memories").fetchone()  # holds a snapshot
    try:
        with Engine(f"sqlite:///{path}") as writer:  # commits after the reader's snapshot
            writer.for_caller(actor=ACTOR).memories.create(store.id, "/b.md", "b\n")
            started = time.monotonic()
        wrote_close_s = time.monotonic() - started
        engine = Engine(f"sqlite:///{path}")
        assert [m.path for m in engine.memories.all(store.id)] == ["/a.md", "/b.md"]
        started = time.monotonic()
        engine.close()
        read_close_s = time.monotonic() - started
    finally:
        reader.rollback()
        reader.close()
    assert wrote_close_s >= ERASE_WAIT_S * 0.9, "the writer's close waited for the reader"
    assert read_close_s < ERASE_WAIT_S / 2, f"a reading engine's close took {read_close_s:.2f} s"
