"""Schema and migrations: a fresh database is built from ``schema.metadata`` and stamped at
the Alembic head, the live schema matches the metadata exactly, and reopening works."""

from __future__ import annotations

import multiprocessing
import sqlite3
import threading
import time
import types
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import create_engine, inspect, text

from memfs.core.errors import StoreBusy
from memfs.core.model import Actor, DeleteMode, utcnow
from memfs.store import Engine, ResourceSpec, _db
from memfs.store._db import alembic_config
from memfs.store.schema import PARTIAL_WHERE, metadata
from memfs.store.search import PG_INDEXES, SQLITE_FTS_PREFIX

ACTOR = Actor.api_key("apikey_tests")
JOIN_TIMEOUT_S = 60.0
STRESS_ROUNDS = 6


def _is_search_object(diff: tuple[object, ...]) -> bool:
    """A difference naming an index object of memfs/store/search.py that lives beside
    the metadata (SQLite FTS5 tables and their shadow tables, PostgreSQL GIN indexes)."""
    name = str(getattr(diff[1], "name", ""))
    return diff[0] in ("remove_table", "remove_index") and (
        name.startswith(SQLITE_FTS_PREFIX) or name in PG_INDEXES
    )


def schema_differences(context: MigrationContext) -> list[tuple[object, ...]]:
    """compare_metadata without the search index objects outside the metadata."""
    return [d for d in compare_metadata(context, metadata) if not _is_search_object(d)]


@pytest.mark.empty_database
def test_fresh_database_is_at_the_head_and_matches_the_metadata(
    engine: Engine, database: str
) -> None:
    head = ScriptDirectory.from_config(alembic_config()).get_current_head()
    assert head is not None
    raw = create_engine(database)
    try:
        with raw.connect() as conn:
            context = MigrationContext.configure(
                conn, opts={"compare_type": True, "compare_server_default": True}
            )
            assert context.get_current_revision() == head
            assert schema_differences(context) == []
            tables = inspect(conn).get_table_names()
            assert {t for t in tables if not t.startswith(SQLITE_FTS_PREFIX)} == set(
                metadata.tables
            ) | {"alembic_version"}
            indexes = {i["name"] for i in inspect(conn).get_indexes("memories")}
            assert {"ix_memories_live_path", "ix_memories_blob"} <= indexes
    finally:
        raw.dispose()


@pytest.mark.empty_database
def test_fresh_database_has_the_partial_indexes_of_the_metadata(
    engine: Engine, database: str
) -> None:
    """The metadata's partial indexes (unique live path, one default store per pair, one
    active dream per store) are partial on both dialects: PostgreSQL's predicates are
    attached only when the metadata creates the tables (schema._partial_index)."""
    partial = {
        index.name
        for table in metadata.tables.values()
        for index in table.indexes
        if PARTIAL_WHERE in index.info
    }
    assert partial == {
        "ix_memories_live_path", "ix_identity_mounts_default", "ix_dreams_active_input"
    }
    raw = create_engine(database)
    try:
        with raw.connect() as conn:
            if conn.dialect.name == "postgresql":
                live = conn.execute(text(
                    "SELECT c.relname FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid"
                    " WHERE i.indpred IS NOT NULL"
                )).scalars()
            else:
                live = conn.execute(text(
                    "SELECT il.name FROM sqlite_master t,"
                    " pragma_index_list(t.name) il WHERE t.type = 'table' AND il.partial"
                )).scalars()
            assert set(live) == partial
    finally:
        raw.dispose()


def test_single_linear_history() -> None:
    script = ScriptDirectory.from_config(alembic_config())
    assert len(script.get_heads()) == 1
    assert len(script.get_bases()) == 1


def test_reopening_keeps_data_and_revision(engine: Engine, database: str) -> None:
    store = engine.stores.create("persistent")
    memory = engine.for_caller(actor=ACTOR).memories.create(store.id, "/a", "kept")
    engine.close()
    reopened = Engine(database)
    try:
        assert reopened.memories.get(store.id, memory.id).content == "kept"
        reopened.for_caller(actor=ACTOR).memories.create(store.id, "/b", "after reopen")
        assert list(reopened.iter_fsck_findings()) == []
    finally:
        reopened.close()
    with Engine(database) as third:
        assert [m.path for m in third.memories.all(store.id)] == ["/a", "/b"]


