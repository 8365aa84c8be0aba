"""Visibility over the API (SPEC §6) with two principals on one
shared store, driven by the real ``anthropic`` SDK (and raw HTTP for the memfs
extensions the SDK does not have: search, the change feed): each sees its own private
records and every shared one, nothing of the other's — not in listings, counts,
retrieve (404), versions, search or the feed; an admin key sees all; a key without a
principal sees no private record; a write its writer could not see is a 403."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anthropic
import httpx
import pytest
from _support.serve import ServeProcess

from memfs.core.model import Scope
from memfs.core.visibility import UserPrincipal
from memfs.store import Engine

SCOPES = [Scope.READ, Scope.WRITE, Scope.DELETE]


def record(user: str, scope: str = "private") -> str:
    return f"---\ntype: preference\nscope: {scope}\nuser_id: {user}\n---\n{user} likes tea\n"


def test_two_principals_see_their_own_and_shared_records_only(
    server: ServeProcess,
    store_engine: Engine,
    sdk: Callable[[str], anthropic.Anthropic],
) -> None:
    _, admin_secret = store_engine.api_keys.create("admin", [Scope.ADMIN])
    _, alice_secret = store_engine.api_keys.create(
        "alice", SCOPES, principal=UserPrincipal(user_id="alice")
    )
    _, bob_secret = store_engine.api_keys.create(
        "bob", SCOPES, principal=UserPrincipal(user_id="bob")
    )
    _, plain_secret = store_engine.api_keys.create("plain", SCOPES)
    admin, alice, bob, plain = (
        sdk(s).beta.memory_stores for s in (admin_secret, alice_secret, bob_secret, plain_secret)
    )
    store = admin.create(name="Shared")
    mine = alice.memories.create(store.id, path="/alice/prefs.md", content=record("alice"))
    shared = alice.memories.create(
        store.id, path="/alice/team.md", content=record("alice", "share")
    )
    theirs = bob.memories.create(store.id, path="/bob/prefs.md", content=record("bob"))
    plain_note = plain.memories.create(store.id, path="/notes.md", content="tea for all\n")

    def paths(client: Any) -> set[str]:
        return {m.path for m in client.memories.list(store.id, limit=1)}

    assert paths(alice) == {"/alice/prefs.md", "/alice/team.md", "/notes.md"}
    assert paths(bob) == {"/alice/team.md", "/bob/prefs.md", "/notes.md"}
    assert paths(plain) == {"/alice/team.md", "/notes.md"}
    assert paths(admin) == {"/alice/prefs.md", "/alice/team.md", "/bob/prefs.md", "/notes.md"}
    counts = {
        name: client.retrieve(store.id).model_dump()["entry_count"]
        for name, client in (("alice", alice), ("bob", bob), ("plain", plain), ("admin", admin))
    }
    assert counts == {"alice": 3, "bob": 3, "plain": 2, "admin": 4}
    assert alice.update(store.id, description="ours").model_dump()["entry_count"] == 3
    listed = {s.id: s.model_dump()["entry_count"] for s in plain.list()}
    assert listed[store.id] == 2

    # Retrieve, update and delete of the other's record: the 404 of an unknown id.
    with pytest.raises(anthropic.NotFoundError):
        alice.memories.retrieve(theirs.id, memory_store_id=store.id)
    with pytest.raises(anthropic.NotFoundError):
        alice.memories.update(theirs.id, memory_store_id=store.id, content="mine now")
    with pytest.raises(anthropic.NotFoundError):
        alice.memories.delete(theirs.id, memory_store_id=store.id)
    assert bob.memories.retrieve(theirs.id, memory_store_id=store.id).content == record("bob")
    assert alice.memories.retrieve(shared.id, memory_store_id=store.id).content is not None
    assert plain.memories.retrieve(plain_note.id, memory_store_id=store.id).path == "/notes.md"

    # Versions: listed only for what the caller sees; the other's is a 404.
    alice_versions = {v.memory_id for v in alice.memory_versions.list(store.id)}
    assert alice_versions == {mine.id, shared.id, plain_note.id}
    with pytest.raises(anthropic.NotFoundError):
        alice.memory_versions.retrieve(theirs.memory_version_id, memory_store_id=store.id)

    # A record its writer could not see is refused, nothing written.
    with pytest.raises(anthropic.PermissionDeniedError) as refused:
        alice.memories.create(store.id, path="/alice/for-bob.md", content=record("bob"))
    assert refused.value.error_code == "record_not_visible"  # type: ignore[attr-defined]
    with pytest.raises(anthropic.PermissionDeniedError):
        alice.memories.update(mine.id, memory_store_id=store.id, content=record("bob"))
    with pytest.raises(anthropic.PermissionDeniedError):
        plain.memories.create(store.id, path="/p.md", content=record("alice"))
    assert paths(admin) == {"/alice/prefs.md", "/alice/team.md", "/bob/prefs.md", "/notes.md"}

    # Search and the change feed (memfs extensions, raw HTTP).
    def http(secret: str) -> httpx.Client:
        return httpx.Client(
            base_url=server.url, headers={"authorization": f"Bearer {secret}"}, timeout=30
        )

    with http(alice_secret) as client:
        hits = client.post("/v1/search", json={"query": "tea"}).json()["data"]
        assert {h["path"] for h in hits} == {"/alice/prefs.md", "/alice/team.md", "/notes.md"}
        one = client.get(f"/v1/memory_stores/{store.id}/search", params={"q": "bob"}).json()
        assert one["data"] == []
        feed = client.get(f"/v1/memory_stores/{store.id}/changes").json()
    with http(admin_secret) as client:
        everything = client.get(f"/v1/memory_stores/{store.id}/changes").json()
        assert len(client.post("/v1/search", json={"query": "tea"}).json()["data"]) == 4
    assert [c["seq"] for c in feed["data"]] == [c["seq"] for c in everything["data"]]
    assert feed["last_seq"] == everything["last_seq"]
    about_bob = [c for c in feed["data"] if c["memory_id"] == theirs.id]
    assert about_bob
    assert all(c["path"] is None for c in about_bob)
    assert all(c.get("content_sha256") is None for c in about_bob)
    assert "/bob/prefs.md" not in str(feed)


def test_a_path_conflict_over_a_hidden_record_names_neither_its_id_nor_its_path(
    server: ServeProcess,
    store_engine: Engine,
    sdk: Callable[[str], anthropic.Anthropic],
) -> None:
    """The 409 still says the path is taken (paths are unique per store); its
    ``conflicting_memory_id`` and ``conflicting_path`` are left out for a blocker the
    caller can't see, and kept for one it can (api-contract: both are optional)."""
    _, alice_secret = store_engine.api_keys.create(
        "alice", SCOPES, principal=UserPrincipal(user_id="alice")
    )
    _, bob_secret = store_engine.api_keys.create(
        "bob", SCOPES, principal=UserPrincipal(user_id="bob")
    )
    alice, bob = (sdk(s).beta.memory_stores for s in (alice_secret, bob_secret))
    store = alice.create(name="Shared")
    hidden = bob.memories.create(store.id, path="/bob/prefs.md", content=record("bob"))
    for path in ("/bob/prefs.md", "/bob/prefs.md/below.md", "/bob"):
        with pytest.raises(anthropic.ConflictError) as caught:
            alice.memories.create(store.id, path=path, content="x\n")
        error = caught.value.body["error"]  # type: ignore[index]
        assert error["type"] == "memory_path_conflict_error"
        assert "conflicting_memory_id" not in error
        assert "conflicting_path" not in error
        assert hidden.id not in error["message"]
        if path == "/bob":
            assert "prefs.md" not in error["message"]
    with pytest.raises(anthropic.ConflictError) as caught:
        bob.memories.create(store.id, path="/bob/prefs.md", content="x\n")
    error = caught.value.body["error"]  # type: ignore[index]
    assert (error["conflicting_memory_id"], error["conflicting_path"]) == (
        hidden.id, "/bob/prefs.md"
    )
