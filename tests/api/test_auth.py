"""API keys and scopes (SPEC §3): 401 without a valid credential, 403 without the scope."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import anthropic
import httpx
import pytest

from memfs.core.model import Scope

if TYPE_CHECKING:
    from tests.api.conftest import Server


def _assert_401(response: httpx.Response) -> None:
    assert response.status_code == 401
    assert response.json()["error"]["type"] == "authentication_error"
    assert response.headers["x-should-retry"] == "false"
    assert response.headers["request-id"].startswith("req_")


def test_missing_credentials_are_401(server: Server, store: Any) -> None:
    with httpx.Client(base_url=server.url) as http:
        _assert_401(http.get("/v1/memory_stores"))
        _assert_401(http.get(f"/v1/memory_stores/{store.id}"))
        _assert_401(http.post("/v1/memory_stores", json={"name": "x"}))
        _assert_401(http.get("/v1/memory_stores", headers={"authorization": "Basic abc"}))


def test_unknown_key_is_authentication_error(server: Server) -> None:
    client = server.client("memfs_sk_not-a-real-secret")
    with pytest.raises(anthropic.AuthenticationError) as info:
        client.beta.memory_stores.list()
    assert info.value.type == "authentication_error"
    assert info.value.response.request.headers["x-stainless-retry-count"] == "0"


def test_x_api_key_header_is_accepted(server: Server, store: Any) -> None:
    with httpx.Client(base_url=server.url) as http:
        response = http.get(
            f"/v1/memory_stores/{store.id}", headers={"x-api-key": server.admin_secret}
        )
    assert response.status_code == 200
    assert response.json()["id"] == store.id


def test_revoked_key_is_401(server: Server, store: Any) -> None:
    key, secret = server.engine.api_keys.create("soon revoked", [Scope.READ])
    client = server.client(secret)
    assert client.beta.memory_stores.retrieve(store.id).id == store.id
    server.engine.api_keys.revoke(key.id)
    with pytest.raises(anthropic.AuthenticationError):
        client.beta.memory_stores.retrieve(store.id)


def _scope_error(call: Any) -> anthropic.PermissionDeniedError:
    with pytest.raises(anthropic.PermissionDeniedError) as info:
        call()
    error = info.value
    assert error.type == "permission_error"
    assert error.response.headers["x-should-retry"] == "false"
    return error


def test_read_scope_reads_but_cannot_write(server: Server, admin: anthropic.Anthropic) -> None:
    store = admin.beta.memory_stores.create(name="scoped")
    memory = admin.beta.memory_stores.memories.create(store.id, path="/a.md", content="a")
    reader = server.client(server.key(Scope.READ)).beta.memory_stores
    assert reader.retrieve(store.id).id == store.id
    assert reader.memories.retrieve(memory.id, memory_store_id=store.id).content == "a"
    assert [v.memory_id for v in reader.memory_versions.list(store.id)] == [memory.id]
    for write in (
        lambda: reader.create(name="nope"),
        lambda: reader.update(store.id, name="nope"),
        lambda: reader.archive(store.id),
        lambda: reader.memories.create(store.id, path="/b.md", content="b"),
        lambda: reader.memories.update(memory.id, memory_store_id=store.id, content="x"),
        lambda: reader.memories.delete(memory.id, memory_store_id=store.id),
    ):
        error = _scope_error(write)
        assert type(error).__name__ == "BetaAPIKeyScopeMissingError"
        assert error.error_code == "api_key_scope_missing"
    assert admin.beta.memory_stores.retrieve(store.id).archived_at is None
    assert [m.path for m in admin.beta.memory_stores.memories.list(store.id)] == ["/a.md"]


def test_write_scope_cannot_delete_or_read(server: Server, store: Any) -> None:
    writer = server.client(server.key(Scope.WRITE)).beta.memory_stores
    memory = writer.memories.create(store.id, path="/w.md", content="w")
    assert memory.path == "/w.md"
    _scope_error(lambda: writer.memories.delete(memory.id, memory_store_id=store.id))
    _scope_error(lambda: writer.memories.retrieve(memory.id, memory_store_id=store.id))


def test_delete_scopes(server: Server, store: Any) -> None:
    admin = server.client().beta.memory_stores
    memory = admin.memories.create(store.id, path="/d.md", content="d")
    admin.memories.update(memory.id, memory_store_id=store.id, content="d2")
    [head, first] = list(admin.memory_versions.list(store.id, memory_id=memory.id))
    deleter_secret = server.key(Scope.DELETE)
    deleter = server.client(deleter_secret).beta.memory_stores
    with server.http(deleter_secret) as http:
        hard = http.delete(
            f"/v1/memory_stores/{store.id}/memories/{memory.id}", params={"mode": "hard_delete"}
        )
        assert hard.status_code == 403
        assert hard.json()["error"]["details"]["error_code"] == "api_key_scope_missing"
        assert "memory:hard_delete" in hard.json()["error"]["message"]
    _scope_error(lambda: deleter.delete(store.id))  # erasing a store is a hard delete
    assert deleter.memory_versions.redact(first.id, memory_store_id=store.id).redacted_at
    assert deleter.memories.delete(memory.id, memory_store_id=store.id).type == "memory_deleted"
    assert head.id  # the head was never touched by the refused calls
    hard_deleter = server.client(server.key(Scope.HARD_DELETE)).beta.memory_stores
    assert hard_deleter.delete(store.id).type == "memory_store_deleted"


def test_audit_trail_needs_admin(server: Server, store: Any) -> None:
    secret = server.key(Scope.READ, Scope.WRITE, Scope.DELETE, Scope.HARD_DELETE)
    with server.http(secret) as http:
        response = http.get(f"/v1/memory_stores/{store.id}/audit_events")
    assert response.status_code == 403
    assert "admin" in response.json()["error"]["message"]


def test_scope_is_checked_before_the_target_is_resolved(server: Server) -> None:
    reader = server.client(server.key(Scope.READ)).beta.memory_stores
    _scope_error(lambda: reader.memories.create("memstore_unknown", path="/a.md", content="a"))


def test_key_limited_to_stores(server: Server, admin: anthropic.Anthropic) -> None:
    mine = admin.beta.memory_stores.create(name="mine")
    theirs = admin.beta.memory_stores.create(name="theirs")
    secret = server.key(Scope.READ, Scope.WRITE, stores=(mine.id,))
    limited = server.client(secret).beta.memory_stores
    assert limited.memories.create(mine.id, path="/ok.md", content="ok").path == "/ok.md"
    with pytest.raises(anthropic.NotFoundError):
        limited.retrieve(theirs.id)
    with pytest.raises(anthropic.NotFoundError):
        limited.memories.create(theirs.id, path="/no.md", content="no")
    _scope_error(lambda: limited.create(name="new"))
    listed = [s.id for s in limited.list(created_at_gte=mine.created_at, limit=100)]
    assert listed == [mine.id]


def test_writes_record_the_api_key_actor(server: Server, store: Any) -> None:
    key_id, secret = server.key_with_id(Scope.WRITE, Scope.READ)
    client = server.client(secret).beta.memory_stores
    memory = client.memories.create(store.id, path="/who.md", content="me")
    [version] = list(client.memory_versions.list(store.id, memory_id=memory.id))
    assert version.created_by is not None
    assert version.created_by.model_dump() == {"type": "api_actor", "api_key_id": key_id}


def test_cli_key_create_list_revoke(server: Server, memfs_cli: Any, store: Any) -> None:
    created = memfs_cli(
        "key", "create", "--scope", "memory:read", "--scope", "memory:write",
        "--store", store.id, "--database", server.database, "--json",
    )  # fmt: skip
    assert created.returncode == 0, created.stderr
    record = json.loads(created.stdout)
    assert record["scopes"] == ["memory:read", "memory:write"]
    assert record["store_ids"] == [store.id]
    assert record["secret"].startswith("memfs_sk_")
    client = server.client(record["secret"])
    assert client.beta.memory_stores.retrieve(store.id).id == store.id
    listed = memfs_cli("key", "list", "--database", server.database, "--json")
    assert listed.returncode == 0, listed.stderr
    public = [k for k in json.loads(listed.stdout)["data"] if k["id"] == record["id"]]
    assert public
    assert "secret" not in public[0]
    assert record["secret"] not in listed.stdout
    revoked = memfs_cli("key", "revoke", record["id"], "--database", server.database)
    assert revoked.returncode == 0, revoked.stderr
    with pytest.raises(anthropic.AuthenticationError):
        client.beta.memory_stores.retrieve(store.id)


def test_cli_key_create_rejects_unknown_scope(server: Server, memfs_cli: Any) -> None:
    result = memfs_cli(
        "key", "create", "--scope", "memory:everything", "--database", server.database
    )
    assert result.returncode == 1
    assert "unknown scope 'memory:everything'" in result.stderr


def test_another_stores_id_is_indistinguishable_from_an_unknown_one(
    server: Server, admin: anthropic.Anthropic
) -> None:
    # A 403 for an id that exists and a 404 for one that does not would tell a limited
    # key which stores exist (SPEC §3): both are the same 404.
    mine = admin.beta.memory_stores.create(name="mine")
    theirs = admin.beta.memory_stores.create(name="theirs")
    memory = admin.beta.memory_stores.memories.create(theirs.id, path="/t.md", content="t")
    unknown = "memstore_" + "0" * 26
    secret = server.key(Scope.READ, Scope.WRITE, Scope.DELETE, stores=(mine.id,))

    def answers(store_id: str) -> list[tuple[int, str, str]]:
        with server.http(secret) as http:
            responses = [
                http.get(f"/v1/memory_stores/{store_id}"),
                http.get(f"/v1/memory_stores/{store_id}/memories"),
                http.get(f"/v1/memory_stores/{store_id}/memories/{memory.id}"),
                http.post(
                    f"/v1/memory_stores/{store_id}/memories", json={"path": "/x", "content": "x"}
                ),
                http.delete(f"/v1/memory_stores/{store_id}/memories/{memory.id}"),
            ]
        return [
            (
                r.status_code,
                r.json()["error"]["type"],
                r.json()["error"]["message"].replace(store_id, "ID"),
            )
            for r in responses
        ]

    assert answers(theirs.id) == answers(unknown)
    assert {status for status, _, _ in answers(theirs.id)} == {404}
    assert {kind for _, kind, _ in answers(theirs.id)} == {"not_found_error"}
    assert admin.beta.memory_stores.memories.retrieve(memory.id, memory_store_id=theirs.id)
