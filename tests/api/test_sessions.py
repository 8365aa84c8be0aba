"""Sessions (api-contract §7, SPEC §3): attach stores, get a token scoped to them."""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

import anthropic
import pytest

from memfs.core.model import Scope

if TYPE_CHECKING:
    from tests.api.conftest import Server


def _resource(store_id: str, access: str | None = None, **extra: Any) -> dict[str, Any]:
    resource: dict[str, Any] = {"type": "memory_store", "memory_store_id": store_id, **extra}
    if access is not None:
        resource["access"] = access
    return resource


def _create_session(server: Server, *resources: dict[str, Any], secret: str | None = None) -> Any:
    with server.http(secret) as http:
        return http.post("/v1/sessions", json={"resources": list(resources)})


def test_create_session_snapshots_resources(server: Server, admin: anthropic.Anthropic) -> None:
    prefs = admin.beta.memory_stores.create(name="User Preferences", description="likes")
    notes = admin.beta.memory_stores.create(name="notes")
    response = _create_session(
        server,
        _resource(prefs.id, instructions="Check before answering."),
        _resource(notes.id, "read_only"),
    )
    assert response.status_code == 200, response.text
    session = response.json()
    assert session["id"].startswith("sesn_")
    assert session["type"] == "session"
    assert session["token"].startswith("memfs_st_")
    assert session["resources"] == [
        {
            "type": "memory_store",
            "memory_store_id": prefs.id,
            "access": "read_write",
            "instructions": "Check before answering.",
            "name": "User Preferences",
            "description": "likes",
            "mount_path": "/mnt/memory/user-preferences",
        },
        {
            "type": "memory_store",
            "memory_store_id": notes.id,
            "access": "read_only",
            "instructions": None,
            "name": "notes",
            "description": "",
            "mount_path": "/mnt/memory/notes",
        },
    ]
    admin.beta.memory_stores.update(prefs.id, name="Renamed")  # snapshots don't follow
    with server.http() as http:
        shown = http.get(f"/v1/sessions/{session['id']}").json()
    assert shown["resources"][0]["name"] == "User Preferences"
    assert "token" not in shown or shown["token"] is None


def test_sdk_sessions_create_works_unmodified(server: Server, store: Any) -> None:
    session = server.client().beta.sessions.create(
        agent="agent_ignored",
        environment_id="env_ignored",
        resources=[{"type": "memory_store", "memory_store_id": store.id, "access": "read_only"}],
    )
    assert session.id.startswith("sesn_")
    extra = session.model_extra or {}
    assert extra["token"].startswith("memfs_st_")


def test_session_token_scope(server: Server, admin: anthropic.Anthropic) -> None:
    rw = admin.beta.memory_stores.create(name="rw")
    ro = admin.beta.memory_stores.create(name="ro")
    outside = admin.beta.memory_stores.create(name="outside")
    existing = admin.beta.memory_stores.memories.create(ro.id, path="/fact.md", content="f")
    session = _create_session(server, _resource(rw.id), _resource(ro.id, "read_only")).json()
    agent = server.client(session["token"]).beta.memory_stores

    written = agent.memories.create(rw.id, path="/learned.md", content="new fact")
    [version] = list(admin.beta.memory_stores.memory_versions.list(rw.id, session_id=session["id"]))
    assert version.memory_id == written.id
    assert version.created_by is not None
    assert version.created_by.model_dump() == {"type": "session_actor", "session_id": session["id"]}

    assert agent.memories.retrieve(existing.id, memory_store_id=ro.id).content == "f"
    with pytest.raises(anthropic.PermissionDeniedError) as info:
        agent.memories.create(ro.id, path="/nope.md", content="x")
    assert info.value.type == "permission_error"
    assert info.value.error_code == "read_only_attachment"
    with pytest.raises(anthropic.PermissionDeniedError):
        agent.memories.update(existing.id, memory_store_id=ro.id, content="changed")
    with pytest.raises(anthropic.PermissionDeniedError):
        agent.memories.delete(existing.id, memory_store_id=ro.id)
    assert [m.path for m in admin.beta.memory_stores.memories.list(ro.id)] == ["/fact.md"]

    with pytest.raises(anthropic.NotFoundError):  # not attached: as if it did not exist
        agent.retrieve(outside.id)
    listed = {s.id for s in agent.list(created_at_gte=rw.created_at, limit=100)}
    assert listed == {rw.id, ro.id}

    # Store administration, redaction and hard deletion need an API key.
    for refused in (
        lambda: agent.create(name="x"),
        lambda: agent.update(rw.id, name="x"),
        lambda: agent.archive(rw.id),
        lambda: agent.delete(rw.id),
        lambda: agent.memory_versions.redact(version.id, memory_store_id=rw.id),
    ):
        with pytest.raises(anthropic.PermissionDeniedError) as refused_info:
            refused()
        assert refused_info.value.error_code == "session_not_allowed"
    assert agent.memories.delete(written.id, memory_store_id=rw.id).type == "memory_deleted"


