"""create_memory and update_memory build the memory they return from the values they
just wrote instead of reading the row back: what they return must be exactly what a
read returns, and the ``memory_written`` change must name the new head version and
digest, for every kind of update."""

from __future__ import annotations

import hashlib

from memfs.core.model import Actor, ChangeKind, Memory, MemoryStore
from memfs.store import Engine


def _assert_as_read(engine: Engine, memory: Memory) -> None:
    assert engine.memories.get(memory.memory_store_id, memory.id) == memory
    last = engine.feed.changes_since(memory.memory_store_id, 0)[-1]
    assert last.kind is ChangeKind.MEMORY_WRITTEN
    assert (last.memory_id, last.path) == (memory.id, memory.path)
    assert last.memory_version_id == memory.memory_version_id
    assert last.content_sha256 == memory.content_sha256


def test_written_memory_is_what_a_read_returns(
    engine: Engine, store: MemoryStore, actor: Actor
) -> None:
    metadata = {"zeta": "1", "alpha": "2"}  # stored sorted: the result is too
    created = engine.for_caller(actor=actor).memories.create(
        store.id, "/a/n.md", "one\n", metadata=metadata
    )
    assert list(created.metadata) == ["alpha", "zeta"]
    _assert_as_read(engine, created)
    same = "one\n"
    digest = hashlib.sha256(same.encode()).hexdigest()
    updates = [
        {"content": "two\n"},  # content only
        {"path": "/b/n.md"},  # rename only: content comes from the stored blob
        {"path": "/c/n.md", "content": "two\n"},  # rename, same content given again
        {"metadata": {"k": "v", "a": "b"}},  # metadata only: no new version
        {"content": ""},  # empty content
        {"content": same, "path": "/d.md", "metadata": {}},  # everything at once
    ]
    memory = created
    for changes in updates:
        memory = engine.for_caller(actor=actor).memories.update(store.id, memory.id, **changes)
        _assert_as_read(engine, memory)
    assert memory.content == same
    assert memory.content_sha256 == digest
    # A no-op update with the content given again returns it unchanged, writing nothing.
    seq = engine.feed.last_seq(store.id)
    again = engine.for_caller(actor=actor).memories.update(store.id, memory.id, content=same)
    assert again == memory
    assert engine.feed.last_seq(store.id) == seq
    assert engine.for_caller(actor=actor).memories.update(store.id, memory.id) == memory
    counted = engine.stores.get(store.id)
    assert (counted.entry_count, counted.total_size_bytes) == (1, len(same))
