"""/openapi.json says what the server accepts, and 405s say what it allows (the
contract is the documentation). The schemathesis run (test_schemathesis.py) tries this
broadly; these are the cases it found, pinned."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

import anthropic
import pytest

if TYPE_CHECKING:
    from tests.api.conftest import Server


@pytest.fixture(scope="module")
def document(server: Server) -> dict[str, Any]:
    with server.http() as http:
        result: dict[str, Any] = http.get("/openapi.json").json()
    return result


def _component(document: dict[str, Any], name: str) -> dict[str, Any]:
    schema: dict[str, Any] = document["components"]["schemas"][name]
    return schema


@pytest.mark.parametrize(
    ("method", "path", "allow"),
    [
        ("TRACE", "/v1/memory_stores/{store}", "DELETE, GET, PATCH, POST"),
        ("PUT", "/v1/memory_stores", "GET, POST"),
        ("GET", "/v1/memory_stores/{store}/memories/rename_prefix", "POST"),
        ("DELETE", "/v1/memory_stores/{store}/memories/rename_prefix", "POST"),
        ("PUT", "/v1/memory_stores/{store}/memories/mem_x", "DELETE, GET, PATCH, POST"),
        ("DELETE", "/v1/memory_stores/{store}/changes", "GET"),
        ("PUT", "/v1/sessions", "GET, POST"),
        ("DELETE", "/v1/sessions/current", "GET"),
    ],
)
def test_405_names_the_allowed_methods(
    server: Server, store: Any, method: str, path: str, allow: str
) -> None:
    with server.http() as http:
        response = http.request(method, path.format(store=store.id))
    assert response.status_code == 405, response.text
    assert response.headers["allow"] == allow
    assert response.json()["error"]["details"]["error_code"] == "method_not_allowed"


def test_every_allowed_method_is_documented(server: Server, document: dict[str, Any]) -> None:
    with server.http() as http:
        for path, item in document["paths"].items():
            concrete = re.sub(r"\{[a-z_]+\}", "x_1", path)
            allow = http.request("TRACE", concrete).headers["allow"]
            assert set(allow.split(", ")) == {m.upper() for m in item}, path


def test_an_empty_page_is_the_first_page(admin: anthropic.Anthropic, store: Any) -> None:
    admin.beta.memory_stores.memories.create(store.id, path="/a.md", content="a")
    assert [m.path for m in admin.beta.memory_stores.memories.list(store.id, page="")] == ["/a.md"]
    assert admin.beta.memory_stores.memory_versions.list(store.id, page="").data
    assert admin.beta.memory_stores.list(page="", limit=1).data


@pytest.mark.parametrize("value", ["0.5", "1700000000", "2026-01-01"])
def test_query_datetimes_must_be_rfc3339(server: Server, value: str) -> None:
    with server.http() as http:
        response = http.get("/v1/memory_stores", params={"created_at[lte]": value})
    assert response.status_code == 400, response.text
    assert "RFC 3339" in response.json()["error"]["message"]


def test_schema_states_the_value_rules(document: dict[str, Any]) -> None:
    create = _component(document, "MemoryStoreCreate")["properties"]
    assert (create["name"]["minLength"], create["name"]["maxLength"]) == (1, 255)
    assert create["name"]["pattern"]
    assert create["metadata"]["anyOf"][0]["maxProperties"] == 16
    precondition = _component(document, "Precondition")
    assert "content_sha256" in precondition["required"]
    assert precondition["properties"]["content_sha256"]["type"] == "string"
    forget = _component(document, "MemoryForget")
    assert forget["then"] == {"properties": {"replacement_content": {"type": "null"}}}
    path = _component(document, "MemoryCreate")["properties"]["path"]
    assert path["maxLength"] == 1024
    for refused in ("/.", "/a/..", "/ a", "/a ", "/a\\b", "/" + "x" * 256, "/a/"):
        assert not re.fullmatch(path["pattern"], refused), refused
    for accepted in ("/a", "/...", "/.a", "/a b/c.md", "/" + "x" * 255, "/é"):
        assert re.fullmatch(path["pattern"], accepted), accepted


def test_stateful_links_lead_from_a_store_to_its_memories(document: dict[str, Any]) -> None:
    created = document["paths"]["/v1/memory_stores"]["post"]["responses"]["200"]["links"]
    assert created["CreateMemory"]["parameters"] == {"memory_store_id": "$response.body#/id"}
    memory = document["paths"]["/v1/memory_stores/{memory_store_id}/memories"]["post"]
    assert set(memory["responses"]["200"]["links"]) >= {"RetrieveMemory", "UpdateMemory"}


@pytest.mark.parametrize("depth", ["2", "7", "-1", "1.5"])
def test_depth_is_0_or_1(
    server: Server, admin: anthropic.Anthropic, store: Any, depth: str
) -> None:
    """Seed 003: depth 0 lists the subtree, 1 the direct children, anything else is 400
    (api-contract)."""
    admin.beta.memory_stores.memories.create(store.id, path="/a/b/c.md", content="c")
    if depth.lstrip("-").isdigit():  # what the SDK can send
        with pytest.raises(anthropic.BadRequestError):
            admin.beta.memory_stores.memories.list(store.id, depth=int(depth))
    with server.http() as http:
        response = http.get(f"/v1/memory_stores/{store.id}/memories", params={"depth": depth})
    assert response.status_code == 400
    assert "depth" in response.json()["error"]["message"]
    assert [m.path for m in admin.beta.memory_stores.memories.list(store.id, depth=1)] == ["/a/"]
