"""Fixtures of the API tests: real ``memfs serve`` processes driven by the real SDK.

- ``api_database``: one fresh database per backend for the whole session: a SQLite
  file, and a PostgreSQL database created on ``$MEMFS_TEST_PG_URL`` (skipped when unset;
  ``scripts/test`` starts a server and sets it).
- ``server``: a ``memfs serve --port 0`` subprocess on that database (started once per
  backend), with an admin key made by ``memfs key create``. Its log must hold no
  traceback when the session ends.
- ``second_url``: a second ``memfs serve`` on the same database (concurrency tests).
- ``start_server``, ``spawn_server``: more servers on that database, by URL or as
  processes the test stops itself.
- ``admin``: an ``anthropic.Anthropic`` client with the admin key.
- ``store``: a fresh memory store for one test.

Tests never depend on what other tests left in the shared database: they work in their
own stores, and list stores only within a ``created_at[gte]`` window they opened.
"""

from __future__ import annotations

import json
import os
import subprocess
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anthropic
import httpx
import pytest
from _support.cli import memfs_env, run_memfs
from _support.serve import ServeProcess
from sqlalchemy import create_engine, text

from memfs.core.config import database_url
from memfs.core.model import Scope
from memfs.store import Engine

PG_URL_ENV = "MEMFS_TEST_PG_URL"
SDK_TIMEOUT_S = 30.0
SHA256_EMPTY = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"


def run_cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Runs ``memfs ARGS`` and returns the finished process (never raises on status)."""
    return run_memfs(*args, env=env, timeout_s=60)


class ServerProcess(ServeProcess):
    """A ``memfs serve`` subprocess on a free loopback port, logging into ``log_dir``."""


@dataclass
class Server:
    """A running server, the engine of its database (for keys), and its admin key."""

    url: str
    database: str
    engine: Engine
    admin_secret: str
    process: ServerProcess
    _clients: dict[str, anthropic.Anthropic] = field(default_factory=dict)

    def client(self, secret: str | None = None, **options: Any) -> anthropic.Anthropic:
        """An SDK client with ``secret`` (default: the admin key), cached per secret;
        ``options`` (e.g. another ``base_url``) make a new, uncached client."""
        secret = secret or self.admin_secret
        if options:
            options = {"base_url": self.url, "timeout": SDK_TIMEOUT_S} | options
            return anthropic.Anthropic(api_key=secret, **options)
        if secret not in self._clients:
            self._clients[secret] = anthropic.Anthropic(
                api_key=secret, base_url=self.url, timeout=SDK_TIMEOUT_S
            )
        return self._clients[secret]

    def key(self, *scopes: Scope, stores: tuple[str, ...] = ()) -> str:
        """A new API key secret with ``scopes``, optionally limited to ``stores``."""
        _, secret = self.engine.api_keys.create("test", list(scopes), list(stores))
        return secret

    def key_with_id(self, *scopes: Scope) -> tuple[str, str]:
        key, secret = self.engine.api_keys.create("test", list(scopes))
        return key.id, secret

    def http(self, secret: str | None = None) -> httpx.Client:
        """A raw HTTP client with ``Authorization: Bearer`` (for what the SDK can't send)."""
        headers = {"authorization": f"Bearer {secret or self.admin_secret}"}
        return httpx.Client(base_url=self.url, headers=headers, timeout=SDK_TIMEOUT_S)

    def session(self, *attachments: tuple[str, str]) -> dict[str, Any]:
        """A new session (with its ``token``) attaching ``(store_id, access)`` pairs."""
        resources = [
            {"type": "memory_store", "memory_store_id": store_id, "access": access}
            for store_id, access in attachments
        ]
        with self.http() as http:
            response = http.post("/v1/sessions", json={"resources": resources})
        assert response.status_code == 200, response.text
        session: dict[str, Any] = response.json()
        return session

    def close(self) -> None:
        for client in self._clients.values():
            client.close()


def _make_pg_database(base: str) -> tuple[str, Callable[[], None]]:
    admin = create_engine(database_url(base), isolation_level="AUTOCOMMIT")
    name = f"memfs_api_{uuid.uuid4().hex[:12]}"
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))

    def drop() -> None:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()

    return base.rsplit("/", 1)[0] + "/" + name, drop


