"""Fixtures of the remote-mount tests (those of tests/conftest.py come first).

- ``store_engine``: a real :class:`memfs.store.Engine` on SQLite in the test's tmp dir,
  behind the real API.
- ``rw_store``, ``ro_store``: two stores; the server's session attaches the first
  ``read_write`` and the second ``read_only``.
- ``server``: :class:`live_server.LiveServer`, the in-process API.
- ``client``: a :class:`memfs.remote.MemfsClient` holding only the session token.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from live_server import BASE_URL, LiveServer

from memfs.core.config import database_url
from memfs.core.model import Access, MemoryStore
from memfs.remote import MemfsClient
from memfs.store import Engine, ResourceSpec


@pytest.fixture
def store_engine(tmp_path: Path) -> Iterator[Engine]:
    engine = Engine(database_url(str(tmp_path / "server.db")))
    try:
        yield engine
        findings = list(engine.iter_fsck_findings())
        assert findings == [], "fsck found problems:\n" + "\n".join(findings)
    finally:
        engine.close()


@pytest.fixture
def rw_store(store_engine: Engine) -> MemoryStore:
    return store_engine.stores.create("Notes")


@pytest.fixture
def ro_store(store_engine: Engine) -> MemoryStore:
    return store_engine.stores.create("Reference")


@pytest.fixture
def server(store_engine: Engine, rw_store: MemoryStore, ro_store: MemoryStore) -> LiveServer:
    return LiveServer(
        store_engine,
        [
            ResourceSpec(rw_store.id, Access.READ_WRITE),
            ResourceSpec(ro_store.id, Access.READ_ONLY),
        ],
    )


@pytest.fixture
async def client(server: LiveServer) -> AsyncIterator[MemfsClient]:
    async with MemfsClient(BASE_URL, server.token, transport=server.transport()) as client:
        yield client
