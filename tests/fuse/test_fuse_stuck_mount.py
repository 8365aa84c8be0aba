"""Dead and stuck mounts never hang the machine's view of the mount (a dead mount is
cleanly unmountable; SPEC §4: kernel caches are invalidated for exactly the changed
entries, and no invalidation may keep a killed daemon from exiting).

- A directory of 200 files renamed back and forth through a mount, while another
  writer's changes make the change feed invalidate entries next to it, and the daemon
  killed with SIGKILL at a random moment. Alone, its watchdog frees what waited on it:
  the daemon is reaped and the renaming process gets its answer. With its watchdog
  killed too, ``memfs umount --force`` does it (aborting the FUSE connection). Then
  ``memfs umount --force`` frees the mount point. Every step bounded, several rounds.
- A daemon that does not answer (stopped): ``memfs umount`` says so within its bound and
  leaves the mount; ``--force`` aborts the connection, says so, and frees the mount
  point.
- The request loop keeps running while an invalidation waits in the kernel, and the
  delivery task ends at once when cancelled (the shutdown) instead of waiting for it.

Every wait is bounded: a step that would hang fails with a timeout instead, and the
test's cleanup aborts a connection left stuck so the machine is never left hanging.
"""

from __future__ import annotations

import os
import queue
import random
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyfuse3
import pytest
import trio
import trio.lowlevel
from _support.mount import MEMFS, Mounter

from memfs.core.errors import MemfsError
from memfs.core.model import MemoryStore
from memfs.fuse import mounts
from memfs.fuse.inodes import InodeTable, Layout, Notice
from memfs.fuse.notices import KernelNotices
from memfs.store import Engine

ROUNDS = 6
FILES = 200
# Bounds of each step: a step that reaches one has hung.
STEP_TIMEOUT_S = 20.0


def _run_bounded(
    args: list[str], timeout_s: float, diagnose: Callable[[], str] = lambda: ""
) -> subprocess.CompletedProcess[str]:
    """Runs ``args``; raises AssertionError when it has not exited within ``timeout_s``
    (then kills it, without waiting on a process stuck in the kernel)."""
    process = subprocess.Popen(
        args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True,
    )
    try:
        stdout, stderr = process.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        where = _stacks(process.pid) + "\n" + diagnose()
        process.kill()
        raise AssertionError(
            f"{' '.join(args)} hung (no exit within {timeout_s} s):\n{where}"
        ) from None
    return subprocess.CompletedProcess(args, process.returncode, stdout, stderr)


def _connection(path: Path) -> int | None:
    """The FUSE connection number of the mount at ``path`` (its device minor), from
    mountinfo: never a call that reaches the mount."""
    number = None
    with open("/proc/self/mountinfo") as file:
        for line in file:
            fields = line.split()
            if fields[4] == str(path):
                number = int(fields[2].split(":")[1])
    return number


def _stacks(pid: int) -> str:
    """Where each thread of ``pid`` waits in the kernel (for a failure's message)."""
    lines = []
    try:
        for task in sorted(os.listdir(f"/proc/{pid}/task")):
            try:
                stack = Path(f"/proc/{pid}/task/{task}/stack").read_text()
            except OSError as exc:
                stack = f"({exc.strerror})"
            top = [line.split()[-1] for line in stack.splitlines()[:4]]
            lines.append(f"  {pid}/{task}: {' < '.join(top)}")
    except OSError:
        return f"  {pid}: gone"
    return "\n".join(lines)


def _abort_if_stuck(path: Path, connection: int | None, daemon: subprocess.Popen[bytes]) -> None:
    """Cleanup: aborts the mount's FUSE connection while its daemon is not reaped (so
    the number is still its own), so a failed test never leaves the machine hanging."""
    if connection is not None and daemon.poll() is None:
        abort = Path("/sys/fs/fuse/connections") / str(connection) / "abort"
        if abort.exists():
            abort.write_text("1")
    if str(path) in mounts.mount_points():
        subprocess.run(["umount", "-l", str(path)], capture_output=True,
                       timeout=STEP_TIMEOUT_S, check=False)


_RENAMER = textwrap.dedent(
    """
    import errno, os, sys
    root = sys.argv[1]
    a, b = os.path.join(root, "big"), os.path.join(root, "big2")
    print("started", flush=True)
    while True:
        try:
            os.rename(a, b)
            os.rename(b, a)
            print("renamed", flush=True)
        except OSError as exc:
            if exc.errno in (errno.ENOTCONN, errno.ECONNABORTED, errno.EIO):
                print("ended", errno.errorcode[exc.errno], flush=True)
                sys.exit(0)
            if exc.errno not in (errno.ENOENT, errno.EEXIST, errno.ENOTEMPTY):
                raise
    """
)


def _churn(engine: Engine, store_id: str, stop: threading.Event) -> None:
    """Changes made elsewhere next to the renamed directory: files created and deleted
    beside it (the feed invalidates their entries in its parent), until ``stop``."""
    n = 0
    while not stop.is_set():
        n += 1
        try:
            memory = engine.memories.create(store_id, f"/churn-{n}.md", f"{n}\n")
            engine.memories.delete(store_id, memory.id)
        except MemfsError:
            pass


def _read_lines(process: subprocess.Popen[str], lines: queue.Queue[str]) -> None:
    assert process.stdout is not None
    for line in process.stdout:
        lines.put(line.strip())


@pytest.fixture
def big_store(make_store: Callable[..., MemoryStore]) -> MemoryStore:
    return make_store("Notes", {f"/big/f{i:03}.md": f"file {i}\n" for i in range(FILES)})


