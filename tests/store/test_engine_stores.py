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
    created = engine.create_store("Notes")
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
    assert engine.get_store(created.id) == created
    full = engine.create_store("N", description="d" * 1024, metadata={"team": "core"})
    assert engine.get_store(full.id).description == "d" * 1024
    assert engine.get_store(full.id).metadata == {"team": "core"}


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
            engine.create_store(**kwargs)
        assert str(info.value) == message
    assert engine.statistics()["stores"] == 0


def test_unknown_store_ids(engine: Engine, actor: Actor) -> None:
    with pytest.raises(NotFound, match="^memory store 'memstore_nope' not found$"):
        engine.get_store("memstore_nope")
    for call in (
        lambda: engine.update_store("memstore_nope", name="x"),
        lambda: engine.archive_store("memstore_nope"),
        lambda: engine.delete_store("memstore_nope"),
        lambda: engine.list_memories("memstore_nope"),
        lambda: engine.all_memories("memstore_nope"),
        lambda: engine.deleted_memories("memstore_nope"),
        lambda: engine.last_change_seq("memstore_nope"),
        lambda: engine.create_memory("memstore_nope", "/a", "x", actor=actor),
    ):
        with pytest.raises(NotFound, match="memory store 'memstore_nope' not found"):
            call()
    assert engine.changes_since("memstore_nope", 0) == []


def test_find_store_by_id_name_and_slug(engine: Engine) -> None:
    prefs = engine.create_store("User Preferences")
    other = engine.create_store("Other")
    assert engine.find_store(prefs.id) == prefs
    assert engine.find_store("User Preferences") == prefs
    assert engine.find_store("user-preferences") == prefs
    assert engine.find_store("Other") == other
    with pytest.raises(NotFound, match="no memory store is named or has the id 'missing'"):
        engine.find_store("missing")


def test_find_store_ambiguous_name_lists_the_ids(engine: Engine) -> None:
    first = engine.create_store("Twin")
    second = engine.create_store("Twin")
    with pytest.raises(InvalidInput) as info:
        engine.find_store("Twin")
    assert str(info.value) == (
        f"several memory stores are named 'Twin' ({first.id}, {second.id}); use an id"
    )
    # An exact name match wins over a slug match of another store.
    exact = engine.create_store("twin")
    assert engine.find_store("twin") == exact


# ---------------------------------------------------------------------- update


def test_update_store_is_a_patch(engine: Engine) -> None:
    created = engine.create_store("S", description="old", metadata={"a": "1", "b": "2"})
    updated = engine.update_store(created.id, metadata_patch={"a": None, "c": "3"})
    assert updated.metadata == {"b": "2", "c": "3"}
    assert updated.name == "S"
    assert updated.description == "old"
    assert updated.updated_at > created.updated_at
    renamed = engine.update_store(created.id, name="T", description="")
    assert (renamed.name, renamed.description) == ("T", "")
    assert renamed.metadata == {"b": "2", "c": "3"}
    assert engine.get_store(created.id) == renamed


def test_update_store_without_change_keeps_updated_at(engine: Engine) -> None:
    created = engine.create_store("S", description="d", metadata={"a": "1"})
    seq = engine.last_change_seq(created.id)
    same = engine.update_store(
        created.id, name="S", description="d", metadata_patch={"a": "1", "gone": None}
    )
    assert same == created
    assert engine.update_store(created.id) == created
    assert engine.last_change_seq(created.id) == seq


def test_update_store_limits_keys_after_the_merge(engine: Engine) -> None:
    created = engine.create_store("S", metadata={f"k{i}": "v" for i in range(10)})
    before = snapshot(engine, created.id)
    with pytest.raises(InvalidMetadata) as info:
        engine.update_store(created.id, metadata_patch={f"n{i}": "v" for i in range(7)})
    assert info.value.problems == ["17 keys; at most 16 are allowed"]
    assert snapshot(engine, created.id) == before
    # Exactly 16 after the merge is fine.
    assert (
        len(
            engine.update_store(
                created.id, metadata_patch={f"n{i}": "v" for i in range(6)}
            ).metadata
        )
        == 16
    )
    # The limit applies after the change, not to the patch (api-contract §5.3).
    patch: dict[str, str | None] = {f"k{i}": None for i in range(10)}
    patch.update({f"x{i}": "v" for i in range(7)})  # 17 entries, 13 keys after the change
    updated = engine.update_store(created.id, metadata_patch=patch)
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
            engine.update_store(store.id, **kwargs)
        assert snapshot(engine, store.id) == before


# --------------------------------------------------------------------- archive


