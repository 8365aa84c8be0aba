"""Versions: listing, filters, pagination, retrieval and redaction (SPEC §2, api-contract
§4.6, §5.12–5.14)."""

from __future__ import annotations

import pytest
from store_helpers import collect, snapshot

from memfs.core.errors import HeadVersionRedaction, InvalidCursor, InvalidInput, NotFound
from memfs.core.model import Actor, MemoryStore, Operation
from memfs.store import Engine

SESSION = Actor.session("sesn_writer")
OTHER_KEY = Actor.api_key("apikey_other")
REDACTOR = Actor.user("user_redactor")


def _history(engine: Engine, store: MemoryStore, actor: Actor) -> dict[str, object]:
    """Five versions of two memories by three actors, one of them deleted."""
    a = engine.for_caller(actor=actor).memories.create(store.id, "/a", "a1")
    b = engine.for_caller(actor=SESSION).memories.create(store.id, "/b", "b1")
    a2 = engine.for_caller(actor=SESSION).memories.update(store.id, a.id, content="a2")
    engine.for_caller(actor=OTHER_KEY).memories.update(store.id, b.id, path="/b2")
    engine.for_caller(actor=actor).memories.delete(store.id, b.id)
    return {"a": a, "b": b, "a2": a2}


def test_versions_newest_first_and_filters(
    engine: Engine, store: MemoryStore, actor: Actor
) -> None:
    h = _history(engine, store, actor)
    a, b = h["a"], h["b"]
    everything = engine.versions.list(store.id).items
    assert [(v.memory_id, v.operation, v.path) for v in everything] == [
        (b.id, Operation.DELETED, "/b2"),
        (b.id, Operation.MODIFIED, "/b2"),
        (a.id, Operation.MODIFIED, "/a"),
        (b.id, Operation.CREATED, "/b"),
        (a.id, Operation.CREATED, "/a"),
    ]
    assert all(v.memory_store_id == store.id and v.id.startswith("memver_") for v in everything)
    assert [v.created_at for v in everything] == sorted(
        (v.created_at for v in everything), reverse=True
    )
    # Basic view: no content, but digests of content versions.
    assert all(v.content is None for v in everything)
    assert everything[2].content_sha256 == h["a2"].content_sha256
    full = engine.versions.list(store.id, with_content=True).items
    assert [v.content for v in full] == [None, "b1", "a2", "b1", "a1"]

    def ids(**filters: object) -> list[str]:
        return [v.id for v in collect(engine.versions.list, store_id=store.id, **filters)]

    assert ids(memory_id=b.id) == [everything[0].id, everything[1].id, everything[3].id]
    assert ids(operation=Operation.MODIFIED) == [everything[1].id, everything[2].id]
    assert ids(operation="created") == [everything[3].id, everything[4].id]
    assert ids(operation=Operation.DELETED, memory_id=b.id) == [everything[0].id]
    assert ids(session_id="sesn_writer") == [everything[2].id, everything[3].id]
    assert ids(api_key_id="apikey_other") == [everything[1].id]
    assert ids(api_key_id=actor.id) == [everything[0].id, everything[4].id]
    assert ids(api_key_id="sesn_writer") == []
    assert ids(service_account_id="svac_x") == []
    assert ids(memory_id="mem_nope") == []
    middle = everything[2].created_at
    assert ids(created_gte=middle) == [v.id for v in everything[:3]]
    assert ids(created_lte=middle) == [v.id for v in everything[2:]]
    assert ids(created_gte=middle, created_lte=middle) == [everything[2].id]
    assert ids(created_gte=middle, memory_id=b.id) == [everything[0].id, everything[1].id]


def test_versions_pagination(engine: Engine, store: MemoryStore, actor: Actor) -> None:
    memory = engine.for_caller(actor=actor).memories.create(store.id, "/a", "0")
    for i in range(1, 9):
        engine.for_caller(actor=actor).memories.update(store.id, memory.id, content=str(i))
    expected = [v.id for v in engine.versions.list(store.id, limit=100).items]
    assert len(expected) == 9
    for limit in (1, 2, 4, 8, 9, 10):
        assert [v.id for v in collect(engine.versions.list, store_id=store.id, limit=limit)] == (
            expected
        )
    assert engine.versions.list(store.id, limit=9).next_cursor is None
    filtered = collect(engine.versions.list, store_id=store.id, operation="modified", limit=3)
    assert [v.id for v in filtered] == expected[:8]


