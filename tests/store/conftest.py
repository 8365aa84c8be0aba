"""Helpers shared by the store engine's tests (fixtures of tests/conftest.py come first).

- ``actor``: the api_actor every test writes as.
- ``store``: a fresh store in ``engine``.
- ``second_engine``: another :class:`Engine` on the same database as ``engine`` (a second
  API server); the ``engine`` fixture's fsck still checks the database at teardown.
- :func:`snapshot`: everything observable about a store, to assert that a refused
  operation changed nothing.
- :func:`collect`: every item of a paginated listing, checking the cursor contract.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from memfs.model import Actor, MemoryStore, Page
from memfs.store import Engine

ACTOR = Actor.api_key("apikey_tests")


@pytest.fixture(scope="session", autouse=True)
def _import_schemathesis_quietly() -> None:
    """schemathesis' pytest plugin imports ``schemathesis._hypothesis`` inside the first
    test, where jsonschema's DeprecationWarning is an error under ``filterwarnings =
    error``; import it once here with that warning ignored (same work-around as
    tests/api/conftest.py, until pyproject ignores it)."""
    with warnings.catch_warnings():
        warnings.filterwarnings(
            "ignore", "jsonschema.exceptions.RefResolutionError", DeprecationWarning
        )
        import schemathesis._hypothesis  # noqa: F401


@pytest.fixture
def actor() -> Actor:
    return ACTOR


@pytest.fixture
def store(engine: Engine) -> MemoryStore:
    return engine.create_store("test store")


@pytest.fixture
def second_engine(engine: Engine, database: str) -> Iterator[Engine]:
    other = Engine(database)
    try:
        yield other
    finally:
        other.close()


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
    """Everything observable about one store and the database's row counts."""
    memories = engine.all_memories(store_id)
    return {
        "store": engine.get_store(store_id),
        "memories": [engine.get_memory(store_id, m.id) for m in memories],
        "deleted": engine.deleted_memories(store_id),
        "versions": collect(engine.list_versions, store_id=store_id, limit=100),
        "last_change_seq": engine.last_change_seq(store_id),
        "audit": engine.audit_events(store_id),
        "statistics": engine.statistics(),
    }
