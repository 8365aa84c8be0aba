"""Fixtures shared by the FUSE tests (``tests/fuse``) and the fault tests
(``tests/faults``): both conftests import them from here, so one copy serves both.

- ``fuse_available``: skips (with the precise reason) only when FUSE truly is absent.
- ``store_engine``: an engine on ``$MEMFS_HOME/memfs.db``, the database that the mount
  daemons, the CLI and ``memfs serve`` of these tests use. Not the top-level ``engine``
  fixture (a fresh database of each dialect, unseen by any subprocess).
- ``make_store``: creates a store with optional ``{path: content}`` memories.
- ``mounter``: :class:`_support.mount.Mounter`; at teardown every mount is unmounted
  with its checks, then fsck (in-process, on ``store_engine``) must find nothing. Used
  by the FUSE, memory-tool and operations tests; the fault tests keep their own, which
  runs ``memfs fsck`` on the server's database while the server still runs.
- :func:`mark_fuse_tests`: what each conftest's ``pytest_collection_modifyitems`` does.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from _support.mount import FUSE_UNAVAILABLE_REASON, Mounter

from memfs.core.model import MemoryStore
from memfs.store import Engine, open_engine


def mark_fuse_tests(items: list[pytest.Item], directory: Path) -> None:
    """Gives the ``fuse`` marker to the tests below ``directory``. (The hook sees every
    test of the session, not only those of the conftest's directory.)"""
    for item in items:
        if directory in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.fuse)


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
def make_store(store_engine: Engine) -> Callable[..., MemoryStore]:
    def make(name: str = "Notes", files: dict[str, str] | None = None) -> MemoryStore:
        store = store_engine.stores.create(name)
        for path, content in (files or {}).items():
            store_engine.memories.create(store.id, path, content)
        return store

    return make


@pytest.fixture
def mounter(
    fuse_available: None, memfs_home: Path, tmp_path: Path, store_engine: Engine
) -> Iterator[Mounter]:
    mounter = Mounter(tmp_path, store_engine)
    try:
        yield mounter
    finally:
        mounter.close()
    findings = list(store_engine.iter_fsck_findings())
    assert findings == [], "fsck found problems after the test:\n" + "\n".join(findings)
