"""Fixtures of the sandbox tests (SPEC §4 "Sandboxes"): a root-mounted store
used by other uids, non-root mounts, private mount namespaces, mount(8) and systemd.

- ``fuse_available``, ``store_engine``, ``make_store``: those of the FUSE tests
  (``tests/fuse/fuse_fixtures.py``).
- ``mounter``: :class:`_support.mount.Mounter`, with the FUSE tests' teardown checks
  (daemon exit status, no unannounced WARNING/ERROR, fsck clean).
- ``agents``: two throwaway users made with ``useradd`` for the session (removed at
  its end); the tests run tools as them with ``runuser``.
- ``as_root``: skips (saying why) unless the tests run as root.
- ``shared_dir``: a 0755 directory under /tmp (pytest's tmp_path is 0700 root's: no
  other uid could reach a mount point in it).

Every test here gets the ``fuse`` marker.
"""

from __future__ import annotations

import importlib
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from _support.mount import Mounter
from sandbox_helpers import Agent, make_agent, remove_agent

from memfs.store import Engine

_HERE = Path(__file__).parent
sys.path.insert(0, str(_HERE.parent / "fuse"))
fuse_fixtures = importlib.import_module("fuse_fixtures")

fuse_available = fuse_fixtures.fuse_available
store_engine = fuse_fixtures.store_engine
make_store = fuse_fixtures.make_store


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    fuse_fixtures.mark_fuse_tests(items, _HERE)


@pytest.fixture
def mounter(
    fuse_available: None, memfs_home: Path, tmp_path: Path, store_engine: Engine,
    shared_dir: Path,
) -> Iterator[Mounter]:
    # shared_dir: set up first, so it is removed after every mount in it is gone.
    mounter = Mounter(tmp_path, store_engine)
    try:
        yield mounter
    finally:
        mounter.close()
    findings = list(store_engine.iter_fsck_findings())
    assert findings == [], "fsck found problems after the test:\n" + "\n".join(findings)


@pytest.fixture
def as_root() -> None:
    """Skips unless root: private mount namespaces (``unshare -m``) and mount(8)'s
    helpers need it."""
    if os.geteuid() != 0:
        pytest.skip("needs root: unshare --mount and mount(8) helpers")
    if shutil.which("unshare") is None:
        pytest.skip("unshare is not installed (Debian package util-linux)")


@pytest.fixture(scope="session")
def agents() -> Iterator[tuple[Agent, Agent]]:
    """(agent, other): two new users with their own primary groups."""
    if os.geteuid() != 0:
        pytest.skip("needs root: the tests mount as root and create users with useradd")
    for tool in ("useradd", "userdel", "runuser", "unshare"):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} is not installed (Debian packages passwd, util-linux)")
    made: list[Agent] = []
    try:
        made.append(make_agent())
        made.append(make_agent())
        yield made[0], made[1]
    finally:
        for agent in made:
            remove_agent(agent)


@pytest.fixture
def shared_dir() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="memfs-sandbox-", dir="/tmp"))
    path.chmod(0o755)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)
