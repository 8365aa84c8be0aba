"""Deletion modes, restore and the audit trail (SPEC §2 "Deletion modes", api-contract §5.11)."""

from __future__ import annotations

import hashlib

import pytest
from store_helpers import collect, snapshot

from memfs.core.errors import (
    InvalidContent,
    InvalidInput,
    NotFound,
    NotRestorable,
    PathConflict,
    PreconditionFailed,
)
from memfs.core.ids import blob_key_of
from memfs.core.model import Actor, DeleteMode, MemoryStore, Operation
from memfs.store import Engine

ADMIN = Actor.user("user_admin")


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def test_soft_delete_keeps_versions_and_is_restorable(
    engine: Engine, store: MemoryStore, actor: Actor
) -> None:
    memory = engine.create_memory(store.id, "/notes/a.md", "v1", actor=actor, metadata={"k": "v"})
    engine.update_memory(store.id, memory.id, actor=actor, content="v2")
    engine.create_memory(store.id, "/notes/b.md", "other", actor=actor)

    engine.delete_memory(store.id, memory.id, actor=ADMIN, reason="tidy up")

    assert [m.path for m in engine.list_memories(store.id).items] == ["/notes/b.md"]
    assert [m.path for m in engine.all_memories(store.id)] == ["/notes/b.md"]
    with pytest.raises(NotFound):
        engine.get_memory(store.id, memory.id)
    with pytest.raises(NotFound):
        engine.get_memory_by_path(store.id, "/notes/a.md")
    counted = engine.get_store(store.id)
    assert (counted.entry_count, counted.total_size_bytes) == (1, len("other"))
    versions = collect(engine.list_versions, store_id=store.id, memory_id=memory.id)
    assert [v.operation for v in versions] == [
        Operation.DELETED,
        Operation.MODIFIED,
        Operation.CREATED,
    ]
    tomb = engine.get_version(store.id, versions[0].id)
    assert tomb.path == "/notes/a.md"
    assert (tomb.content, tomb.content_sha256, tomb.content_size_bytes) == (None, None, None)
    assert (tomb.created_by, tomb.reason, tomb.redacted_at) == (ADMIN, "tidy up", None)
    assert engine.get_version(store.id, versions[1].id).content == "v2"
    [deleted] = engine.deleted_memories(store.id)
    assert (deleted.id, deleted.path, deleted.deleted_at) == (
        memory.id,
        "/notes/a.md",
        tomb.created_at,
    )
    assert engine.audit_events(store.id, memory_id=memory.id)[0] == {
        "action": "soft_delete",
        "memory_store_id": store.id,
        "memory_id": memory.id,
        "reason": "tidy up",
        "metadata": {},
        "actor_type": "user_actor",
        "actor_id": "user_admin",
        "created_at": engine.audit_events(store.id)[0]["created_at"],
    }

    restored = engine.restore_memory(store.id, memory.id, actor=ADMIN, reason="oops")

    assert (restored.id, restored.path, restored.content) == (memory.id, "/notes/a.md", "v2")
    assert restored.content_sha256 == sha("v2")
    assert restored.metadata == {"k": "v"}
    assert engine.get_memory(store.id, memory.id) == restored
    newest = engine.get_version(store.id, restored.memory_version_id)
    assert (newest.operation, newest.content, newest.path) == (
        Operation.CREATED,
        "v2",
        "/notes/a.md",
    )
    assert len(collect(engine.list_versions, store_id=store.id, memory_id=memory.id)) == 4
    assert engine.deleted_memories(store.id) == []
    counted = engine.get_store(store.id)
    assert (counted.entry_count, counted.total_size_bytes) == (2, len("other") + 2)
    assert engine.audit_events(store.id)[0]["action"] == "restore"
    assert engine.audit_events(store.id)[0]["reason"] == "oops"


