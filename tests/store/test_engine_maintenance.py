"""Directory renames (SPEC §4 "directory rename moves every memory below, atomically") and
version retention (SPEC §2 "the head version of a live memory is never pruned")."""

from __future__ import annotations

import pytest
from store_helpers import collect, snapshot

from memfs.errors import InvalidInput, InvalidPath, NotFound, PathConflict, PathTooLong
from memfs.model import Actor, ChangeKind, DeleteMode, MemoryStore, Operation
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
    live = engine.create_memory(store.id, "/live", "l1", actor=actor)
    live = engine.update_memory(store.id, live.id, actor=actor, content="l2")
    soft = engine.create_memory(store.id, "/soft", "s1", actor=actor)
    engine.update_memory(store.id, soft.id, actor=actor, content="s2")
    engine.delete_memory(store.id, soft.id, actor=actor)
    gone = engine.create_memory(store.id, "/gone", "g1", actor=actor)
    engine.delete_memory(store.id, gone.id, actor=actor, mode=DeleteMode.REDACT)
    assert engine.prune_versions(older_than_s=3600) == 0
    assert engine.statistics()["versions"] == 7

    dropped = engine.prune_versions(older_than_s=0)

    assert dropped == 3  # live's v1, soft's v1, gone's redacted v1
    assert [v.id for v in collect(engine.list_versions, store_id=store.id, memory_id=live.id)] == [
        live.memory_version_id
    ]
    assert [
        v.operation for v in collect(engine.list_versions, store_id=store.id, memory_id=soft.id)
    ] == [Operation.DELETED, Operation.MODIFIED]
    assert engine.restore_memory(store.id, soft.id, actor=actor).content == "s2"
    assert engine.get_memory(store.id, live.id).content == "l2"
    assert engine.statistics()["blobs"] == 3  # l2, s2 and the redaction placeholder
