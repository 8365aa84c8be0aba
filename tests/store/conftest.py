"""Fixtures of the store engine's tests (those of tests/conftest.py come first).

- ``actor``: the api_actor every test writes as.
- ``store``: a fresh store in ``engine``.
- ``second_engine``: another :class:`Engine` on the same database as ``engine`` (a second
  API server); the ``engine`` fixture's fsck still checks the database at teardown.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from store_helpers import ACTOR

from memfs.core.model import Actor, MemoryStore
from memfs.store import Engine


@pytest.fixture
def actor() -> Actor:
    return ACTOR


@pytest.fixture
def store(engine: Engine) -> MemoryStore:
    return engine.stores.create("test store")


@pytest.fixture
def second_engine(engine: Engine, database: str) -> Iterator[Engine]:
    other = Engine(database)
    try:
        yield other
    finally:
        other.close()
