"""``/mcp`` under a real ``memfs serve`` (streamable HTTP), driven by the ``mcp`` SDK's
client: the REST API's bearer auth, a session token's stores and access modes, the
versions and their actor."""

from __future__ import annotations

import json

import httpx
import pytest
from _support.serve import ServeProcess
from mcp.shared.exceptions import McpError
from mcp_helpers import TOOL_NAMES, call, http_session
from memory_helpers import live, versions

from memfs.core.model import Access, Actor, Operation, Scope
from memfs.mcp.server import RESOURCE_NOT_FOUND
from memfs.store import Engine, ResourceSpec


async def test_every_tool_over_http_writes_versions_of_the_token_session(
    server: ServeProcess, store_engine: Engine
) -> None:
    notes = store_engine.stores.create("Notes")
    team = store_engine.stores.create("Team")
    store_engine.memories.create(team.id, "/rules.md", "be kind\n")
    session, token = store_engine.sessions.create(
        [ResourceSpec(notes.id), ResourceSpec(team.id, Access.READ_ONLY)]
    )
    assert token is not None
    async with http_session(server.url, token) as client:
        assert [t.name for t in (await client.list_tools()).tools] == TOOL_NAMES
        assert await call(client, "create", path="/memories/notes/a.md", file_text="x\n") == (
            False,
            "File created successfully at: /memories/notes/a.md",
        )
        assert await call(
            client, "insert", path="/memories/notes/a.md", insert_line=0, insert_text="w"
        ) == (False, "The file /memories/notes/a.md has been edited.")
        assert (
            await call(client, "str_replace", path="/memories/notes/a.md", old_str="x", new_str="y")
        )[0] is False
        assert await call(client, "view", path="/memories") == (
            False,
            "Here're the files and directories up to 2 levels deep in /memories, excluding "
            "hidden items:\n4K\t/memories\n4K\t/memories/notes/\n4B\t/memories/notes/a.md\n"
            "4K\t/memories/team/\n8B\t/memories/team/rules.md",
        )
        assert await call(
            client, "rename", old_path="/memories/notes/a.md", new_path="/memories/notes/z.md"
        ) == (False, "Successfully renamed /memories/notes/a.md to /memories/notes/z.md")
        assert await call(client, "delete", path="/memories/team/rules.md") == (
            True,
            "Cannot modify /memories/team/rules.md: the memory store 'Team' is attached "
            "read-only",
        )
        is_error, stores = await call(client, "list_stores")
        assert not is_error
        assert [(s["name"], s["access"]) for s in json.loads(stores)] == [
            ("Notes", "read_write"),
            ("Team", "read_only"),
        ]
        read = await client.read_resource("memfs://notes/z.md")  # type: ignore[arg-type]
        assert [c.text for c in read.contents] == ["w\ny\n"]  # type: ignore[union-attr]
        assert await call(client, "delete", path="/memories/notes/z.md") == (
            False,
            "Successfully deleted /memories/notes/z.md",
        )
    written = versions(store_engine, notes.id)
    assert [v.operation for v in written] == [Operation.CREATED] + [Operation.MODIFIED] * 3 + [
        Operation.DELETED
    ]
    assert {v.created_by for v in written} == {Actor.session(session.id)}
    assert live(store_engine, team.id) == {"/rules.md": "be kind\n"}


async def test_a_session_token_reaches_only_its_stores(
    server: ServeProcess, store_engine: Engine
) -> None:
    mine = store_engine.stores.create("Mine")
    other = store_engine.stores.create("Other")
    store_engine.memories.create(other.id, "/secret.md", "the secret")
    _session, token = store_engine.sessions.create([ResourceSpec(mine.id)])
    assert token is not None
    async with http_session(server.url, token) as client:
        with pytest.raises(McpError) as refused:
            await client.read_resource(f"memfs://{other.id}/secret.md")  # type: ignore[arg-type]
        assert refused.value.error.code == RESOURCE_NOT_FOUND
        assert "the secret" not in refused.value.error.message
        listed = (await client.list_resources()).resources
        assert listed == []
        # One store is flat at /memories: the other store has no path at all.
        is_error, text = await call(client, "view", path="/memories/secret.md")
        assert is_error
        assert text == "The path /memories/secret.md does not exist. Please provide a valid path."
        is_error, stores = await call(client, "list_stores")
        assert [s["memory_store_id"] for s in json.loads(stores)] == [mine.id]
    assert live(store_engine, other.id) == {"/secret.md": "the secret"}


async def test_mcp_over_http_needs_a_valid_credential(
    server: ServeProcess, store_engine: Engine
) -> None:
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "test", "version": "0"},
        },
    }
    headers = {"accept": "application/json, text/event-stream"}
    async with httpx.AsyncClient(base_url=server.url, timeout=60) as http:
        for extra in ({}, {"authorization": "Bearer memfs_st_not-a-token"}):
            response = await http.post("/mcp", json=initialize, headers=headers | extra)
            assert response.status_code == 401
            assert response.json()["error"]["type"] == "authentication_error"
    # The mcp SDK's client sees the 401 as an HTTP error, not as data.
    with pytest.raises(BaseException) as failed:  # noqa: PT011 - an exception group
        async with http_session(server.url, "memfs_sk_not-a-key"):
            pass
    assert "401" in repr(failed.value)


async def test_an_api_key_writes_as_itself_and_a_read_key_can_not_write(
    server: ServeProcess, store_engine: Engine
) -> None:
    notes = store_engine.stores.create("Notes")
    writer, writer_secret = store_engine.api_keys.create(
        "writer", [Scope.READ, Scope.WRITE], [notes.id]
    )
    _reader, reader_secret = store_engine.api_keys.create("reader", [Scope.READ], [notes.id])
    async with http_session(server.url, writer_secret) as client:
        assert await call(client, "create", path="/memories/a.md", file_text="a") == (
            False,
            "File created successfully at: /memories/a.md",
        )
    async with http_session(server.url, reader_secret) as client:
        assert await call(client, "view", path="/memories/a.md") == (
            False,
            "Here's the content of /memories/a.md with line numbers:\n     1\ta",
        )
        assert await call(client, "create", path="/memories/b.md", file_text="b") == (
            True,
            "Cannot modify /memories/b.md: the memory store 'Notes' is attached read-only",
        )
    assert {v.created_by for v in versions(store_engine, notes.id)} == {Actor.api_key(writer.id)}
    assert live(store_engine, notes.id) == {"/a.md": "a"}
