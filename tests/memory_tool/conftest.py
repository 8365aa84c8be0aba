"""Fixtures of the memory-tool tests.

- ``engine`` (top-level: SQLite and PostgreSQL, fsck at teardown): the embedded tests.
- ``fuse_available``, ``store_engine`` (an engine on ``$MEMFS_HOME/memfs.db``, the
  database of the mount daemons and of ``memfs serve``), ``make_store``: the FUSE tests'
  fixtures (``tests/fuse/fuse_fixtures.py``).
- ``mounter``: the FUSE tests' real-mount harness; at teardown every mount is unmounted
  and checked (daemon exit status, no unannounced WARNING/ERROR), then fsck.
- ``server``: a real ``memfs serve`` on ``$MEMFS_HOME/memfs.db`` (``tests/faults``'
  :class:`Server`); it must stop cleanly and log no traceback.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import _test_paths  # first: puts tests/fuse and tests/faults on sys.path
import fuse_fixtures
import memory_helpers
import pytest
from fuse_helpers import Mounter

from memfs.store import Engine

TESTS = _test_paths.TESTS
fuse_available = fuse_fixtures.fuse_available
store_engine = fuse_fixtures.store_engine
make_store = fuse_fixtures.make_store
server = memory_helpers.server


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
