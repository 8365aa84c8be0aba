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
    memory = engine.for_caller(actor=actor).memories.create(
        store.id, "/notes/a.md", "v1", metadata={"k": "v"}
    )
    engine.for_caller(actor=actor).memories.update(store.id, memory.id, content="v2")
    engine.for_caller(actor=actor).memories.create(store.id, "/notes/b.md", "other")

    engine.for_caller(actor=ADMIN).memories.delete(store.id, memory.id, reason="tidy up")

    assert [m.path for m in engine.memories.list(store.id).items] == ["/notes/b.md"]
    assert [m.path for m in engine.memories.all(store.id)] == ["/notes/b.md"]
    with pytest.raises(NotFound):
        engine.memories.get(store.id, memory.id)
    with pytest.raises(NotFound):
        engine.memories.get_by_path(store.id, "/notes/a.md")
    counted = engine.stores.get(store.id)
    assert (counted.entry_count, counted.total_size_bytes) == (1, len("other"))
    versions = collect(engine.versions.list, store_id=store.id, memory_id=memory.id)
    assert [v.operation for v in versions] == [
        Operation.DELETED,
        Operation.MODIFIED,
        Operation.CREATED,
    ]
    tomb = engine.versions.get(store.id, versions[0].id)
    assert tomb.path == "/notes/a.md"
    assert (tomb.content, tomb.content_sha256, tomb.content_size_bytes) == (None, None, None)
    assert (tomb.created_by, tomb.reason, tomb.redacted_at) == (ADMIN, "tidy up", None)
    assert engine.versions.get(store.id, versions[1].id).content == "v2"
    [deleted] = engine.memories.deleted(store.id)
    assert (deleted.id, deleted.path, deleted.deleted_at) == (
        memory.id,
        "/notes/a.md",
        tomb.created_at,
    )
    assert engine.feed.audit_events(store.id, memory_id=memory.id)[0] == {
        "action": "soft_delete",
        "memory_store_id": store.id,
        "memory_id": memory.id,
        "reason": "tidy up",
        "metadata": {},
        "actor_type": "user_actor",
        "actor_id": "user_admin",
        "created_at": engine.feed.audit_events(store.id)[0]["created_at"],
    }

    restored = engine.for_caller(actor=ADMIN).memories.restore(store.id, memory.id, reason="oops")

    assert (restored.id, restored.path, restored.content) == (memory.id, "/notes/a.md", "v2")
    assert restored.content_sha256 == sha("v2")
    assert restored.metadata == {"k": "v"}
    assert engine.memories.get(store.id, memory.id) == restored
    newest = engine.versions.get(store.id, restored.memory_version_id)
    assert (newest.operation, newest.content, newest.path) == (
        Operation.CREATED,
        "v2",
        "/notes/a.md",
    )
    assert len(collect(engine.versions.list, store_id=store.id, memory_id=memory.id)) == 4
    assert engine.memories.deleted(store.id) == []
    counted = engine.stores.get(store.id)
    assert (counted.entry_count, counted.total_size_bytes) == (2, len("other") + 2)
    assert engine.feed.audit_events(store.id)[0]["action"] == "restore"
    assert engine.feed.audit_events(store.id)[0]["reason"] == "oops"


def test_delete_with_expected_sha256(engine: Engine, store: MemoryStore, actor: Actor) -> None:
    memory = engine.for_caller(actor=actor).memories.create(store.id, "/a", "current")
    before = snapshot(engine, store.id)
    for mode in DeleteMode:
        with pytest.raises(PreconditionFailed) as info:
            engine.for_caller(actor=actor).memories.delete(
                store.id,
                memory.id,
                expected_sha256=sha("stale"),
                mode=mode,
            )
        assert info.value.actual_sha256 == sha("current")
        assert snapshot(engine, store.id) == before
    engine.for_caller(actor=actor).memories.delete(
        store.id, memory.id, expected_sha256=sha("current")
    )
    with pytest.raises(NotFound):
        engine.memories.get(store.id, memory.id)