def test_delete_with_expected_sha256(engine: Engine, store: MemoryStore, actor: Actor) -> None:
    memory = engine.create_memory(store.id, "/a", "current", actor=actor)
    before = snapshot(engine, store.id)
    for mode in DeleteMode:
        with pytest.raises(PreconditionFailed) as info:
            engine.delete_memory(
                store.id, memory.id, actor=actor, expected_sha256=sha("stale"), mode=mode
            )
        assert info.value.actual_sha256 == sha("current")
        assert snapshot(engine, store.id) == before
    engine.delete_memory(store.id, memory.id, actor=actor, expected_sha256=sha("current"))
    with pytest.raises(NotFound):
        engine.get_memory(store.id, memory.id)


def test_delete_refusals_change_nothing(engine: Engine, store: MemoryStore, actor: Actor) -> None:
    other = engine.create_store("other")
    foreign = engine.create_memory(other.id, "/a", "x", actor=actor)
    memory = engine.create_memory(store.id, "/a", "x", actor=actor)
    engine.delete_memory(store.id, memory.id, actor=actor)
    live = engine.create_memory(store.id, "/live", "x", actor=actor)
    before = snapshot(engine, store.id)
    for memory_id in (memory.id, foreign.id, "mem_nope"):
        with pytest.raises(NotFound):
            engine.delete_memory(store.id, memory_id, actor=actor)
    with pytest.raises(InvalidContent):
        engine.delete_memory(
            store.id, live.id, actor=actor, mode=DeleteMode.REDACT, replacement="\x00"
        )
    with pytest.raises(InvalidInput, match="^mode must be soft_delete, redact or hard_delete$"):
        engine.delete_memory(store.id, live.id, actor=actor, mode="purge")  # type: ignore[arg-type]
    assert snapshot(engine, store.id) == before
    assert engine.get_memory(other.id, foreign.id).content == "x"


def test_restore_refusals(engine: Engine, store: MemoryStore, actor: Actor) -> None:
    live = engine.create_memory(store.id, "/live", "x", actor=actor)
    with pytest.raises(NotRestorable, match=f"^memory {live.id!r} is not deleted$"):
        engine.restore_memory(store.id, live.id, actor=actor)
    with pytest.raises(NotFound):
        engine.restore_memory(store.id, "mem_nope", actor=actor)

    # Path taken by a new memory.
    taken = engine.create_memory(store.id, "/taken", "old", actor=actor)
    engine.delete_memory(store.id, taken.id, actor=actor)
    newcomer = engine.create_memory(store.id, "/taken", "new", actor=actor)
    # An ancestor is now a file.
    below = engine.create_memory(store.id, "/dir/file", "x", actor=actor)
    engine.delete_memory(store.id, below.id, actor=actor)
    blocker = engine.create_memory(store.id, "/dir", "now a file", actor=actor)
    before = snapshot(engine, store.id)
    for memory_id, occupant in ((taken.id, newcomer), (below.id, blocker)):
        with pytest.raises(PathConflict) as info:
            engine.restore_memory(store.id, memory_id, actor=actor)
        assert info.value.conflicting_memory_id == occupant.id
        assert info.value.conflicting_path == occupant.path
        assert snapshot(engine, store.id) == before

    # Once the path is free again it restores.
    engine.delete_memory(store.id, newcomer.id, actor=actor)
    assert engine.restore_memory(store.id, taken.id, actor=actor).content == "old"

    # A redacted memory is not restorable.
    secret = engine.create_memory(store.id, "/secret", "s", actor=actor)
    engine.delete_memory(store.id, secret.id, actor=actor, mode=DeleteMode.REDACT)
    before = snapshot(engine, store.id)
    with pytest.raises(NotRestorable, match="was redacted and can't be restored"):
        engine.restore_memory(store.id, secret.id, actor=actor)
    assert snapshot(engine, store.id) == before

    # Nor one whose content version was redacted after the soft delete.
    scrubbed = engine.create_memory(store.id, "/scrubbed", "s", actor=actor)
    engine.delete_memory(store.id, scrubbed.id, actor=actor)
    engine.redact_version(store.id, scrubbed.memory_version_id, actor=actor)
    before = snapshot(engine, store.id)
    with pytest.raises(NotRestorable, match="content of memory .* was redacted"):
        engine.restore_memory(store.id, scrubbed.id, actor=actor)
    assert snapshot(engine, store.id) == before


