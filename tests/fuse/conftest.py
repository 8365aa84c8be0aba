"""Fixtures of the FUSE tests: real mounts served by a ``memfs mount`` daemon subprocess.

- ``fuse_available``, ``store_engine`` (an engine on ``$MEMFS_HOME/memfs.db``, the
  database the daemon uses), ``make_store``: from :mod:`fuse_fixtures`, shared with
  ``tests/faults``.
- ``mounter``: mounts for real; at teardown unmounts (even after a failure), checks that
  no stale mount is left, that the daemon exited 0, that its log holds no WARNING or
  ERROR the test did not announce, and that fsck finds nothing.

Every test in this directory gets the ``fuse`` marker.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import fuse_fixtures
import pytest
from _support.mount import Mount, Mounter

from memfs.core.model import MemoryStore

_HERE = Path(__file__).parent

# Shared with tests/faults; naming them in this module is what makes them this
# directory's fixtures.
fuse_available = fuse_fixtures.fuse_available
store_engine = fuse_fixtures.store_engine
make_store = fuse_fixtures.make_store
mounter = fuse_fixtures.mounter


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    fuse_fixtures.mark_fuse_tests(items, _HERE)



@pytest.fixture
def mount(mounter: Mounter, make_store: Callable[..., MemoryStore]) -> Mount:
    """One read-write store named "Notes" (directory ``notes``) holding two memories."""
    make_store("Notes", {"/hello.md": "hello\n", "/projects/plan.md": "# Plan\n"})
    return mounter.mount("Notes")