def test_delete_refusals_change_nothing(engine: Engine, store: MemoryStore, actor: Actor) -> None:
    other = engine.stores.create("other")
    foreign = engine.for_caller(actor=actor).memories.create(other.id, "/a", "x")
    memory = engine.for_caller(actor=actor).memories.create(store.id, "/a", "x")
    engine.for_caller(actor=actor).memories.delete(store.id, memory.id)
    live = engine.for_caller(actor=actor).memories.create(store.id, "/live", "x")
    before = snapshot(engine, store.id)
    for memory_id in (memory.id, foreign.id, "mem_nope"):
        with pytest.raises(NotFound):
            engine.for_caller(actor=actor).memories.delete(store.id, memory_id)
    with pytest.raises(InvalidContent):
        engine.for_caller(actor=actor).memories.delete(
            store.id,
            live.id,
            mode=DeleteMode.REDACT,
            replacement="\x00",
        )
    with pytest.raises(InvalidInput, match="^mode must be soft_delete, redact or hard_delete$"):
        engine.for_caller(actor=actor).memories.delete(store.id, live.id, mode="purge")  # type: ignore[arg-type]
    assert snapshot(engine, store.id) == before
    assert engine.memories.get(other.id, foreign.id).content == "x"


def test_restore_refusals(engine: Engine, store: MemoryStore, actor: Actor) -> None:
    live = engine.for_caller(actor=actor).memories.create(store.id, "/live", "x")
    with pytest.raises(NotRestorable, match=f"^memory {live.id!r} is not deleted$"):
        engine.for_caller(actor=actor).memories.restore(store.id, live.id)
    with pytest.raises(NotFound):
        engine.for_caller(actor=actor).memories.restore(store.id, "mem_nope")

    # Path taken by a new memory.
    taken = engine.for_caller(actor=actor).memories.create(store.id, "/taken", "old")
    engine.for_caller(actor=actor).memories.delete(store.id, taken.id)
    newcomer = engine.for_caller(actor=actor).memories.create(store.id, "/taken", "new")
    # An ancestor is now a file.
    below = engine.for_caller(actor=actor).memories.create(store.id, "/dir/file", "x")
    engine.for_caller(actor=actor).memories.delete(store.id, below.id)
    blocker = engine.for_caller(actor=actor).memories.create(store.id, "/dir", "now a file")
    before = snapshot(engine, store.id)
    for memory_id, occupant in ((taken.id, newcomer), (below.id, blocker)):
        with pytest.raises(PathConflict) as info:
            engine.for_caller(actor=actor).memories.restore(store.id, memory_id)
        assert info.value.conflicting_memory_id == occupant.id
        assert info.value.conflicting_path == occupant.path
        assert snapshot(engine, store.id) == before

    # Once the path is free again it restores.
    engine.for_caller(actor=actor).memories.delete(store.id, newcomer.id)
    assert engine.for_caller(actor=actor).memories.restore(store.id, taken.id).content == "old"

    # A redacted memory is not restorable.
    secret = engine.for_caller(actor=actor).memories.create(store.id, "/secret", "s")
    engine.for_caller(actor=actor).memories.delete(store.id, secret.id, mode=DeleteMode.REDACT)
    before = snapshot(engine, store.id)
    with pytest.raises(NotRestorable, match="was redacted and can't be restored"):
        engine.for_caller(actor=actor).memories.restore(store.id, secret.id)
    assert snapshot(engine, store.id) == before

    # Nor one whose content version was redacted after the soft delete.
    scrubbed = engine.for_caller(actor=actor).memories.create(store.id, "/scrubbed", "s")
    engine.for_caller(actor=actor).memories.delete(store.id, scrubbed.id)
    engine.for_caller(actor=actor).versions.redact(store.id, scrubbed.memory_version_id)
    before = snapshot(engine, store.id)
    with pytest.raises(NotRestorable, match="content of memory .* was redacted"):
        engine.for_caller(actor=actor).memories.restore(store.id, scrubbed.id)
    assert snapshot(engine, store.id) == before


