"""Helpers of the MCP tests: a client session of the ``mcp`` SDK over stdio (a spawned
``memfs mcp``) or streamable HTTP (``/mcp`` of a real ``memfs serve``), and what a tool
call answered."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from datetime import timedelta
from typing import Any

import httpx
from _support.mount import MEMFS
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

# Generous for a busy 2-core CI box: spawning `memfs mcp` imports the SDKs.
REQUEST_TIMEOUT = timedelta(seconds=60)

TOOL_NAMES = [
    "view",
    "create",
    "str_replace",
    "insert",
    "delete",
    "rename",
    "search",
    "list_stores",
]


@asynccontextmanager
async def stdio_session(
    args: Sequence[str], env: dict[str, str] | None = None
) -> AsyncIterator[ClientSession]:
    """An initialized client session with ``memfs mcp ARGS`` as a subprocess (the
    environment of the test, so its ``$MEMFS_HOME``)."""
    params = StdioServerParameters(
        command=MEMFS, args=["mcp", *args], env=dict(os.environ, **(env or {}))
    )
    async with (
        stdio_client(params) as (read_stream, write_stream),
        ClientSession(read_stream, write_stream, read_timeout_seconds=REQUEST_TIMEOUT) as session,
    ):
        await session.initialize()
        yield session


@asynccontextmanager
async def http_session(base_url: str, token: str) -> AsyncIterator[ClientSession]:
    """An initialized client session with ``BASE_URL/mcp``, the token as a bearer."""
    async with (
        httpx.AsyncClient(
            headers={"Authorization": f"Bearer {token}"}, timeout=httpx.Timeout(60.0)
        ) as http,
        streamable_http_client(f"{base_url}/mcp", http_client=http) as streams,
    ):
        read_stream, write_stream, _session_id = streams
        async with ClientSession(
            read_stream, write_stream, read_timeout_seconds=REQUEST_TIMEOUT
        ) as session:
            await session.initialize()
            yield session


async def call(session: ClientSession, name: str, **arguments: Any) -> tuple[bool, str]:
    """``(is_error, text)`` of a tool call."""
    result = await session.call_tool(name, arguments)
    assert len(result.content) == 1
    content = result.content[0]
    assert content.type == "text"
    return bool(result.isError), content.text
