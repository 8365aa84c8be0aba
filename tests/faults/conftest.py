"""Fixtures of the fault tests (issue 4 §3): real processes only.

- ``engine``: an engine on ``$MEMFS_HOME/memfs.db``, the database the server serves (and
  embedded mounts use).
- ``server``: ``memfs serve`` on loopback over that database; tests kill and restart
  it. At teardown it must stop cleanly, and no run may have logged a traceback.
- ``mounter``: the FUSE tests' :class:`Mounter`: embedded mounts, and every remote mount
  started with :func:`faults_helpers.mount_remote`, are unmounted at teardown with the
  same checks (daemon exit status, no unannounced WARNING/ERROR in its log); then
  ``memfs fsck`` must say the database is clean.
- ``make_store``, ``make_session``: a store with memories; a session token on stores.

Every test here gets the ``fuse`` marker. The FUSE tests' helper module is imported
from ``tests/fuse`` (one copy of the mount helpers).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

_HERE = Path(__file__).parent
sys.path.insert(0, str(_HERE.parent / "fuse"))

from faults_helpers import Server  # noqa: E402
from fuse_helpers import FUSE_UNAVAILABLE_REASON, MEMFS, Mounter, run  # noqa: E402

from memfs.model import Access, MemoryStore  # noqa: E402
from memfs.store import Engine, ResourceSpec, open_engine  # noqa: E402


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if _HERE in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.fuse)


@pytest.fixture
def fuse_available() -> None:
    if FUSE_UNAVAILABLE_REASON is not None:
        pytest.skip(FUSE_UNAVAILABLE_REASON)


@pytest.fixture
def engine(memfs_home: Path) -> Iterator[Engine]:
    engine = open_engine()
    try:
        yield engine
    finally:
        engine.close()


@pytest.fixture
def server(engine: Engine, memfs_home: Path, tmp_path: Path) -> Iterator[Server]:
    log_dir = tmp_path / "server-logs"
    log_dir.mkdir()
    server = Server(memfs_home / "memfs.db", log_dir)
    server.start()
    try:
        yield server
    finally:
        server.stop()
    assert server.tracebacks() == [], "the server logged a traceback"


@pytest.fixture
def mounter(
    fuse_available: None, server: Server, engine: Engine, tmp_path: Path
) -> Iterator[Mounter]:
    mounter = Mounter(tmp_path, engine)
    try:
        yield mounter
    finally:
        mounter.close()
    # `memfs fsck` itself (issue 4: "memfs fsck is clean after each"), on the server's
    # database while the server still runs.
    checked = run(MEMFS, "fsck", "--database", str(server.database), check=False)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert checked.stdout.startswith("fsck: clean"), checked.stdout


@pytest.fixture
def make_store(engine: Engine) -> Callable[..., MemoryStore]:
    def make(name: str = "Notes", files: dict[str, str] | None = None) -> MemoryStore:
        store = engine.create_store(name)
        for path, content in (files or {}).items():
            engine.create_memory(store.id, path, content, actor=None)
        return store

    return make


@pytest.fixture
def make_session(engine: Engine) -> Callable[..., str]:
    """``make_session(store, (other, "read_only"), …)`` → a session token."""

    def make(*stores: MemoryStore | tuple[MemoryStore, str]) -> str:
        specs = []
        for item in stores:
            store, access = item if isinstance(item, tuple) else (item, "read_write")
            specs.append(ResourceSpec(store.id, Access(access)))
        _, token = engine.create_session(specs, mount_root="/mnt/memory")
        assert token is not None
        return token

    return make
