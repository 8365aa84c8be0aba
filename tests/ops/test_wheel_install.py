"""Installing from the wheel (README "Installing"): the wheel built from this checkout,
installed into a fresh virtualenv with its dependencies from the package index (stock
pyfuse3 among them, as a machine without scripts/setup gets it), runs ``memfs``:
its version, a store in a new home, and a mount that says once that pyfuse3 lacks the
patch. Slow-ish (~45 s, most of it pip), and in the suite on purpose: it is how an
operator installs memfs."""

from __future__ import annotations

import subprocess
import sys
import venv
from collections.abc import Mapping
from pathlib import Path

import pytest
from _support.cli import REPO_ROOT, memfs_env

import memfs

PIP_TIMEOUT_S = 900  # a bound for a hung download, not a performance target


def _run(command: list[str], env: Mapping[str, str] | None = None) -> str:
    """Runs ``command`` outside the checkout (``python -c`` would import it from the
    working directory); returns its stdout and stderr."""
    done = subprocess.run(
        command, capture_output=True, text=True, env=env, timeout=PIP_TIMEOUT_S,
        check=False, cwd="/",
    )
    assert done.returncode == 0, f"{command}: {done.stdout}\n{done.stderr}"
    return done.stdout + done.stderr


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The ``bin`` directory of a fresh virtualenv with the wheel installed."""
    root = tmp_path_factory.mktemp("wheel")
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(root / "dist"),
          str(REPO_ROOT)])
    (wheel,) = (root / "dist").glob("agent_memfs-*.whl")
    assert wheel.name == f"agent_memfs-{memfs.__version__}-py3-none-any.whl"
    venv.create(root / "venv", with_pip=True)
    bin_dir = root / "venv" / "bin"
    _run([str(bin_dir / "python"), "-m", "pip", "install", "-q", str(wheel)])
    return bin_dir


def _env(home: Path) -> dict[str, str]:
    """The test's environment without this checkout on ``PYTHONPATH``: the installed
    package alone answers."""
    env = memfs_env(home)
    env.pop("PYTHONPATH", None)
    env.pop("MEMFS_FUSE_KERNEL_CACHE", None)
    return env


def test_the_installed_wheel_runs_memfs(installed: Path, tmp_path: Path) -> None:
    env = _env(tmp_path / "home")
    assert _run([str(installed / "memfs"), "--version"], env) == f"memfs {memfs.__version__}\n"
    where = _run([str(installed / "python"), "-c", "import memfs; print(memfs.__file__)"], env)
    assert str(installed.parent) in where  # not this checkout
    _run([str(installed / "memfs"), "store", "create", "Notes"], env)
    listed = _run([str(installed / "memfs"), "store", "list"], env)
    assert "Notes" in listed
    # The wheel's pyfuse3 is PyPI's: stock, without the patch scripts/setup applies.
    stock = _run([str(installed / "python"), "-c",
                  "import pyfuse3; print(hasattr(pyfuse3, 'NOFLUSH_SUPPORTED'))"], env)
    assert stock == "False\n"


def test_a_mount_with_stock_pyfuse3_warns_once(
    installed: Path, tmp_path: Path, fuse_available: None
) -> None:
    env = _env(tmp_path / "home")
    memfs_bin = str(installed / "memfs")
    _run([memfs_bin, "store", "create", "Notes"], env)
    mountpoint = tmp_path / "mnt"
    mountpoint.mkdir()
    done = subprocess.run([memfs_bin, "mount", str(mountpoint), "--store", "Notes"],
                          capture_output=True, text=True, env=env, timeout=PIP_TIMEOUT_S,
                          check=False)
    try:
        assert done.returncode == 0, done.stderr
        assert done.stderr.count("memfs: warning: pyfuse3 is the stock build") == 1
        assert "MEMFS_FUSE_KERNEL_CACHE=0 silences this" in done.stderr
        assert done.stdout.startswith(f"mounted {mountpoint}")
        (mountpoint / "notes" / "a.md").write_text("a\n")
        assert (mountpoint / "notes" / "a.md").read_text() == "a\n"
    finally:
        if done.returncode == 0:
            _run([memfs_bin, "umount", str(mountpoint)], env)
    silenced = subprocess.run(
        [memfs_bin, "mount", str(mountpoint), "--store", "Notes"], capture_output=True,
        text=True, env={**env, "MEMFS_FUSE_KERNEL_CACHE": "0"}, timeout=PIP_TIMEOUT_S,
        check=False,
    )
    try:
        assert silenced.returncode == 0, silenced.stderr
        assert "warning" not in silenced.stderr
    finally:
        if silenced.returncode == 0:
            _run([memfs_bin, "umount", str(mountpoint)], env)
    assert _run([memfs_bin, "fsck"], env).startswith("fsck: clean (1 stores, 1 memories")
