"""Directory renames (SPEC §4 "directory rename moves every memory below, atomically") and
version retention (SPEC §2 "the head version of a live memory is never pruned")."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy import event
from store_helpers import collect, snapshot

from memfs.core.errors import InvalidInput, InvalidPath, NotFound, PathConflict, PathTooLong
from memfs.core.model import Actor, ChangeKind, DeleteMode, MemoryStore, Operation, utcnow
from memfs.store import Engine


def test_rename_prefix_moves_every_memory_below(
    engine: Engine, store: MemoryStore, actor: Actor
) -> None:
    ids = {
        path: engine.for_caller(actor=actor).memories.create(store.id, path, path).id
        for path in ("/a/b/c", "/a/b/b/c", "/a/b/d/e", "/a/z", "/a/bb")
    }
    seq = engine.feed.last_seq(store.id)

    moved = engine.for_caller(actor=actor).memories.rename_prefix(store.id, "/a/b/", "/a/")

    assert [(m.path, m.id) for m in moved] == [
        ("/a/b/c", ids["/a/b/b/c"]),
        ("/a/c", ids["/a/b/c"]),
        ("/a/d/e", ids["/a/b/d/e"]),
    ]
    assert [m.path for m in engine.memories.all(store.id)] == [
        "/a/b/c",
        "/a/bb",
        "/a/c",
        "/a/d/e",
        "/a/z",
    ]
    assert engine.memories.get(store.id, ids["/a/b/c"]).content == "/a/b/c"  # content kept
    head = engine.versions.list(store.id, memory_id=ids["/a/b/c"]).items[0]
    assert (head.operation, head.path, head.content_sha256) == (
        Operation.MODIFIED,
        "/a/c",
        moved[1].content_sha256,
    )
    assert {(c.kind, c.path, c.old_path) for c in engine.feed.changes_since(store.id, seq)} == {
        (ChangeKind.MEMORY_WRITTEN, "/a/b/c", "/a/b/b/c"),
        (ChangeKind.MEMORY_WRITTEN, "/a/c", "/a/b/c"),
        (ChangeKind.MEMORY_WRITTEN, "/a/d/e", "/a/b/d/e"),
    }


def test_rename_prefix_refusals_change_nothing(
    engine: Engine, store: MemoryStore, actor: Actor
) -> None:
    engine.for_caller(actor=actor).memories.create(store.id, "/a/x", "x")
    engine.for_caller(actor=actor).memories.create(store.id, "/a/y/z", "z")
    blocker = engine.for_caller(actor=actor).memories.create(store.id, "/file", "f")
    taken = engine.for_caller(actor=actor).memories.create(store.id, "/b/x", "taken")
    before = snapshot(engine, store.id)
    deep = "/" + "/".join(["d"] * 19) + "/"
    cases = [
        (PathConflict, "/file/"),  # an ancestor of the destination is a file
        (PathConflict, "/b/"),  # /b/x is taken
        (InvalidInput, "/a/y/"),  # into itself
        (InvalidInput, "/"),
        (PathTooLong, deep),  # /a/y/z would have 21 segments
        (PathTooLong, "/" + "l" * 255 + "/" + "m" * 255 + "/" + "n" * 255 + "/" + "o" * 255 + "/"),
        (InvalidPath, "/no-trailing-slash"),
    ]
    for error, new_prefix in cases:
        with pytest.raises(error) as info:
            engine.for_caller(actor=actor).memories.rename_prefix(store.id, "/a/", new_prefix)
        assert type(info.value) is error, new_prefix
        assert snapshot(engine, store.id) == before
    with pytest.raises(PathConflict) as info:
        engine.for_caller(actor=actor).memories.rename_prefix(store.id, "/a/", "/file/")
    assert info.value.conflicting_memory_id == blocker.id
    with pytest.raises(PathConflict) as info:
        engine.for_caller(actor=actor).memories.rename_prefix(store.id, "/a/", "/b/")
    assert info.value.conflicting_memory_id == taken.id
    with pytest.raises(NotFound):
        engine.for_caller(actor=actor).memories.rename_prefix("memstore_nope", "/a/", "/c/")
    assert engine.for_caller(actor=actor).memories.rename_prefix(store.id, "/empty/", "/c/") == []
    assert snapshot(engine, store.id) == before


def test_prune_versions_keeps_heads_and_restore_sources(
    engine: Engine, store: MemoryStore, actor: Actor
) -> None:
    engine.stores.update(store.id, version_retention_s=3600)
    live = engine.for_caller(actor=actor).memories.create(store.id, "/live", "l1")
    live = engine.for_caller(actor=actor).memories.update(store.id, live.id, content="l2")
    soft = engine.for_caller(actor=actor).memories.create(store.id, "/soft", "s1")
    engine.for_caller(actor=actor).memories.update(store.id, soft.id, content="s2")
    engine.for_caller(actor=actor).memories.delete(store.id, soft.id)
    gone = engine.for_caller(actor=actor).memories.create(store.id, "/gone", "g1")
    engine.for_caller(actor=actor).memories.delete(store.id, gone.id, mode=DeleteMode.REDACT)
    assert [r.versions for r in engine.retention.prune()] == [0]
    assert engine.statistics()["versions"] == 7

    [result] = engine.retention.prune(now=utcnow() + timedelta(hours=2))

    assert result.versions == 3  # live's v1, soft's v1, gone's redacted v1
    assert [v.id for v in collect(engine.versions.list, store_id=store.id, memory_id=live.id)] == [
        live.memory_version_id
    ]
    assert [
        v.operation for v in collect(engine.versions.list, store_id=store.id, memory_id=soft.id)
    ] == [Operation.DELETED, Operation.MODIFIED]
    assert engine.for_caller(actor=actor).memories.restore(store.id, soft.id).content == "s2"
    assert engine.memories.get(store.id, live.id).content == "l2"
    assert engine.statistics()["blobs"] == 3  # l2, s2 and the redaction placeholder


def _statements_of_a_rename(engine: Engine, actor: Actor, count: int) -> int:
    """How many SQL statements a rename of a ``count``-memory directory runs."""
    store = engine.stores.create(f"rename {count}")
    for index in range(count):
        engine.for_caller(actor=actor).memories.create(
            store.id, f"/d/s{index % 7}/f{index}", f"{index}"
        )
    engine.for_caller(actor=actor).memories.create(store.id, "/elsewhere/x", "x")
    statements: list[str] = []

    def count_statement(*args: object) -> None:
        statements.append(str(args[2]))

    event.listen(engine._sa, "before_cursor_execute", count_statement)
    try:
        moved = engine.for_caller(actor=actor).memories.rename_prefix(store.id, "/d/", "/moved/")
    finally:
        event.remove(engine._sa, "before_cursor_execute", count_statement)
    assert len(moved) == count
    assert [m.path for m in moved] == sorted(m.path for m in moved)
    assert all(m.path.startswith("/moved/s") for m in moved)
    return len(statements)


def test_a_directory_rename_runs_the_same_statements_whatever_its_size(
    engine: Engine, actor: Actor
) -> None:
    """The rename was quadratic (a NOT IN of every moving id per target)
    and ran several statements per memory; 5,000 memories held the write lock ~30 s. Now
    the number of statements does not grow with the directory (bulk statements)."""
    assert _statements_of_a_rename(engine, actor, 300) == _statements_of_a_rename(engine, actor, 30)


def test_rename_prefix_names_every_kind_of_blocker(
    engine: Engine, store: MemoryStore, actor: Actor
) -> None:
    engine.for_caller(actor=actor).memories.create(store.id, "/a/x/y", "moving")
    engine.for_caller(actor=actor).memories.create(store.id, "/a/z", "moving")
    file_for_a_directory = engine.for_caller(actor=actor).memories.create(store.id, "/b/x", "file")
    below_a_target = engine.for_caller(actor=actor).memories.create(store.id, "/c/z/deeper", "dir")
    at_a_target = engine.for_caller(actor=actor).memories.create(store.id, "/e/x/y", "taken")
    file_above = engine.for_caller(actor=actor).memories.create(store.id, "/f", "file")
    before = snapshot(engine, store.id)
    cases = [
        ("/b/", file_for_a_directory, "path '/b/x/y' is below the memory '/b/x', which is a file"),
        ("/c/", below_a_target, "path '/c/z' is a directory holding the memory '/c/z/deeper'"),
        ("/e/", at_a_target, "a memory already exists at '/e/x/y'"),
        ("/f/g/", file_above, "path '/f/g/x/y' is below the memory '/f', which is a file"),
    ]
    for new_prefix, blocker, message in cases:
        with pytest.raises(PathConflict) as info:
            engine.for_caller(actor=actor).memories.rename_prefix(store.id, "/a/", new_prefix)
        assert str(info.value) == message
        assert info.value.conflicting_memory_id == blocker.id
        assert info.value.conflicting_path == blocker.path
    assert snapshot(engine, store.id) == before
    moved = engine.for_caller(actor=actor).memories.rename_prefix(store.id, "/a/", "/g/")
    assert [m.path for m in moved] == ["/g/x/y", "/g/z"]
