"""``memfs mcp``: the MCP server on stdin/stdout, over one memory file service for the
life of the process (an embedded store attached to a new session, or a server with a
session token). Nothing but protocol messages is written to stdout; logs go to stderr.
"""

from __future__ import annotations

from mcp.server.stdio import stdio_server

from memfs.mcp.server import build_server
from memfs.memory_tool.files import MemoryFiles
from memfs.memory_tool.port import StoreAccess

__all__ = ["serve_stdio"]


async def serve_stdio(access: StoreAccess) -> None:
    """Serves MCP on stdio until the client closes stdin; closes ``access`` at the end.

    Raises:
        Refused: the attachments can't be learnt (bad token, server down).
    """
    try:
        files = await MemoryFiles.open(access)

        async def provider() -> MemoryFiles:
            return files

        server = build_server(provider)
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())
    finally:
        await access.aclose()
