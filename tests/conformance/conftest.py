"""Fixtures of the conformance tests (issue 10, "Conformance in the test suite"):
pjdfstest and fsx-text, third-party suites, run against a real embedded mount.

- ``conformance_build``: the suites, built once by ``scripts/build-conformance`` into a
  cache outside the repository (keyed by the sources' sha256) and reused by later runs.
  Skips, naming the missing file, only when the third-party sources are not on this
  machine (``$MEMFS_CONFORMANCE_SOURCES``); a missing build tool or a failed build fails.
- ``fuse_available``, ``store_engine``, ``make_store``, ``mounter``: those of the FUSE
  tests (``tests/fuse``), the same objects: ``mounter`` mounts for real and at teardown
  unmounts, checks each daemon's exit status and log (no unannounced WARNING/ERROR),
  then that fsck finds nothing.

The tests that mount carry the ``fuse`` marker themselves (``pytestmark``): the README
table check in this directory needs no FUSE.
"""

from __future__ import annotations

import importlib.util
from types import ModuleType

import pytest
from conformance_helpers import FUSE_TESTS, Build, SourcesMissing, build_suites


def _fuse_tests_conftest() -> ModuleType:
    """``tests/fuse/conftest.py`` as a module of its own name (pytest imports it as
    that directory's conftest; a plain ``import conftest`` would be ambiguous)."""
    path = FUSE_TESTS / "conftest.py"
    spec = importlib.util.spec_from_file_location("fuse_tests_conftest", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_fuse = _fuse_tests_conftest()
# Naming them in this module is what makes them this directory's fixtures.
fuse_available = _fuse.fuse_available
store_engine = _fuse.store_engine
make_store = _fuse.make_store
mounter = _fuse.mounter


@pytest.fixture(scope="session")
def conformance_build() -> Build:
    try:
        return build_suites()
    except SourcesMissing as exc:
        pytest.skip(f"the conformance suites' sources are not on this machine: {exc}")
