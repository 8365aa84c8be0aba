"""Fixtures of the visibility tests (SPEC §6, visibility by user and role).

- ``fuse_available``: skips a test where FUSE can't be used (the reason is named).
- ``store_engine``: an engine on ``$MEMFS_HOME/memfs.db``, the database the server
  serves.
- ``server``: a real ``memfs serve`` on loopback over that database; at teardown it
  must stop cleanly without a traceback in its log.
- ``mounter``: :class:`_support.mount.Mounter`; at teardown every mount is unmounted
  with its checks, then ``memfs fsck`` must find the database clean.
- ``sdk``: ``sdk(secret)`` → an ``anthropic.Anthropic`` client of ``server``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import anthropic
import pytest
from _support.mount import FUSE_UNAVAILABLE_REASON, MEMFS, Mounter, run
from _support.serve import ServeProcess

from memfs.store import Engine, open_engine

SDK_TIMEOUT_S = 30.0


@pytest.fixture
def fuse_available() -> None:
    if FUSE_UNAVAILABLE_REASON is not None:
        pytest.skip(FUSE_UNAVAILABLE_REASON)


@pytest.fixture
def store_engine(memfs_home: Path) -> Iterator[Engine]:
    engine = open_engine()
    try:
        yield engine
    finally:
        engine.close()


@pytest.fixture
def server(store_engine: Engine, memfs_home: Path, tmp_path: Path) -> Iterator[ServeProcess]:
    log_dir = tmp_path / "server-logs"
    log_dir.mkdir()
    server = ServeProcess(memfs_home / "memfs.db", log_dir)
    try:
        yield server
    finally:
        status = server.stop()
    assert status == 0, f"memfs serve exited {status}:\n{server.log_text()}"
    assert server.tracebacks() == [], "the server logged a traceback"


@pytest.fixture
def sdk(server: ServeProcess) -> Iterator[Callable[[str], anthropic.Anthropic]]:
    clients: list[anthropic.Anthropic] = []

    def make(secret: str) -> anthropic.Anthropic:
        clients.append(
            anthropic.Anthropic(api_key=secret, base_url=server.url, timeout=SDK_TIMEOUT_S)
        )
        return clients[-1]

    try:
        yield make
    finally:
        for client in clients:
            client.close()


@pytest.fixture
def mounter(
    fuse_available: None, server: ServeProcess, store_engine: Engine, tmp_path: Path
) -> Iterator[Mounter]:
    mounter = Mounter(tmp_path, store_engine)
    try:
        yield mounter
    finally:
        mounter.close()
    checked = run(MEMFS, "fsck", "--database", str(server.database), check=False)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert checked.stdout.startswith("fsck: clean"), checked.stdout
