"""Visibility through ``/mcp`` under a real ``memfs serve`` (SPEC §6), with
the ``mcp`` SDK's client: a session for alice sees her private records and the shared
ones, none of bob's (view, search, resources), and can't write one she could not see."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import timedelta

import httpx
from _support.serve import ServeProcess
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from memfs.core.model import Actor
from memfs.core.visibility import UserPrincipal
from memfs.store import Engine, ResourceSpec

ACTOR = Actor.api_key("apikey_tests")
REQUEST_TIMEOUT = timedelta(seconds=60)


def record(user: str, scope: str = "private") -> str:
    return f"---\ntype: preference\nscope: {scope}\nuser_id: {user}\n---\n{user} likes tea\n"


@asynccontextmanager
async def mcp_client(base_url: str, token: str) -> AsyncIterator[ClientSession]:
    async with (
        httpx.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60.0) as http,
        streamable_http_client(f"{base_url}/mcp", http_client=http) as (read, write, _),
        ClientSession(read, write, read_timeout_seconds=REQUEST_TIMEOUT) as session,
    ):
        await session.initialize()
        yield session


async def _call(session: ClientSession, name: str, **arguments: object) -> tuple[bool, str]:
    result = await session.call_tool(name, arguments)
    content = result.content[0]
    assert content.type == "text"
    return bool(result.isError), content.text


async def test_mcp_for_alice_shows_her_records_and_shared_ones_only(
    server: ServeProcess, store_engine: Engine
) -> None:
    store = store_engine.stores.create("Shared")
    for path, content in {
        "/alice.md": record("alice"),
        "/bob.md": record("bob"),
        "/team.md": record("bob", "share"),
    }.items():
        store_engine.for_caller(actor=ACTOR).memories.create(store.id, path, content)
    _, token = store_engine.sessions.create(
        [ResourceSpec(store.id)], principal=UserPrincipal(user_id="alice")
    )
    assert token is not None
    async with mcp_client(server.url, token) as client:
        is_error, listing = await _call(client, "view", path="/memories")
        assert not is_error
        assert "/memories/alice.md" in listing
        assert "/memories/team.md" in listing
        assert "bob.md" not in listing
        is_error, text = await _call(client, "view", path="/memories/bob.md")
        assert is_error
        assert "does not exist" in text
        is_error, hits = await _call(client, "search", query="tea")
        assert not is_error
        assert "alice.md" in hits
        assert "bob.md" not in hits
        resources = {str(r.uri) for r in (await client.list_resources()).resources}
        assert not any("bob.md" in uri for uri in resources)
        is_error, text = await _call(
            client, "create", path="/memories/for-bob.md", file_text=record("bob")
        )
        assert is_error
        assert "invisible to its writer" in text
    assert "/for-bob.md" not in {m.path for m in store_engine.memories.all(store.id)}
