"""systemd/memfs-mount@.service runs a remote mount (SPEC §5): a valid unit that restarts
on failure, whose ExecStart/ExecStop, run as systemd would run them for a remote mount's
environment file, mount, survive a crash of the daemon by starting again, and unmount.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from _support.mount import COMMAND_TIMEOUT_S, Mount, Mounter, run
from faults_helpers import Server, kill_daemon, wait_live

from memfs.core.model import MemoryStore
from memfs.fuse import mounts

UNIT = Path(__file__).resolve().parents[2] / "systemd" / "memfs-mount@.service"
INSTALLED_MEMFS = "/opt/memfs/bin/memfs"
LOCAL_MEMFS = str(Path(sys.executable).with_name("memfs"))


def directives() -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for line in UNIT.read_text().splitlines():
        if "=" in line and not line.lstrip().startswith(("#", ";")):
            key, _, value = line.partition("=")
            found.setdefault(key.strip(), []).append(value.strip())
    return found


def command(line: str, mountpoint: Path, mount_args: str) -> list[str]:
    """An Exec line as systemd runs it: %f is the mount point, $MEMFS_MOUNT_ARGS is
    split into words (systemd.service(5) "Command lines")."""
    words = []
    for word in shlex.split(line.replace(INSTALLED_MEMFS, LOCAL_MEMFS)):
        if word == "$MEMFS_MOUNT_ARGS":
            words += shlex.split(mount_args)
        else:
            words.append(word.replace("%f", str(mountpoint)))
    return words


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="no systemd-analyze")
def test_the_unit_is_valid_and_restarts_a_failed_mount(tmp_path: Path) -> None:
    found = directives()
    assert found["Restart"] == ["on-failure"]
    assert found["Type"] == ["notify"]  # READY=1 once the mount is live (SPEC §4)
    assert any("--foreground" in line for line in found["ExecStart"])
    instance = tmp_path / "memfs-mount@mnt-memory.service"
    instance.write_text(
        UNIT.read_text()
        .replace(INSTALLED_MEMFS, LOCAL_MEMFS)
        .replace("/etc/memfs/mount-%i.env", str(tmp_path / "mount-%i.env"))
    )
    (tmp_path / "mount-mnt-memory.env").write_text("MEMFS_MOUNT_ARGS=--api http://x\n")
    verified = subprocess.run(
        ["systemd-analyze", "verify", str(instance)], capture_output=True, text=True,
        timeout=COMMAND_TIMEOUT_S, check=False,
    )
    assert (verified.returncode, verified.stdout + verified.stderr) == (0, "")


def test_the_units_commands_run_a_remote_mount_and_start_again_after_a_crash(
    mounter: Mounter,
    server: Server,
    make_store: Callable[..., MemoryStore],
    make_session: Callable[..., str],
    tmp_path: Path,
) -> None:
    notes = make_store("Notes", {"/a.md": "a\n"})
    mountpoint = tmp_path / "mnt" / "memory"  # ExecStartPre makes it
    env = dict(os.environ, MEMFS_TOKEN=make_session(notes))  # the EnvironmentFile
    mount_args = f"--api {server.url}"
    found = directives()
    (start_pre,) = found["ExecStartPre"]
    (start,) = found["ExecStart"]
    (stop,) = found["ExecStop"]

    def start_service(index: int) -> Mount:
        run(*command(start_pre, mountpoint, mount_args))
        log_file = tmp_path / f"unit-{index}.log"
        with open(log_file, "wb") as log:
            process = subprocess.Popen(
                command(start, mountpoint, mount_args), env=env, stdin=subprocess.DEVNULL,
                stdout=log, stderr=subprocess.STDOUT,
            )
        mount = Mount(mountpoint, process.pid, log_file, process)
        mounter.mounts.append(mount)
        wait_live(mount)
        return mount

    first = start_service(1)
    assert (mountpoint / "notes/a.md").read_text() == "a\n"
    kill_daemon(first)  # the daemon crashes: Restart=on-failure

    second = start_service(2)
    second.expect_log("removing the stale mount")
    (mountpoint / "notes/b.md").write_text("after the restart\n")

    stopped = subprocess.run(
        command(stop, mountpoint, mount_args), env=env, capture_output=True, text=True,
        timeout=COMMAND_TIMEOUT_S, check=False,
    )
    assert stopped.returncode == 0, stopped.stderr
    assert second.process is not None
    assert second.process.wait(timeout=COMMAND_TIMEOUT_S) == 0
    assert not mounts.is_mounted(str(mountpoint))
    second.unmounted = True
