"""Fixtures of the fault tests: real processes only.

- ``fuse_available``, ``store_engine``, ``make_store``: those of the FUSE tests
  (``tests/fuse/fuse_fixtures.py``); ``store_engine`` is an engine on
  ``$MEMFS_HOME/memfs.db``, the database the server serves (and embedded mounts use).
- ``server``: ``memfs serve`` on loopback over that database; tests kill and restart
  it. At teardown it must stop cleanly, and no run may have logged a traceback.
- ``mounter``: :class:`_support.mount.Mounter`: embedded mounts, and every remote mount
  started with :func:`faults_helpers.mount_remote`, are unmounted at teardown with the
  same checks (daemon exit status, no unannounced WARNING/ERROR in its log); then
  ``memfs fsck`` must say the database is clean.
- ``make_session``: a session token on stores.
- ``make_remote_mount``: a live remote mount of a new session on stores.

Every test here gets the ``fuse`` marker. The FUSE tests' helper modules are imported
from ``tests/fuse`` (one copy of the mount helpers and fixtures).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

_HERE = Path(__file__).parent
sys.path.insert(0, str(_HERE.parent / "fuse"))

import fuse_fixtures  # noqa: E402
from _support.mount import MEMFS, Mount, Mounter, run  # noqa: E402
from faults_helpers import Server, mount_remote  # noqa: E402

from memfs.core.model import Access, MemoryStore  # noqa: E402
from memfs.store import Engine, ResourceSpec  # noqa: E402

# Shared with tests/fuse; naming them in this module is what makes them this
# directory's fixtures.
fuse_available = fuse_fixtures.fuse_available
store_engine = fuse_fixtures.store_engine
make_store = fuse_fixtures.make_store


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    fuse_fixtures.mark_fuse_tests(items, _HERE)


@pytest.fixture
def server(store_engine: Engine, memfs_home: Path, tmp_path: Path) -> Iterator[Server]:
    log_dir = tmp_path / "server-logs"
    log_dir.mkdir()
    server = Server(memfs_home / "memfs.db", log_dir)
    server.start()
    try:
        yield server
    finally:
        running = server.process is not None and server.process.poll() is None
        status = server.stop()
    if running:  # a test may end with the server killed
        assert status == 0, f"memfs serve exited {status}:\n{server.log_text()}"
    assert server.tracebacks() == [], "the server logged a traceback"


@pytest.fixture
def mounter(
    fuse_available: None, server: Server, store_engine: Engine, tmp_path: Path
) -> Iterator[Mounter]:
    mounter = Mounter(tmp_path, store_engine)
    try:
        yield mounter
    finally:
        mounter.close()
    # `memfs fsck` itself (a fault leaves the database consistent), on the server's
    # database while the server still runs.
    checked = run(MEMFS, "fsck", "--database", str(server.database), check=False)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert checked.stdout.startswith("fsck: clean"), checked.stdout


@pytest.fixture
def make_session(store_engine: Engine) -> Callable[..., str]:
    """``make_session(store, (other, "read_only"), …)`` → a session token."""

    def make(*stores: MemoryStore | tuple[MemoryStore, str]) -> str:
        specs = []
        for item in stores:
            store, access = item if isinstance(item, tuple) else (item, "read_write")
            specs.append(ResourceSpec(store.id, Access(access)))
        _, token = store_engine.sessions.create(specs, mount_root="/mnt/memory")
        assert token is not None
        return token

    return make


@pytest.fixture
def make_remote_mount(
    mounter: Mounter, server: Server, make_session: Callable[..., str]
) -> Callable[..., Mount]:
    """``make_remote_mount(store, (other, "read_only"), …, layout="flat")`` → a live
    remote mount (:func:`faults_helpers.mount_remote`) of a new session on those stores.
    A test that mounts one session twice calls ``mount_remote`` with its token."""

    def make(*stores: MemoryStore | tuple[MemoryStore, str], layout: str = "per-store") -> Mount:
        return mount_remote(mounter, server, make_session(*stores), layout=layout)

    return make
