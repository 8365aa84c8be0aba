"""Seed 004's store-less routes (api-contract): ``DELETE /v1/memories/{id}?mode=&reason=``,
``POST /v1/memories/{id}/forget`` and ``POST /v1/memories/{id}/restore`` find the store
from the memory id and have the scopes, modes and audit entries of their store-scoped
twins; ``metadata`` of a forget or restore is kept with the audit event. The SDK has no
method for them, so they are called over raw HTTP (with seed 004's ``X-API-Key``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import anthropic
import pytest

from memfs.core.model import Access, Scope

if TYPE_CHECKING:
    from tests.seedapi.conftest import Api


def _audit(api: Api, store_id: str, memory_id: str) -> list[dict[str, Any]]:
    with api.http() as http:
        response = http.get(
            f"/v1/memory_stores/{store_id}/audit_events", params={"memory_id": memory_id}
        )
    assert response.status_code == 200, response.text
    events: list[dict[str, Any]] = response.json()["data"]
    return events


def _error(response: Any, status: int) -> dict[str, Any]:
    assert response.status_code == status, response.text
    error: dict[str, Any] = response.json()["error"]
    return error


def test_soft_delete_and_restore_without_the_store_id(api: Api, store: Any) -> None:
    memories = api.sdk().beta.memory_stores.memories
    created = memories.create(store.id, path="/prefs/tone.md", content="be brief")
    http = api.http(header="x-api-key")

    deleted = http.delete(
        f"/v1/memories/{created.id}", params={"mode": "soft_delete", "reason": "user-requested"}
    )

    assert deleted.status_code == 200, deleted.text
    assert deleted.json() == {"id": created.id, "type": "memory_deleted", "mode": "soft_delete"}
    with pytest.raises(anthropic.NotFoundError):
        memories.retrieve(created.id, memory_store_id=store.id)
    restored = http.post(
        f"/v1/memories/{created.id}/restore",
        json={"reason": "owner-confirmed recovery", "metadata": {"ticket": "T-17"}},
    )
    assert restored.status_code == 200, restored.text
    body = restored.json()
    assert (body["id"], body["path"], body["status"]) == (created.id, "/prefs/tone.md", "active")
    assert body["memory_store_id"] == store.id
    again = memories.retrieve(created.id, memory_store_id=store.id)
    assert again.content == "be brief"
    assert again.memory_version_id != created.memory_version_id  # a new version
    events = _audit(api, store.id, created.id)
    assert [(e["action"], e["reason"], e["metadata"]) for e in events] == [
        ("restore", "owner-confirmed recovery", {"ticket": "T-17"}),
        ("soft_delete", "user-requested", {}),
    ]
    assert {e["actor_type"] for e in events} == {"api_actor"}
    assert {e["memory_store_id"] for e in events} == {store.id}


def test_default_delete_mode_is_soft_delete(api: Api, store: Any) -> None:
    created = api.sdk().beta.memory_stores.memories.create(store.id, path="/d.md", content="d")
    with api.http() as http:
        response = http.delete(f"/v1/memories/{created.id}")
        assert response.json()["mode"] == "soft_delete"
        assert http.post(f"/v1/memories/{created.id}/restore").status_code == 200


def test_forget_redacts_by_default_and_keeps_its_metadata(api: Api, store: Any) -> None:
    admin = api.sdk()
    memories = admin.beta.memory_stores.memories
    created = memories.create(store.id, path="/secret.md", content="pin=1234")
    memories.update(created.id, memory_store_id=store.id, content="pin=4321")
    with api.http() as http:
        response = http.post(
            f"/v1/memories/{created.id}/forget",
            json={"reason": "pii", "metadata": {"requested_by": "owner"}},
        )
        assert response.status_code == 200, response.text
        assert response.json()["mode"] == "redact"
        not_restorable = _error(http.post(f"/v1/memories/{created.id}/restore"), 409)
    assert not_restorable["type"] == "conflict_error"
    [event] = _audit(api, store.id, created.id)
    assert (event["action"], event["reason"], event["metadata"]) == (
        "redact",
        "pii",
        {"requested_by": "owner"},
    )
    history = list(admin.beta.memory_stores.memory_versions.list(store.id, memory_id=created.id))
    assert all(v.content_sha256 is None and v.path is None for v in history)


def test_forget_takes_the_other_modes_and_a_replacement(api: Api, store: Any) -> None:
    memories = api.sdk().beta.memory_stores.memories
    soft = memories.create(store.id, path="/soft.md", content="s")
    redacted = memories.create(store.id, path="/redacted.md", content="r")
    with api.http() as http:
        response = http.post(f"/v1/memories/{soft.id}/forget", params={"mode": "soft_delete"})
        assert response.json()["mode"] == "soft_delete"
        assert http.post(f"/v1/memories/{soft.id}/restore").status_code == 200
        response = http.post(
            f"/v1/memories/{redacted.id}/forget",
            json={"mode": "redact", "replacement_content": "[gone]"},
        )
        assert response.status_code == 200, response.text
        bad = http.post(
            f"/v1/memories/{soft.id}/forget",
            json={"mode": "soft_delete", "replacement_content": "x"},
        )
        assert _error(bad, 400)["type"] == "invalid_request_error"
        bad_metadata = http.post(
            f"/v1/memories/{soft.id}/forget", json={"metadata": {"k" * 65: "v"}}
        )
        assert _error(bad_metadata, 400)["details"]["error_code"] == "invalid_metadata"
    # Nothing changed by the refused requests.
    assert memories.retrieve(soft.id, memory_store_id=store.id).content == "s"


def test_hard_delete_needs_its_scope(api: Api, store: Any) -> None:
    admin = api.sdk()
    created = admin.beta.memory_stores.memories.create(store.id, path="/h.md", content="h")
    deleter = api.http(api.key(Scope.READ, Scope.DELETE))
    refused = deleter.delete(f"/v1/memories/{created.id}", params={"mode": "hard_delete"})
    assert _error(refused, 403)["details"]["error_code"] == "api_key_scope_missing"
    hard = api.http(api.key(Scope.HARD_DELETE))
    erased = hard.delete(
        f"/v1/memories/{created.id}", params={"mode": "hard_delete", "reason": "gdpr"}
    )
    assert erased.status_code == 200, erased.text
    versions = admin.beta.memory_stores.memory_versions
    assert list(versions.list(store.id, memory_id=created.id)) == []
    assert _audit(api, store.id, created.id)[0]["action"] == "hard_delete"
    # Gone for good: the store can't be found from its id any more.
    again = hard.delete(f"/v1/memories/{created.id}", params={"mode": "hard_delete"})
    assert _error(again, 404)["type"] == "not_found_error"


def test_the_scope_is_checked_before_the_target(api: Api, store: Any) -> None:
    created = api.sdk().beta.memory_stores.memories.create(store.id, path="/s.md", content="s")
    reader = api.http(api.key(Scope.READ))
    for memory_id in (created.id, "mem_doesnotexist"):
        for response in (
            reader.delete(f"/v1/memories/{memory_id}"),
            reader.post(f"/v1/memories/{memory_id}/forget"),
            reader.post(f"/v1/memories/{memory_id}/restore"),
        ):
            assert _error(response, 403)["details"]["error_code"] == "api_key_scope_missing"


def test_a_memory_in_an_unreachable_store_is_an_unknown_id(api: Api, store: Any) -> None:
    created = api.sdk().beta.memory_stores.memories.create(store.id, path="/u.md", content="u")
    other = api.sdk().beta.memory_stores.create(name="seedapi other")
    limited = api.http(api.key(Scope.READ, Scope.WRITE, Scope.DELETE, stores=(other.id,)))
    admin = api.http()
    unknown = _error(admin.delete("/v1/memories/mem_doesnotexist"), 404)
    assert unknown["message"] == "memory 'mem_doesnotexist' not found"
    hidden = _error(limited.delete(f"/v1/memories/{created.id}"), 404)
    assert hidden["message"] == f"memory {created.id!r} not found"
    assert store.id not in str(hidden)
    hidden = _error(limited.post(f"/v1/memories/{created.id}/restore"), 404)
    assert hidden["message"] == f"memory {created.id!r} not found"
    assert api.sdk().beta.memory_stores.memories.retrieve(created.id, memory_store_id=store.id)


def test_sessions_soft_delete_their_read_write_stores_only(api: Api, store: Any) -> None:
    memories = api.sdk().beta.memory_stores.memories
    created = memories.create(store.id, path="/agent.md", content="a")
    other = api.sdk().beta.memory_stores.create(name="seedapi elsewhere")
    agent = api.http(api.session_token(store.id, Access.READ_WRITE))
    reader = api.http(api.session_token(store.id, Access.READ_ONLY))
    stranger = api.http(api.session_token(other.id, Access.READ_WRITE))

    read_only = _error(reader.delete(f"/v1/memories/{created.id}"), 403)
    assert read_only["details"]["error_code"] == "read_only_attachment"
    assert _error(stranger.delete(f"/v1/memories/{created.id}"), 404)["type"] == "not_found_error"
    redact = _error(agent.post(f"/v1/memories/{created.id}/forget"), 403)
    assert redact["details"]["error_code"] == "session_not_allowed"
    assert agent.delete(f"/v1/memories/{created.id}").status_code == 200
    assert agent.post(f"/v1/memories/{created.id}/restore").status_code == 200

    events = _audit(api, store.id, created.id)
    assert [(e["action"], e["actor_type"]) for e in events] == [
        ("restore", "session_actor"),
        ("soft_delete", "session_actor"),
    ]
