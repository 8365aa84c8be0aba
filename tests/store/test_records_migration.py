"""Migration 0005_records (SPEC §6): upgrading a database of 0004 builds the
record index from the live memories it holds."""

from __future__ import annotations

from alembic import command
from sqlalchemy import create_engine, inspect

from memfs.core.model import Actor
from memfs.store import Engine
from memfs.store._db import alembic_config

ACTOR = Actor.api_key("apikey_tests")


def test_upgrading_0004_builds_the_record_index(database: str) -> None:
    with Engine(database) as engine:
        store = engine.stores.create("s")
        target = engine.for_caller(actor=ACTOR).memories.create(store.id, "/t.md", "target")
        record = engine.for_caller(actor=ACTOR).memories.create(
            store.id,
            "/r.md",
            "---\ntype: semantic\ntags: [x]\nrelations: [{type: related_to, target: /t.md}]\n"
            "---\nbody\n",
        )
        engine.for_caller(actor=ACTOR).memories.create(
            store.id, "/post.md", "---\ntype: post\n---\n"
        )
    raw = create_engine(database)
    try:
        with raw.begin() as conn:
            config = alembic_config()
            config.attributes["connection"] = conn
            command.downgrade(config, "0004")
            assert "records" not in inspect(conn).get_table_names()
    finally:
        raw.dispose()
    with Engine(database) as engine:  # opening upgrades
        (found,) = engine.records.list([store.id])
        assert (found.memory_id, found.tags) == (record.id, ("x",))
        assert found.relations[0].target_memory_id == target.id
        assert list(engine.iter_fsck_findings()) == []
