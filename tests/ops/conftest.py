"""Fixtures of the operations tests (backup and restore, metrics, logs): real processes.

- ``fuse_available``, ``store_engine`` (an engine on ``$MEMFS_HOME/memfs.db``, the
  database mounts and the server use), ``make_store``: those of the FUSE tests
  (``tests/fuse/fuse_fixtures.py``).
- ``mounter``: :class:`_support.mount.Mounter`; at teardown every mount is unmounted
  with its checks (daemon exit status, no unannounced WARNING/ERROR in its log), then
  fsck must find nothing.

Every test here that mounts (uses ``mounter``) gets the ``fuse`` marker.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

_HERE = Path(__file__).parent
sys.path.insert(0, str(_HERE.parent / "fuse"))

import fuse_fixtures  # noqa: E402

fuse_available = fuse_fixtures.fuse_available
store_engine = fuse_fixtures.store_engine
make_store = fuse_fixtures.make_store
mounter = fuse_fixtures.mounter


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The ``fuse`` marker for the tests here that mount (those using ``mounter``)."""
    for item in items:
        if _HERE in Path(str(item.fspath)).parents and "mounter" in getattr(
            item, "fixturenames", ()
        ):
            item.add_marker(pytest.mark.fuse)

