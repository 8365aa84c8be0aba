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
        store = engine.create_store("s")
        target = engine.create_memory(store.id, "/t.md", "target", actor=ACTOR)
        record = engine.create_memory(
            store.id,
            "/r.md",
            "---\ntype: semantic\ntags: [x]\nrelations: [{type: related_to, target: /t.md}]\n"
            "---\nbody\n",
            actor=ACTOR,
        )
        engine.create_memory(store.id, "/post.md", "---\ntype: post\n---\n", actor=ACTOR)
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
        (found,) = engine.list_records([store.id])
        assert (found.memory_id, found.tags) == (record.id, ("x",))
        assert found.relations[0].target_memory_id == target.id
        assert list(engine.iter_fsck_findings()) == []
