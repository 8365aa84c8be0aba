"""The inode table without a kernel: inode numbers, the pyfuse3 lookup-count contract
(developer-notes/lookup_counts.rst), layouts and flat-layout shadowing."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime

import pytest

from memfs.core.model import Memory
from memfs.fuse.errors import NoSuchEntry, ReadOnly
from memfs.fuse.inodes import ROOT_INODE, Attachment, InodeTable, Layout

_counter = iter(range(1, 1_000_000))


def _memory(store: Attachment, path: str, content: str = "x") -> Memory:
    n = next(_counter)
    now = datetime(2026, 1, 1, tzinfo=UTC)
    return Memory(
        id=f"mem_{n:026d}", memory_store_id=store.store_id, path=path, content=None,
        content_sha256=hashlib.sha256(content.encode()).hexdigest(),
        content_size_bytes=len(content.encode()), memory_version_id=f"memver_{n:026d}",
        metadata={}, created_at=now, updated_at=now, blob_key=f"blob{n}",
    )


def _store(name: str, priority: int = 0, read_only: bool = False) -> Attachment:
    return Attachment(f"memstore_{name}", name, name.lower(), priority, read_only)


def test_inode_numbers_are_never_reused() -> None:
    store = _store("Notes")
    table = InodeTable(Layout.PER_STORE, [store])
    first = table.add_memory(store, _memory(store, "/a.md"))
    table.remove(first)
    assert first.inode not in table
    second = table.add_memory(store, _memory(store, "/a.md"))
    assert second.inode > first.inode
    assert table.root.inode == ROOT_INODE


def test_a_removed_inode_lives_until_the_kernel_forgets_it() -> None:
    store = _store("Notes")
    table = InodeTable(Layout.PER_STORE, [store])
    node = table.add_memory(store, _memory(store, "/dir/a.md"))
    node.lookup_count = 2  # the kernel was given it twice (lookup, readdirplus)
    table.remove(node)
    assert table.get(node.inode) is node  # getattr on the unlinked inode still works
    with pytest.raises(NoSuchEntry):
        table.child(table.child(table._store_roots[store.store_id], "dir"), "a.md")
    table.forget(node.inode, 1)
    assert table.get(node.inode) is node
    table.forget(node.inode, 1)
    with pytest.raises(NoSuchEntry):
        table.get(node.inode)


def test_an_open_inode_outlives_its_last_forget() -> None:
    store = _store("Notes")
    table = InodeTable(Layout.PER_STORE, [store])
    node = table.add_memory(store, _memory(store, "/a.md"))
    node.lookup_count = 1
    node.open_count = 1
    table.remove(node)
    table.forget(node.inode, 1)
    assert table.get(node.inode) is node
    node.open_count = 0
    table.release_if_unused(node)
    assert node.inode not in table


def test_forget_never_drops_an_inode_still_in_the_tree() -> None:
    store = _store("Notes")
    table = InodeTable(Layout.PER_STORE, [store])
    node = table.add_memory(store, _memory(store, "/a.md"))
    node.lookup_count = 3
    table.forget(node.inode, 3)
    assert table.get(node.inode) is node
    table.forget(ROOT_INODE, 10)
    assert table.get(ROOT_INODE) is table.root


def test_per_store_layout_roots_and_read_only_rules() -> None:
    notes, prefs = _store("Notes"), _store("Prefs", 1, read_only=True)
    table = InodeTable(Layout.PER_STORE, [notes, prefs])
    assert sorted(table.root.children) == ["notes", "prefs"]
    with pytest.raises(ReadOnly, match="mount root"):
        table.write_target(table.root)
    assert table.write_target(table.root.children["notes"]) is notes
    with pytest.raises(ReadOnly, match="attached read-only"):
        table.write_target(table.root.children["prefs"])
    node = table.add_memory(notes, _memory(notes, "/deep/er/a.md"))
    assert table.memory_path(node) == "/deep/er/a.md"
    assert table.display_path(node) == "/notes/deep/er/a.md"


def test_flat_layout_priority_and_reveal() -> None:
    default, shared = _store("Main", 0), _store("Shared", 1, read_only=True)
    table = InodeTable(Layout.FLAT, [shared, default])
    lower = table.add_memory(shared, _memory(shared, "/same.md", "shared"))
    assert table.child(table.root, "same.md") is lower
    higher = table.add_memory(default, _memory(default, "/same.md", "main"))
    assert table.child(table.root, "same.md") is higher  # the default outranks
    table.remove(higher)
    table.retry_shadowed()
    assert table.child(table.root, "same.md") is lower  # shown again
    # A file of a read-only store: rewritable by copy-up, not deletable.
    assert table.content_target(lower) is default
    with pytest.raises(ReadOnly):
        table.check_writable(lower)


def test_a_taken_path_shadows_until_it_is_free() -> None:
    store = _store("Notes")
    table = InodeTable(Layout.PER_STORE, [store])
    blocker = table.add_memory(store, _memory(store, "/a"))
    below = table.add_memory(store, _memory(store, "/a/b.md"))  # /a is a file: shadowed
    assert below.parent is None
    table.remove(blocker)
    table.retry_shadowed()
    assert table.display_path(below) == "/notes/a/b.md"


def test_subdirectory_counts_follow_every_tree_change() -> None:
    """st_nlink of a directory is 2 + its subdirectories, counted as entries are linked
    and unlinked (O(1) per getattr): checked against a recount after each change."""
    store = _store("Notes")
    table = InodeTable(Layout.PER_STORE, [store])

    def check() -> None:
        stack = [table.root]
        while stack:
            directory = stack.pop()
            children = list(directory.children.values())
            assert table.subdirectory_count(directory) == sum(c.is_dir for c in children)
            stack.extend(c for c in children if c.is_dir)

    root = table._store_roots[store.store_id]
    nodes = [table.add_memory(store, _memory(store, f"/d{i}/e{i % 2}/f.md")) for i in range(6)]
    check()
    held = table.new_directory(root, "held", held=True)
    check()
    table.move(held, table.child(root, "d1"), "moved")
    check()
    table.move(held, root, "back")
    check()
    for node in nodes[:3]:
        parent = node.parent
        table.remove(node)
        table.prune(parent)
        check()
    table.unlink(table.child(root, "d4"))
    check()
    assert table.subdirectory_count(table.root) == 1  # the store directory


def test_statfs_counts_the_stored_memories_at_most_once_a_second(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from memfs.fuse import attributes
    from memfs.fuse.sandbox import MountAccess

    clock = [1000.0]
    monkeypatch.setattr(attributes.time, "monotonic", lambda: clock[0])
    store = _store("Notes")
    table = InodeTable(Layout.PER_STORE, [store])
    table.add_memory(store, _memory(store, "/a.md", "x" * 5000))
    shown = attributes.Attributes(table, MountAccess(), memory_limit=10)
    assert shown.statfs().f_ffree == 9
    table.add_memory(store, _memory(store, "/b.md"))
    clock[0] += attributes.STATFS_MAX_AGE_S / 2
    assert shown.statfs().f_ffree == 9  # counted half a second ago
    clock[0] += attributes.STATFS_MAX_AGE_S / 2
    data = shown.statfs()
    assert data.f_ffree == data.f_favail == 8
    assert data.f_blocks - data.f_bfree == 5001 // attributes.BLOCK_SIZE_BYTES
