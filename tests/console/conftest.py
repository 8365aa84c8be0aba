"""The console under test: the API app with the console mounted, as ``memfs serve``
builds it, over the test engine; a client that signs in through the form."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from _support.console import ConsoleClient
from starlette.testclient import TestClient

from memfs.api.app import create_app
from memfs.console import create_console
from memfs.core.model import Scope
from memfs.store import Engine


@pytest.fixture
def database(tmp_path) -> str:  # type: ignore[no-untyped-def]
    """SQLite only: the console's pages are dialect-blind (the store's tests cover both)."""
    from memfs.core.config import database_url

    return database_url(str(tmp_path / "store.db"))


@pytest.fixture
def app_client(engine: Engine) -> Iterator[TestClient]:
    app = create_app(engine, mounts={"/console": create_console})
    with TestClient(app) as client:
        yield client


@pytest.fixture
def console(app_client: TestClient) -> ConsoleClient:
    return ConsoleClient(app_client)


@pytest.fixture
def admin_secret(engine: Engine) -> str:
    _, secret = engine.api_keys.create("admin", [Scope.ADMIN])
    return secret
