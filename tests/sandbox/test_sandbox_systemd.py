"""The systemd units (SPEC §4 Sandboxes): the mount unit is
``Type=notify`` with ``UMask=0077``; the daemon sends ``READY=1`` only once files are
visible and ``STOPPING=1`` when it unmounts; ``systemd-analyze verify`` accepts the
units.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from _support.cli import REPO_ROOT
from _support.mount import COMMAND_TIMEOUT_S, Mount, Mounter

from memfs.core.model import MemoryStore
from memfs.fuse import mounts

UNITS = REPO_ROOT / "systemd"


def test_the_mount_unit_is_type_notify_with_umask_0077() -> None:
    settings = [
        line.strip() for line in (UNITS / "memfs-mount@.service").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    assert "Type=notify" in settings
    assert "NotifyAccess=main" in settings
    assert "UMask=0077" in settings
    assert any(s.startswith("ExecStart=") and "--foreground" in s for s in settings)


def test_systemd_analyze_verifies_the_units(tmp_path: Path) -> None:
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        pytest.skip("systemd-analyze is not installed (Debian package systemd)")
    memfs = Path(sys.executable).parent / "memfs"  # this checkout's console script
    units = []
    # The units as installed, with ExecStart pointing at this checkout's memfs (verify
    # checks that the command exists); the template as an instance.
    for name, installed in (
        ("memfs-mount@.service", "memfs-mount@mnt-memory.service"),
        ("memfs-server.service", "memfs-server.service"),
    ):
        text = (UNITS / name).read_text().replace("/opt/memfs/bin/memfs", str(memfs))
        (tmp_path / installed).write_text(text)
        units.append(str(tmp_path / installed))
    completed = subprocess.run(
        [analyze, "verify", *units], capture_output=True, text=True,
        timeout=COMMAND_TIMEOUT_S, check=False, cwd=tmp_path,
    )
    assert completed.returncode == 0, completed.stderr
    assert completed.stderr.strip() == "", completed.stderr


def test_ready_once_the_mount_is_live_and_stopping_at_unmount(
    mounter: Mounter, make_store: Callable[..., MemoryStore], tmp_path: Path,
) -> None:
    make_store("Notes", {"/hello.md": "hello\n"})
    address = tmp_path / "notify.sock"
    path = tmp_path / "mnt"
    path.mkdir()
    log_file = tmp_path / "mount.log"
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as listener:
        listener.bind(str(address))
        listener.settimeout(COMMAND_TIMEOUT_S)
        # The daemon as the unit starts it; nothing else waits for the mount here.
        with open(log_file, "wb") as log:
            process = subprocess.Popen(
                [sys.executable, "-m", "memfs.cli.mounting", "mount", str(path),
                 "--store", "Notes", "--foreground"],
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                env=dict(os.environ, NOTIFY_SOCKET=str(address)),
            )
        mount = Mount(path, process.pid, log_file, process)
        mounter.mounts.append(mount)
        ready = listener.recv(4096).decode()
        # What a unit ordered after this one would see at once:
        assert (path / "notes/hello.md").read_text() == "hello\n"
        assert ready.splitlines() == [
            "READY=1", f"STATUS=mounted {path}", f"MAINPID={mount.pid}",
        ]
        mounter.unmount(mount)
        stopping = listener.recv(4096).decode()
        assert stopping.splitlines() == ["STOPPING=1", f"STATUS=unmounting {path}"]
        assert not mounts.is_mounted(str(path))


def test_an_abstract_notify_socket_is_used_too(
    mounter: Mounter, make_store: Callable[..., MemoryStore], tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    make_store("Notes")
    name = f"memfs-test-notify-{os.getpid()}"
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as listener:
        listener.bind("\0" + name)
        listener.settimeout(COMMAND_TIMEOUT_S)
        monkeypatch.setenv("NOTIFY_SOCKET", "@" + name)
        mount = mounter.mount("Notes")
        assert listener.recv(4096).decode().startswith("READY=1\n")
        mounter.unmount(mount)
        assert listener.recv(4096).decode().startswith("STOPPING=1\n")
