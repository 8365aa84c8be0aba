"""Fixtures of the identity tests (SPEC §8) beside those of tests/conftest.py:

- ``identity_server``: a real ``memfs serve`` on a fresh SQLite database of the test
  (its own ``$MEMFS_HOME``), with an admin key; at teardown it must exit 0 with no
  traceback in its log, and fsck must find nothing.
- ``admin_client``: the unmodified ``anthropic`` SDK with that key.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import anthropic
import pytest
from _support.cli import Cli, fsck_findings, memfs_env
from _support.serve import ServeProcess
from identity_helpers import SDK_TIMEOUT_S, IdentityServer

from memfs.core.config import database_url
from memfs.core.model import Scope
from memfs.store import Engine


@pytest.fixture
def identity_server(tmp_path: Path) -> Iterator[IdentityServer]:
    home = tmp_path / "server-home"
    home.mkdir(mode=0o700)
    database = home / "memfs.db"
    engine = Engine(database_url(str(database)))
    _, secret = engine.api_keys.create("admin", [Scope.ADMIN])
    process = ServeProcess(database, home, env=memfs_env(home))
    try:
        yield IdentityServer(process.url, database, engine, secret)
    finally:
        status = process.stop()
        engine.close()
        log = process.log_text()
        assert status == 0, f"memfs serve exited with {status}:\n{log}"
        assert "Traceback" not in log, log
    assert fsck_findings(database) == []


@pytest.fixture
def admin_client(identity_server: IdentityServer) -> Iterator[anthropic.Anthropic]:
    client = anthropic.Anthropic(
        api_key=identity_server.admin_secret, base_url=identity_server.url, timeout=SDK_TIMEOUT_S
    )
    try:
        yield client
    finally:
        client.close()


@pytest.fixture
def cli(memfs_home: Path) -> Iterator[Cli]:
    """The real ``memfs`` command on a fresh ``$MEMFS_HOME``; fsck clean at teardown."""
    runner = Cli(memfs_home)
    yield runner
    if runner.database.exists():
        assert fsck_findings(runner.database) == []