def test_redact_mode(engine: Engine, store: MemoryStore, actor: Actor) -> None:
    memory = engine.create_memory(store.id, "/p", "secret one", actor=actor, metadata={"k": "v"})
    engine.update_memory(store.id, memory.id, actor=actor, content="secret two")
    engine.update_memory(store.id, memory.id, actor=actor, path="/q")
    engine.create_memory(store.id, "/keep", "kept", actor=actor)
    blobs_before = engine.statistics()["blobs"]

    engine.delete_memory(store.id, memory.id, actor=ADMIN, mode=DeleteMode.REDACT, reason="pii")

    with pytest.raises(NotFound):
        engine.get_memory(store.id, memory.id)
    assert engine.deleted_memories(store.id) == []  # not restorable
    versions = collect(engine.list_versions, store_id=store.id, memory_id=memory.id)
    assert [v.operation for v in versions] == [
        Operation.DELETED,
        Operation.MODIFIED,
        Operation.MODIFIED,
        Operation.CREATED,
    ]
    # The deleted version is born redacted: the path is erased too (SPEC §2).
    assert versions[0].redacted_at is not None
    assert versions[0].path is None
    assert versions[0].reason == "pii"
    for version in versions:
        full = engine.get_version(store.id, version.id)
        assert full.redacted_at is not None
        assert full.redacted_by == ADMIN
        assert full.created_by == (ADMIN if version is versions[0] else actor)
        assert (full.path, full.content, full.content_sha256, full.content_size_bytes) == (
            None,
            None,
            None,
            None,
        )
    # The secret bytes are gone; "[REDACTED]" was added.
    assert engine.statistics()["blobs"] == blobs_before - 2 + 1
    for text in ("secret one", "secret two"):
        with pytest.raises(NotFound):
            engine.read_blob(blob_key_of(text.encode()))
    assert engine.audit_events(store.id)[0]["action"] == "redact"
    counted = engine.get_store(store.id)
    assert (counted.entry_count, counted.total_size_bytes) == (1, len("kept"))
    # The path is free again.
    assert engine.create_memory(store.id, "/q", "new", actor=actor).content == "new"
    # Bytes another live memory holds stay.
    shared = engine.create_memory(store.id, "/s1", "shared", actor=actor)
    twin = engine.create_memory(store.id, "/s2", "shared", actor=actor)
    engine.delete_memory(store.id, shared.id, actor=actor, mode=DeleteMode.REDACT)
    assert engine.get_memory(store.id, twin.id).content == "shared"


def test_hard_delete(engine: Engine, store: MemoryStore, actor: Actor) -> None:
    memory = engine.create_memory(store.id, "/a", "doomed one", actor=actor)
    engine.update_memory(store.id, memory.id, actor=actor, content="doomed two")
    keep = engine.create_memory(store.id, "/keep", "doomed one", actor=actor)  # shares v1 bytes
    stats = engine.statistics()

    engine.delete_memory(
        store.id, memory.id, actor=ADMIN, mode=DeleteMode.HARD_DELETE, reason="gdpr"
    )

    assert engine.statistics() == {
        "stores": 1,
        "memories": 1,
        "versions": stats["versions"] - 2,
        "blobs": stats["blobs"] - 1,
    }
    assert collect(engine.list_versions, store_id=store.id, memory_id=memory.id) == []
    with pytest.raises(NotFound):
        engine.get_version(store.id, memory.memory_version_id)
    with pytest.raises(NotFound):
        engine.restore_memory(store.id, memory.id, actor=actor)
    assert engine.deleted_memories(store.id) == []
    assert engine.get_memory(store.id, keep.id).content == "doomed one"
    [event] = engine.audit_events(store.id, memory_id=memory.id)
    assert {k: event[k] for k in ("action", "reason", "actor_type", "actor_id")} == {
        "action": "hard_delete",
        "reason": "gdpr",
        "actor_type": "user_actor",
        "actor_id": "user_admin",
    }
    counted = engine.get_store(store.id)
    assert (counted.entry_count, counted.total_size_bytes) == (1, len("doomed one"))
