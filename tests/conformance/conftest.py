"""Fixtures of the conformance tests (README "Conformance"):
pjdfstest and fsx-text, third-party suites, run against a real embedded mount.

- ``conformance_build``: the suites, built once by ``scripts/build-conformance`` into a
  cache outside the repository (keyed by the sources' sha256) and reused by later runs.
  Skips only when FUSE is unavailable or the third-party sources are not on this
  machine (``$MEMFS_CONFORMANCE_SOURCES``), naming what is missing; a missing build
  tool or a failed build fails.
- ``store_mount``: one store, "Conformance" (directory ``conformance``), mounted for
  real by a ``memfs mount`` daemon (:class:`_support.mount.Mounter`) on
  ``$MEMFS_HOME/memfs.db``. At teardown the mount is unmounted with the Mounter's checks
  (the daemon's exit status, no WARNING/ERROR in its log the test did not announce),
  then fsck must find nothing.

The tests that mount carry the ``fuse`` marker themselves (``pytestmark``): the checks
of the expectations file in this directory need no FUSE.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from _support.mount import FUSE_UNAVAILABLE_REASON, Mounter
from conformance_helpers import STORE_NAME, Build, SourcesMissing, StoreMount, build_suites

from memfs.store import open_engine


@pytest.fixture(scope="session")
def conformance_build() -> Build:
    # Session fixtures are set up before the function ones: don't build for nothing.
    if FUSE_UNAVAILABLE_REASON is not None:
        pytest.skip(FUSE_UNAVAILABLE_REASON)
    try:
        return build_suites()
    except SourcesMissing as exc:
        pytest.skip(f"the conformance suites' sources are not on this machine: {exc}")


@pytest.fixture
def store_mount(memfs_home: Path, tmp_path: Path) -> Iterator[StoreMount]:
    if FUSE_UNAVAILABLE_REASON is not None:
        pytest.skip(FUSE_UNAVAILABLE_REASON)
    engine = open_engine()
    try:
        store = engine.stores.create(STORE_NAME)
        mounter = Mounter(tmp_path, engine)
        try:
            yield StoreMount(engine, store, mounter.mount(STORE_NAME))
        finally:
            mounter.close()
        findings = list(engine.iter_fsck_findings())
        assert findings == [], "fsck found problems after the test:\n" + "\n".join(findings)
    finally:
        engine.close()
