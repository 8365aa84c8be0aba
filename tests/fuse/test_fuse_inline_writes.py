"""A mount's writes of one memory run on its trio loop when they need not wait (README
"Performance", writes; :meth:`memfs.store.Engine.inline`). When another process holds
the database's write lock they go to a worker thread and wait there: the close waits
for its commit (SPEC §4: committed before ``close()`` returns), the mount keeps
answering everything else meanwhile, and the version is written once the lock is
free."""

from __future__ import annotations

import sqlite3
import subprocess
import time
from pathlib import Path

from _support.mount import Mount, live, run, versions, wait_until

from memfs.core.model import Operation
from memfs.store import Engine

ANSWER_S = 1.5  # the mount answers within this while the other process holds the lock


def _database(memfs_home: Path) -> Path:
    return memfs_home / "memfs.db"


def _waits_for_fuse(pid: int) -> bool:
    """Whether process ``pid`` sleeps in the kernel waiting for a FUSE reply."""
    try:
        return Path(f"/proc/{pid}/wchan").read_text() == "request_wait_answer"
    except OSError:
        return False


def test_a_close_behind_another_process_s_write_lock_waits_without_blocking_the_mount(
    mount: Mount, store_engine: Engine, memfs_home: Path
) -> None:
    notes = mount / "notes"
    assert run("cat", notes / "hello.md").stdout == "hello\n"
    holder = sqlite3.connect(_database(memfs_home), isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another process's write transaction
    held_at = time.monotonic()
    try:
        writer = subprocess.Popen(
            ["sh", "-c", f"printf 'while held\\n' > {notes}/held.md"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        # The writer's close is in the kernel, waiting for the daemon's answer.
        wait_until(lambda: _waits_for_fuse(writer.pid), "the close to wait for the daemon")
        # The mount still answers while that close waits: a listing, a read, a stat.
        listed = run("ls", notes).stdout.split()
        assert "hello.md" in listed
        assert run("cat", notes / "projects" / "plan.md").stdout == "# Plan\n"
        answered_s = time.monotonic() - held_at
        assert answered_s < ANSWER_S, f"the mount answered only after {answered_s:.2f} s"
        assert writer.poll() is None, "the close returned before its commit could happen"
        assert _waits_for_fuse(writer.pid)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    _out, err = writer.communicate(timeout=30)
    assert writer.returncode == 0, err
    store_id = str(mount.status["stores"][0]["id"])
    memory = store_engine.memories.get_by_path(store_id, "/held.md")
    assert memory.content == "while held\n"
    assert [v.operation for v in versions(store_engine, store_id, memory.id)] == [
        Operation.CREATED
    ]
    # And the next write goes through as usual (committed when its close returns).
    run("sh", "-c", f"printf 'after\\n' >> {notes}/held.md")
    assert live(store_engine, store_id)["/held.md"].content == "while held\nafter\n"