@pytest.fixture(
    scope="session",
    params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)],
)
def api_database(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    """A fresh database of each backend, shared by the session, named as a user would
    give it to ``--database``: a SQLite file path, or a ``postgresql://`` URL."""
    if request.param == "sqlite":
        yield str(tmp_path_factory.mktemp("api-sqlite") / "store.db")
        return
    base = os.environ.get(PG_URL_ENV)
    if not base:
        pytest.skip(f"${PG_URL_ENV} is not set; scripts/test starts PostgreSQL and sets it")
    url, drop = _make_pg_database(base)
    try:
        yield url
    finally:
        drop()


def server_env(home: Path) -> dict[str, str]:
    return memfs_env(home)


@pytest.fixture(scope="session")
def server(api_database: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """``memfs serve`` on ``api_database`` with an admin key from ``memfs key create``."""
    home = tmp_path_factory.mktemp("api-home")
    env = server_env(home)
    created = run_cli(
        "key", "create", "--scope", "admin", "--database", api_database, "--json", env=env
    )
    assert created.returncode == 0, created.stderr
    secret = json.loads(created.stdout)["secret"]
    process = ServerProcess(api_database, home, env=env)
    engine = Engine(database_url(api_database))
    result = Server(process.url, api_database, engine, secret, process)
    try:
        yield result
    finally:
        result.close()
        status = process.stop()
        engine.close()
        log = process.log_text()
        assert status == 0, f"memfs serve exited with {status}:\n{log}"
        assert "Traceback" not in log, f"the server logged a traceback:\n{log}"


@pytest.fixture(scope="session")
def second_url(server: Server, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The URL of a second ``memfs serve`` on the database of ``server``."""
    home = tmp_path_factory.mktemp("api-second-home")
    process = ServerProcess(server.database, home, env=server_env(home))
    try:
        yield process.url
    finally:
        status = process.stop()
        log = process.log_text()
        assert status == 0, f"the second memfs serve exited with {status}:\n{log}"
        assert "Traceback" not in log, f"the second server logged a traceback:\n{log}"


@pytest.fixture
def start_server(server: Server, tmp_path: Path) -> Iterator[Callable[..., str]]:
    """Starts more ``memfs serve`` processes on the database of ``server`` with extra
    environment variables (e.g. ``MEMFS_MEMORY_LIMIT``); returns their URL."""
    processes: list[ServerProcess] = []

    def start(**environment: str) -> str:
        home = tmp_path / f"server-{len(processes)}"
        home.mkdir()
        env = server_env(home) | environment
        processes.append(ServerProcess(server.database, home, env=env))
        return processes[-1].url

    yield start
    for process in processes:
        status = process.stop()
        log = process.log_text()
        assert status == 0, log
        assert "Traceback" not in log, log


@pytest.fixture
def spawn_server(server: Server, tmp_path: Path) -> Iterator[Callable[[], ServerProcess]]:
    """Starts more ``memfs serve`` processes on the database of ``server`` that the test
    may stop itself (``ServerProcess.stop``); the others are stopped at teardown, and
    every one must have exited with 0 and logged no traceback."""
    processes: list[ServerProcess] = []

    def spawn() -> ServerProcess:
        home = tmp_path / f"spawned-{len(processes)}"
        home.mkdir()
        processes.append(ServerProcess(server.database, home, env=server_env(home)))
        return processes[-1]

    yield spawn
    for process in processes:
        status = process.stop()
        log = process.log_text()
        assert status == 0, log
        assert "Traceback" not in log, log


@pytest.fixture
def memfs_cli(tmp_path: Path) -> Callable[..., subprocess.CompletedProcess[str]]:
    """Runs ``memfs ARGS`` with a private ``$MEMFS_HOME``; returns the finished process."""
    env = server_env(tmp_path)

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return run_cli(*args, env=env)

    return run


@pytest.fixture
def admin(server: Server) -> anthropic.Anthropic:
    return server.client()


@pytest.fixture
def store(admin: anthropic.Anthropic) -> Any:
    """A fresh memory store (``BetaManagedAgentsMemoryStore``)."""
    return admin.beta.memory_stores.create(name=f"test {uuid.uuid4().hex[:8]}")
