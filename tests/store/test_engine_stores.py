"""Stores: create, get, find, update as a patch, archive, list and delete (SPEC §1–2,
api-contract §5.1–5.6)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from store_helpers import collect, snapshot

from memfs.core.errors import (
    InvalidCursor,
    InvalidInput,
    InvalidMetadata,
    InvalidStoreField,
    NotFound,
    StoreArchived,
)
from memfs.core.model import Actor, DeleteMode, MemoryStore
from memfs.store import Engine, ResourceSpec

# ----------------------------------------------------------------- create / get


def test_create_store_defaults(engine: Engine) -> None:
    created = engine.stores.create("Notes")
    assert created.id.startswith("memstore_")
    assert len(created.id) == len("memstore_") + 26
    assert created.name == "Notes"
    assert created.description == ""
    assert created.metadata == {}
    assert created.archived_at is None
    assert not created.archived
    assert created.created_at == created.updated_at
    assert created.created_at.tzinfo is not None
    assert (created.entry_count, created.total_size_bytes) == (0, 0)
    assert engine.stores.get(created.id) == created
    full = engine.stores.create("N", description="d" * 1024, metadata={"team": "core"})
    assert engine.stores.get(full.id).description == "d" * 1024
    assert engine.stores.get(full.id).metadata == {"team": "core"}


BAD_STORES = [
    ({"name": ""}, InvalidStoreField, "name must be 1 to 255 characters"),
    ({"name": "n" * 256}, InvalidStoreField, "name must be 1 to 255 characters"),
    ({"name": "a\x00"}, InvalidStoreField, "name must not contain control characters"),
    (
        {"name": "ok", "description": "d" * 1025},
        InvalidStoreField,
        "description is 1025 characters; at most 1024 are allowed",
    ),
    (
        {"name": "ok", "metadata": {f"k{i}": "v" for i in range(17)}},
        InvalidMetadata,
        "invalid metadata: 17 keys; at most 16 are allowed",
    ),
]


def test_create_store_refuses_bad_fields(engine: Engine) -> None:
    for kwargs, error, message in BAD_STORES:
        with pytest.raises(error) as info:
            engine.stores.create(**kwargs)
        assert str(info.value) == message
    assert engine.statistics()["stores"] == 0


def test_unknown_store_ids(engine: Engine, actor: Actor) -> None:
    with pytest.raises(NotFound, match="^memory store 'memstore_nope' not found$"):
        engine.stores.get("memstore_nope")
    for call in (
        lambda: engine.stores.update("memstore_nope", name="x"),
        lambda: engine.stores.archive("memstore_nope"),
        lambda: engine.stores.delete("memstore_nope"),
        lambda: engine.memories.list("memstore_nope"),
        lambda: engine.memories.all("memstore_nope"),
        lambda: engine.memories.deleted("memstore_nope"),
        lambda: engine.feed.last_seq("memstore_nope"),
        lambda: engine.for_caller(actor=actor).memories.create("memstore_nope", "/a", "x"),
    ):
        with pytest.raises(NotFound, match="memory store 'memstore_nope' not found"):
            call()
    assert engine.feed.changes_since("memstore_nope", 0) == []


def test_find_store_by_id_name_and_slug(engine: Engine) -> None:
    prefs = engine.stores.create("User Preferences")
    other = engine.stores.create("Other")
    assert engine.stores.find(prefs.id) == prefs
    assert engine.stores.find("User Preferences") == prefs
    assert engine.stores.find("user-preferences") == prefs
    assert engine.stores.find("Other") == other
    with pytest.raises(NotFound, match="no memory store is named or has the id 'missing'"):
        engine.stores.find("missing")


def test_find_store_ambiguous_name_lists_the_ids(engine: Engine) -> None:
    first = engine.stores.create("Twin")
    second = engine.stores.create("Twin")
    with pytest.raises(InvalidInput) as info:
        engine.stores.find("Twin")
    assert str(info.value) == (
        f"several memory stores are named 'Twin' ({first.id}, {second.id}); use an id"
    )
    # An exact name match wins over a slug match of another store.
    exact = engine.stores.create("twin")
    assert engine.stores.find("twin") == exact


# ---------------------------------------------------------------------- update


def test_update_store_is_a_patch(engine: Engine) -> None:
    created = engine.stores.create("S", description="old", metadata={"a": "1", "b": "2"})
    updated = engine.stores.update(created.id, metadata_patch={"a": None, "c": "3"})
    assert updated.metadata == {"b": "2", "c": "3"}
    assert updated.name == "S"
    assert updated.description == "old"
    assert updated.updated_at > created.updated_at
    renamed = engine.stores.update(created.id, name="T", description="")
    assert (renamed.name, renamed.description) == ("T", "")
    assert renamed.metadata == {"b": "2", "c": "3"}
    assert engine.stores.get(created.id) == renamed


def test_update_store_without_change_keeps_updated_at(engine: Engine) -> None:
    created = engine.stores.create("S", description="d", metadata={"a": "1"})
    seq = engine.feed.last_seq(created.id)
    same = engine.stores.update(
        created.id, name="S", description="d", metadata_patch={"a": "1", "gone": None}
    )
    assert same == created
    assert engine.stores.update(created.id) == created
    assert engine.feed.last_seq(created.id) == seq


def test_update_store_limits_keys_after_the_merge(engine: Engine) -> None:
    created = engine.stores.create("S", metadata={f"k{i}": "v" for i in range(10)})
    before = snapshot(engine, created.id)
    with pytest.raises(InvalidMetadata) as info:
        engine.stores.update(created.id, metadata_patch={f"n{i}": "v" for i in range(7)})
    assert info.value.problems == ["17 keys; at most 16 are allowed"]
    assert snapshot(engine, created.id) == before
    # Exactly 16 after the merge is fine.
    assert (
        len(
            engine.stores.update(
                created.id, metadata_patch={f"n{i}": "v" for i in range(6)}
            ).metadata
        )
        == 16
    )
    # The limit applies after the change, not to the patch (api-contract §5.3).
    patch: dict[str, str | None] = {f"k{i}": None for i in range(10)}
    patch.update({f"x{i}": "v" for i in range(7)})  # 17 entries, 13 keys after the change
    updated = engine.stores.update(created.id, metadata_patch=patch)
    assert updated.metadata == {f"n{i}": "v" for i in range(6)} | {f"x{i}": "v" for i in range(7)}


def test_update_store_refuses_bad_fields(engine: Engine, store: MemoryStore) -> None:
    before = snapshot(engine, store.id)
    for kwargs, error in (
        ({"name": ""}, InvalidStoreField),
        ({"name": "x\n"}, InvalidStoreField),
        ({"description": "d" * 1025}, InvalidStoreField),
        ({"metadata_patch": {"k" * 65: "v"}}, InvalidMetadata),
        ({"metadata_patch": {"k": 3}}, InvalidMetadata),
    ):
        with pytest.raises(error):
            engine.stores.update(store.id, **kwargs)
        assert snapshot(engine, store.id) == before


# --------------------------------------------------------------------- archive


def test_archive_is_one_way_and_idempotent(engine: Engine, store: MemoryStore) -> None:
    archived = engine.stores.archive(store.id)
    assert archived.archived_at is not None
    assert archived.archived
    assert archived.updated_at == archived.archived_at > store.updated_at
    seq = engine.feed.last_seq(store.id)
    again = engine.stores.archive(store.id)
    assert again == archived
    assert engine.feed.last_seq(store.id) == seq
    assert engine.stores.get(store.id) == archived
    with pytest.raises(NotFound):
        engine.stores.archive("memstore_nope")


def test_archived_store_refuses_writes(engine: Engine, store: MemoryStore, actor: Actor) -> None:
    memory = engine.for_caller(actor=actor).memories.create(store.id, "/a", "one")
    engine.for_caller(actor=actor).memories.update(store.id, memory.id, content="two")
    doomed = engine.for_caller(actor=actor).memories.create(store.id, "/gone", "x")
    engine.for_caller(actor=actor).memories.delete(store.id, doomed.id)
    engine.stores.archive(store.id)
    before = snapshot(engine, store.id)
    refused = [
        lambda: engine.stores.update(store.id, name="new"),
        lambda: engine.stores.update(store.id, metadata_patch={"a": "b"}),
        lambda: engine.for_caller(actor=actor).memories.create(store.id, "/b", "x"),
        lambda: engine.for_caller(actor=actor).memories.update(
            store.id, memory.id, content="three"
        ),
        lambda: engine.for_caller(actor=actor).memories.update(store.id, memory.id, path="/c"),
        lambda: engine.for_caller(actor=actor).memories.update(
            store.id, memory.id, metadata={"k": "v"}
        ),
        lambda: engine.for_caller(actor=actor).memories.restore(store.id, doomed.id),
        lambda: engine.for_caller(actor=actor).memories.rename_prefix(store.id, "/x/", "/y/"),
        lambda: engine.sessions.create([ResourceSpec(store.id)]),
    ]
    for call in refused:
        with pytest.raises(StoreArchived):
            call()
        assert snapshot(engine, store.id) == before
    with pytest.raises(StoreArchived, match="is archived: its memories can't be created"):
        engine.for_caller(actor=actor).memories.create(store.id, "/b", "x")


def test_archived_store_allows_reads_deletes_and_redaction(
    engine: Engine, store: MemoryStore, actor: Actor
) -> None:
    memory = engine.for_caller(actor=actor).memories.create(store.id, "/a", "one")
    first_version = memory.memory_version_id
    engine.for_caller(actor=actor).memories.update(store.id, memory.id, content="two")
    other = engine.for_caller(actor=actor).memories.create(store.id, "/b", "b")
    engine.stores.archive(store.id)
    assert engine.memories.get(store.id, memory.id).content == "two"
    assert [m.path for m in engine.memories.list(store.id).items] == ["/a", "/b"]
    redacted = engine.for_caller(actor=actor).versions.redact(store.id, first_version)
    assert redacted.redacted_at is not None
    engine.for_caller(actor=actor).memories.delete(store.id, memory.id)
    engine.for_caller(actor=actor).memories.delete(store.id, other.id, mode=DeleteMode.HARD_DELETE)
    assert engine.memories.all(store.id) == []
    engine.stores.delete(store.id)
    with pytest.raises(NotFound):
        engine.stores.get(store.id)


# ------------------------------------------------------------------------ list


def test_list_stores_newest_first_without_archived(engine: Engine) -> None:
    first, second, third = (engine.stores.create(n) for n in ("one", "two", "three"))
    engine.stores.archive(second.id)
    assert [s.id for s in engine.stores.list().items] == [third.id, first.id]
    everything = engine.stores.list(include_archived=True)
    assert [s.id for s in everything.items] == [third.id, second.id, first.id]
    assert everything.next_cursor is None


def test_list_stores_paginates_to_the_end(engine: Engine) -> None:
    ids = [engine.stores.create(f"s{i}").id for i in range(7)]
    for limit in (1, 2, 3, 6, 7, 8):
        listed = collect(engine.stores.list, limit=limit)
        assert [s.id for s in listed] == ids[::-1]
    page = engine.stores.list(limit=7)
    assert page.next_cursor is None
    page = engine.stores.list(limit=3)
    assert len(page.items) == 3
    assert page.next_cursor is not None


def test_list_stores_created_bounds_are_inclusive(engine: Engine) -> None:
    stores = [engine.stores.create(f"s{i}") for i in range(4)]
    middle = stores[1].created_at
    assert [s.id for s in engine.stores.list(created_gte=middle).items] == [
        stores[3].id,
        stores[2].id,
        stores[1].id,
    ]
    assert [s.id for s in engine.stores.list(created_lte=middle).items] == [
        stores[1].id,
        stores[0].id,
    ]
    both = engine.stores.list(created_gte=middle, created_lte=stores[2].created_at)
    assert [s.id for s in both.items] == [stores[2].id, stores[1].id]
    later = stores[3].created_at + timedelta(seconds=1)
    assert engine.stores.list(created_gte=later).items == []
    # Filters hold across pages.
    assert [s.id for s in collect(engine.stores.list, created_gte=middle, limit=1)] == [
        stores[3].id,
        stores[2].id,
        stores[1].id,
    ]


def test_list_stores_refusals(engine: Engine, actor: Actor) -> None:
    for limit in (0, 101, -1):
        with pytest.raises(InvalidInput, match="^limit must be an integer from 1 to 100$"):
            engine.stores.list(limit=limit)
    # A cursor belongs to the query it was issued for.
    for i in range(3):
        engine.stores.create(f"s{i}")
    cursor = engine.stores.list(limit=1).next_cursor
    assert cursor is not None
    with pytest.raises(InvalidCursor):
        engine.stores.list(limit=1, include_archived=True, cursor=cursor)
    store = engine.stores.create("with memories")
    for i in range(3):
        engine.for_caller(actor=actor).memories.create(store.id, f"/m{i}", "x")
    memory_cursor = engine.memories.list(store.id, limit=1).next_cursor
    assert memory_cursor is not None
    with pytest.raises(InvalidCursor, match="issued for a different query"):
        engine.stores.list(cursor=memory_cursor)
    for garbage in ("", "not-a-cursor", "!!!", "eyJxIjoiYSJ9"):
        with pytest.raises(InvalidCursor):
            engine.stores.list(cursor=garbage)


# ---------------------------------------------------------------------- delete


def test_delete_store_removes_its_rows_and_only_its_blobs(engine: Engine, actor: Actor) -> None:
    doomed = engine.stores.create("doomed")
    kept = engine.stores.create("kept")
    engine.for_caller(actor=actor).memories.create(kept.id, "/shared", "shared content")
    memory = engine.for_caller(actor=actor).memories.create(doomed.id, "/shared", "shared content")
    engine.for_caller(actor=actor).memories.update(
        doomed.id, memory.id, content="only in doomed v2"
    )
    engine.for_caller(actor=actor).memories.create(doomed.id, "/own", "only in doomed")
    gone = engine.for_caller(actor=actor).memories.create(
        doomed.id, "/deleted", "deleted but versioned"
    )
    engine.for_caller(actor=actor).memories.delete(doomed.id, gone.id)
    assert engine.statistics() == {"stores": 2, "memories": 3, "versions": 6, "blobs": 4}

    engine.stores.delete(doomed.id)

    assert engine.statistics() == {"stores": 1, "memories": 1, "versions": 1, "blobs": 1}
    assert engine.memories.get_by_path(kept.id, "/shared").content == "shared content"
    for call in (
        lambda: engine.stores.get(doomed.id),
        lambda: engine.memories.get(doomed.id, memory.id),
        lambda: engine.memories.list(doomed.id),
        lambda: engine.versions.list(doomed.id),
        lambda: engine.versions.get(doomed.id, memory.memory_version_id),
        lambda: engine.stores.delete(doomed.id),
        lambda: engine.for_caller(actor=actor).memories.create(doomed.id, "/x", "x"),
    ):
        with pytest.raises(NotFound):
            call()
    assert [s.id for s in engine.stores.list(include_archived=True).items] == [kept.id]
    assert engine.feed.audit_events(doomed.id)[0]["action"] == "store_delete"


def test_nul_is_refused_everywhere(engine: Engine, store: MemoryStore, actor: Actor) -> None:
    """PostgreSQL text can't hold U+0000: every field refuses it on both dialects alike, as
    a typed InvalidInput, before anything is written."""
    memory = engine.for_caller(actor=actor).memories.create(store.id, "/a", "x")
    before = snapshot(engine, store.id)
    refused = [
        lambda: engine.stores.create("n\x00"),
        lambda: engine.stores.create("n", description="d\x00"),
        lambda: engine.stores.create("n", metadata={"k": "v\x00"}),
        lambda: engine.stores.create("n", metadata={"k\x00": "v"}),
        lambda: engine.stores.update(store.id, description="\x00"),
        lambda: engine.for_caller(actor=actor).memories.create(store.id, "/b\x00", "x"),
        lambda: engine.for_caller(actor=actor).memories.create(store.id, "/b", "\x00"),
        lambda: engine.for_caller(actor=Actor.api_key("k\x00")).memories.create(
            store.id, "/b", "x"
        ),
        lambda: engine.for_caller(actor=actor).memories.update(
            store.id, memory.id, metadata={"k": "\x00"}
        ),
        lambda: engine.for_caller(actor=actor).memories.delete(
            store.id, memory.id, reason="why\x00"
        ),
        lambda: engine.sessions.create([ResourceSpec(store.id, instructions="\x00")]),
        lambda: engine.sessions.create([ResourceSpec(store.id)], title="t\x00"),
        lambda: engine.sessions.create([ResourceSpec(store.id)], mount_root="/m\x00"),
        lambda: engine.api_keys.create("k\x00", ["memory:read"]),  # type: ignore[list-item]
    ]
    for call in refused:
        with pytest.raises(InvalidInput):
            call()
        assert snapshot(engine, store.id) == before
    assert engine.api_keys.list() == []
    assert [s.id for s in engine.stores.list(include_archived=True).items] == [store.id]