def test_archive_is_one_way_and_idempotent(engine: Engine, store: MemoryStore) -> None:
    archived = engine.archive_store(store.id)
    assert archived.archived_at is not None
    assert archived.archived
    assert archived.updated_at == archived.archived_at > store.updated_at
    seq = engine.last_change_seq(store.id)
    again = engine.archive_store(store.id)
    assert again == archived
    assert engine.last_change_seq(store.id) == seq
    assert engine.get_store(store.id) == archived
    with pytest.raises(NotFound):
        engine.archive_store("memstore_nope")


def test_archived_store_refuses_writes(engine: Engine, store: MemoryStore, actor: Actor) -> None:
    memory = engine.create_memory(store.id, "/a", "one", actor=actor)
    engine.update_memory(store.id, memory.id, actor=actor, content="two")
    doomed = engine.create_memory(store.id, "/gone", "x", actor=actor)
    engine.delete_memory(store.id, doomed.id, actor=actor)
    engine.archive_store(store.id)
    before = snapshot(engine, store.id)
    refused = [
        lambda: engine.update_store(store.id, name="new"),
        lambda: engine.update_store(store.id, metadata_patch={"a": "b"}),
        lambda: engine.create_memory(store.id, "/b", "x", actor=actor),
        lambda: engine.update_memory(store.id, memory.id, actor=actor, content="three"),
        lambda: engine.update_memory(store.id, memory.id, actor=actor, path="/c"),
        lambda: engine.update_memory(store.id, memory.id, actor=actor, metadata={"k": "v"}),
        lambda: engine.restore_memory(store.id, doomed.id, actor=actor),
        lambda: engine.rename_prefix(store.id, "/x/", "/y/", actor=actor),
        lambda: engine.create_session([ResourceSpec(store.id)]),
    ]
    for call in refused:
        with pytest.raises(StoreArchived):
            call()
        assert snapshot(engine, store.id) == before
    with pytest.raises(StoreArchived, match="is archived: its memories can't be created"):
        engine.create_memory(store.id, "/b", "x", actor=actor)


def test_archived_store_allows_reads_deletes_and_redaction(
    engine: Engine, store: MemoryStore, actor: Actor
) -> None:
    memory = engine.create_memory(store.id, "/a", "one", actor=actor)
    first_version = memory.memory_version_id
    engine.update_memory(store.id, memory.id, actor=actor, content="two")
    other = engine.create_memory(store.id, "/b", "b", actor=actor)
    engine.archive_store(store.id)
    assert engine.get_memory(store.id, memory.id).content == "two"
    assert [m.path for m in engine.list_memories(store.id).items] == ["/a", "/b"]
    redacted = engine.redact_version(store.id, first_version, actor=actor)
    assert redacted.redacted_at is not None
    engine.delete_memory(store.id, memory.id, actor=actor)
    engine.delete_memory(store.id, other.id, actor=actor, mode=DeleteMode.HARD_DELETE)
    assert engine.all_memories(store.id) == []
    engine.delete_store(store.id)
    with pytest.raises(NotFound):
        engine.get_store(store.id)


# ------------------------------------------------------------------------ list


def test_list_stores_newest_first_without_archived(engine: Engine) -> None:
    first, second, third = (engine.create_store(n) for n in ("one", "two", "three"))
    engine.archive_store(second.id)
    assert [s.id for s in engine.list_stores().items] == [third.id, first.id]
    everything = engine.list_stores(include_archived=True)
    assert [s.id for s in everything.items] == [third.id, second.id, first.id]
    assert everything.next_cursor is None


def test_list_stores_paginates_to_the_end(engine: Engine) -> None:
    ids = [engine.create_store(f"s{i}").id for i in range(7)]
    for limit in (1, 2, 3, 6, 7, 8):
        listed = collect(engine.list_stores, limit=limit)
        assert [s.id for s in listed] == ids[::-1]
    page = engine.list_stores(limit=7)
    assert page.next_cursor is None
    page = engine.list_stores(limit=3)
    assert len(page.items) == 3
    assert page.next_cursor is not None


def test_list_stores_created_bounds_are_inclusive(engine: Engine) -> None:
    stores = [engine.create_store(f"s{i}") for i in range(4)]
    middle = stores[1].created_at
    assert [s.id for s in engine.list_stores(created_gte=middle).items] == [
        stores[3].id,
        stores[2].id,
        stores[1].id,
    ]
    assert [s.id for s in engine.list_stores(created_lte=middle).items] == [
        stores[1].id,
        stores[0].id,
    ]
    both = engine.list_stores(created_gte=middle, created_lte=stores[2].created_at)
    assert [s.id for s in both.items] == [stores[2].id, stores[1].id]
    later = stores[3].created_at + timedelta(seconds=1)
    assert engine.list_stores(created_gte=later).items == []
    # Filters hold across pages.
    assert [s.id for s in collect(engine.list_stores, created_gte=middle, limit=1)] == [
        stores[3].id,
        stores[2].id,
        stores[1].id,
    ]


