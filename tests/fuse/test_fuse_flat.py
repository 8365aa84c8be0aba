"""SPEC §4 flat layout: several stores merged into one namespace; the writable default
wins, then the earlier attachment; writing a file only a read-only store has copies it
up into the default store; deleting such a file is EROFS."""

from __future__ import annotations

import os

from _support.mount import Mounter, errno_of, live, run, wait_until

from memfs.core.model import Access
from memfs.store import Engine


def test_flat_layout_merges_stores_with_overlay_semantics(
    mounter: Mounter, make_store, store_engine: Engine
) -> None:
    main = make_store("Main", {"/same.md": "from main\n", "/main.md": "main\n"})
    shared = make_store(
        "Shared", {"/same.md": "from shared\n", "/shared.md": "shared\n", "/dir/deep.md": "deep\n"}
    )
    third = make_store("Third", {"/shared.md": "from third\n", "/third.md": "third\n"})
    # The default is the first writable store, wherever it is in the list; every other
    # store is read-only.
    mount = mounter.mount("Shared:ro", "Main", "Third", layout="flat")
    root = mount.path

    assert sorted(os.listdir(root)) == ["dir", "main.md", "same.md", "shared.md", "third.md"]
    assert (root / "same.md").read_text() == "from main\n"  # the default wins
    assert (root / "shared.md").read_text() == "shared\n"  # then the earlier attachment
    assert (root / "dir" / "deep.md").read_text() == "deep\n"
    session = store_engine.sessions.get(mount.session_id)
    assert [(r.memory_store_id, r.access) for r in session.resources] == [
        (shared.id, Access.READ_ONLY), (main.id, Access.READ_WRITE), (third.id, Access.READ_ONLY),
    ]

    # New files go to the default store.
    (root / "dir" / "new.md").write_text("new\n")
    assert live(store_engine, main.id)["/dir/new.md"].content == "new\n"

    # Writing a file only a read-only store has copies it up.
    run("sh", "-c", f"echo more >> {root / 'shared.md'}")
    assert (root / "shared.md").read_text() == "shared\nmore\n"
    assert live(store_engine, main.id)["/shared.md"].content == "shared\nmore\n"
    assert live(store_engine, shared.id)["/shared.md"].content == "shared\n"

    # Deleting a file only a read-only store has: EROFS. So is renaming it.
    assert errno_of(f"os.unlink({str(root / 'third.md')!r})") == "EROFS"
    assert errno_of(f"os.rename({str(root / 'third.md')!r}, {str(root / 'x.md')!r})") == "EROFS"
    assert errno_of(f"os.rmdir({str(root / 'dir')!r})") == "ENOTEMPTY"

    # Deleting the default store's copy shows the read-only one again (no whiteouts).
    os.unlink(root / "same.md")
    assert "/same.md" not in live(store_engine, main.id)
    assert (root / "same.md").read_text() == "from shared\n"
    assert set(live(store_engine, shared.id)) == {"/same.md", "/shared.md", "/dir/deep.md"}
    assert set(live(store_engine, third.id)) == {"/shared.md", "/third.md"}


def test_flat_layout_follows_changes_of_read_only_stores(
    mounter: Mounter, make_store, store_engine: Engine
) -> None:
    make_store("Main")
    shared = make_store("Shared", {"/a.md": "a\n"})
    mount = mounter.mount("Main", "Shared", layout="flat")
    store_engine.memories.create(shared.id, "/b.md", "b\n")
    wait_until(lambda: os.path.exists(mount / "b.md"), "a read-only store's new file")
    assert (mount / "b.md").read_text() == "b\n"
