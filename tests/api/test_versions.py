"""Memory versions through the SDK: api-contract §5.12–5.14, SPEC §2 redaction."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import anthropic
import pytest
from _support.polling import wait_until

from memfs.core.model import Scope

if TYPE_CHECKING:
    from tests.api.conftest import Server


def _history(admin: anthropic.Anthropic, store: Any) -> tuple[Any, list[Any]]:
    """A memory with three versions (created, modified, modified), newest first."""
    memories = admin.beta.memory_stores.memories
    memory = memories.create(store.id, path="/h.md", content="v1")
    memories.update(memory.id, memory_store_id=store.id, content="v2")
    memories.update(memory.id, memory_store_id=store.id, content="v3")
    versions = list(admin.beta.memory_stores.memory_versions.list(store.id, memory_id=memory.id))
    return memory, versions


def test_list_newest_first_basic_view(admin: anthropic.Anthropic, store: Any) -> None:
    memory, versions = _history(admin, store)
    assert [v.operation for v in versions] == ["modified", "modified", "created"]
    assert all(v.content is None for v in versions)
    assert all(v.content_sha256 is not None and v.path == "/h.md" for v in versions)
    assert all(v.memory_id == memory.id and v.memory_store_id == store.id for v in versions)
    assert [v.id for v in versions] == sorted((v.id for v in versions), reverse=True)


def test_list_full_view_and_pagination(admin: anthropic.Anthropic, store: Any) -> None:
    memory, _ = _history(admin, store)
    versions = admin.beta.memory_stores.memory_versions
    page = versions.list(store.id, memory_id=memory.id, view="full", limit=2)
    assert [v.content for v in page.data] == ["v3", "v2"]
    assert page.next_page is not None
    rest = page.get_next_page()
    assert [v.content for v in rest.data] == ["v1"]
    assert rest.next_page is None


def test_filters(server: Server, store: Any) -> None:
    key_id, secret = server.key_with_id(Scope.READ, Scope.WRITE)
    writer = server.client(secret).beta.memory_stores
    admin = server.client().beta.memory_stores
    since = datetime.now(UTC)
    # Timestamps are microseconds: every version is strictly later once the clock moved on.
    wait_until(lambda: datetime.now(UTC) > since, "the clock to pass the bound")
    memory = writer.memories.create(store.id, path="/f.md", content="a")
    other = admin.memories.create(store.id, path="/g.md", content="b")
    writer.memories.update(memory.id, memory_store_id=store.id, content="c")

    def ids(**filters: Any) -> list[str]:
        return [v.memory_id for v in admin.memory_versions.list(store.id, **filters)]

    assert ids(api_key_id=key_id) == [memory.id, memory.id]
    assert ids(operation="created") == [other.id, memory.id]
    assert ids(operation="modified", memory_id=memory.id) == [memory.id]
    assert ids(created_at_gte=since) == [memory.id, other.id, memory.id]
    assert ids(created_at_lte=since) == []
    assert ids(service_account_id="svac_nobody") == []
    assert ids(session_id="sesn_nobody") == []
    [created_by] = {
        v.created_by.api_key_id  # type: ignore[union-attr]
        for v in admin.memory_versions.list(store.id, memory_id=memory.id)
    }
    assert created_by == key_id


def test_invalid_operation_filter_is_400(admin: anthropic.Anthropic, store: Any) -> None:
    with pytest.raises(anthropic.BadRequestError):
        admin.beta.memory_stores.memory_versions.list(store.id, operation="renamed")  # type: ignore[arg-type]


def test_deleted_memory_versions_stay_listed(admin: anthropic.Anthropic, store: Any) -> None:
    memory, _ = _history(admin, store)
    admin.beta.memory_stores.memories.delete(memory.id, memory_store_id=store.id)
    listed = list(admin.beta.memory_stores.memory_versions.list(store.id, memory_id=memory.id))
    assert [v.operation for v in listed] == ["deleted", "modified", "modified", "created"]
    assert listed[0].path == "/h.md"
    assert listed[0].content is None
    assert listed[0].content_sha256 is None
    assert listed[0].content_size_bytes is None


def test_retrieve_defaults_to_full(admin: anthropic.Anthropic, store: Any) -> None:
    _, versions = _history(admin, store)
    api = admin.beta.memory_stores.memory_versions
    oldest = api.retrieve(versions[-1].id, memory_store_id=store.id)
    assert oldest.content == "v1"
    assert oldest.operation == "created"
    assert api.retrieve(versions[-1].id, memory_store_id=store.id, view="basic").content is None
    with pytest.raises(anthropic.NotFoundError):
        api.retrieve("memver_unknown", memory_store_id=store.id)


def test_redact_scrubs_a_historical_version(server: Server, store: Any) -> None:
    admin = server.client()
    memory, versions = _history(admin, store)
    api = admin.beta.memory_stores.memory_versions
    target = versions[1]  # "v2", not the head
    redacted = api.redact(target.id, memory_store_id=store.id)
    assert redacted.redacted_at is not None
    assert redacted.redacted_by is not None
    assert redacted.redacted_by.type == "api_actor"
    assert (redacted.content, redacted.content_sha256) == (None, None)
    assert (redacted.content_size_bytes, redacted.path) == (None, None)
    assert (redacted.id, redacted.operation, redacted.memory_id) == (
        target.id,
        target.operation,
        memory.id,
    )
    assert redacted.created_by == target.created_by
    assert redacted.created_at == target.created_at
    again = api.redact(target.id, memory_store_id=store.id)
    assert again == redacted
    assert api.retrieve(target.id, memory_store_id=store.id) == redacted
    # The live memory keeps its own content.
    live = admin.beta.memory_stores.memories.retrieve(memory.id, memory_store_id=store.id)
    assert live.content == "v3"
    with server.http() as http:
        events = http.get(f"/v1/memory_stores/{store.id}/audit_events").json()["data"]
    assert events[0]["action"] == "redact_version"


def test_redacting_the_head_version_is_409(admin: anthropic.Anthropic, store: Any) -> None:
    memory, versions = _history(admin, store)
    api = admin.beta.memory_stores.memory_versions
    with pytest.raises(anthropic.ConflictError) as info:
        api.redact(versions[0].id, memory_store_id=store.id)
    assert info.value.type == "conflict_error"
    assert info.value.error_code == "head_version_redaction"
    assert info.value.response.request.headers["x-stainless-retry-count"] == "0"
    assert api.retrieve(versions[0].id, memory_store_id=store.id).content == "v3"


def test_redact_allowed_on_archived_store(admin: anthropic.Anthropic, store: Any) -> None:
    _, versions = _history(admin, store)
    admin.beta.memory_stores.archive(store.id)
    redacted = admin.beta.memory_stores.memory_versions.redact(
        versions[-1].id, memory_store_id=store.id
    )
    assert redacted.redacted_at is not None


def test_version_of_another_store_is_404(admin: anthropic.Anthropic, store: Any) -> None:
    _, versions = _history(admin, store)
    other = admin.beta.memory_stores.create(name="other")
    with pytest.raises(anthropic.NotFoundError):
        admin.beta.memory_stores.memory_versions.retrieve(versions[0].id, memory_store_id=other.id)
    with pytest.raises(anthropic.NotFoundError):
        admin.beta.memory_stores.memory_versions.redact(versions[-1].id, memory_store_id=other.id)