@pytest.mark.empty_database
def test_two_servers_opening_a_fresh_database_at_once(database: str) -> None:
    barrier = threading.Barrier(4)
    opened: list[Engine | Exception] = []

    def open_engine() -> None:
        barrier.wait(30)
        try:
            opened.append(Engine(database))
        except Exception as exc:
            opened.append(exc)

    threads = [threading.Thread(target=open_engine) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    engines = [e for e in opened if isinstance(e, Engine)]
    try:
        assert len(engines) == 4, opened
        store = engines[0].stores.create("shared")
        assert engines[3].stores.get(store.id) == store
        assert list(engines[1].iter_fsck_findings()) == []
    finally:
        for eng in engines:
            eng.close()


def test_schema_head_constant_matches_the_migration_scripts() -> None:
    """_db.SCHEMA_HEAD lets an up-to-date database open without loading Alembic; it must
    name the newest migration, or every open would take the slow path (or skip one)."""
    from alembic.script import ScriptDirectory

    assert ScriptDirectory.from_config(alembic_config()).get_current_head() == _db.SCHEMA_HEAD


@pytest.mark.empty_database
def test_upgrading_0001_gives_sessions_a_lifecycle(database: str) -> None:
    """Migration 0002 (SPEC §3 credential lifecycle), and every later one: a database at 0001 with a
    token session and a tokenless one upgrades on open; the token gets 24 h from the
    upgrade, the tokenless one no expiry, and the schema then matches the metadata."""
    from alembic import command

    with Engine(database) as engine:
        store = engine.stores.create("s")
        with_token, token = engine.sessions.create([ResourceSpec(store.id)])
        tokenless, _ = engine.sessions.create([ResourceSpec(store.id)], with_token=False)
    raw = create_engine(database)
    try:
        with raw.begin() as conn:
            config = alembic_config()
            config.attributes["connection"] = conn
            command.downgrade(config, "0001")
        with raw.connect() as conn:
            assert "expires_at" not in {c["name"] for c in inspect(conn).get_columns("sessions")}
    finally:
        raw.dispose()
    before = utcnow()
    with Engine(database) as engine:
        assert token is not None
        upgraded = engine.sessions.authenticate(token)
        assert upgraded.expires_at is not None
        assert timedelta(hours=24) <= upgraded.expires_at - before < timedelta(hours=25)
        assert engine.sessions.get(tokenless.id).expires_at is None
        assert upgraded.resources == with_token.resources
        assert list(engine.iter_fsck_findings()) == []
    raw = create_engine(database)
    try:
        with raw.connect() as conn:
            context = MigrationContext.configure(
                conn, opts={"compare_type": True, "compare_server_default": True}
            )
            assert context.get_current_revision() == _db.SCHEMA_HEAD
            assert schema_differences(context) == []
    finally:
        raw.dispose()


def _holding_a_rollback_journal_write_lock(path: str) -> sqlite3.Connection:
    """A plain sqlite3 connection holding the write lock (RESERVED) of a fresh database
    file still in rollback-journal mode: another opener wanting WAL mode now gets
    SQLITE_BUSY at once, without its busy handler (SQLite's deadlock rule)."""
    holder = sqlite3.connect(path, isolation_level=None, timeout=JOIN_TIMEOUT_S)
    holder.execute("BEGIN IMMEDIATE")
    return holder


@pytest.mark.empty_database
def test_opening_waits_for_a_fresh_database_locked_by_another_opener(
    database: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Switching a fresh file into WAL failed at once with
    "database is locked" when another connection was switching it (or writing it) at the
    same moment. The switch now waits, up to the busy timeout, like every other lock."""
    if not database.startswith("sqlite"):
        pytest.skip("journal modes are SQLite's")
    path = database.split("///", 1)[1]
    holder = _holding_a_rollback_journal_write_lock(path)
    try:
        started = time.monotonic()
        with pytest.raises(StoreBusy):
            Engine(database, busy_timeout_s=0.3)
        assert time.monotonic() - started >= 0.3
        # The switch is retried: seen by its first wait; then the lock goes away.
        waiting = threading.Event()
        real_sleep = time.sleep
        clock = types.SimpleNamespace(
            monotonic=time.monotonic, sleep=lambda s: (waiting.set(), real_sleep(s))
        )
        monkeypatch.setattr(_db, "time", clock)
        opened: list[Engine | Exception] = []

        def open_engine() -> None:
            try:
                opened.append(Engine(database))
            except Exception as exc:
                opened.append(exc)

        thread = threading.Thread(target=open_engine)
        thread.start()
        assert waiting.wait(JOIN_TIMEOUT_S), opened
    finally:
        holder.rollback()
        holder.close()
    thread.join(JOIN_TIMEOUT_S)
    assert len(opened) == 1
    assert isinstance(opened[0], Engine), opened
    with opened[0] as engine:
        assert engine.stores.create("s").name == "s"
        assert list(engine.iter_fsck_findings()) == []


def _open_in_a_process(database: str, start: Any, results: Any) -> None:
    try:
        start.wait(JOIN_TIMEOUT_S)
        Engine(database).close()
        results.put("opened")
    except Exception as exc:  # reported to the parent, which fails the test
        results.put(repr(exc))


def _burn_cpu(until: float) -> None:
    while time.monotonic() < until:
        pass


def test_eight_servers_opening_fresh_databases_at_once_under_load(tmp_path: Path) -> None:
    """The stress version of the test above: eight processes open the
    same fresh SQLite file at once, several rounds, with two CPU burners beside them. It
    failed about one round in twenty before the fix."""
    context = multiprocessing.get_context("fork")
    burners = [context.Process(target=_burn_cpu, args=(time.monotonic() + 120,)) for _ in range(2)]
    for burner in burners:
        burner.start()
    try:
        for round_ in range(STRESS_ROUNDS):
            database = f"sqlite:///{tmp_path / f'fresh-{round_}.db'}"
            start = context.Event()
            results = context.Queue()
            openers = [
                context.Process(target=_open_in_a_process, args=(database, start, results))
                for _ in range(8)
            ]
            for opener in openers:
                opener.start()
            start.set()
            outcomes = [results.get(timeout=JOIN_TIMEOUT_S) for _ in openers]
            for opener in openers:
                opener.join(JOIN_TIMEOUT_S)
            assert outcomes == ["opened"] * 8, (round_, outcomes)
            with Engine(database) as engine:
                assert list(engine.iter_fsck_findings()) == []
    finally:
        for burner in burners:
            burner.kill()
            burner.join()


@pytest.mark.empty_database
def test_upgrading_0002_erases_the_paths_redactions_left(database: str) -> None:
    """Migration 0003 (SPEC §2: a redaction erases the path): redactions and hard deletes
    made at 0002 kept the path in the tombstone, its deleted version and the change feed."""
    from alembic import command

    with Engine(database) as engine:
        store = engine.stores.create("s")
        redacted = engine.for_caller(actor=ACTOR).memories.create(store.id, "/secret-name.md", "x")
        hard = engine.for_caller(actor=ACTOR).memories.create(store.id, "/hard-secret.md", "y")
        kept = engine.for_caller(actor=ACTOR).memories.create(store.id, "/kept.md", "z")
        engine.for_caller(actor=ACTOR).memories.delete(
            store.id, redacted.id, mode=DeleteMode.REDACT
        )
        engine.for_caller(actor=ACTOR).memories.delete(
            store.id, hard.id, mode=DeleteMode.HARD_DELETE
        )
    raw = create_engine(database)
    try:
        with raw.begin() as conn:
            config = alembic_config()
            config.attributes["connection"] = conn
            command.downgrade(config, "0002")
            # What a redaction at 0002 wrote.
            conn.execute(
                text("UPDATE memories SET path = '/secret-name.md' WHERE id = :id").bindparams(
                    id=redacted.id
                )
            )
            conn.execute(
                text(
                    "UPDATE versions SET path = '/secret-name.md', redacted_at = NULL, "
                    "redacted_by_type = NULL, redacted_by_id = NULL "
                    "WHERE memory_id = :id AND operation = 'deleted'"
                ).bindparams(id=redacted.id)
            )
            conn.execute(
                text(
                    "UPDATE changes SET path = '/hard-secret.md' WHERE memory_id = :id"
                ).bindparams(id=hard.id)
            )
    finally:
        raw.dispose()
    with Engine(database) as engine:
        assert list(engine.iter_fsck_findings()) == []
        paths = {c.path for c in engine.feed.changes_since(store.id, 0)} | {
            c.old_path for c in engine.feed.changes_since(store.id, 0)
        }
        assert paths == {None, "/kept.md"}
        deleted = engine.versions.list(store.id, memory_id=redacted.id).items[0]
        assert deleted.path is None
        assert deleted.redacted_at == deleted.created_at
        assert deleted.redacted_by == ACTOR
        assert engine.memories.get(store.id, kept.id).path == "/kept.md"
