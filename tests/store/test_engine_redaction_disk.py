"""Redaction erases bytes from disk (SPEC §2: "After redaction the bytes must be gone from
every place memfs keeps data (database pages, WAL, …) unless another live version still
holds the identical content"). SQLite only: these tests read the database files."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from pathlib import Path

import pytest

from memfs.config import database_url
from memfs.model import Actor, DeleteMode
from memfs.store import Engine

ACTOR = Actor.api_key("apikey_tests")


def files_holding(directory: Path, needle: bytes) -> set[str]:
    """Names of the files in ``directory`` (db, -wal, -shm, …) whose bytes contain ``needle``."""
    return {p.name for p in directory.iterdir() if p.is_file() and needle in p.read_bytes()}


@pytest.fixture
def db_dir(tmp_path: Path) -> Path:
    directory = tmp_path / "db"
    directory.mkdir()
    return directory


@pytest.fixture
def sqlite_engine(db_dir: Path) -> Iterator[Engine]:
    eng = Engine(database_url(str(db_dir / "store.db")))
    try:
        yield eng
        assert list(eng.iter_fsck_findings()) == []
    finally:
        eng.close()


def marker() -> str:
    return "MARKER-" + secrets.token_hex(12)


@pytest.mark.parametrize("repeat", [1, 2_000], ids=["small", "overflow-pages"])
def test_redacted_version_bytes_leave_every_file(
    sqlite_engine: Engine, db_dir: Path, repeat: int
) -> None:
    secret = marker()
    store = sqlite_engine.create_store("s")
    for i in range(50):  # neighbours on the same and later pages
        sqlite_engine.create_memory(store.id, f"/n{i:02d}", f"neighbour {i} " * 30, actor=ACTOR)
    memory = sqlite_engine.create_memory(store.id, "/secret", secret * repeat, actor=ACTOR)
    sqlite_engine.update_memory(store.id, memory.id, actor=ACTOR, content="nothing to see")
    for i in range(50, 80):
        sqlite_engine.create_memory(store.id, f"/n{i:02d}", f"neighbour {i} " * 30, actor=ACTOR)
    assert files_holding(db_dir, secret.encode())  # the check can see the bytes

    sqlite_engine.redact_version(store.id, memory.memory_version_id, actor=ACTOR)

    assert files_holding(db_dir, secret.encode()) == set()  # while the engine is open
    sqlite_engine.close()
    assert files_holding(db_dir, secret.encode()) == set()
    reopened = Engine(database_url(str(db_dir / "store.db")))
    try:
        assert reopened.get_memory(store.id, memory.id).content == "nothing to see"
    finally:
        reopened.close()


def test_bytes_another_live_memory_holds_stay(sqlite_engine: Engine, db_dir: Path) -> None:
    secret = marker()
    store = sqlite_engine.create_store("s")
    memory = sqlite_engine.create_memory(store.id, "/a", secret, actor=ACTOR)
    sqlite_engine.create_memory(store.id, "/twin", secret, actor=ACTOR)
    sqlite_engine.update_memory(store.id, memory.id, actor=ACTOR, content="changed")
    sqlite_engine.redact_version(store.id, memory.memory_version_id, actor=ACTOR)
    sqlite_engine.close()
    assert files_holding(db_dir, secret.encode()) == {"store.db"}


@pytest.mark.parametrize("mode", [DeleteMode.REDACT, DeleteMode.HARD_DELETE])
def test_redact_and_hard_delete_erase_bytes(
    sqlite_engine: Engine, db_dir: Path, mode: DeleteMode
) -> None:
    secret = marker()
    store = sqlite_engine.create_store("s")
    memory = sqlite_engine.create_memory(store.id, "/a", secret + " v1", actor=ACTOR)
    sqlite_engine.update_memory(store.id, memory.id, actor=ACTOR, content=secret + " v2")
    sqlite_engine.delete_memory(store.id, memory.id, actor=ACTOR, mode=mode)
    assert files_holding(db_dir, secret.encode()) == set()
    sqlite_engine.close()
    assert files_holding(db_dir, secret.encode()) == set()


def test_delete_store_erases_bytes(sqlite_engine: Engine, db_dir: Path) -> None:
    secret = marker()
    store = sqlite_engine.create_store("s")
    memory = sqlite_engine.create_memory(store.id, "/a", secret, actor=ACTOR)
    sqlite_engine.delete_memory(store.id, memory.id, actor=ACTOR)  # bytes kept by versions
    sqlite_engine.delete_store(store.id)
    sqlite_engine.close()
    assert files_holding(db_dir, secret.encode()) == set()


def test_redacted_path_leaves_every_file(sqlite_engine: Engine, db_dir: Path) -> None:
    secret = marker()
    store = sqlite_engine.create_store("s")
    memory = sqlite_engine.create_memory(store.id, f"/{secret}.md", "body", actor=ACTOR)
    sqlite_engine.update_memory(store.id, memory.id, actor=ACTOR, path="/renamed.md", content="b")
    sqlite_engine.redact_version(store.id, memory.memory_version_id, actor=ACTOR)
    sqlite_engine.close()
    assert files_holding(db_dir, secret.encode()) == set()
