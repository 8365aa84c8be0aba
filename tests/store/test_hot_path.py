"""The hot path of write transactions (memfs/store/_hot.py), on both dialects.

The statements every write runs bypass SQLAlchemy's execution machinery: the rows they
return must read like SQLAlchemy's, driver errors must come out as SQLAlchemy's (the
engine types contention from them), text with U+0000 is refused before the driver sees
it, and a statement that needs SQLAlchemy at execution time still runs through it.
"""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import bindparam, event, insert, select
from sqlalchemy.exc import IntegrityError

from memfs.core.errors import InvalidInput
from memfs.core.model import Actor, MemoryStore
from memfs.store import Engine, _hot
from memfs.store._common import _LOCK_STORE
from memfs.store.schema import stores

# Needs SQLAlchemy at execution: the IN list is rendered per call (expanding).
_STORES_IN = select(stores.c.id, stores.c.name).where(
    stores.c.id.in_(bindparam("ids", expanding=True))
)


def _statements_sqlalchemy_ran(engine: Engine) -> list[str]:
    """A list that collects every statement SQLAlchemy's cursor events see from now on."""
    seen: list[str] = []

    @event.listens_for(engine._sa, "before_cursor_execute")
    def _seen(_c: Any, _cur: Any, statement: str, *_args: Any) -> None:
        seen.append(statement)

    return seen


def test_hot_rows_read_like_sqlalchemy_rows(engine: Engine, store: MemoryStore) -> None:
    with engine._db.read() as conn:
        expected = conn.execute(_LOCK_STORE, {"store_id": store.id}).one()
        row = _hot.first(conn, _LOCK_STORE, {"store_id": store.id})
        everything = _hot.rows(conn, _LOCK_STORE, {"store_id": store.id})
        missing = _hot.first(conn, _LOCK_STORE, {"store_id": "memstore_nothing"})
    assert tuple(row) == tuple(expected)
    assert row.name == store.name
    assert dict(row._mapping) == dict(expected._mapping)
    assert [tuple(r) for r in everything] == [tuple(expected)]
    assert missing is None


def test_a_write_runs_its_hot_statements_past_sqlalchemy(
    engine: Engine, store: MemoryStore, actor: Actor
) -> None:
    seen = _statements_sqlalchemy_ran(engine)
    memory = engine.for_caller(actor=actor).memories.create(store.id, "/notes/a.md", "hello")
    engine.for_caller(actor=actor).memories.update(
        store.id,
        memory.id,
        content="hello again",
        expected_sha256=memory.content_sha256,
    )
    hot = [s for s in seen if s.lstrip().upper().startswith(("INSERT", "UPDATE", "SELECT"))]
    assert hot == [], f"statements still run through SQLAlchemy's execution: {hot}"
    assert engine.memories.get(store.id, memory.id).content == "hello again"


def test_driver_errors_come_out_as_sqlalchemy_errors(engine: Engine, store: MemoryStore) -> None:
    statement = insert(stores)
    with engine._db.read() as conn:
        row = dict(conn.execute(select(stores).where(stores.c.id == store.id)).one()._mapping)
    with pytest.raises(IntegrityError), engine._db.write() as conn:
        _hot.run(conn, statement, row)  # the same primary key again


def test_text_with_nul_is_refused_before_the_driver(engine: Engine, store: MemoryStore) -> None:
    with pytest.raises(InvalidInput, match="NUL"), engine._db.read() as conn:
        _hot.first(conn, _LOCK_STORE, {"store_id": "memstore_\x00"})


def test_a_statement_sqlalchemy_must_render_runs_through_it(
    engine: Engine, store: MemoryStore
) -> None:
    with engine._db.read() as conn:
        found = _hot.rows(conn, _STORES_IN, {"ids": [store.id, "memstore_none"]})
    assert [(r.id, r.name) for r in found] == [(store.id, store.name)]
