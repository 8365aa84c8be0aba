"""The real memfs API in-process, for the remote-mount tests.

:class:`LiveServer` runs the application of ``memfs serve`` (:func:`memfs.api.app.create_app`
over a real :class:`memfs.store.Engine` on SQLite in the test's tmp dir) behind
``httpx.ASGITransport``: every request goes through the real routes, authentication,
error table and change feed, under trio, without a socket. Where a real socket or a
real process matters, the fault tests (tests/faults) run ``memfs serve`` itself.

The network between mount and server (``LiveServer.network``) is a
:class:`NetworkTransport`, a wrapper around the ASGI transport that records every request
and can fail the way a network and a server process fail (the faults the outbox is built
for):

* ``down = True``: every request fails with ``httpx.ConnectError`` before it reaches the
  application (no server listening).
* ``lose_responses = n``: the next ``n`` requests are applied by the application, then
  their responses are lost (``httpx.ReadError``): the crash between "server applied"
  and "client knows".
* ``crash_after_writes = n``: once the n-th further write (any method but GET) has been
  applied, its response is lost and the server goes down (``down`` becomes True): a
  server killed mid-stream of writes, right after committing one.
* ``gate = trio.Semaphore(0)``: a slow server; each request waits for one
  ``gate.release()`` before it is sent (``gate = None`` lets everything through).

Writes made to the engine directly (by "another mount" or an administrator) reach the
long polls of the feed the way writes from another process do: through the
application's poll of the store's change counter (:mod:`memfs.api.changes`).
"""

from __future__ import annotations

import json
from typing import Any, NamedTuple

import httpx
import trio

from memfs.api.app import create_app
from memfs.core.model import Actor, Session
from memfs.store import Engine, ResourceSpec

__all__ = ["BASE_URL", "LiveServer", "NetworkTransport", "Request"]

BASE_URL = "http://memfs.test"


class Request(NamedTuple):
    """One request as it left the client: method, path, query, JSON body (or None)."""

    method: str
    path: str
    query: dict[str, str]
    body: Any


class NetworkTransport(httpx.AsyncBaseTransport):
    """``httpx.ASGITransport`` over ``app`` with the network's failures (module docstring).

    Attributes:
        requests: every request sent, in order, applied or not.
        applied: how many writes (non-GET requests) reached the application.
    """

    def __init__(self, app: Any) -> None:
        self._inner = httpx.ASGITransport(app=app)
        self.down = False
        self.lose_responses = 0
        self.crash_after_writes: int | None = None
        self.gate: trio.Semaphore | None = None
        self.requests: list[Request] = []
        self.applied = 0

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        body = await request.aread()
        self.requests.append(
            Request(
                request.method,
                request.url.path,
                dict(request.url.params),
                json.loads(body) if body else None,
            )
        )
        if self.gate is not None:
            await self.gate.acquire()
        if self.down:
            raise httpx.ConnectError("connection refused", request=request)
        response = await self._inner.handle_async_request(request)
        await response.aread()
        if request.method != "GET":
            self.applied += 1
            if self.crash_after_writes is not None:
                self.crash_after_writes -= 1
                if self.crash_after_writes <= 0:
                    self.crash_after_writes = None
                    self.down = True
                    raise httpx.ReadError("server killed", request=request)
        if self.lose_responses:
            self.lose_responses -= 1
            raise httpx.ReadError("connection reset by peer", request=request)
        return response


class LiveServer:
    """The real API over ``engine``, with one session (created here) for the mount.

    Args:
        engine: the store engine (the caller closes it).
        resources: the session's attachments.

    Attributes:
        engine, app: the engine and the FastAPI application over it.
        session, token, actor: the session the mount uses, its token, its actor.
        network: the :class:`NetworkTransport` every client of :meth:`client` shares.
    """

    def __init__(self, engine: Engine, resources: list[ResourceSpec]) -> None:
        self.engine = engine
        self.app = create_app(engine)
        session, token = engine.sessions.create(resources)
        assert token is not None
        self.session: Session = session
        self.token = token
        self.actor = Actor.session(session.id)
        self.network = NetworkTransport(self.app)

    def transport(self) -> NetworkTransport:
        """The network to this server (shared by every client of one test)."""
        return self.network
