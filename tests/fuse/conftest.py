"""Fixtures of the FUSE tests: real mounts served by a ``memfs mount`` daemon subprocess.

- ``fuse_available``: skips (with the precise reason) only when FUSE truly is absent.
- ``store_engine``: an engine on ``$MEMFS_HOME/memfs.db``, the database the daemon uses.
- ``make_store``: creates a store with optional ``{path: content}`` memories.
- ``mounter``: mounts for real; at teardown unmounts (even after a failure), checks that
  no stale mount is left, that the daemon exited 0, that its log holds no WARNING or
  ERROR the test did not announce, and that fsck finds nothing.

Every test in this directory gets the ``fuse`` marker.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from fuse_helpers import FUSE_UNAVAILABLE_REASON, Mount, Mounter

from memfs.model import MemoryStore
from memfs.store import Engine, open_engine

_HERE = Path(__file__).parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if _HERE in Path(str(item.fspath)).parents:
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
        store = store_engine.create_store(name)
        for path, content in (files or {}).items():
            store_engine.create_memory(store.id, path, content, actor=None)
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


@pytest.fixture
def mount(mounter: Mounter, make_store: Callable[..., MemoryStore]) -> Mount:
    """One read-write store named "Notes" (directory ``notes``) holding two memories."""
    make_store("Notes", {"/hello.md": "hello\n", "/projects/plan.md": "# Plan\n"})
    return mounter.mount("Notes")
