"""Fixtures of the seed 003/004 surface tests: a real ``memfs serve`` per
backend driven by the unmodified ``anthropic`` SDK, and raw HTTP where the SDK has no
method (the store-less routes, restore).

- ``api_database``: a SQLite file, or a fresh PostgreSQL database on ``$MEMFS_TEST_PG_URL``
  (skipped when unset), for the whole session; fsck must find nothing in it at the end.
- ``api``: ``memfs serve`` on it, with an engine for making keys and sessions.
- ``store``: a fresh store of one test.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anthropic
import httpx
import pytest
from _support.cli import fsck_findings, memfs_env
from _support.serve import ServeProcess
from sqlalchemy import create_engine, text

from memfs.core.config import database_url
from memfs.core.model import Access, Scope
from memfs.store import Engine, ResourceSpec

PG_URL_ENV = "MEMFS_TEST_PG_URL"
TIMEOUT_S = 30.0


@dataclass
class Api:
    """A running server, the engine of its database, and its admin key."""

    url: str
    database: str
    engine: Engine
    admin_secret: str
    _clients: list[Any] = field(default_factory=list)

    def sdk(self, secret: str | None = None) -> anthropic.Anthropic:
        """The unmodified SDK with ``secret`` (default: the admin key)."""
        client = anthropic.Anthropic(
            api_key=secret or self.admin_secret, base_url=self.url, timeout=TIMEOUT_S
        )
        self._clients.append(client)
        return client

    def http(self, secret: str | None = None, *, header: str = "authorization") -> httpx.Client:
        """Raw HTTP with the key as ``Authorization: Bearer`` or (seed 004) ``X-API-Key``."""
        token = secret or self.admin_secret
        value = f"Bearer {token}" if header == "authorization" else token
        client = httpx.Client(base_url=self.url, headers={header: value}, timeout=TIMEOUT_S)
        self._clients.append(client)
        return client

    def key(self, *scopes: Scope, stores: tuple[str, ...] = ()) -> str:
        _, secret = self.engine.api_keys.create("seedapi test", list(scopes), list(stores))
        return secret

    def session_token(self, store_id: str, access: Access) -> str:
        """A session token attaching ``store_id`` with ``access``."""
        _, token = self.engine.sessions.create([ResourceSpec(store_id, access)])
        assert token is not None
        return token

    def close(self) -> None:
        for client in self._clients:
            client.close()


@pytest.fixture(
    scope="session",
    params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)],
)
def api_database(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    if request.param == "sqlite":
        path = str(tmp_path_factory.mktemp("seedapi-sqlite") / "store.db")
        yield path
        assert fsck_findings(path) == []
        return
    base = os.environ.get(PG_URL_ENV)
    if not base:
        pytest.skip(f"${PG_URL_ENV} is not set; scripts/test starts PostgreSQL and sets it")
    admin = create_engine(database_url(base), isolation_level="AUTOCOMMIT")
    name = f"memfs_seedapi_{uuid.uuid4().hex[:12]}"
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    url = base.rsplit("/", 1)[0] + "/" + name
    try:
        yield url
        assert fsck_findings(url) == []
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


@pytest.fixture(scope="session")
def api(api_database: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Api]:
    home: Path = tmp_path_factory.mktemp("seedapi-home")
    engine = Engine(database_url(api_database))
    _, secret = engine.api_keys.create("seedapi admin", [Scope.ADMIN])
    process = ServeProcess(api_database, home, env=memfs_env(home))
    result = Api(process.url, api_database, engine, secret)
    try:
        yield result
    finally:
        result.close()
        status = process.stop()
        engine.close()
        log = process.log_text()
        assert status == 0, f"memfs serve exited with {status}:\n{log}"
        assert "Traceback" not in log, f"the server logged a traceback:\n{log}"


@pytest.fixture
def store(api: Api) -> Any:
    """A fresh memory store (``BetaManagedAgentsMemoryStore``)."""
    return api.sdk().beta.memory_stores.create(name=f"seedapi {uuid.uuid4().hex[:8]}")