def test_list_stores_refusals(engine: Engine, actor: Actor) -> None:
    for limit in (0, 101, -1):
        with pytest.raises(InvalidInput, match="^limit must be an integer from 1 to 100$"):
            engine.list_stores(limit=limit)
    # A cursor belongs to the query it was issued for.
    for i in range(3):
        engine.create_store(f"s{i}")
    cursor = engine.list_stores(limit=1).next_cursor
    assert cursor is not None
    with pytest.raises(InvalidCursor):
        engine.list_stores(limit=1, include_archived=True, cursor=cursor)
    store = engine.create_store("with memories")
    for i in range(3):
        engine.create_memory(store.id, f"/m{i}", "x", actor=actor)
    memory_cursor = engine.list_memories(store.id, limit=1).next_cursor
    assert memory_cursor is not None
    with pytest.raises(InvalidCursor, match="issued for a different query"):
        engine.list_stores(cursor=memory_cursor)
    for garbage in ("", "not-a-cursor", "!!!", "eyJxIjoiYSJ9"):
        with pytest.raises(InvalidCursor):
            engine.list_stores(cursor=garbage)


# ---------------------------------------------------------------------- delete


def test_delete_store_removes_its_rows_and_only_its_blobs(engine: Engine, actor: Actor) -> None:
    doomed = engine.create_store("doomed")
    kept = engine.create_store("kept")
    engine.create_memory(kept.id, "/shared", "shared content", actor=actor)
    memory = engine.create_memory(doomed.id, "/shared", "shared content", actor=actor)
    engine.update_memory(doomed.id, memory.id, actor=actor, content="only in doomed v2")
    engine.create_memory(doomed.id, "/own", "only in doomed", actor=actor)
    gone = engine.create_memory(doomed.id, "/deleted", "deleted but versioned", actor=actor)
    engine.delete_memory(doomed.id, gone.id, actor=actor)
    assert engine.statistics() == {"stores": 2, "memories": 3, "versions": 6, "blobs": 4}

    engine.delete_store(doomed.id)

    assert engine.statistics() == {"stores": 1, "memories": 1, "versions": 1, "blobs": 1}
    assert engine.get_memory_by_path(kept.id, "/shared").content == "shared content"
    for call in (
        lambda: engine.get_store(doomed.id),
        lambda: engine.get_memory(doomed.id, memory.id),
        lambda: engine.list_memories(doomed.id),
        lambda: engine.list_versions(doomed.id),
        lambda: engine.get_version(doomed.id, memory.memory_version_id),
        lambda: engine.delete_store(doomed.id),
        lambda: engine.create_memory(doomed.id, "/x", "x", actor=actor),
    ):
        with pytest.raises(NotFound):
            call()
    assert [s.id for s in engine.list_stores(include_archived=True).items] == [kept.id]
    assert engine.audit_events(doomed.id)[0]["action"] == "store_delete"


def test_nul_is_refused_everywhere(engine: Engine, store: MemoryStore, actor: Actor) -> None:
    """PostgreSQL text can't hold U+0000: every field refuses it on both dialects alike, as
    a typed InvalidInput, before anything is written."""
    memory = engine.create_memory(store.id, "/a", "x", actor=actor)
    before = snapshot(engine, store.id)
    refused = [
        lambda: engine.create_store("n\x00"),
        lambda: engine.create_store("n", description="d\x00"),
        lambda: engine.create_store("n", metadata={"k": "v\x00"}),
        lambda: engine.create_store("n", metadata={"k\x00": "v"}),
        lambda: engine.update_store(store.id, description="\x00"),
        lambda: engine.create_memory(store.id, "/b\x00", "x", actor=actor),
        lambda: engine.create_memory(store.id, "/b", "\x00", actor=actor),
        lambda: engine.create_memory(store.id, "/b", "x", actor=Actor.api_key("k\x00")),
        lambda: engine.update_memory(store.id, memory.id, actor=actor, metadata={"k": "\x00"}),
        lambda: engine.delete_memory(store.id, memory.id, actor=actor, reason="why\x00"),
        lambda: engine.create_session([ResourceSpec(store.id, instructions="\x00")]),
        lambda: engine.create_session([ResourceSpec(store.id)], title="t\x00"),
        lambda: engine.create_session([ResourceSpec(store.id)], mount_root="/m\x00"),
        lambda: engine.create_api_key("k\x00", ["memory:read"]),  # type: ignore[list-item]
    ]
    for call in refused:
        with pytest.raises(InvalidInput):
            call()
        assert snapshot(engine, store.id) == before
    assert engine.list_api_keys() == []
    assert [s.id for s in engine.list_stores(include_archived=True).items] == [store.id]
