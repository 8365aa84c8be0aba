"""``memfs mcp`` over stdio, driven by the ``mcp`` SDK's client: the tools, the versions
they write and who wrote them, the resources, and the errors."""

from __future__ import annotations

import json

import pytest
from _support.serve import ServeProcess
from mcp.shared.exceptions import McpError
from mcp_helpers import TOOL_NAMES, call, stdio_session
from memory_helpers import live, versions

from memfs.core.model import Access, Actor, ActorType, Operation
from memfs.mcp.server import RESOURCE_NOT_FOUND
from memfs.store import Engine, ResourceSpec


async def test_every_tool_over_stdio_writes_versions_of_one_session(
    store_engine: Engine,
) -> None:
    notes = store_engine.stores.create("Notes")
    team = store_engine.stores.create("Team", description="shared rules")
    store_engine.memories.create(team.id, "/rules.md", "be kind\n")
    async with stdio_session(["--store", "Notes", "--store", "Team:ro"]) as session:
        listed = await session.list_tools()
        assert [t.name for t in listed.tools] == TOOL_NAMES
        assert all(t.inputSchema["type"] == "object" for t in listed.tools)
        assert await call(session, "create", path="/memories/notes/a.md", file_text="one\n") == (
            False,
            "File created successfully at: /memories/notes/a.md",
        )
        assert await call(
            session, "insert", path="/memories/notes/a.md", insert_line=1, insert_text="two"
        ) == (False, "The file /memories/notes/a.md has been edited.")
        assert await call(
            session, "str_replace", path="/memories/notes/a.md", old_str="one", new_str="1"
        ) == (
            False,
            "The memory file has been edited. Here is the snippet showing the change (with "
            "line numbers):\n     1\t1\n     2\ttwo\n     3\t",
        )
        assert await call(session, "view", path="/memories/notes/a.md", view_range=[2, -1]) == (
            False,
            "Here's the content of /memories/notes/a.md with line numbers:\n     2\ttwo\n     3\t",
        )
        assert await call(
            session, "rename", old_path="/memories/notes/a.md", new_path="/memories/notes/b.md"
        ) == (False, "Successfully renamed /memories/notes/a.md to /memories/notes/b.md")
        assert await call(session, "create", path="/memories/team/x.md", file_text="x") == (
            True,
            "Cannot modify /memories/team/x.md: the memory store 'Team' is attached read-only",
        )
        assert await call(session, "view", path="/elsewhere") == (
            True,
            "Path must start with /memories, got: /elsewhere",
        )
        is_error, stores = await call(session, "list_stores")
        assert not is_error
        assert json.loads(stores) == [
            {
                "name": "Notes",
                "memory_store_id": notes.id,
                "directory": "/memories/notes",
                "access": "read_write",
                "description": "",
                "instructions": None,
            },
            {
                "name": "Team",
                "memory_store_id": team.id,
                "directory": "/memories/team",
                "access": "read_only",
                "description": "shared rules",
                "instructions": None,
            },
        ]
        resources = (await session.list_resources()).resources
        assert [(str(r.uri), r.name, r.size) for r in resources] == [
            ("memfs://notes/b.md", "/memories/notes/b.md", 6),
            ("memfs://team/rules.md", "/memories/team/rules.md", 8),
        ]
        read = await session.read_resource("memfs://team/rules.md")  # type: ignore[arg-type]
        assert [c.text for c in read.contents] == ["be kind\n"]  # type: ignore[union-attr]
        assert await call(session, "delete", path="/memories/notes/b.md") == (
            False,
            "Successfully deleted /memories/notes/b.md",
        )
    written = versions(store_engine, notes.id)
    assert [v.operation for v in written] == [
        Operation.CREATED,
        Operation.MODIFIED,
        Operation.MODIFIED,
        Operation.MODIFIED,
        Operation.DELETED,
    ]
    actors = {v.created_by for v in written}
    assert len(actors) == 1
    (actor,) = actors
    assert actor is not None
    assert actor.type is ActorType.SESSION
    assert store_engine.sessions.get(actor.id).title == "memfs mcp"
    assert live(store_engine, team.id) == {"/rules.md": "be kind\n"}


async def test_a_resource_of_a_store_not_attached_is_an_mcp_error(store_engine: Engine) -> None:
    store_engine.stores.create("Notes")
    other = store_engine.stores.create("Other")
    store_engine.memories.create(other.id, "/secret.md", "secret")
    async with stdio_session(["--store", "Notes"]) as session:
        for uri in (f"memfs://{other.id}/secret.md", "memfs://other/secret.md"):
            with pytest.raises(McpError) as refused:
                await session.read_resource(uri)  # type: ignore[arg-type]
            assert refused.value.error.code == RESOURCE_NOT_FOUND
            assert "secret" not in (refused.value.error.data or "")
        with pytest.raises(McpError) as missing:
            await session.read_resource("memfs://notes/none.md")  # type: ignore[arg-type]
        assert missing.value.error.code == RESOURCE_NOT_FOUND
        assert missing.value.error.message == "The path /memories/none.md does not exist"


async def test_memfs_mcp_with_a_session_token_uses_the_server(
    server: ServeProcess, store_engine: Engine
) -> None:
    notes = store_engine.stores.create("Notes")
    team = store_engine.stores.create("Team")
    session, token = store_engine.sessions.create(
        [ResourceSpec(notes.id), ResourceSpec(team.id, Access.READ_ONLY)]
    )
    assert token is not None
    async with stdio_session(["--api", server.url], env={"MEMFS_TOKEN": token}) as client:
        assert await call(client, "create", path="/memories/notes/a.md", file_text="a\n") == (
            False,
            "File created successfully at: /memories/notes/a.md",
        )
        assert await call(
            client, "str_replace", path="/memories/notes/a.md", old_str="a", new_str="b"
        ) == (
            False,
            "The memory file has been edited. Here is the snippet showing the change (with "
            "line numbers):\n     1\tb\n     2\t",
        )
        assert (await call(client, "create", path="/memories/team/a.md", file_text="a"))[0]
    assert {v.created_by for v in versions(store_engine, notes.id)} == {Actor.session(session.id)}
    assert live(store_engine, notes.id) == {"/a.md": "b\n"}
    assert live(store_engine, team.id) == {}
