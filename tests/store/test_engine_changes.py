"""The change feed mounts follow: one gap-free seq per mutation, with the right kind."""

from __future__ import annotations

import pytest

from memfs.core.errors import HeadVersionRedaction, NotFound, PathConflict, PreconditionFailed
from memfs.core.ids import blob_key_of
from memfs.core.model import Actor, ChangeKind, DeleteMode, MemoryStore
from memfs.store import Engine


def _feed(engine: Engine, store_id: str, after: int = 0) -> list[tuple]:
    return [
        (c.seq, c.kind, c.memory_id, c.path, c.old_path, c.blob_key)
        for c in engine.changes_since(store_id, after)
    ]


def test_change_kinds_and_gap_free_seqs(engine: Engine, store: MemoryStore, actor: Actor) -> None:
    assert engine.last_change_seq(store.id) == 0
    assert engine.changes_since(store.id, 0) == []
    memory = engine.create_memory(store.id, "/a", "secret", actor=actor)
    engine.update_memory(store.id, memory.id, actor=actor, content="v2")
    engine.update_memory(store.id, memory.id, actor=actor, path="/b")
    engine.update_memory(store.id, memory.id, actor=actor, path="/b")  # no-op: no change
    engine.redact_version(store.id, memory.memory_version_id, actor=actor)
    engine.update_store(store.id, name="renamed")
    engine.delete_memory(store.id, memory.id, actor=actor)
    engine.restore_memory(store.id, memory.id, actor=actor)
    engine.delete_memory(store.id, memory.id, actor=actor, mode=DeleteMode.HARD_DELETE)
    engine.archive_store(store.id)
    engine.archive_store(store.id)  # no-op: no change
    m = memory.id
    # The hard delete erased every path of the memory from the feed too (SPEC §2).
    expected = [
        (1, ChangeKind.MEMORY_WRITTEN, m, None, None, None),
        (2, ChangeKind.MEMORY_WRITTEN, m, None, None, None),
        (3, ChangeKind.MEMORY_WRITTEN, m, None, None, None),
        (4, ChangeKind.VERSION_REDACTED, m, None, None, None),
        (5, ChangeKind.BLOB_PURGED, None, None, None, blob_key_of(b"secret")),
        (6, ChangeKind.STORE_UPDATED, None, None, None, None),
        (7, ChangeKind.MEMORY_DELETED, m, None, None, None),
        (8, ChangeKind.MEMORY_WRITTEN, m, None, None, None),
        (9, ChangeKind.MEMORY_DELETED, m, None, None, None),
        (10, ChangeKind.BLOB_PURGED, None, None, None, blob_key_of(b"v2")),
        (11, ChangeKind.STORE_ARCHIVED, None, None, None, None),
    ]
    assert _feed(engine, store.id) == expected
    assert engine.last_change_seq(store.id) == 11
    assert _feed(engine, store.id, after=9) == expected[9:]
    assert [c.seq for c in engine.changes_since(store.id, 0, limit=3)] == [1, 2, 3]
    assert all(c.memory_store_id == store.id for c in engine.changes_since(store.id, 0))

    engine.delete_store(store.id)

    feed = _feed(engine, store.id)
    assert feed[:11] == expected
    assert feed[11:] == [(12, ChangeKind.STORE_DELETED, None, None, None, None)]
    with pytest.raises(NotFound):
        engine.last_change_seq(store.id)


def test_refused_operations_write_no_change_and_feeds_are_per_store(
    engine: Engine, store: MemoryStore, actor: Actor
) -> None:
    memory = engine.create_memory(store.id, "/a", "x", actor=actor)
    for error, call in (
        (PathConflict, lambda: engine.create_memory(store.id, "/a", "y", actor=actor)),
        (
            PreconditionFailed,
            lambda: engine.update_memory(
                store.id, memory.id, actor=actor, content="z", expected_sha256="0" * 64
            ),
        ),
        (
            HeadVersionRedaction,
            lambda: engine.redact_version(store.id, memory.memory_version_id, actor=actor),
        ),
    ):
        with pytest.raises(error):
            call()
    assert engine.last_change_seq(store.id) == 1
    # Feeds are per store.
    first = engine.create_store("first")
    second = engine.create_store("second")
    engine.create_memory(first.id, "/a", "x", actor=actor)
    engine.create_memory(second.id, "/a", "x", actor=actor)
    engine.create_memory(first.id, "/b", "x", actor=actor)
    assert [c.seq for c in engine.changes_since(first.id, 0)] == [1, 2]
    assert [c.seq for c in engine.changes_since(second.id, 0)] == [1]
    assert engine.last_change_seq(second.id) == 1


def test_redact_mode_announces_the_purged_blobs(
    engine: Engine, store: MemoryStore, actor: Actor
) -> None:
    memory = engine.create_memory(store.id, "/a", "one", actor=actor)
    engine.update_memory(store.id, memory.id, actor=actor, content="two")
    seq = engine.last_change_seq(store.id)
    engine.delete_memory(store.id, memory.id, actor=actor, mode=DeleteMode.REDACT)
    feed = engine.changes_since(store.id, seq)
    assert feed[0].kind is ChangeKind.MEMORY_DELETED
    assert feed[0].path is None  # a redaction erases the path too (SPEC §2)
    assert {(c.path, c.old_path) for c in engine.changes_since(store.id, 0)} == {(None, None)}
    assert {c.blob_key for c in feed[1:] if c.kind is ChangeKind.BLOB_PURGED} == {
        blob_key_of(b"one"),
        blob_key_of(b"two"),
    }
    assert [c.seq for c in feed] == list(range(seq + 1, seq + 1 + len(feed)))
