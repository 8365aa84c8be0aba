"""Seed 004: memories show ``status``; an admin finds soft-deleted memories through the
API (``include_deleted=true`` or ``status=deleted``, sent by the unmodified SDK's
``memories.list`` as ``extra_query``) and restores one (raw HTTP: the SDK has no
restore method)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import anthropic
import pytest

if TYPE_CHECKING:
    from tests.seedapi.conftest import Api


def _paths_and_status(items: list[Any]) -> list[tuple[str, str]]:
    return [(item.path, item.status) for item in items]


def test_an_admin_lists_deleted_memories_and_restores_one(api: Api, store: Any) -> None:
    memories = api.sdk().beta.memory_stores.memories
    keep = memories.create(store.id, path="/notes/keep.md", content="keep")
    gone = memories.create(store.id, path="/notes/gone.md", content="restore me")
    redacted = memories.create(store.id, path="/notes/redacted.md", content="secret")
    memories.delete(gone.id, memory_store_id=store.id)
    with api.http() as http:
        forget = http.post(f"/v1/memories/{redacted.id}/forget")
        assert forget.status_code == 200, forget.text

    live = list(memories.list(store.id))
    assert _paths_and_status(live) == [("/notes/keep.md", "active")]
    deleted = list(memories.list(store.id, extra_query={"status": "deleted"}))
    # A redacted memory is not restorable and is never listed.
    assert _paths_and_status(deleted) == [("/notes/gone.md", "deleted")]
    assert deleted[0].id == gone.id
    assert deleted[0].content_sha256 == gone.content_sha256
    both = list(memories.list(store.id, extra_query={"include_deleted": "true"}, view="full"))
    assert _paths_and_status(both) == [
        ("/notes/gone.md", "deleted"),
        ("/notes/keep.md", "active"),
    ]
    assert [item.content for item in both] == [None, "keep"]  # a tombstone has no content

    with api.http() as http:
        restored = http.post(
            f"/v1/memory_stores/{store.id}/memories/{deleted[0].id}/restore",
            json={"reason": "found it", "metadata": {"via": "listing"}},
        )
    assert restored.status_code == 200, restored.text
    assert restored.json()["status"] == "active"
    assert memories.retrieve(gone.id, memory_store_id=store.id).content == "restore me"
    assert list(memories.list(store.id, extra_query={"status": "deleted"})) == []
    assert {m.id for m in memories.list(store.id)} == {keep.id, gone.id}


def test_deleted_listings_page_through_tombstones_sharing_a_path(api: Api, store: Any) -> None:
    memories = api.sdk().beta.memory_stores.memories
    ids = []
    for round_ in range(3):
        created = memories.create(store.id, path="/same.md", content=f"take {round_}")
        memories.delete(created.id, memory_store_id=store.id)
        ids.append(created.id)
    live = memories.create(store.id, path="/same.md", content="current")
    memories.create(store.id, path="/z/other.md", content="z")

    pages = memories.list(
        store.id, limit=1, path_prefix="/", extra_query={"include_deleted": "true"}
    )
    listed = [(item.id, item.status) for item in pages]  # auto-pagination, one per page

    expected = sorted([*((i, "deleted") for i in ids), (live.id, "active")])
    assert listed[:4] == expected
    assert [item.path for item in memories.list(store.id, extra_query={"status": "deleted"})] == [
        "/same.md"
    ] * 3
    under_z = memories.list(store.id, path_prefix="/z/", extra_query={"include_deleted": "true"})
    assert [item.path for item in under_z] == ["/z/other.md"]


def test_deleted_listing_refuses_what_it_can_not_do(api: Api, store: Any) -> None:
    memories = api.sdk().beta.memory_stores.memories
    with pytest.raises(anthropic.BadRequestError) as depth:
        memories.list(store.id, depth=1, extra_query={"include_deleted": "true"})
    assert "depth must be 0" in depth.value.message
    with pytest.raises(anthropic.BadRequestError) as contradiction:
        memories.list(store.id, extra_query={"include_deleted": "true", "status": "active"})
    assert "contradicts" in contradiction.value.message
    with pytest.raises(anthropic.BadRequestError):
        memories.list(store.id, extra_query={"status": "purged"})
