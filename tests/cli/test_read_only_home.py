"""A read-only ``$MEMFS_HOME``: reads work, and every command that must write there says
so in one line (never a traceback, README "Errors"), leaving nothing mounted."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from _support.cli import Cli


@pytest.fixture
def read_only_home(tmp_path: Path) -> Iterator[Path]:
    """An empty home on its own read-only tmpfs (root only: a mode bit does not stop
    root, a read-only file system does)."""
    if os.geteuid() != 0:
        pytest.skip("mounting a read-only tmpfs needs root (CI runs as root)")
    home = tmp_path / "home"
    home.mkdir()
    subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "ro,size=1m,mode=0700", "tmpfs", str(home)], check=True
    )
    try:
        yield home
    finally:
        subprocess.run(["umount", "-l", str(home)], check=False)


def test_a_mount_on_a_read_only_home_fails_in_one_line(
    read_only_home: Path, tmp_path: Path
) -> None:
    """The database elsewhere (``--database``) opens fine; the mount's log, lock and
    status live under the home, which can't be written."""
    writable = Cli(tmp_path / "writable")
    writable.create_store("Full")
    cli = Cli(read_only_home)
    target = tmp_path / "mnt"
    target.mkdir()
    result = cli.run(
        "mount", str(target), "--store", "Full", "--database", str(writable.database), expect=1
    )
    assert "Traceback" not in result.stderr
    assert result.stderr.startswith("memfs: error: cannot write the mount's log ")
    assert "Read-only file system" in result.stderr
    assert not os.path.ismount(target)
