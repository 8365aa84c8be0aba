"""What every route module shares: the one way a handler runs, and the query types.

Authentication comes first (SPEC §3): the first dependency of every route,
:func:`authenticated`, resolves the credential before FastAPI validates the path, the
query or the body, so a request without a valid credential gets 401 and learns nothing
about the shapes the server accepts. (A body that is not JSON at all is parsed before
any dependency runs; :func:`memfs.api.app` authenticates in its validation error
handler for that case.)

Every handler has the same shape: parse the query, then one call into :func:`run`,
which runs one engine operation in a worker thread (never on the event loop) as the
authenticated caller; the result is serialized with :mod:`memfs.wire`. The scope check
comes first inside that call, before the target is resolved, so a caller without the
scope learns nothing about the target (403 before 404).

Every request that may write to a store wakes the long polls parked on it when it ends
(:meth:`ChangeNotifier.notify`), so changes made through this server reach the mounts
watching it at once.

Defaults of ``view`` (api-contract §5): ``full`` for retrieving a memory or a version,
``basic`` everywhere else. With ``view=full`` a page holds at most 20 items: a larger
``limit`` is clamped, not refused (api-contract §3).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from datetime import UTC, datetime
from http import HTTPStatus
from typing import Annotated, Any, Literal, TypeVar

import anyio.to_thread
from fastapi import APIRouter, Depends, Query, Request, Security
from fastapi.params import Depends as DependsParam
from fastapi.responses import JSONResponse
from fastapi.security import APIKeyHeader, HTTPBearer
from pydantic import BeforeValidator
from starlette.exceptions import HTTPException as StarletteHTTPException

from memfs.api.auth import Principal, authenticate, credential_from_headers
from memfs.api.changes import ChangeNotifier
from memfs.api.errors import InternalError
from memfs.core.config import MAX_FULL_VIEW_PAGE_LIMIT, MAX_PAGE_LIMIT
from memfs.core.errors import DatabaseUnreachable, InvalidInput, MemfsError, NotFound
from memfs.core.model import Scope
from memfs.store import Engine
from memfs.wire.common import NUL_MESSAGE, RECORD_NAME_PATTERN, RecordTypeName

__all__ = [
    "ROUTER_DEPENDENCIES",
    "AtQuery",
    "refuse_other_methods",
    "authenticate_request",
    "CreatedGte",
    "CreatedLte",
    "LimitQuery",
    "PageQuery",
    "View",
    "doc",
    "json_response",
    "notifier",
    "page_limit",
    "run",
    "store_of_memory",
    "utc",
]

log = logging.getLogger(__name__)

T = TypeVar("T")

# RFC 9110 §9.2.1: methods that only read; run again after a lost connection.
_SAFE_METHODS = frozenset({"GET", "HEAD"})

# Declared for /openapi.json; the credential itself is read by credential_from_headers.
_bearer = HTTPBearer(auto_error=False, description="An API key secret or a session token.")
_x_api_key = APIKeyHeader(name="x-api-key", auto_error=False, description="Same as Bearer.")


async def authenticate_request(request: Request) -> Principal:
    """The caller of ``request``, authenticated in a worker thread and kept in
    ``request.state.principal`` for :func:`run`.

    A lost database connection is tried once more, as any read (see :func:`run`).

    Raises:
        AuthenticationFailed: no credential, an unknown, revoked or expired one, or an
            ``Authorization`` header that is not ``Bearer``.
        DatabaseUnreachable: the database was away twice.
    """
    token = credential_from_headers(
        request.headers.get("authorization"), request.headers.get("x-api-key")
    )
    engine: Engine = request.app.state.engine
    insecure_dev: bool = request.app.state.insecure_dev

    def work() -> Principal:
        return authenticate(engine, token, insecure_dev=insecure_dev)

    try:
        principal = await anyio.to_thread.run_sync(work)
    except DatabaseUnreachable:
        _log_once_more(request)
        principal = await anyio.to_thread.run_sync(work)
    request.state.principal = principal
    return principal


def _log_once_more(request: Request) -> None:
    log.info(
        "request %s: the database connection was lost; running it once more",
        getattr(request.state, "request_id", "?"),
    )


async def _authenticated(request: Request) -> None:
    await authenticate_request(request)


async def _refuse_nul_in_url(request: Request) -> None:
    """Path and query parameters holding U+0000 are refused with 400 (see
    :class:`memfs.wire.common.NoNul`; PostgreSQL text can't hold it)."""
    parameters = [*request.path_params.items(), *request.query_params.multi_items()]
    for name, value in parameters:
        if "\x00" in name or "\x00" in value:
            raise InvalidInput(f"parameter {name!r}: {NUL_MESSAGE}", code="nul_character")


# The dependencies of every route (memfs.api.routes builds the one router with them),
# in this order: authentication before anything looks at the request (SPEC §3).
ROUTER_DEPENDENCIES: list[DependsParam] = [
    Depends(_authenticated),
    Security(_bearer),
    Security(_x_api_key),
    Depends(_refuse_nul_in_url),
]

View = Literal["basic", "full"]


def refuse_other_methods(router: APIRouter, path: str, methods: list[str]) -> None:
    """Registers ``path`` with ``methods`` answering 405, ahead of a parameterized path
    that would otherwise take it (``…/memories/rename_prefix`` for a memory id): a
    method the literal path does not have is a 405 with ``Allow``, not a 404 about an
    id nobody meant. Hidden from /openapi.json, and from ``Allow``."""

    async def method_not_allowed() -> None:
        raise StarletteHTTPException(HTTPStatus.METHOD_NOT_ALLOWED)

    router.add_api_route(path, method_not_allowed, methods=methods, include_in_schema=False)


def doc(model: type) -> dict[int | str, dict[str, Any]]:
    """The ``responses`` of a route answering ``model`` (for /openapi.json)."""
    return {200: {"model": model}}


async def run(
    request: Request,
    operation: Callable[[Engine, Principal], T],
    *,
    reauthenticate: bool = False,
    repeatable: bool = False,
) -> T:
    """Runs ``operation`` in a worker thread as the caller :func:`authenticate_request`
    found; then, for a request other than GET on a store, wakes the long polls parked
    on that store (whether it succeeded or not: a spurious wake-up only costs one read).

    When the database connection was lost (DatabaseUnreachable: a PostgreSQL restart
    drops every pooled connection, and the pool finds out only on use) the operation
    runs once more where that is safe: a GET or HEAD, or a write the route marks
    ``repeatable`` because it carries its precondition (an update's digest the head must
    have; a create's path that must be free). If the lost connection had committed that
    write, the second run finds it done and answers 409 (an update's
    ``actual_content_sha256`` equal to the digest written; a create's path conflict
    naming the memory made), never a second version. Anything else gets the 503 and
    retries itself.

    Args:
        reauthenticate: check the credential again first (a long poll's second read,
            which may come 30 s later: a token revoked meanwhile gets 401).
        repeatable: a write that may run twice (see above).

    Raises:
        MemfsError: whatever the authentication or the operation raised; any other
            exception is logged and raised as :class:`InternalError`.
    """
    principal: Principal | None = getattr(request.state, "principal", None)
    if principal is None or reauthenticate:
        principal = await authenticate_request(request)
    engine: Engine = request.app.state.engine

    def work() -> T:
        assert principal is not None
        return operation(engine, principal)

    try:
        try:
            return await anyio.to_thread.run_sync(work)
        except DatabaseUnreachable:
            if not (repeatable or request.method in _SAFE_METHODS):
                raise
            _log_once_more(request)
            return await anyio.to_thread.run_sync(work)
    except MemfsError:
        raise
    except Exception as exc:
        log.exception("request %s failed", getattr(request.state, "request_id", "?"))
        raise InternalError("internal server error") from exc
    finally:
        store_id = request.path_params.get("memory_store_id") or getattr(
            request.state, "memory_store_id", None
        )
        if request.method != "GET" and store_id is not None:
            notifier(request).notify(store_id)


def store_of_memory(
    request: Request,
    engine: Engine,
    principal: Principal,
    memory_id: str,
    scope: Scope,
    *,
    agents: bool = True,
) -> str:
    """The store of memory ``memory_id`` for the store-less routes of seed 004
    (``/v1/memories/{memory_id}…``), checked as :meth:`Principal.require` checks the
    store-scoped ones; kept in ``request.state`` so :func:`run` wakes that store's long
    polls. Runs in the worker thread of :func:`run`.

    The scope comes first (403 before anything about the target, as everywhere); a
    memory in a store the caller can't reach is the 404 of an unknown memory id, so
    neither the memory nor its store is revealed (SPEC §3).

    Raises:
        PermissionDenied: the caller lacks ``scope`` (or is a session and ``agents`` is
            False, or the memory's store is attached read-only to it).
        NotFound: no memory ``memory_id`` the caller can reach.
    """
    if principal.session is None or not agents:
        principal.require(scope, None, agents=agents)
    store_id = engine.memories.store_id_of(memory_id)
    try:
        principal.require(scope, store_id, agents=agents)
    except NotFound:
        raise NotFound(f"memory {memory_id!r} not found") from None
    request.state.memory_store_id = store_id
    return store_id


def notifier(request: Request) -> ChangeNotifier:
    """The application's :class:`ChangeNotifier` (long polls of the change feed)."""
    change_notifier: ChangeNotifier = request.app.state.change_notifier
    return change_notifier


def json_response(content: dict[str, Any]) -> JSONResponse:
    return JSONResponse(content)


def page_limit(limit: int, view: View) -> int:
    """``limit`` clamped to 20 with ``view=full`` (api-contract §3)."""
    return min(limit, MAX_FULL_VIEW_PAGE_LIMIT) if view == "full" else limit


def utc(value: datetime | None) -> datetime | None:
    """Query datetimes without an offset are taken as UTC (api-contract §1.1)."""
    if value is None or value.tzinfo is not None:
        return value
    return value.replace(tzinfo=UTC)


def _no_cursor_if_empty(value: object) -> object:
    """``page=`` (empty) is the first page, as if ``page`` were not given."""
    return None if value == "" else value


# A date, then a time: what RFC 3339 starts with. Pydantic alone would also take a
# number of seconds since 1970 ("0.5"), which /openapi.json does not promise.
_DATE_TIME_START = re.compile(r"\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}")


def _rfc3339(value: object) -> object:
    """Refuses a query datetime that is not RFC 3339 (an offset may be left out: UTC,
    api-contract §1.1)."""
    if isinstance(value, str) and not _DATE_TIME_START.match(value):
        raise ValueError("must be an RFC 3339 date-time, e.g. 2026-01-31T12:00:00Z")
    return value


LimitQuery = Annotated[
    int,
    Query(ge=1, le=MAX_PAGE_LIMIT, description="1 to 100; at most 20 count with view=full."),
]
PageQuery = Annotated[
    str | None,
    BeforeValidator(_no_cursor_if_empty),
    Query(description="next_page of the previous response; empty for the first page."),
]
# memfs extension (SPEC §6, §7): the record filters of memory listings and searches.
RecordTypeQuery = Annotated[
    RecordTypeName | None,
    Query(description="memfs extension (SPEC §6): only records of this type."),
]
RecordTagQuery = Annotated[
    str | None,
    Query(
        min_length=1,
        max_length=64,
        pattern=RECORD_NAME_PATTERN,
        description="memfs extension (SPEC §6): only records with this tag.",
    ),
]
MinImportanceQuery = Annotated[
    float | None,
    Query(
        ge=0,
        le=1,
        description="memfs extension (SPEC §6): only records of at least this importance.",
    ),
]
CreatedGte = Annotated[datetime | None, BeforeValidator(_rfc3339), Query(alias="created_at[gte]")]
CreatedLte = Annotated[datetime | None, BeforeValidator(_rfc3339), Query(alias="created_at[lte]")]
# memfs extension (SPEC §10): read a store as it was. One syntax, parsed by the engine
# (memfs.core.points): a bad point is 400 invalid_point, naming it.
AtQuery = Annotated[
    str | None,
    Query(
        min_length=1,
        max_length=1024,
        description="memfs extension (SPEC §10): read the store as it was at this point: "
        "now, an RFC 3339 time, a snapshot name or snap_ id, or a memver_ id. A bad point is 400 "
        "invalid_point; a time in the future is refused; a time before the store "
        "existed is an empty store.",
    ),
]
