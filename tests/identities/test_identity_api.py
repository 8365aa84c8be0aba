"""SPEC §8 over HTTP against a real ``memfs serve``: the mount routes (raw HTTP: the SDK
has no method for them), the store extensions and the 409 of a bound store with the
unmodified ``anthropic`` SDK, and sessions for a pair."""

from __future__ import annotations

from typing import Any

import anthropic
import pytest
from identity_helpers import IdentityServer

from memfs.core.model import Scope

IDN, TMPL = "idn_63ee28747a35cff93771c491", "tmpl_eb3377fb74ad413e17b3d755"
PAIR = f"/v1/identities/{IDN}/templates/{TMPL}"
FLAT_ROOT = "/data/.qoder/awareness"


def ok(response: Any) -> Any:
    assert response.status_code == 200, response.text
    return response.json()


def error_of(response: Any, status: int) -> dict[str, Any]:
    assert response.status_code == status, response.text
    error: dict[str, Any] = response.json()["error"]
    return error


def test_mounts_over_http_limit_order_and_removal(
    identity_server: IdentityServer, admin_client: anthropic.Anthropic
) -> None:
    shared = [admin_client.beta.memory_stores.create(name=f"shared {i}") for i in range(11)]
    with identity_server.http() as http:
        first = ok(http.post(f"{PAIR}/mounts", json={"memory_store_id": shared[0].id}))
        assert first == {
            "type": "memory_store_mount",
            "memory_store_id": shared[0].id,
            "identity_id": IDN,
            "template_id": TMPL,
            "access": "read_only",
            "system_managed": False,
            "name": "shared 0",
            "status": "active",
            "entry_count": 0,
            "created_at": first["created_at"],
        }
        default = ok(http.post(f"{PAIR}/default_store"))
        assert ok(http.post(f"{PAIR}/default_store"))["id"] == default["id"]
        for store in shared[1:10]:
            ok(http.post(f"{PAIR}/mounts", json={"memory_store_id": store.id}))
        eleventh = error_of(
            http.post(f"{PAIR}/mounts", json={"memory_store_id": shared[10].id}), 400
        )
        assert eleventh["details"]["error_code"] == "mount_limit_reached"
        assert "at most 10 stores can be mounted" in eleventh["message"]
        writable = error_of(
            http.post(
                f"{PAIR}/mounts",
                json={"memory_store_id": shared[10].id, "access": "read_write"},
            ),
            400,
        )
        assert writable["type"] == "invalid_request_error"
        listed = ok(http.get(f"{PAIR}/mounts"))["data"]
        assert [m["memory_store_id"] for m in listed] == [default["id"]] + [
            s.id for s in shared[:10]
        ]
        assert (listed[0]["access"], listed[0]["system_managed"]) == ("read_write", True)
        by_store = ok(http.get(f"/v1/memory_stores/{shared[3].id}/mounts"))["data"]
        assert [(m["identity_id"], m["template_id"]) for m in by_store] == [(IDN, TMPL)]
        removed = ok(http.delete(f"{PAIR}/mounts/{shared[3].id}"))
        assert removed["type"] == "memory_store_mount_deleted"
        error_of(http.delete(f"{PAIR}/mounts/{shared[3].id}"), 404)
        error_of(http.delete(f"{PAIR}/mounts/{default['id']}"), 409)
        assert ok(http.get(f"/v1/memory_stores/{shared[3].id}/mounts"))["data"] == []
        malformed = http.get("/v1/identities/user-1/templates/tmpl_x/mounts")
        assert malformed.status_code == 400, malformed.text


def test_stores_show_their_pair_and_bindings_and_refuse_archive_while_bound(
    identity_server: IdentityServer, admin_client: anthropic.Anthropic
) -> None:
    stores = admin_client.beta.memory_stores
    team = stores.create(name="team-a")
    with identity_server.http() as http:
        ok(http.post(f"{PAIR}/mounts", json={"memory_store_id": team.id}))
        ok(
            http.post(
                f"/v1/identities/idn_b/templates/{TMPL}/mounts", json={"memory_store_id": team.id}
            )
        )
        default_id = ok(http.post(f"{PAIR}/default_store"))["id"]
    seen = stores.retrieve(team.id).model_dump()
    assert (seen["status"], seen["system_managed"], seen["identity_id"]) == (
        "active",
        False,
        None,
    )
    assert seen["binding_info"] == {"identity_template_count": 2}
    default = stores.retrieve(default_id).model_dump()
    assert (default["name"], default["system_managed"], default["identity_id"]) == (
        f"default:{IDN}:{TMPL}",
        True,
        IDN,
    )
    with pytest.raises(anthropic.ConflictError) as archive_refused:
        stores.archive(team.id)
    message = archive_refused.value.body["error"]["message"]  # type: ignore[index]
    assert f"mounted on 2 (identity, template) pair(s): {IDN}/{TMPL}, idn_b/{TMPL}" in message
    assert archive_refused.value.body["error"]["details"]["error_code"] == "store_bound"  # type: ignore[index]
    with pytest.raises(anthropic.ConflictError, match="can't be deleted while mounted"):
        stores.delete(team.id)
    with pytest.raises(anthropic.ConflictError, match="which still has 1 mounts"):
        stores.delete(default_id, extra_query={"force": "true"})
    assert stores.retrieve(team.id).archived_at is None
    archived = stores.archive(team.id, extra_query={"force": "true"}).model_dump()
    assert archived["status"] == "archived"
    with identity_server.http() as http:
        assert ok(http.get(f"{PAIR}/mounts"))["data"][1]["status"] == "archived"
    stores.delete(team.id, extra_query={"force": "true"})
    stores.delete(default_id, extra_query={"force": "true"})


