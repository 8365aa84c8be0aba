"""The search extension of the HTTP API (SPEC §7): ``GET …/search`` and
``POST /v1/search``, with scopes and sessions (a caller never sees a hit it could not
read). Memories are written with the real ``anthropic`` SDK; search, which the SDK does
not know, is called with raw httpx."""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

import anthropic
import httpx

from memfs.core.config import SEARCH_MODEL_ENV
from memfs.core.model import Scope

if TYPE_CHECKING:
    from tests.api.conftest import Server


def _word() -> str:
    """A word no other test wrote (the server's database is shared by the session)."""
    return "w" + uuid.uuid4().hex[:12]


def _stores(admin: anthropic.Anthropic, word: str) -> tuple[Any, Any]:
    one = admin.beta.memory_stores.create(name="search one")
    two = admin.beta.memory_stores.create(name="search two")
    memories = admin.beta.memory_stores.memories
    memories.create(one.id, path="/a/best.md", content=f"{word} {word} {word} here")
    memories.create(one.id, path="/b/other.md", content=f"a single {word} in a longer text")
    memories.create(two.id, path="/c.md", content=f"{word} in the second store")
    return one, two


def _search(http: httpx.Client, **body: Any) -> httpx.Response:
    return http.post("/v1/search", json=body)


def test_one_store_ranked_with_snippets(server: Server, admin: anthropic.Anthropic) -> None:
    word = _word()
    one, _ = _stores(admin, word)
    with server.http() as http:
        response = http.get(f"/v1/memory_stores/{one.id}/search", params={"q": word})
    assert response.status_code == 200, response.text
    hits = response.json()["data"]
    assert [h["path"] for h in hits] == ["/a/best.md", "/b/other.md"]
    best = hits[0]
    assert best["type"] == "search_hit"
    assert best["memory_store_id"] == one.id
    assert best["memory_id"].startswith("mem_")
    assert best["snippet"] == f"**{word}** **{word}** **{word}** here"
    assert best["score"] > hits[1]["score"]


def test_prefix_and_limit(server: Server, admin: anthropic.Anthropic) -> None:
    word = _word()
    one, _ = _stores(admin, word)
    with server.http() as http:
        url = f"/v1/memory_stores/{one.id}/search"
        below = http.get(url, params={"q": word, "path_prefix": "/b/"}).json()["data"]
        limited = http.get(url, params={"q": word, "limit": 1}).json()["data"]
        bad = http.get(url, params={"q": word, "path_prefix": "/b"})
    assert [h["path"] for h in below] == ["/b/other.md"]
    assert [h["path"] for h in limited] == ["/a/best.md"]
    assert bad.status_code == 400
    assert bad.json()["error"]["type"] == "invalid_request_error"


def test_a_write_is_found_at_once(server: Server, admin: anthropic.Anthropic, store: Any) -> None:
    memories = admin.beta.memory_stores.memories
    with server.http() as http:
        for _ in range(5):
            word = _word()
            memory = memories.create(store.id, path=f"/{word}.md", content=f"fresh {word}")
            hits = http.get(f"/v1/memory_stores/{store.id}/search", params={"q": word})
            assert [h["memory_id"] for h in hits.json()["data"]] == [memory.id]
            memories.delete(memory.id, memory_store_id=store.id)
            hits = http.get(f"/v1/memory_stores/{store.id}/search", params={"q": word})
            assert hits.json()["data"] == []


def test_cross_store_search_covers_what_the_key_can_read(
    server: Server, admin: anthropic.Anthropic
) -> None:
    word = _word()
    one, two = _stores(admin, word)
    with server.http() as http:
        everything = _search(http, query=word).json()["data"]
        named = _search(http, query=word, memory_store_ids=[two.id]).json()["data"]
    assert {h["memory_store_id"] for h in everything} == {one.id, two.id}
    assert [h["path"] for h in named] == ["/c.md"]
    limited = server.key(Scope.READ, stores=(two.id,))
    with server.http(limited) as http:
        mine = _search(http, query=word).json()["data"]
        refused = _search(http, query=word, memory_store_ids=[one.id])
        refused_get = http.get(f"/v1/memory_stores/{one.id}/search", params={"q": word})
    assert {h["memory_store_id"] for h in mine} == {two.id}
    assert refused.status_code == refused_get.status_code == 404
    writer = server.key(Scope.WRITE)
    with server.http(writer) as http:
        response = _search(http, query=word)
    assert response.status_code == 403
    assert response.json()["error"]["type"] == "permission_error"


def test_a_session_sees_only_its_attached_stores(
    server: Server, admin: anthropic.Anthropic
) -> None:
    word = _word()
    one, two = _stores(admin, word)
    session = server.session((two.id, "read_only"))
    with server.http(session["token"]) as http:
        hits = _search(http, query=word).json()["data"]
        own = http.get(f"/v1/memory_stores/{two.id}/search", params={"q": word})
        other = http.get(f"/v1/memory_stores/{one.id}/search", params={"q": word})
        named = _search(http, query=word, memory_store_ids=[one.id, two.id])
    assert {h["memory_store_id"] for h in hits} == {two.id}
    assert [h["path"] for h in own.json()["data"]] == ["/c.md"]
    assert other.status_code == named.status_code == 404


def test_unauthenticated_search_is_401(server: Server) -> None:
    with httpx.Client(base_url=server.url) as http:
        assert http.post("/v1/search", json={"query": "x"}).status_code == 401
        assert http.get("/v1/memory_stores/memstore_x/search?q=x").status_code == 401


def test_bad_queries_and_semantic_are_named(server: Server, admin: anthropic.Anthropic) -> None:
    with server.http() as http:
        unterminated = _search(http, query='"open')
        negated = _search(http, query="-only")
        semantic = _search(http, query="kernel", semantic=True)
    assert unterminated.status_code == negated.status_code == semantic.status_code == 400
    assert "unterminated quote" in unterminated.json()["error"]["message"]
    assert semantic.json()["error"]["details"]["error_code"] == "search_unavailable"
    assert SEARCH_MODEL_ENV in semantic.json()["error"]["message"]


def test_redacted_content_is_no_hit(server: Server, admin: anthropic.Anthropic, store: Any) -> None:
    word = _word()
    memories = admin.beta.memory_stores.memories
    memory = memories.create(store.id, path="/secret.md", content=f"the {word}")
    with server.http() as http:
        url = f"/v1/memory_stores/{store.id}/search"
        assert len(http.get(url, params={"q": word}).json()["data"]) == 1
        deleted = http.delete(
            f"/v1/memory_stores/{store.id}/memories/{memory.id}", params={"mode": "redact"}
        )
        assert deleted.status_code == 200, deleted.text
        assert http.get(url, params={"q": word}).json()["data"] == []
        assert _search(http, query=word).json()["data"] == []


def test_the_openapi_documents_search(server: Server) -> None:
    with server.http() as http:
        document = http.get("/openapi.json").json()
    assert "/v1/search" in document["paths"]
    assert "/v1/memory_stores/{memory_store_id}/search" in document["paths"]
    assert "SearchHitOut" in document["components"]["schemas"]
