"""Fixtures of the memory-tool tests.

- ``engine`` (top-level: SQLite and PostgreSQL, fsck at teardown): the embedded tests.
- ``store_engine`` (an engine on ``$MEMFS_HOME/memfs.db``, the database of the mount
  daemons and of ``memfs serve``), ``fuse_available``, ``server`` (a real ``memfs
  serve``): from :mod:`memory_helpers`.
- ``mounter``: the real-mount harness of ``tests/_support/mount.py``; at teardown every
  mount is unmounted and checked (daemon exit status, no unannounced WARNING/ERROR),
  then fsck.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import memory_helpers
import pytest
from _support.mount import Mounter

from memfs.store import Engine

store_engine = memory_helpers.store_engine
fuse_available = memory_helpers.fuse_available
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
