"""The ASGI application: FastAPI routes behind one request-context middleware.

Every response carries a ``request-id`` header (``req_…``, api-contract §1.3). Every
failure, whatever raised it (the engine, request validation, routing, the body limit),
becomes the error envelope of :mod:`memfs.api.errors`; FastAPI's 422 validation errors
become 400 ``invalid_request_error``. ``/openapi.json`` is built by
:mod:`memfs.api.openapi`.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, MutableMapping
from contextlib import asynccontextmanager
from http import HTTPStatus
from typing import Any

import anyio.to_thread
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from starlette.datastructures import MutableHeaders
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Mount, Route

from memfs import __version__, metrics
from memfs.api.changes import ChangeNotifier
from memfs.api.errors import (
    MAX_REQUEST_BODY_BYTES,
    InternalError,
    MethodNotAllowed,
    RequestTooLarge,
    RouteNotFound,
    error_body,
    error_headers,
)
from memfs.api.openapi import openapi_document
from memfs.api.routes import allowed_methods, authenticate_request, router
from memfs.core.errors import InvalidInput, InvalidMetadata, MemfsError
from memfs.core.ids import new_id
from memfs.dreams import DreamRunner
from memfs.dreams.runner import LanguageDreamer
from memfs.store import Engine
from memfs.wire.common import MAX_JSON_DEPTH, nests_too_deep

__all__ = ["UNMATCHED_ROUTE", "RequestContextMiddleware", "create_app", "error_response"]

log = logging.getLogger(__name__)
# The HTTP access log: one INFO line per request (README "Logs").
access_log = logging.getLogger("memfs.access")

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

# The route label of a request no route took (a 404, a refusal before routing): one
# value, so that probing random paths can't grow the metrics.
UNMATCHED_ROUTE = "unmatched"
_BODY_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
# An oversize body is drained up to this size before the 413 (see _read_body).
MAX_DRAINED_BYTES = 16 * MAX_REQUEST_BODY_BYTES


def error_response(exc: MemfsError, request_id: str | None) -> JSONResponse:
    """The envelope response of ``exc`` with ``request-id`` and retry headers: an error
    that says when to try again (``retry_after_s``: StoreBusy, StorageFull,
    DatabaseUnreachable, all 503) gets ``retry-after`` (whole seconds) and
    ``x-should-retry: true``, so that any client, not only the SDK, tells a retryable
    outage from a bug (api-contract §2.3)."""
    status, body = error_body(exc, request_id)
    headers = error_headers(status)
    retry_after_s = getattr(exc, "retry_after_s", None)
    if isinstance(retry_after_s, int | float):
        headers["retry-after"] = str(max(1, math.ceil(retry_after_s)))
        headers["x-should-retry"] = "true"
    if request_id is not None:
        headers["request-id"] = request_id
    return JSONResponse(body, status_code=status, headers=headers)


def _route_label(scope: Scope, root_path: str) -> str:
    """The route template that answered a request, with the prefix of the mounted
    application it is in (``/console/stores/{store_id}``, not the console's own
    ``/stores/{store_id}``); a mounted application's own 404 is its prefix alone, any
    other request no route took :data:`UNMATCHED_ROUTE`. ``root_path`` is the scope's
    before routing (a mount appends its prefix to the scope's)."""
    prefix = scope.get("root_path", "").removeprefix(root_path)
    route = scope.get("route")
    path = "" if route is None or isinstance(route, Mount) else str(getattr(route, "path", ""))
    return prefix + path or UNMATCHED_ROUTE


class RequestContextMiddleware:
    """Pure ASGI middleware: assigns the request id, adds the ``request-id`` header to
    every response, counts every request in :mod:`memfs.metrics` (by method, route
    template and status, with its duration), and refuses request bodies over
    ``max_body_bytes`` with 413 before the application sees them (the body is read here
    and replayed), and bodies nesting JSON deeper than :data:`MAX_JSON_DEPTH` with 400
    (after authentication)."""

    def __init__(self, app: ASGIApp, max_body_bytes: int = MAX_REQUEST_BODY_BYTES) -> None:
        self.app = app
        self.max_body_bytes = max_body_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request_id = new_id("request")
        scope.setdefault("state", {})["request_id"] = request_id

        async def send_with_id(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                if "request-id" not in headers:
                    headers.append("request-id", request_id)
            await send(message)

        started = time.perf_counter()
        root_path = scope.get("root_path", "")
        answered = [HTTPStatus.INTERNAL_SERVER_ERROR.value]  # unless a response starts

        async def send_counted(message: Message) -> None:
            if message["type"] == "http.response.start":
                answered[0] = int(message["status"])
            await send_with_id(message)

        try:
            await self._answer(scope, receive, send_counted, request_id)
        finally:
            duration_s = time.perf_counter() - started
            route = _route_label(scope, root_path)
            metrics.http_request(scope["method"], route, answered[0], duration_s)
            _log_access(scope, route, answered[0], duration_s, request_id)

    async def _answer(self, scope: Scope, receive: Receive, send: Send, request_id: str) -> None:
        if scope["method"] in _BODY_METHODS:
            body = await self._read_body(scope, receive)
            if body is None:
                too_large = RequestTooLarge(f"the request body exceeds {self.max_body_bytes} bytes")
                await error_response(too_large, request_id)(scope, receive, send)
                return
            if nests_too_deep(body):
                await self._refuse_deep(scope, receive, send, request_id)
                return
            receive = _replay(body, receive)
        await self.app(scope, receive, send)

    async def _refuse_deep(
        self, scope: Scope, receive: Receive, send: Send, request_id: str
    ) -> None:
        """The 400 of a body nesting JSON deeper than :data:`MAX_JSON_DEPTH`, refused
        before anything parses it (parsing and validating recurse once per level), after
        authentication like every other refusal (SPEC §3: 401 first)."""
        request = Request(scope, receive)
        try:
            await authenticate_request(request)
        except MemfsError as refused:
            await error_response(refused, request_id)(scope, receive, send)
            return
        too_deep = InvalidInput(
            f"the request body nests JSON objects and arrays more than {MAX_JSON_DEPTH} "
            f"levels deep; the limit is {MAX_JSON_DEPTH} (metadata values are strings, "
            "SPEC §1)",
            code="json_too_deep",
        )
        await error_response(too_deep, request_id)(scope, receive, send)

    async def _read_body(self, scope: Scope, receive: Receive) -> bytes | None:
        """The whole body, or None once it exceeds the limit (declared or actual).

        An oversize body is still read, and discarded, up to :data:`MAX_DRAINED_BYTES`:
        answering before the client has finished sending and then closing the connection
        makes the kernel reset it, and the client loses the 413 with it.
        """
        declared = None
        for name, value in scope["headers"]:
            if name == b"content-length" and value.isdigit():
                declared = int(value)
        if declared is not None and declared > MAX_DRAINED_BYTES:
            return None
        chunks: list[bytes] = []
        size = 0
        too_large = declared is not None and declared > self.max_body_bytes
        while True:
            message = await receive()
            if message["type"] != "http.request":
                break  # client went away; the app will see the disconnect
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_body_bytes:
                too_large = True
                chunks.clear()
            if not too_large:
                chunks.append(chunk)
            if not message.get("more_body", False) or size > MAX_DRAINED_BYTES:
                break
        return None if too_large else b"".join(chunks)


# The path parameters of the routes, by the log field of the id each carries.
_ID_PARAMETERS = {
    "memory_store_id": "store_id",
    "memory_id": "memory_id",
    "memory_version_id": "version_id",
    "session_id": "session_id",
}


def _log_access(
    scope: Scope, route: str, status: int, duration_s: float, request_id: str
) -> None:
    """One line of the access log (logger ``memfs.access``, INFO): method, path (never
    the query string, which may carry a memory path), status, duration; in JSON also
    the route template, the request id, the ids of the path and who asked (the API key
    or session id; never its secret)."""
    if not access_log.isEnabledFor(logging.INFO):
        return
    fields: dict[str, Any] = {
        "method": scope["method"], "path": scope["path"], "route": route, "status": status,
        "duration_ms": round(duration_s * 1000, 3), "request_id": request_id,
    }
    for parameter, value in (scope.get("path_params") or {}).items():
        if parameter in _ID_PARAMETERS:
            fields[_ID_PARAMETERS[parameter]] = value
    principal = scope.get("state", {}).get("principal")
    if principal is not None and principal.session is not None:
        fields.setdefault("session_id", principal.session.id)
    elif principal is not None and principal.api_key is not None:
        fields["api_key_id"] = principal.api_key.id
    access_log.info(
        "%s %s %d %.1f ms", scope["method"], scope["path"], status, duration_s * 1000,
        extra=fields,
    )


def _replay(body: bytes, receive: Receive) -> Receive:
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


def _request_id(request: Request) -> str | None:
    return getattr(request.state, "request_id", None)


async def _memfs_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, MemfsError)
    return error_response(exc, _request_id(request))


def _validation_message(error: dict[str, Any]) -> str:
    location = ".".join(str(part) for part in error.get("loc", ()))
    return f"{location}: {error.get('msg', 'invalid')}"


async def _unauthenticated(request: Request) -> JSONResponse | None:
    """The 401 of a request refused before its route's first dependency authenticated
    it (a body that is not JSON is parsed first), or None when it is authenticated:
    authentication comes before validation (SPEC §3)."""
    if getattr(request.state, "principal", None) is not None:
        return None
    try:
        await authenticate_request(request)
    except MemfsError as refused:
        return error_response(refused, _request_id(request))
    return None


async def _validation_error(request: Request, exc: Exception) -> JSONResponse:
    """FastAPI's 422 → 400 ``invalid_request_error`` naming every problem; a problem in
    a body's ``metadata`` → ``invalid_metadata`` (the SDK's BetaInvalidMetadataError).
    An unauthenticated request gets its 401 instead."""
    assert isinstance(exc, RequestValidationError)
    refused = await _unauthenticated(request)
    if refused is not None:
        return refused
    errors = list(exc.errors())
    if any(e.get("type") == "json_invalid" for e in errors):
        problem: MemfsError = InvalidInput(
            "the request body is not valid JSON", code="invalid_json"
        )
    elif errors and all(tuple(e.get("loc", ()))[:2] == ("body", "metadata") for e in errors):
        problem = InvalidMetadata([_validation_message(e) for e in errors])
    else:
        problem = InvalidInput("; ".join(_validation_message(e) for e in errors))
    return error_response(problem, _request_id(request))


async def _http_error(request: Request, exc: Exception) -> JSONResponse:
    """Starlette's own errors (routing, body parsing) in the same envelope."""
    assert isinstance(exc, StarletteHTTPException)
    problem: MemfsError
    if exc.status_code == HTTPStatus.NOT_FOUND:
        problem = RouteNotFound(f"no route for {request.method} {request.url.path}")
    elif exc.status_code == HTTPStatus.METHOD_NOT_ALLOWED:
        # SPEC §3: authentication first, whatever the method (OPTIONS, TRACE, …): a
        # stranger learns nothing, not even which methods a path has.
        refused = await _unauthenticated(request)
        if refused is not None:
            return refused
        # RFC 9110 §15.5.6: a 405 lists the methods the path has (Starlette's own Allow
        # names only those of the first route matching the path).
        allow = ", ".join(allowed_methods(request.url.path))
        problem = MethodNotAllowed(f"{request.method} is not allowed on {request.url.path}")
        response = error_response(problem, _request_id(request))
        response.headers["Allow"] = allow or (exc.headers or {}).get("Allow", "")
        return response
    elif exc.status_code < HTTPStatus.INTERNAL_SERVER_ERROR:
        refused = await _unauthenticated(request)
        if refused is not None:
            return refused
        problem = InvalidInput(str(exc.detail))
    else:
        problem = InternalError("internal server error")
    return error_response(problem, _request_id(request))


async def _unexpected_error(request: Request, exc: Exception) -> JSONResponse:
    log.error("request %s failed", _request_id(request), exc_info=exc)
    return error_response(InternalError("internal server error"), _request_id(request))


# An endpoint another front end serves beside the API (the MCP server at ``/mcp``): built
# from the engine and the insecure_dev flag, an ASGI application. The composition root
# (memfs.cli.server) hands them in, so this package imports no front end above it.
EndpointFactory = Callable[[Engine, bool], Any]


@asynccontextmanager
async def _dream_job(app: FastAPI) -> AsyncIterator[None]:
    """The dream job runs while the app is served (SPEC §11)."""
    runner = DreamRunner(app.state.engine, language_model=app.state.language_dreamer)
    await anyio.to_thread.run_sync(runner.start)
    app.state.dream_runner = runner
    try:
        yield
    finally:
        app.state.dream_runner = None
        await anyio.to_thread.run_sync(runner.stop)


def create_app(
    engine: Engine,
    *,
    insecure_dev: bool = False,
    endpoints: Mapping[str, EndpointFactory] | None = None,
    mounts: Mapping[str, EndpointFactory] | None = None,
    run_dreams: bool = True,
    language_dreamer: LanguageDreamer | None = None,
) -> FastAPI:
    """The memfs REST API over ``engine`` (which the caller opens and closes).

    Args:
        engine: the store engine; every call to it runs in a worker thread.
        insecure_dev: requests without a valid credential act as an admin (development
            only, see :mod:`memfs.api.auth`).
        endpoints: ``{path: factory}``: ASGI applications of other front ends served
            beside the API (``memfs serve`` gives ``/mcp``), built here with the engine.
        mounts: ``{path prefix: factory}``: ASGI applications serving every path under
            the prefix (``memfs serve`` gives the console at ``/console``, SPEC §12),
            each with its own authentication.
        run_dreams: run the dream job (:class:`memfs.dreams.DreamRunner`) while the app
            is served (its lifespan): it fails the dreams a stopped server left running,
            then runs the pending ones.
        language_dreamer: runs the dreams of models other than ``memfs-consolidate``
            (``memfs serve`` gives :class:`memfs.memory_tool.dreamer.MessagesDreamer`);
            None: they fail with ``model_endpoint_not_configured``.

    Returns:
        A FastAPI application (behind :class:`RequestContextMiddleware`).
    """
    app = FastAPI(
        title="memfs",
        version=__version__,
        description=(
            "Self-hosted memory stores, wire-compatible with the memory-store API of the "
            "anthropic Python SDK (client.beta.memory_stores)."
        ),
        docs_url="/docs",
        redoc_url=None,
        lifespan=_dream_job if run_dreams and not engine.read_only else None,
    )
    app.state.engine = engine
    app.state.insecure_dev = insecure_dev
    app.state.language_dreamer = language_dreamer
    app.state.change_notifier = ChangeNotifier(
        engine.feed.last_seq, watch=engine.watch_changes
    )
    app.include_router(router)
    # Endpoints of other front ends (the MCP server over streamable HTTP at /mcp), each
    # behind its own authentication, which is the API's bearer-token auth.
    for path, make_endpoint in (endpoints or {}).items():
        endpoint = make_endpoint(engine, insecure_dev)
        app.router.routes.append(Route(path, endpoint, methods=["GET", "POST", "DELETE"]))
    for prefix, make_app in (mounts or {}).items():
        app.router.routes.append(Mount(prefix, app=make_app(engine, insecure_dev)))

    # Prometheus metrics, off the API's auth (README "Metrics": scrapers send no
    # credentials; nothing here is content, a path or a secret).
    metrics.SERVER_STATE.provide(lambda: metrics.ServerSnapshot(*engine.gauges()))
    engine.observe_writes(metrics.write_transaction)

    @app.get("/metrics", include_in_schema=False)
    def prometheus_metrics() -> Response:
        """The text exposition of :mod:`memfs.metrics` (run in a worker thread: the
        database gauges are read when scraped)."""
        return Response(metrics.render(), media_type=metrics.CONTENT_TYPE)

    @app.get("/healthz", include_in_schema=False)
    async def healthz() -> JSONResponse:
        """Liveness, without authentication or database: the HTTP stack's floor."""
        return JSONResponse({"status": "ok"})

    app.add_exception_handler(MemfsError, _memfs_error)
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(StarletteHTTPException, _http_error)
    app.add_exception_handler(Exception, _unexpected_error)
    app.openapi = openapi_document(app)  # type: ignore[method-assign]
    # Outermost of the user middleware; the request id it puts in scope["state"] is
    # also seen by Starlette's ServerErrorMiddleware around it (same scope object).
    app.add_middleware(RequestContextMiddleware)
    return app
