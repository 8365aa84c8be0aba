"""Fixtures of the remote-mount tests (those of tests/conftest.py come first).

- ``store_engine``: a real :class:`memfs.store.Engine` on SQLite in the test's tmp dir,
  standing behind the fake server.
- ``rw_store``, ``ro_store``: two stores; the fake's session attaches the first
  ``read_write`` and the second ``read_only``.
- ``fake``: :class:`remote_fake.FakeServer`, the in-process API.
- ``client``: a :class:`memfs.remote.MemfsClient` holding only the session token.
"""

from __future__ import annotations

import warnings
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from remote_fake import BASE_URL, FakeServer

from memfs.config import database_url
from memfs.model import Access, MemoryStore
from memfs.remote import MemfsClient
from memfs.store import Engine, ResourceSpec


@pytest.fixture(scope="session", autouse=True)
def _import_schemathesis_quietly() -> None:
    """The work-around of tests/store/conftest.py: schemathesis' pytest plugin imports
    ``schemathesis._hypothesis`` inside the first test, where jsonschema's
    DeprecationWarning is an error; import it once here with that warning ignored
    (until pyproject ignores it)."""
    with warnings.catch_warnings():
        warnings.filterwarnings(
            "ignore", "jsonschema.exceptions.RefResolutionError", DeprecationWarning
        )
        import schemathesis._hypothesis  # noqa: F401


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
    return store_engine.create_store("Notes")


@pytest.fixture
def ro_store(store_engine: Engine) -> MemoryStore:
    return store_engine.create_store("Reference")


@pytest.fixture
def fake(store_engine: Engine, rw_store: MemoryStore, ro_store: MemoryStore) -> FakeServer:
    return FakeServer(
        store_engine,
        [
            ResourceSpec(rw_store.id, Access.READ_WRITE),
            ResourceSpec(ro_store.id, Access.READ_ONLY),
        ],
    )


@pytest.fixture
async def client(fake: FakeServer) -> AsyncIterator[MemfsClient]:
    async with MemfsClient(BASE_URL, fake.token, transport=fake.transport()) as client:
        yield client
