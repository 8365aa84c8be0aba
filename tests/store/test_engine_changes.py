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
        for c in engine.feed.changes_since(store_id, after)
    ]


def test_change_kinds_and_gap_free_seqs(engine: Engine, store: MemoryStore, actor: Actor) -> None:
    assert engine.feed.last_seq(store.id) == 0
    assert engine.feed.changes_since(store.id, 0) == []
    memory = engine.for_caller(actor=actor).memories.create(store.id, "/a", "secret")
    engine.for_caller(actor=actor).memories.update(store.id, memory.id, content="v2")
    engine.for_caller(actor=actor).memories.update(store.id, memory.id, path="/b")
    engine.for_caller(actor=actor).memories.update(
        store.id, memory.id, path="/b"
    )  # no-op: no change
    engine.for_caller(actor=actor).versions.redact(store.id, memory.memory_version_id)
    engine.stores.update(store.id, name="renamed")
    engine.for_caller(actor=actor).memories.delete(store.id, memory.id)
    engine.for_caller(actor=actor).memories.restore(store.id, memory.id)
    engine.for_caller(actor=actor).memories.delete(store.id, memory.id, mode=DeleteMode.HARD_DELETE)
    engine.stores.archive(store.id)
    engine.stores.archive(store.id)  # no-op: no change
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
    assert engine.feed.last_seq(store.id) == 11
    assert _feed(engine, store.id, after=9) == expected[9:]
    assert [c.seq for c in engine.feed.changes_since(store.id, 0, limit=3)] == [1, 2, 3]
    assert all(c.memory_store_id == store.id for c in engine.feed.changes_since(store.id, 0))

    engine.stores.delete(store.id)

    feed = _feed(engine, store.id)
    assert feed[:11] == expected
    assert feed[11:] == [(12, ChangeKind.STORE_DELETED, None, None, None, None)]
    with pytest.raises(NotFound):
        engine.feed.last_seq(store.id)


def test_refused_operations_write_no_change_and_feeds_are_per_store(
    engine: Engine, store: MemoryStore, actor: Actor
) -> None:
    memory = engine.for_caller(actor=actor).memories.create(store.id, "/a", "x")
    for error, call in (
        (PathConflict, lambda: engine.for_caller(actor=actor).memories.create(store.id, "/a", "y")),
        (
            PreconditionFailed,
            lambda: engine.for_caller(actor=actor).memories.update(
                store.id,
                memory.id,
                content="z",
                expected_sha256="0" * 64,
            ),
        ),
        (
            HeadVersionRedaction,
            lambda: engine.for_caller(actor=actor).versions.redact(
                store.id, memory.memory_version_id
            ),
        ),
    ):
        with pytest.raises(error):
            call()
    assert engine.feed.last_seq(store.id) == 1
    # Feeds are per store.
    first = engine.stores.create("first")
    second = engine.stores.create("second")
    engine.for_caller(actor=actor).memories.create(first.id, "/a", "x")
    engine.for_caller(actor=actor).memories.create(second.id, "/a", "x")
    engine.for_caller(actor=actor).memories.create(first.id, "/b", "x")
    assert [c.seq for c in engine.feed.changes_since(first.id, 0)] == [1, 2]
    assert [c.seq for c in engine.feed.changes_since(second.id, 0)] == [1]
    assert engine.feed.last_seq(second.id) == 1


def test_redact_mode_announces_the_purged_blobs(
    engine: Engine, store: MemoryStore, actor: Actor
) -> None:
    memory = engine.for_caller(actor=actor).memories.create(store.id, "/a", "one")
    engine.for_caller(actor=actor).memories.update(store.id, memory.id, content="two")
    seq = engine.feed.last_seq(store.id)
    engine.for_caller(actor=actor).memories.delete(store.id, memory.id, mode=DeleteMode.REDACT)
    feed = engine.feed.changes_since(store.id, seq)
    assert feed[0].kind is ChangeKind.MEMORY_DELETED
    assert feed[0].path is None  # a redaction erases the path too (SPEC §2)
    assert {(c.path, c.old_path) for c in engine.feed.changes_since(store.id, 0)} == {(None, None)}
    assert {c.blob_key for c in feed[1:] if c.kind is ChangeKind.BLOB_PURGED} == {
        blob_key_of(b"one"),
        blob_key_of(b"two"),
    }
    assert [c.seq for c in feed] == list(range(seq + 1, seq + 1 + len(feed)))