def test_redact_mode(engine: Engine, store: MemoryStore, actor: Actor) -> None:
    memory = engine.for_caller(actor=actor).memories.create(
        store.id, "/p", "secret one", metadata={"k": "v"}
    )
    engine.for_caller(actor=actor).memories.update(store.id, memory.id, content="secret two")
    engine.for_caller(actor=actor).memories.update(store.id, memory.id, path="/q")
    engine.for_caller(actor=actor).memories.create(store.id, "/keep", "kept")
    blobs_before = engine.statistics()["blobs"]

    engine.for_caller(actor=ADMIN).memories.delete(
        store.id, memory.id, mode=DeleteMode.REDACT, reason="pii"
    )

    with pytest.raises(NotFound):
        engine.memories.get(store.id, memory.id)
    assert engine.memories.deleted(store.id) == []  # not restorable
    versions = collect(engine.versions.list, store_id=store.id, memory_id=memory.id)
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
        full = engine.versions.get(store.id, version.id)
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
            engine.blobs.read(blob_key_of(text.encode()))
    assert engine.feed.audit_events(store.id)[0]["action"] == "redact"
    counted = engine.stores.get(store.id)
    assert (counted.entry_count, counted.total_size_bytes) == (1, len("kept"))
    # The path is free again.
    assert engine.for_caller(actor=actor).memories.create(store.id, "/q", "new").content == "new"
    # Bytes another live memory holds stay.
    shared = engine.for_caller(actor=actor).memories.create(store.id, "/s1", "shared")
    twin = engine.for_caller(actor=actor).memories.create(store.id, "/s2", "shared")
    engine.for_caller(actor=actor).memories.delete(store.id, shared.id, mode=DeleteMode.REDACT)
    assert engine.memories.get(store.id, twin.id).content == "shared"


def test_hard_delete(engine: Engine, store: MemoryStore, actor: Actor) -> None:
    memory = engine.for_caller(actor=actor).memories.create(store.id, "/a", "doomed one")
    engine.for_caller(actor=actor).memories.update(store.id, memory.id, content="doomed two")
    keep = engine.for_caller(actor=actor).memories.create(
        store.id, "/keep", "doomed one"
    )  # shares v1 bytes
    stats = engine.statistics()

    engine.for_caller(actor=ADMIN).memories.delete(
        store.id,
        memory.id,
        mode=DeleteMode.HARD_DELETE,
        reason="gdpr",
    )

    assert engine.statistics() == {
        "stores": 1,
        "memories": 1,
        "versions": stats["versions"] - 2,
        "blobs": stats["blobs"] - 1,
    }
    assert collect(engine.versions.list, store_id=store.id, memory_id=memory.id) == []
    with pytest.raises(NotFound):
        engine.versions.get(store.id, memory.memory_version_id)
    with pytest.raises(NotFound):
        engine.for_caller(actor=actor).memories.restore(store.id, memory.id)
    assert engine.memories.deleted(store.id) == []
    assert engine.memories.get(store.id, keep.id).content == "doomed one"
    [event] = engine.feed.audit_events(store.id, memory_id=memory.id)
    assert {k: event[k] for k in ("action", "reason", "actor_type", "actor_id")} == {
        "action": "hard_delete",
        "reason": "gdpr",
        "actor_type": "user_actor",
        "actor_id": "user_admin",
    }
    counted = engine.stores.get(store.id)
    assert (counted.entry_count, counted.total_size_bytes) == (1, len("doomed one"))


def test_erasing_an_empty_memory_never_purges_the_empty_blob(
    engine: Engine, store: MemoryStore, actor: Actor
) -> None:
    """The empty blob holds nothing to erase, and every O_EXCL claim refers to it: a
    ``blob_purged`` of it would tell each mount that its claims' content was redacted
    (SPEC §4: a mount then discarded a file written but not yet closed)."""
    caller = engine.for_caller(actor=actor)
    before = engine.feed.last_seq(store.id)
    # Each the only memory holding the empty blob when it is erased.
    taken_back = caller.memories.create(store.id, "/claims/refused.md", "")
    assert caller.memories.retract_create(store.id, taken_back.id)
    hard = caller.memories.create(store.id, "/claims/hard.md", "")
    engine.for_caller(actor=ADMIN).memories.delete(
        store.id, hard.id, mode=DeleteMode.HARD_DELETE, reason="tidy up"
    )
    pending = caller.memories.create(store.id, "/claims/pending.md", "")
    kinds = [change.kind.value for change in engine.feed.changes_since(store.id, before)]
    assert "blob_purged" not in kinds, kinds
    assert engine.memories.get(store.id, pending.id).content == ""
    assert engine.blobs.read(blob_key_of(b"")) == b""
