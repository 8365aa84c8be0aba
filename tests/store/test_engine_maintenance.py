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
        path: engine.create_memory(store.id, path, path, actor=actor).id
        for path in ("/a/b/c", "/a/b/b/c", "/a/b/d/e", "/a/z", "/a/bb")
    }
    seq = engine.last_change_seq(store.id)

    moved = engine.rename_prefix(store.id, "/a/b/", "/a/", actor=actor)

    assert [(m.path, m.id) for m in moved] == [
        ("/a/b/c", ids["/a/b/b/c"]),
        ("/a/c", ids["/a/b/c"]),
        ("/a/d/e", ids["/a/b/d/e"]),
    ]
    assert [m.path for m in engine.all_memories(store.id)] == [
        "/a/b/c",
        "/a/bb",
        "/a/c",
        "/a/d/e",
        "/a/z",
    ]
    assert engine.get_memory(store.id, ids["/a/b/c"]).content == "/a/b/c"  # content kept
    head = engine.list_versions(store.id, memory_id=ids["/a/b/c"]).items[0]
    assert (head.operation, head.path, head.content_sha256) == (
        Operation.MODIFIED,
        "/a/c",
        moved[1].content_sha256,
    )
    assert {(c.kind, c.path, c.old_path) for c in engine.changes_since(store.id, seq)} == {
        (ChangeKind.MEMORY_WRITTEN, "/a/b/c", "/a/b/b/c"),
        (ChangeKind.MEMORY_WRITTEN, "/a/c", "/a/b/c"),
        (ChangeKind.MEMORY_WRITTEN, "/a/d/e", "/a/b/d/e"),
    }


def test_rename_prefix_refusals_change_nothing(
    engine: Engine, store: MemoryStore, actor: Actor
) -> None:
    engine.create_memory(store.id, "/a/x", "x", actor=actor)
    engine.create_memory(store.id, "/a/y/z", "z", actor=actor)
    blocker = engine.create_memory(store.id, "/file", "f", actor=actor)
    taken = engine.create_memory(store.id, "/b/x", "taken", actor=actor)
    before = snapshot(engine, store.id)
    deep = "/" + "/".join(["d"] * 19) + "/"
    cases = [
        (PathConflict, "/file/"),  # an ancestor of the destination is a file
        (PathConflict, "/b/"),  # /b/x is taken
        (InvalidInput, "/a/y/"),  # into itself
        (InvalidInput, "/"),
        (InvalidPath, deep),  # /a/y/z would have 21 segments
        (PathTooLong, "/" + "l" * 255 + "/" + "m" * 255 + "/" + "n" * 255 + "/" + "o" * 255 + "/"),
        (InvalidPath, "/no-trailing-slash"),
    ]
    for error, new_prefix in cases:
        with pytest.raises(error) as info:
            engine.rename_prefix(store.id, "/a/", new_prefix, actor=actor)
        assert type(info.value) is error, new_prefix
        assert snapshot(engine, store.id) == before
    with pytest.raises(PathConflict) as info:
        engine.rename_prefix(store.id, "/a/", "/file/", actor=actor)
    assert info.value.conflicting_memory_id == blocker.id
    with pytest.raises(PathConflict) as info:
        engine.rename_prefix(store.id, "/a/", "/b/", actor=actor)
    assert info.value.conflicting_memory_id == taken.id
    with pytest.raises(NotFound):
        engine.rename_prefix("memstore_nope", "/a/", "/c/", actor=actor)
    assert engine.rename_prefix(store.id, "/empty/", "/c/", actor=actor) == []
    assert snapshot(engine, store.id) == before


def test_prune_versions_keeps_heads_and_restore_sources(
    engine: Engine, store: MemoryStore, actor: Actor
) -> None:
    engine.update_store(store.id, version_retention_s=3600)
    live = engine.create_memory(store.id, "/live", "l1", actor=actor)
    live = engine.update_memory(store.id, live.id, actor=actor, content="l2")
    soft = engine.create_memory(store.id, "/soft", "s1", actor=actor)
    engine.update_memory(store.id, soft.id, actor=actor, content="s2")
    engine.delete_memory(store.id, soft.id, actor=actor)
    gone = engine.create_memory(store.id, "/gone", "g1", actor=actor)
    engine.delete_memory(store.id, gone.id, mode=DeleteMode.REDACT, actor=actor)
    assert [r.versions for r in engine.prune_versions()] == [0]
    assert engine.statistics()["versions"] == 7

    [result] = engine.prune_versions(now=utcnow() + timedelta(hours=2))

    assert result.versions == 3  # live's v1, soft's v1, gone's redacted v1
    assert [v.id for v in collect(engine.list_versions, store_id=store.id, memory_id=live.id)] == [
        live.memory_version_id
    ]
    assert [
        v.operation for v in collect(engine.list_versions, store_id=store.id, memory_id=soft.id)
    ] == [Operation.DELETED, Operation.MODIFIED]
    assert engine.restore_memory(store.id, soft.id, actor=actor).content == "s2"
    assert engine.get_memory(store.id, live.id).content == "l2"
    assert engine.statistics()["blobs"] == 3  # l2, s2 and the redaction placeholder


def _statements_of_a_rename(engine: Engine, actor: Actor, count: int) -> int:
    """How many SQL statements a rename of a ``count``-memory directory runs."""
    store = engine.create_store(f"rename {count}")
    for index in range(count):
        engine.create_memory(store.id, f"/d/s{index % 7}/f{index}", f"{index}", actor=actor)
    engine.create_memory(store.id, "/elsewhere/x", "x", actor=actor)
    statements: list[str] = []

    def count_statement(*args: object) -> None:
        statements.append(str(args[2]))

    event.listen(engine._sa, "before_cursor_execute", count_statement)
    try:
        moved = engine.rename_prefix(store.id, "/d/", "/moved/", actor=actor)
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
    engine.create_memory(store.id, "/a/x/y", "moving", actor=actor)
    engine.create_memory(store.id, "/a/z", "moving", actor=actor)
    file_for_a_directory = engine.create_memory(store.id, "/b/x", "file", actor=actor)
    below_a_target = engine.create_memory(store.id, "/c/z/deeper", "dir", actor=actor)
    at_a_target = engine.create_memory(store.id, "/e/x/y", "taken", actor=actor)
    file_above = engine.create_memory(store.id, "/f", "file", actor=actor)
    before = snapshot(engine, store.id)
    cases = [
        ("/b/", file_for_a_directory, "path '/b/x/y' is below the memory '/b/x', which is a file"),
        ("/c/", below_a_target, "path '/c/z' is a directory holding the memory '/c/z/deeper'"),
        ("/e/", at_a_target, "a memory already exists at '/e/x/y'"),
        ("/f/g/", file_above, "path '/f/g/x/y' is below the memory '/f', which is a file"),
    ]
    for new_prefix, blocker, message in cases:
        with pytest.raises(PathConflict) as info:
            engine.rename_prefix(store.id, "/a/", new_prefix, actor=actor)
        assert str(info.value) == message
        assert info.value.conflicting_memory_id == blocker.id
        assert info.value.conflicting_path == blocker.path
    assert snapshot(engine, store.id) == before
    moved = engine.rename_prefix(store.id, "/a/", "/g/", actor=actor)
    assert [m.path for m in moved] == ["/g/x/y", "/g/z"]
