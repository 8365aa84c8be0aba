"""Helpers of the store engine's tests (imported as ``store_helpers``: pytest puts this
directory on ``sys.path``).

- :func:`collect`: every item of a paginated listing, checking the cursor contract.
- :func:`snapshot`: everything observable about a store, to assert that a refused
  operation changed nothing.
- :func:`execute_sql`: one raw statement on a database, for tests that damage it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sqlalchemy import create_engine, text

from memfs.core.model import Actor, Page
from memfs.store import Engine

ACTOR = Actor.api_key("apikey_tests")


def collect(list_page: Callable[..., Page[Any]], **kwargs: Any) -> list[Any]:
    """Follows ``next_cursor`` to the end and returns every item.

    Asserts the api-contract §3 rules on the way: a page never exceeds ``limit``, a
    non-final page is never empty, and the last page says ``next_cursor=None``.
    """
    limit = kwargs.get("limit", 20)
    items: list[Any] = []
    cursor = None
    for _ in range(10_000):
        page = list_page(**kwargs, cursor=cursor)
        assert len(page.items) <= limit
        items.extend(page.items)
        if page.next_cursor is None:
            return items
        assert page.items, "a non-final page must not be empty"
        cursor = page.next_cursor
    raise AssertionError("pagination did not end")


def snapshot(engine: Engine, store_id: str) -> dict[str, Any]:
    """Everything observable about one store, and the database's row counts."""
    memories = engine.memories.all(store_id)
    return {
        "store": engine.stores.get(store_id),
        "memories": [engine.memories.get(store_id, m.id) for m in memories],
        "deleted": engine.memories.deleted(store_id),
        "versions": collect(engine.versions.list, store_id=store_id, limit=100),
        "last_change_seq": engine.feed.last_seq(store_id),
        "audit": engine.feed.audit_events(store_id),
        "statistics": engine.statistics(),
    }


def execute_sql(url: str, sql: str) -> None:
    """Runs one SQL statement in its own transaction on the database at ``url`` (an
    :attr:`Engine.url`), outside any engine: for tests that damage a database on purpose."""
    raw = create_engine(url)
    try:
        with raw.begin() as conn:
            conn.execute(text(sql))
    finally:
        raw.dispose()
