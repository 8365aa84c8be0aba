"""Memory stores through the SDK: api-contract §5.1–5.6."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from typing import TYPE_CHECKING

import anthropic
import pytest
from _support.polling import wait_until

if TYPE_CHECKING:
    from tests.api.conftest import Server


def _now() -> datetime:
    return datetime.now(UTC)


def test_create_defaults_and_retrieve(admin: anthropic.Anthropic) -> None:
    stores = admin.beta.memory_stores
    created = stores.create(name="User Preferences")
    assert created.id.startswith("memstore_")
    assert created.type == "memory_store"
    assert created.name == "User Preferences"
    assert created.description == ""
    assert created.metadata == {}
    assert created.archived_at is None
    assert created.created_at == created.updated_at
    assert stores.retrieve(created.id) == created


def test_create_with_all_fields(admin: anthropic.Anthropic) -> None:
    created = admin.beta.memory_stores.create(
        name="n", description="about n", metadata={"team": "core", "env": "dev"}
    )
    assert created.description == "about n"
    assert created.metadata == {"team": "core", "env": "dev"}


def test_update_is_a_patch(admin: anthropic.Anthropic) -> None:
    stores = admin.beta.memory_stores
    created = stores.create(name="n", description="d", metadata={"a": "1", "b": "2"})
    updated = stores.update(created.id, metadata={"a": None, "c": "3"})
    assert updated.metadata == {"b": "2", "c": "3"}
    assert updated.name == "n"
    assert updated.description == "d"
    assert updated.updated_at > created.updated_at
    renamed = stores.update(created.id, name="n2", description="")
    assert (renamed.name, renamed.description) == ("n2", "")


def test_update_with_nulls_changes_nothing(admin: anthropic.Anthropic) -> None:
    stores = admin.beta.memory_stores
    created = stores.create(name="n", description="d", metadata={"a": "1"})
    same = stores.update(created.id, name=None, description=None, metadata=None)
    assert same == created  # updated_at did not move either


def test_list_pages_newest_first_until_next_page_null(admin: anthropic.Anthropic) -> None:
    stores = admin.beta.memory_stores
    since = _now()
    ids = [stores.create(name=f"s{i}").id for i in range(5)]
    first = stores.list(created_at_gte=since, limit=2)
    assert [s.id for s in first.data] == ids[::-1][:2]
    assert first.next_page is not None
    all_ids = [s.id for s in stores.list(created_at_gte=since, limit=2)]  # auto-paging
    assert all_ids == ids[::-1]
    last = stores.list(created_at_gte=since, limit=5)
    assert len(last.data) == 5
    assert last.next_page is None


def test_list_created_at_bounds_accept_strings_and_datetimes(admin: anthropic.Anthropic) -> None:
    stores = admin.beta.memory_stores
    before = _now()
    # Timestamps are microseconds: the bound is strictly earlier once the clock moved on.
    wait_until(lambda: _now() > before, "the clock to pass the bound")
    inside = stores.create(name="inside")
    lte_text = inside.created_at.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    found = [s.id for s in stores.list(created_at_gte=before, created_at_lte=lte_text)]
    assert found == [inside.id]
    offset = inside.created_at.astimezone(timezone(timedelta(hours=2)))
    assert [s.id for s in stores.list(created_at_gte=offset)] == [inside.id]
    assert list(stores.list(created_at_gte=inside.created_at + timedelta(seconds=1))) == []


def test_archive_is_one_way_and_hides_from_default_list(admin: anthropic.Anthropic) -> None:
    stores = admin.beta.memory_stores
    since = _now()
    created = stores.create(name="to archive")
    archived = stores.archive(created.id)
    assert archived.archived_at is not None
    assert archived.updated_at == archived.archived_at
    again = stores.archive(created.id)
    assert again == archived
    assert [s.id for s in stores.list(created_at_gte=since)] == []
    listed = [s.id for s in stores.list(created_at_gte=since, include_archived=True)]
    assert listed == [created.id]
    assert stores.retrieve(created.id).archived_at == archived.archived_at


def test_update_of_archived_store_is_400(admin: anthropic.Anthropic) -> None:
    stores = admin.beta.memory_stores
    created = stores.create(name="n")
    stores.archive(created.id)
    with pytest.raises(anthropic.BadRequestError) as info:
        stores.update(created.id, name="other")
    assert info.value.type == "invalid_request_error"
    assert info.value.error_code == "store_archived"
    assert stores.retrieve(created.id).name == "n"


def test_delete_store_then_everything_is_404(admin: anthropic.Anthropic) -> None:
    stores = admin.beta.memory_stores
    created = stores.create(name="n")
    memory = stores.memories.create(created.id, path="/a.md", content="x")
    deleted = stores.delete(created.id)
    assert (deleted.id, deleted.type) == (created.id, "memory_store_deleted")
    for call in (
        lambda: stores.retrieve(created.id),
        lambda: stores.memories.retrieve(memory.id, memory_store_id=created.id),
        lambda: stores.memories.list(created.id),
        lambda: stores.memory_versions.list(created.id),
        lambda: stores.delete(created.id),
        lambda: stores.archive(created.id),
    ):
        with pytest.raises(anthropic.NotFoundError) as info:
            call()
        assert info.value.type == "not_found_error"


def test_archived_store_can_be_deleted(admin: anthropic.Anthropic) -> None:
    stores = admin.beta.memory_stores
    created = stores.create(name="n")
    stores.archive(created.id)
    assert stores.delete(created.id).type == "memory_store_deleted"


@pytest.mark.parametrize(
    ("kwargs", "problem"),
    [
        ({"name": ""}, "name"),
        ({"name": "x" * 256}, "name"),
        ({"name": "bad\x07name"}, "control"),
        ({"name": "n", "description": "d" * 1025}, "description"),
    ],
)
def test_invalid_store_fields_are_400(
    admin: anthropic.Anthropic, kwargs: dict[str, str], problem: str
) -> None:
    since = _now()
    with pytest.raises(anthropic.BadRequestError) as info:
        admin.beta.memory_stores.create(**kwargs)  # type: ignore[arg-type]
    assert info.value.type == "invalid_request_error"
    assert problem in (info.value.api_message or "")
    assert list(admin.beta.memory_stores.list(created_at_gte=since)) == []


@pytest.mark.parametrize(
    "metadata",
    [
        {f"k{i}": "v" for i in range(17)},
        {"k" * 65: "v"},
        {"": "v"},
        {"k": "v" * 513},
        {"k": 5},
    ],
)
def test_invalid_metadata_is_beta_invalid_metadata_error(
    admin: anthropic.Anthropic, metadata: dict[str, object]
) -> None:
    with pytest.raises(anthropic.BadRequestError) as info:
        admin.beta.memory_stores.create(name="n", metadata=metadata)  # type: ignore[arg-type]
    assert type(info.value).__name__ == "BetaInvalidMetadataError"
    assert info.value.type == "invalid_request_error"
    assert info.value.error_code == "invalid_metadata"


def test_metadata_patch_over_16_keys_is_invalid_metadata(admin: anthropic.Anthropic) -> None:
    stores = admin.beta.memory_stores
    created = stores.create(name="n", metadata={f"k{i}": "v" for i in range(16)})
    with pytest.raises(anthropic.BadRequestError) as info:
        stores.update(created.id, metadata={"one-more": "v"})
    assert info.value.error_code == "invalid_metadata"
    assert len(stores.retrieve(created.id).metadata) == 16


def test_unknown_store_is_404(admin: anthropic.Anthropic) -> None:
    with pytest.raises(anthropic.NotFoundError) as info:
        admin.beta.memory_stores.retrieve("memstore_doesnotexist")
    assert info.value.type == "not_found_error"
    assert info.value.request_id is not None
    assert info.value.request_id.startswith("req_")


def test_patch_is_an_alias_of_update(server: Server, store: object) -> None:
    store_id = store.id  # type: ignore[attr-defined]
    with server.http() as http:
        response = http.patch(f"/v1/memory_stores/{store_id}", json={"description": "via patch"})
    assert response.status_code == 200
    assert response.json()["description"] == "via patch"


def test_list_limit_bounds_are_400(admin: anthropic.Anthropic) -> None:
    for limit in (0, 101):
        with pytest.raises(anthropic.BadRequestError) as info:
            admin.beta.memory_stores.list(limit=limit)
        assert "limit" in (info.value.api_message or "")
