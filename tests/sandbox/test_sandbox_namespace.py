"""Mount namespaces (SPEC §4 Sandboxes): a mount made inside
``unshare -m`` ends with its namespace. While the namespace lives, ``memfs status`` and
``memfs umount`` outside it say where the mount is; once every other process of the
namespace is gone, the daemon commits what it holds and exits within a few seconds,
and nothing written is lost.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from _support.cli import MEMFS
from _support.mount import COMMAND_TIMEOUT_S, live, wait_until

from memfs.core.model import MemoryStore
from memfs.fuse import mounts
from memfs.fuse.sandbox import mount_namespace
from memfs.fuse.status import read_status, status_path
from memfs.store import Engine

# SPEC §4 "exits within a few seconds": one check a second, slack for a busy CI box.
NAMESPACE_EXIT_TIMEOUT_S = 10.0


@pytest.mark.usefixtures("fuse_available", "as_root")
def test_a_mount_in_a_private_namespace_ends_with_it(
    make_store: Callable[..., MemoryStore], store_engine: Engine, tmp_path: Path,
) -> None:
    notes = make_store("Notes", {"/kept.md": "kept\n"})
    path = tmp_path / "mnt"
    path.mkdir()
    # The sandbox: mounts, writes one file, keeps another open with bytes not yet
    # committed, says so, and waits for the test to let it end.
    script = f"""
        {MEMFS} mount {path} --store Notes >/dev/null
        echo written > {path}/notes/closed.md
        exec 3> {path}/notes/open.md
        printf 'held open' >&3
        echo ready
        read _ || true  # until the test closes our stdin
    """
    sandbox = subprocess.Popen(
        ["unshare", "--mount", "--propagation", "private", "sh", "-ec", script],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        assert sandbox.stdout is not None
        assert sandbox.stdin is not None
        assert sandbox.stdout.readline() == "ready\n", sandbox.stderr
        record = read_status(str(path))
        assert record is not None
        pid = int(record["pid"])
        theirs = record["mount_namespace"]
        assert theirs != mount_namespace()
        assert not mounts.is_mounted(str(path))  # not in this namespace

        # Outside, status and umount say where the mount is, and leave it alone.
        status = subprocess.run([MEMFS, "status", str(path)], capture_output=True,
                                text=True, timeout=COMMAND_TIMEOUT_S, check=False)
        assert status.returncode == 0, status.stderr
        assert f"state:        running in another mount namespace ({theirs})" in status.stdout
        umount = subprocess.run([MEMFS, "umount", str(path)], capture_output=True,
                                text=True, timeout=COMMAND_TIMEOUT_S, check=False)
        assert umount.returncode == 1
        assert umount.stderr.strip() == (
            f"memfs: error: {path} is not mounted in this mount namespace: daemon {pid} "
            f"serves it in {theirs}; unmount it there, e.g. `nsenter --mount --target "
            f"{pid} memfs umount {path}`"
        )
        assert mounts.process_alive(pid)

        sandbox.stdin.close()  # the sandbox ends; the daemon is the last one there
        assert sandbox.wait(timeout=COMMAND_TIMEOUT_S) == 0, sandbox.stderr.read()
        ended_at = time.monotonic()
        wait_until(lambda: not mounts.process_alive(pid), "the daemon to exit",
                   NAMESPACE_EXIT_TIMEOUT_S)
        assert time.monotonic() - ended_at < NAMESPACE_EXIT_TIMEOUT_S
    finally:
        if sandbox.poll() is None:
            sandbox.kill()
            sandbox.wait()

    assert not status_path(str(path)).exists()  # a clean exit: the status file goes last
    memories = live(store_engine, notes.id)
    assert {p: m.content for p, m in memories.items()} == {
        "/kept.md": "kept\n", "/closed.md": "written\n", "/open.md": "held open",
    }
    log = Path(record["log_file"]).read_text()
    assert f"no other process is left in mount namespace {theirs}; unmounting" in log
    assert " ERROR " not in log, log
    assert " WARNING " not in log, log
    findings = list(store_engine.iter_fsck_findings())
    assert findings == []