def test_a_pair_session_is_built_by_the_server_flat_at_the_awareness_root(
    identity_server: IdentityServer, admin_client: anthropic.Anthropic
) -> None:
    team = admin_client.beta.memory_stores.create(name="team-a")
    with identity_server.http() as http:
        ok(http.post(f"{PAIR}/mounts", json={"memory_store_id": team.id}))
        session = ok(http.post("/v1/sessions", json={"identity_id": IDN, "template_id": TMPL}))
        default = ok(http.post(f"{PAIR}/default_store"))
        assert session["layout"] == "flat"
        assert [
            (r["memory_store_id"], r["access"], r["mount_path"]) for r in session["resources"]
        ] == [
            (default["id"], "read_write", FLAT_ROOT),
            (team.id, "read_only", FLAT_ROOT),
        ]
        elsewhere = ok(
            http.post(
                "/v1/sessions",
                json={"identity_id": IDN, "template_id": TMPL, "mount_root": "/srv/mem"},
            )
        )
        assert {r["mount_path"] for r in elsewhere["resources"]} == {"/srv/mem"}
        both = http.post(
            "/v1/sessions",
            json={
                "identity_id": IDN,
                "template_id": TMPL,
                "resources": [{"type": "memory_store", "memory_store_id": team.id}],
            },
        )
        assert "not both" in error_of(both, 400)["message"]
        half = http.post("/v1/sessions", json={"identity_id": IDN})
        assert "identity_id and template_id" in error_of(half, 400)["message"]
        # The session's own token sees exactly its stores, the default one writable.
        agent = anthropic.Anthropic(api_key=session["token"], base_url=identity_server.url)
        with agent:
            agent.beta.memory_stores.memories.create(default["id"], path="/a.md", content="a")
            with pytest.raises(anthropic.PermissionDeniedError):
                agent.beta.memory_stores.memories.create(team.id, path="/b.md", content="b")
        # A plain session can ask for the flat layout too: its mount paths say so.
        flat = http.post(
            "/v1/sessions",
            json={
                "layout": "flat",
                "mount_root": "/m",
                "resources": [
                    {"type": "memory_store", "memory_store_id": default["id"]},
                    {"type": "memory_store", "memory_store_id": team.id, "access": "read_only"},
                ],
            },
        )
        assert {r["mount_path"] for r in ok(flat)["resources"]} == {"/m"}


def test_who_may_mount_and_create_pair_sessions(
    identity_server: IdentityServer, admin_client: anthropic.Anthropic
) -> None:
    team = admin_client.beta.memory_stores.create(name="team-a")
    reader = identity_server.key(Scope.READ)
    limited = identity_server.key(Scope.READ, Scope.WRITE, stores=(team.id,))
    pair_body = {"identity_id": IDN, "template_id": TMPL}
    with identity_server.http(reader) as http:
        refused = http.post(f"{PAIR}/mounts", json={"memory_store_id": team.id})
        assert error_of(refused, 403)["details"]["error_code"] == "api_key_scope_missing"
        assert ok(http.get(f"{PAIR}/mounts"))["data"] == []
    with identity_server.http(limited) as http:
        ok(http.post(f"{PAIR}/mounts", json={"memory_store_id": team.id}))
        refused = http.post("/v1/sessions", json=pair_body)
        assert error_of(refused, 403)["details"]["error_code"] == "store_not_allowed"
    with identity_server.http() as http:
        token = ok(http.post("/v1/sessions", json=pair_body))["token"]
    with identity_server.http(token) as http:
        refused = http.post(f"{PAIR}/mounts", json={"memory_store_id": team.id})
        assert error_of(refused, 403)["details"]["error_code"] == "session_not_allowed"


def test_the_openapi_document_lists_the_identity_routes(identity_server: IdentityServer) -> None:
    with identity_server.http() as http:
        paths = ok(http.get("/openapi.json"))["paths"]
    assert set(paths["/v1/identities/{identity_id}/templates/{template_id}/mounts"]) == {
        "get",
        "post",
    }
    assert (
        "delete"
        in paths["/v1/identities/{identity_id}/templates/{template_id}/mounts/{memory_store_id}"]
    )
    assert "post" in paths["/v1/identities/{identity_id}/templates/{template_id}/default_store"]
    assert "get" in paths["/v1/memory_stores/{memory_store_id}/mounts"]
