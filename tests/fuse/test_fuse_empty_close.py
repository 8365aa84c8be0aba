"""Close-to-open for closes that wrote nothing (SPEC §4: "after close() returns 0 the new
version is durable and visible"): a file created, or truncated with ``O_TRUNC``, and
closed without a write is committed by that close, not later at FUSE release; the
shell's ``echo x > f`` (open, dup2 onto stdout, close the original, write) still makes
exactly one version."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from _support.mount import Mount, run, run_script, versions

from memfs.core.model import Operation
from memfs.store import Engine

ROUNDS = 20

def _history(engine: Engine, mount: Mount, path: str) -> list[tuple[Operation, str | None]]:
    """(operation, content) of every version of the memory at ``path``, oldest first."""
    store_id = str(mount.status["stores"][0]["id"])
    memory = engine.memories.get_by_path(store_id, path, with_content=False)
    return [
        (v.operation, engine.versions.get(store_id, v.id).content)
        for v in versions(engine, store_id, memory.id)
    ]


def _rows_after_close(memfs_home: Path, directory: Path, flags: str) -> int:
    """How many of ROUNDS opens with ``flags`` (create, truncate) closed without a write
    had their row in the database right when the close returned (in the closing
    process: a commit left to the asynchronous FUSE release would not be there yet)."""
    return int(run_script("rows_after_close", memfs_home / "memfs.db", ROUNDS, directory, flags))


def test_create_then_close_is_committed_when_close_returns(mount, memfs_home: Path) -> None:
    notes = mount / "notes"
    assert _rows_after_close(memfs_home, notes, "create") == ROUNDS


def test_truncate_then_close_is_committed_when_close_returns(
    mounter, make_store, memfs_home: Path
) -> None:
    make_store("Notes", {f"/e{i}.txt": "old\n" for i in range(ROUNDS)})
    notes = mounter.mount("Notes") / "notes"
    assert _rows_after_close(memfs_home, notes, "truncate") == ROUNDS


@pytest.mark.parametrize("shell", ["sh", "bash"])
def test_shell_redirections_make_exactly_one_version(
    mount, store_engine: Engine, shell: str
) -> None:
    if shutil.which(shell) is None:
        pytest.skip(f"{shell} is not installed")
    notes = mount / "notes"
    run(shell, "-c", f"echo x > {notes}/hello.md; echo y > {notes}/new.md; : > {notes}/empty.md")
    assert _history(store_engine, mount, "/hello.md") == [
        (Operation.CREATED, "hello\n"),
        (Operation.MODIFIED, "x\n"),
    ]
    assert _history(store_engine, mount, "/new.md") == [(Operation.CREATED, "y\n")]
    assert _history(store_engine, mount, "/empty.md") == [(Operation.CREATED, "")]
    run(shell, "-c", f": > {notes}/hello.md")
    assert _history(store_engine, mount, "/hello.md")[1:] == [
        (Operation.MODIFIED, "x\n"),
        (Operation.MODIFIED, ""),
    ]