def test_versions_listing_refusals(engine: Engine, store: MemoryStore, actor: Actor) -> None:
    memory = engine.for_caller(actor=actor).memories.create(store.id, "/a", "0")
    engine.for_caller(actor=actor).memories.update(store.id, memory.id, content="1")
    cursor = engine.versions.list(store.id, limit=1).next_cursor
    assert cursor is not None
    with pytest.raises(InvalidCursor):
        engine.versions.list(store.id, cursor=cursor, operation="modified")
    with pytest.raises(InvalidCursor):
        engine.versions.list(store.id, cursor=cursor, memory_id=memory.id)
    other = engine.stores.create("other")
    with pytest.raises(InvalidCursor):
        engine.versions.list(other.id, cursor=cursor)
    with pytest.raises(InvalidCursor):
        engine.versions.list(store.id, cursor="garbage")
    with pytest.raises(InvalidInput, match="^operation must be created, modified or deleted$"):
        engine.versions.list(store.id, operation="renamed")  # type: ignore[arg-type]
    for limit in (0, 101):
        with pytest.raises(InvalidInput, match="limit"):
            engine.versions.list(store.id, limit=limit)
    with pytest.raises(NotFound):
        engine.versions.list("memstore_nope")


def test_get_version(engine: Engine, store: MemoryStore, actor: Actor) -> None:
    memory = engine.for_caller(actor=actor).memories.create(store.id, "/a", "text")
    version = engine.versions.get(store.id, memory.memory_version_id)
    assert (version.id, version.memory_id, version.memory_store_id) == (
        memory.memory_version_id,
        memory.id,
        store.id,
    )
    assert (version.content, version.content_sha256, version.content_size_bytes) == (
        "text",
        memory.content_sha256,
        4,
    )
    assert version.created_by == actor
    assert version.redacted_by is None
    basic = engine.versions.get(store.id, memory.memory_version_id, with_content=False)
    assert basic.content is None
    assert basic.content_sha256 == memory.content_sha256
    other = engine.stores.create("other")
    with pytest.raises(NotFound, match="not found in memory store"):
        engine.versions.get(other.id, memory.memory_version_id)
    with pytest.raises(NotFound):
        engine.versions.get(store.id, "memver_nope")


def test_redact_version(engine: Engine, store: MemoryStore, actor: Actor) -> None:
    memory = engine.for_caller(actor=SESSION).memories.create(store.id, "/a", "private")
    old = memory.memory_version_id
    engine.for_caller(actor=actor).memories.update(store.id, memory.id, content="public")
    original = engine.versions.get(store.id, old)

    redacted = engine.for_caller(actor=REDACTOR).versions.redact(store.id, old)

    assert redacted.redacted_at is not None
    assert redacted.redacted_by == REDACTOR
    assert (
        redacted.content,
        redacted.content_sha256,
        redacted.content_size_bytes,
        redacted.path,
    ) == (None, None, None, None)
    for field in ("id", "memory_id", "memory_store_id", "operation", "created_at", "created_by"):
        assert getattr(redacted, field) == getattr(original, field)
    assert engine.versions.get(store.id, old) == redacted
    assert engine.memories.get(store.id, memory.id).content == "public"
    # Idempotent: the first redaction's time and actor stay.
    assert engine.for_caller(actor=actor).versions.redact(store.id, old) == redacted
    assert engine.feed.audit_events(store.id)[0]["action"] == "redact_version"
    # Bytes another version of the same memory holds stay.
    kept = engine.for_caller(actor=actor).memories.create(store.id, "/kept", "A")
    engine.for_caller(actor=actor).memories.update(store.id, kept.id, content="B")
    head = engine.for_caller(actor=actor).memories.update(store.id, kept.id, content="A")
    engine.for_caller(actor=actor).versions.redact(store.id, kept.memory_version_id)
    assert engine.memories.get(store.id, kept.id).content == "A"
    assert engine.blobs.read(head.blob_key) == b"A"
    assert engine.statistics()["blobs"] == 3  # "public", "A", "B"; "private" is gone


def test_redaction_refusals_change_nothing(
    engine: Engine, store: MemoryStore, actor: Actor
) -> None:
    memory = engine.for_caller(actor=actor).memories.create(store.id, "/a", "x")
    before = snapshot(engine, store.id)
    with pytest.raises(HeadVersionRedaction) as info:
        engine.for_caller(actor=actor).versions.redact(store.id, memory.memory_version_id)
    assert str(info.value) == (
        f"memory version {memory.memory_version_id!r} is the head version of the live memory "
        f"{memory.id!r}: write a new version or delete the memory first"
    )
    assert snapshot(engine, store.id) == before
    # After a delete, the former head may be redacted.
    engine.for_caller(actor=actor).memories.delete(store.id, memory.id)
    assert engine.for_caller(actor=actor).versions.redact(
        store.id, memory.memory_version_id
    ).redacted_at
    # Unknown ids and another store's version.
    memory = engine.for_caller(actor=actor).memories.create(store.id, "/other-store", "x")
    engine.for_caller(actor=actor).memories.update(store.id, memory.id, content="y")
    other = engine.stores.create("other")
    before = snapshot(engine, store.id)
    with pytest.raises(NotFound):
        engine.for_caller(actor=actor).versions.redact(other.id, memory.memory_version_id)
    with pytest.raises(NotFound):
        engine.for_caller(actor=actor).versions.redact(store.id, "memver_nope")
    with pytest.raises(NotFound):
        engine.for_caller(actor=actor).versions.redact("memstore_nope", memory.memory_version_id)
    assert snapshot(engine, store.id) == before
