"""The MCP server in-process (the ``mcp`` SDK's in-memory transport) over an embedded
store: resource URIs round-trip any valid memory path, and the tool table is the one
place a new tool (search, SPEC §7) joins."""

from __future__ import annotations

from mcp.shared.memory import create_connected_server_and_client_session
from mcp_helpers import TOOL_NAMES, call

from memfs.core.model import Access
from memfs.mcp.server import TOOLS, build_server
from memfs.memory_tool import MemoryFiles
from memfs.memory_tool.port import open_embedded
from memfs.store import Engine

PATHS = ["/café.md", "/a b/c#d?.md", "/x%41.md", "/.hidden/n.md"]


async def test_resource_uris_round_trip_every_valid_path(engine: Engine) -> None:
    store = engine.stores.create("Notes")
    for path in PATHS:
        engine.memories.create(store.id, path, f"content of {path}")
    files = await MemoryFiles.open(open_embedded(engine, [("Notes", Access.READ_WRITE)]))

    async def provider() -> MemoryFiles:
        return files

    async with create_connected_server_and_client_session(build_server(provider)) as client:
        resources = (await client.list_resources()).resources
        assert sorted(r.name for r in resources) == sorted(f"/memories{p}" for p in PATHS)
        for resource in resources:
            read = await client.read_resource(resource.uri)
            path = resource.name.removeprefix("/memories")
            assert [c.text for c in read.contents] == [f"content of {path}"]  # type: ignore[union-attr]
        assert [t.name for t in (await client.list_tools()).tools] == TOOL_NAMES
        assert await call(client, "no_such_tool") == (True, "Unknown tool: no_such_tool")


def test_the_tool_table_is_what_the_server_lists() -> None:
    assert list(TOOLS) == TOOL_NAMES
    for spec in TOOLS.values():
        tool = spec.to_tool()
        assert tool.inputSchema["required"] == list(spec.required)
        assert set(spec.required) <= set(tool.inputSchema["properties"])
