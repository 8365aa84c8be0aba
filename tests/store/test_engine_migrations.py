"""Schema and migrations: a fresh database is built from ``schema.metadata`` and stamped at
the Alembic head, the live schema matches the metadata exactly, and reopening works."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import create_engine, inspect

from memfs.model import Actor, utcnow
from memfs.store import Engine, ResourceSpec
from memfs.store._db import SCHEMA_HEAD, alembic_config
from memfs.store.schema import metadata
from memfs.store.search import PG_INDEXES, SQLITE_FTS_PREFIX

ACTOR = Actor.api_key("apikey_tests")


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


def test_single_linear_history() -> None:
    script = ScriptDirectory.from_config(alembic_config())
    assert len(script.get_heads()) == 1
    assert len(script.get_bases()) == 1


def test_reopening_keeps_data_and_revision(engine: Engine, database: str) -> None:
    store = engine.create_store("persistent")
    memory = engine.create_memory(store.id, "/a", "kept", actor=ACTOR)
    engine.close()
    reopened = Engine(database)
    try:
        assert reopened.get_memory(store.id, memory.id).content == "kept"
        reopened.create_memory(store.id, "/b", "after reopen", actor=ACTOR)
        assert list(reopened.iter_fsck_findings()) == []
    finally:
        reopened.close()
    with Engine(database) as third:
        assert [m.path for m in third.all_memories(store.id)] == ["/a", "/b"]


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
        store = engines[0].create_store("shared")
        assert engines[3].get_store(store.id) == store
        assert list(engines[1].iter_fsck_findings()) == []
    finally:
        for eng in engines:
            eng.close()


def test_schema_head_constant_matches_the_migration_scripts() -> None:
    """_db.SCHEMA_HEAD lets an up-to-date database open without loading Alembic; it must
    name the newest migration, or every open would take the slow path (or skip one)."""
    from alembic.script import ScriptDirectory

    assert ScriptDirectory.from_config(alembic_config()).get_current_head() == SCHEMA_HEAD


@pytest.mark.empty_database
def test_upgrading_0001_gives_sessions_a_lifecycle(database: str) -> None:
    """Migration 0002 (issue 11 item 1), and every later one: a database at 0001 with a
    token session and a tokenless one upgrades on open; the token gets 24 h from the
    upgrade, the tokenless one no expiry, and the schema then matches the metadata."""
    from alembic import command

    with Engine(database) as engine:
        store = engine.create_store("s")
        with_token, token = engine.create_session([ResourceSpec(store.id)])
        tokenless, _ = engine.create_session([ResourceSpec(store.id)], with_token=False)
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
        upgraded = engine.authenticate_session(token)
        assert upgraded.expires_at is not None
        assert timedelta(hours=24) <= upgraded.expires_at - before < timedelta(hours=25)
        assert engine.get_session(tokenless.id).expires_at is None
        assert upgraded.resources == with_token.resources
        assert list(engine.iter_fsck_findings()) == []
    raw = create_engine(database)
    try:
        with raw.connect() as conn:
            context = MigrationContext.configure(
                conn, opts={"compare_type": True, "compare_server_default": True}
            )
            assert context.get_current_revision() == SCHEMA_HEAD
            assert schema_differences(context) == []
    finally:
        raw.dispose()
