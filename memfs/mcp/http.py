"""``/mcp`` under ``memfs serve``: the MCP server over streamable HTTP (stateless), with
the bearer-token authentication of the REST API (:mod:`memfs.api.auth`).

Every HTTP request is authenticated on its own (SPEC §3: authentication first; a
revoked credential gets 401 on its next request) and served by a fresh server run in
stateless mode with JSON responses, so any API server on the database can answer any
request. The caller's credential decides what the MCP server offers:

* a **session token**: exactly the session's stores with their access modes (a
  ``read_only`` attachment refuses writes; a store not attached can't be named);
  versions are ``session_actor``;
* an **API key**: every store it may read (limited keys: their stores), ``read_write``
  where it has ``memory:write``; versions are ``api_actor``; deleting needs
  ``memory:delete``.

Every engine call is checked by the principal (``Principal.require``) as the REST routes
are. Limitation: an API key's stores are listed again at every request (one engine call
per 100 stores); session tokens, at most 8 stores, are the intended credential here.

An unauthenticated request raises :class:`~memfs.core.errors.AuthenticationFailed`, which the
API's error handler answers with 401 and the error envelope.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Awaitable, Callable, MutableMapping
from typing import TYPE_CHECKING, Any

import anyio
import anyio.to_thread

from memfs.api.auth import Principal, authenticate, credential_from_headers
from memfs.core import rules
from memfs.core.model import Access, MemoryStore, Scope
from memfs.memory_tool.files import MemoryFiles
from memfs.memory_tool.port import EngineAccess, StoreView, attachments_of_session

if TYPE_CHECKING:
    from mcp.server.lowlevel import Server

    from memfs.store import Engine

__all__ = ["McpHttpEndpoint", "attachments_of_principal"]

Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

# Where the request's memory files wait for the server's handlers (the ASGI scope of
# the request each MCP message arrived with).
_SCOPE_KEY = "memfs.mcp.files"
# Page size when listing the stores an API key may use.
_STORE_PAGE_LIMIT = 100


def attachments_of_principal(engine: Engine, principal: Principal) -> list[StoreView]:
    """What the MCP server offers a caller (module docstring); blocking.

    Raises:
        NotFound: a session whose store was deleted meanwhile (never for a key).
    """
    if principal.session is not None:
        return attachments_of_session(principal.session)
    stores: list[MemoryStore] = []
    cursor: str | None = None
    while True:
        page = engine.stores.list(include_archived=True, limit=_STORE_PAGE_LIMIT, cursor=cursor)
        stores += [s for s in page.items if principal.can_see(s.id)]
        cursor = page.next_cursor
        if cursor is None:
            break
    stores.reverse()  # oldest first: slugs get their suffixes in creation order
    slugs = rules.unique_slugs([(s.id, s.name) for s in stores])
    key = principal.api_key
    return [
        StoreView(
            store_id=s.id,
            name=s.name,
            slug=slugs[s.id],
            access=(
                Access.READ_WRITE
                if s.archived_at is None and (key is None or key.allows(Scope.WRITE, s.id))
                else Access.READ_ONLY
            ),
            description=s.description,
        )
        for s in stores
    ]


class McpHttpEndpoint:
    """The ASGI application of ``/mcp`` (mounted by :func:`memfs.api.app.create_app`).

    Args:
        engine: the server's engine.
        insecure_dev: as the API's (a request without a valid credential is an admin).
    """

    def __init__(self, engine: Engine, *, insecure_dev: bool = False) -> None:
        # The mcp server logs two INFO lines per HTTP request (its stateless "session"
        # starting and ending); the API's log is for what matters.
        logging.getLogger("mcp.server").setLevel(logging.WARNING)
        self._engine = engine
        self._insecure_dev = insecure_dev
        self._server_built: Server[Any, Any] | None = None

    @property
    def _server(self) -> Server[Any, Any]:
        # Built at the first request: importing the mcp SDK costs seconds of start-up
        # that a server nobody asks over MCP should not pay.
        if self._server_built is None:
            from memfs.mcp.server import build_server

            self._server_built = build_server(self._files_of_request)
        return self._server_built

    async def _files_of_request(self) -> MemoryFiles:
        request = self._server.request_context.request
        assert request is not None, "an HTTP request carries every MCP message here"
        files: MemoryFiles = request.scope[_SCOPE_KEY]
        return files

    async def _files_of(self, scope: Message) -> MemoryFiles:
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        token = credential_from_headers(headers.get("authorization"), headers.get("x-api-key"))
        principal = await anyio.to_thread.run_sync(
            functools.partial(authenticate, self._engine, token, insecure_dev=self._insecure_dev)
        )
        attachments = await anyio.to_thread.run_sync(
            attachments_of_principal, self._engine, principal
        )
        access = EngineAccess(
            self._engine,
            attachments,
            principal.actor,
            require=principal.require,
            viewer=principal.viewer,  # visibility (SPEC §6)
        )
        return MemoryFiles(access, attachments)

    async def __call__(self, scope: Message, receive: Receive, send: Send) -> None:
        from mcp.server.streamable_http import StreamableHTTPServerTransport

        scope[_SCOPE_KEY] = await self._files_of(scope)  # raises AuthenticationFailed
        server = self._server
        transport = StreamableHTTPServerTransport(
            mcp_session_id=None, is_json_response_enabled=True
        )

        async def run_server(*, task_status: anyio.abc.TaskStatus[None]) -> None:
            async with transport.connect() as (read_stream, write_stream):
                task_status.started()
                await server.run(
                    read_stream,
                    write_stream,
                    server.create_initialization_options(),
                    stateless=True,
                )

        async with anyio.create_task_group() as tasks:
            await tasks.start(run_server)
            try:
                await transport.handle_request(scope, receive, send)
            finally:
                with anyio.CancelScope(shield=True):
                    await transport.terminate()