def _children(pid: int) -> list[int]:
    """The child processes of ``pid``'s main thread (the daemon's watchdog)."""
    try:
        return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def _round(mounter: Mounter, store: MemoryStore, engine: Engine, index: int,
           tmp_path: Path, *, with_watchdog: bool) -> None:
    """One round: renames and the feed's invalidations running, ``kill -9`` of the
    daemon (and of its watchdog unless ``with_watchdog``); every step bounded."""
    path = tmp_path / f"round{index}"
    path.mkdir()
    mount = mounter.mount("Notes", path=path)
    assert mount.process is not None
    daemon = mount.process
    stop = threading.Event()
    churn = threading.Thread(target=_churn, args=(engine, store.id, stop), daemon=True)
    connection = _connection(mount.path)
    renamer = subprocess.Popen(
        [sys.executable, "-c", _RENAMER, str(mount / "notes")],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=_read_lines, args=(renamer, lines), daemon=True).start()

    def where() -> str:
        return f"round {index}:\n" + _stacks(renamer.pid) + "\n" + _stacks(daemon.pid)

    def wait_exit(process: subprocess.Popen[Any], what: str) -> int:
        try:
            return process.wait(timeout=STEP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"{what} (no exit within {STEP_TIMEOUT_S} s), "
                                 + where()) from None

    try:
        assert lines.get(timeout=STEP_TIMEOUT_S) == "started"
        churn.start()
        # A random moment: after a random number of renames back and forth, while the
        # renamer and the feed go on.
        for _ in range(random.randint(1, 20)):
            assert lines.get(timeout=STEP_TIMEOUT_S) == "renamed"
        if not with_watchdog:  # a whole process group killed, say
            for child in _children(daemon.pid):
                os.kill(child, signal.SIGKILL)
        os.kill(daemon.pid, signal.SIGKILL)
        if with_watchdog:
            # Nobody else acts: the watchdog frees what waited on the daemon.
            assert wait_exit(daemon, "the killed daemon never exited") == -signal.SIGKILL
            wait_exit(renamer, "the renaming process still waits on the dead mount")
        completed = _run_bounded([MEMFS, "umount", "--force", str(mount.path)],
                                 STEP_TIMEOUT_S, where)
        mount.unmounted = True
        assert completed.returncode == 0, completed.stderr
        assert str(mount.path) not in mounts.mount_points()
        wait_exit(renamer, "the renaming process still waits on the dead mount")
        assert wait_exit(daemon, "the killed daemon never exited") == -signal.SIGKILL
    finally:
        stop.set()
        _abort_if_stuck(mount.path, connection, daemon)
        renamer.kill()
        if churn.is_alive():
            churn.join(STEP_TIMEOUT_S)


def test_a_daemon_killed_mid_rename_never_hangs_the_mount(
    mounter: Mounter, big_store: MemoryStore, store_engine: Engine, tmp_path: Path
) -> None:
    for index in range(ROUNDS):
        _round(mounter, big_store, store_engine, index, tmp_path,
               with_watchdog=index % 2 == 0)


def test_umount_of_a_daemon_that_does_not_answer_is_bounded_and_force_aborts_it(
    mounter: Mounter, big_store: MemoryStore
) -> None:
    mount = mounter.mount("Notes")
    assert mount.process is not None
    connection = _connection(mount.path)
    os.kill(mount.pid, signal.SIGSTOP)
    try:
        refused = _run_bounded([MEMFS, "umount", str(mount.path)], STEP_TIMEOUT_S)
        assert refused.returncode == 1
        assert f"its daemon (pid {mount.pid}) does not answer" in refused.stderr
        assert "memfs umount --force" in refused.stderr
        assert str(mount.path) in mounts.mount_points()

        forced = _run_bounded([MEMFS, "umount", "--force", str(mount.path)], STEP_TIMEOUT_S)
        assert forced.returncode == 0, forced.stderr
        assert f"aborted its FUSE connection {connection}" in forced.stderr
        assert str(mount.path) not in mounts.mount_points()
        assert _run_bounded(["ls", str(mount.path)], STEP_TIMEOUT_S).returncode == 0
    finally:
        _abort_if_stuck(mount.path, connection, mount.process)
        os.kill(mount.pid, signal.SIGCONT)
    # Woken up, the daemon finds its connection gone, and exits cleanly.
    mount.unmounted = True
    assert mount.process.wait(timeout=STEP_TIMEOUT_S) == 0


async def test_requests_run_while_an_invalidation_waits_in_the_kernel(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    entered, released = threading.Event(), threading.Event()

    def held_by_a_request(inode: int, name: bytes) -> None:
        entered.set()  # like fuse_reverse_inval_entry waiting for a directory's lock
        released.wait(STEP_TIMEOUT_S)

    monkeypatch.setattr(pyfuse3, "invalidate_entry", held_by_a_request)
    table = InodeTable(Layout.PER_STORE, [])
    notices = KernelNotices(table)
    answered = 0

    async def answer_requests() -> None:
        nonlocal answered
        while True:
            answered += 1
            await trio.lowlevel.checkpoint()

    # Whatever happens, the held call ends (without it the old code would hang here).
    timer = threading.Timer(3.0, released.set)
    timer.daemon = True
    timer.start()
    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(notices.deliver)
            nursery.start_soon(answer_requests)
            table.notice(Notice(7, b"moved.md"))
            notices.send()
            await trio.to_thread.run_sync(entered.wait, STEP_TIMEOUT_S)
            before = answered
            for _ in range(3):
                await trio.lowlevel.checkpoint()
            assert answered > before  # the loop goes on while the call waits
            started = time.monotonic()
            nursery.cancel_scope.cancel()
        ended_s = time.monotonic() - started
        assert ended_s < 1.0, f"the shutdown waited {ended_s:.1f} s for the kernel call"
        assert not released.is_set()
    finally:
        released.set()