def test_session_reads_itself_only(server: Server, admin: anthropic.Anthropic) -> None:
    one = admin.beta.memory_stores.create(name="one")
    first = _create_session(server, _resource(one.id)).json()
    second = _create_session(server, _resource(one.id)).json()
    with server.http(first["token"]) as http:
        assert http.get(f"/v1/sessions/{first['id']}").json()["id"] == first["id"]
        other = http.get(f"/v1/sessions/{second['id']}")
        assert other.status_code == 403
        assert http.post("/v1/sessions", json={"resources": [_resource(one.id)]}).status_code == 403


@pytest.mark.parametrize(
    ("count", "status", "fragment"),
    [(0, 400, "resources"), (9, 400, "resources")],
)
def test_session_store_count_bounds(
    server: Server, admin: anthropic.Anthropic, count: int, status: int, fragment: str
) -> None:
    stores = [admin.beta.memory_stores.create(name=f"s{i}") for i in range(count)]
    response = _create_session(server, *[_resource(s.id) for s in stores])
    assert response.status_code == status
    assert fragment in response.json()["error"]["message"]


def test_eight_stores_are_allowed(server: Server, admin: anthropic.Anthropic) -> None:
    stores = [admin.beta.memory_stores.create(name=f"s{i}") for i in range(8)]
    response = _create_session(server, *[_resource(s.id) for s in stores])
    assert response.status_code == 200, response.text
    assert len(response.json()["resources"]) == 8


def test_session_refusals(server: Server, admin: anthropic.Anthropic) -> None:
    archived = admin.beta.memory_stores.create(name="archived")
    admin.beta.memory_stores.archive(archived.id)
    live = admin.beta.memory_stores.create(name="live")
    refused = _create_session(server, _resource(archived.id))
    assert refused.status_code == 400
    assert refused.json()["error"]["details"]["error_code"] == "store_archived"
    assert _create_session(server, _resource("memstore_unknown")).status_code == 404
    twice = _create_session(server, _resource(live.id), _resource(live.id))
    assert twice.status_code == 400
    too_long = _create_session(server, _resource(live.id, instructions="x" * 4097))
    assert too_long.status_code == 400
    bad_access = _create_session(server, _resource(live.id, "write_only"))
    assert bad_access.status_code == 400


def test_session_creation_needs_matching_scopes(server: Server, store: Any) -> None:
    reader = server.key(Scope.READ)
    assert (
        _create_session(server, _resource(store.id, "read_only"), secret=reader).status_code == 200
    )
    refused = _create_session(server, _resource(store.id, "read_write"), secret=reader)
    assert refused.status_code == 403
    assert refused.json()["error"]["details"]["error_code"] == "api_key_scope_missing"


def test_cli_session_create_and_show(
    server: Server, admin: anthropic.Anthropic, memfs_cli: Any
) -> None:
    rw = admin.beta.memory_stores.create(name="cli rw")
    ro = admin.beta.memory_stores.create(name="cli ro")
    created = memfs_cli(
        "session", "create", "--store", rw.id, "--store", f"{ro.id}:ro",
        "--instructions", "write here", "--database", server.database, "--json",
    )  # fmt: skip
    assert created.returncode == 0, created.stderr
    session = json.loads(created.stdout)
    assert [
        (r["memory_store_id"], r["access"], r["instructions"]) for r in session["resources"]
    ] == [
        (rw.id, "read_write", "write here"),
        (ro.id, "read_only", None),
    ]
    agent = server.client(session["token"]).beta.memory_stores
    assert agent.memories.create(rw.id, path="/via-cli.md", content="x").path == "/via-cli.md"
    with pytest.raises(anthropic.PermissionDeniedError):
        agent.memories.create(ro.id, path="/via-cli.md", content="x")
    shown = memfs_cli("session", "show", session["id"], "--database", server.database)
    assert shown.returncode == 0, shown.stderr
    assert session["id"] in shown.stdout
    assert session["token"] not in shown.stdout
    assert re.search(r"^/mnt/memory/cli-ro +read_only +" + ro.id, shown.stdout, re.MULTILINE)
