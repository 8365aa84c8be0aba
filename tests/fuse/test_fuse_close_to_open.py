"""Close-to-open across two embedded mounts of one store (SPEC §4), for deletes and
renames made elsewhere, driven by real tools in subprocesses.

The kernel keeps a mount's dentries for an hour, so a name deleted or moved elsewhere
still resolves to its inode until the invalidation arrives (tens of milliseconds). The
open's catch-up then finds the file gone or moved and answers ``ESTALE``, and the kernel
walks the path again with fresh lookups: the open meets what the path names now. Each
check runs in a loop with no sleep, so a race shows as a failed iteration. A descriptor
opened for writing before the delete keeps what is written through it (the close
creates the file again); one closed without a write leaves nothing.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from _support.mount import Mounter, live, run_script, wait_until
from _support.scripts import SCRIPTS_DIR

from memfs.store import Engine

ROUNDS = 30


def _sh(case: str, a: Path, b: Path) -> subprocess.CompletedProcess[str]:
    """Runs the shell loop ``case`` of tests/_scripts/close_to_open.sh through mount
    directories ``a`` and ``b``, ROUNDS times."""
    return subprocess.run(
        ["bash", str(SCRIPTS_DIR / "close_to_open.sh"), case, str(a), str(b), str(ROUNDS)],
        capture_output=True, text=True, check=False, timeout=120,
    )


def test_an_open_after_a_delete_elsewhere_sees_the_delete(
    mounter: Mounter, make_store, store_engine: Engine
) -> None:
    store = make_store("Notes", {"/keep.md": "keep\n"})
    a = mounter.mount("Notes") / "notes"
    b = mounter.mount("Notes") / "notes"
    done = _sh("delete", a, b)
    assert (done.stdout, done.stderr) == ("", "")
    # Every write after the delete was stored (it was silently dropped before).
    wait_until(
        lambda: all(
            f"/d{i}.md" in (memories := live(store_engine, store.id))
            and memories[f"/d{i}.md"].content == f"new{i}\n"
            for i in range(1, ROUNDS + 1)
        ),
        "every new file written after the delete to be stored",
    )


def test_an_open_of_a_name_moved_elsewhere_sees_the_move(
    mounter: Mounter, make_store, store_engine: Engine
) -> None:
    store = make_store("Notes", {"/keep.md": "keep\n"})
    a = mounter.mount("Notes") / "notes"
    b = mounter.mount("Notes") / "notes"
    done = _sh("move", a, b)
    assert (done.stdout, done.stderr) == ("", "")

    def settled() -> bool:
        memories = live(store_engine, store.id)
        return all(
            memories.get(f"/n{i}.md") is not None
            and memories[f"/n{i}.md"].content == f"m{i}\n"  # the moved file is untouched
            and memories.get(f"/m{i}.md") is not None
            and memories[f"/m{i}.md"].content == f"again{i}\n"  # a new file at the old name
            for i in range(1, ROUNDS + 1)
        )

    wait_until(settled, "the appends to the old names to make new files")


def test_an_exclusive_create_of_a_name_deleted_elsewhere_succeeds(
    mounter: Mounter, make_store, store_engine: Engine
) -> None:
    make_store("Notes", {"/keep.md": "keep\n"})
    a = mounter.mount("Notes") / "notes"
    b = mounter.mount("Notes") / "notes"
    done = _sh("exclusive", a, b)
    assert (done.stdout, done.stderr) == ("", "")


def _hold_then_delete(a: Path, b: Path, mode: str, text: str | None) -> None:
    """Opens ``b`` with ``mode`` in a subprocess, deletes the file through ``a`` (the
    other mount), waits until ``b``'s mount has applied it, then writes ``text`` (None:
    nothing) and closes."""
    run_script("hold_then_delete", b.parents[1], b, a, mode, *([] if text is None else [text]))


def test_a_descriptor_open_for_writing_before_a_delete_elsewhere_keeps_its_write(
    mounter: Mounter, make_store, store_engine: Engine
) -> None:
    store = make_store("Notes", {"/h1.md": "one\n", "/h2.md": "two\n", "/h3.md": "three\n"})
    a = mounter.mount("Notes") / "notes"
    b = mounter.mount("Notes") / "notes"
    for path in ("h1.md", "h2.md", "h3.md"):
        assert (b / path).read_text()  # the mount knows them
    _hold_then_delete(a / "h1.md", b / "h1.md", "a", "appended\n")
    _hold_then_delete(a / "h2.md", b / "h2.md", "r+", "over")
    # Nothing written: the deleted file is not brought back by the close.
    _hold_then_delete(a / "h3.md", b / "h3.md", "a", None)

    def settled() -> bool:
        memories = live(store_engine, store.id)
        return (
            memories.get("/h1.md") is not None
            and memories["/h1.md"].content == "one\nappended\n"
            and memories.get("/h2.md") is not None
            and memories["/h2.md"].content == "over"
            and "/h3.md" not in memories
        )

    wait_until(settled, "the writes through the held descriptors to be stored")
    assert sorted(p.name for p in b.iterdir()) == ["h1.md", "h2.md"]
    assert (b / "h1.md").read_text() == "one\nappended\n"


def test_a_listing_after_a_change_elsewhere_shows_it(
    mounter: Mounter, make_store, store_engine: Engine
) -> None:
    """An opendir catches up too (the counter is read on the daemon's thread), and a
    listing the kernel keeps is dropped at that open when the children changed."""
    make_store("Notes", {"/dir/first.md": "1\n"})
    a = mounter.mount("Notes") / "notes" / "dir"
    b = mounter.mount("Notes") / "notes" / "dir"
    done = _sh("listing", a, b)
    assert (done.stdout, done.stderr) == ("1\n", "")


def test_changes_by_path_after_a_change_elsewhere_act_on_what_the_path_names_now(
    mounter: Mounter, make_store, store_engine: Engine
) -> None:
    """rm, truncate(2) and setxattr by a name moved elsewhere are ENOENT and leave the
    moved file alone; rm of a name deleted and made again elsewhere removes the new
    file; a write through a descriptor held across a move elsewhere lands in the moved
    file, which the mount then shows at its new name."""
    store = make_store("Notes", {"/keep.md": "keep\n"})
    a = mounter.mount("Notes") / "notes"
    b = mounter.mount("Notes") / "notes"
    out = run_script("act_by_moved_names", a, b, ROUNDS // 3)
    rounds = ROUNDS // 3
    assert out.splitlines() == [
        line for _ in range(rounds)
        for line in ("rm ENOENT", "truncate ENOENT", "setxattr ENOENT", "rm-made-again ok")
    ]

    def settled() -> bool:
        memories = live(store_engine, store.id)
        return all(
            memories.get(f"/{name}{i}-moved") is not None
            and memories[f"/{name}{i}-moved"].content == f"{name}{i}\n"
            for name in ("q", "t", "x") for i in range(rounds)
        ) and all(
            f"/r{i}" not in memories
            and memories.get(f"/h{i}-moved") is not None
            and memories[f"/h{i}-moved"].content == f"h{i}\nappended\n"
            for i in range(rounds)
        )

    wait_until(settled, "every moved file intact and every held write in its moved file")
    assert all(store_engine.memories.get_by_path(store.id, f"/x{i}-moved").metadata == {}
               for i in range(rounds))
    names = {p.name for p in b.iterdir()}
    assert {f"h{i}-moved" for i in range(rounds)} <= names
    assert not {f"h{i}" for i in range(rounds)} & names


def test_a_directory_moved_elsewhere_is_gone_by_its_old_name(
    mounter: Mounter, make_store, store_engine: Engine
) -> None:
    """The opendir of a directory a change elsewhere removed answers ESTALE, so the
    kernel resolves the path again: ``ls`` of the old name is ENOENT, not empty."""
    make_store("Notes", {"/keep.md": "keep\n"})
    a = mounter.mount("Notes") / "notes"
    b = mounter.mount("Notes") / "notes"
    done = _sh("directory_move", a, b)
    assert (done.stdout, done.stderr) == ("", "")
