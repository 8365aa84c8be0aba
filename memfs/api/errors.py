"""The server's HTTP edge of the error tree: the envelope, built from the one table of
:mod:`memfs.wire.errors`.

Every error response of the API has the envelope of api-contract §2.1::

    {"type": "error",
     "error": {"type": "<error.type>", "message": "...",
               "details": {"error_code": "<MemfsError.code>"},
               # memory_path_conflict_error only:
               "conflicting_memory_id": "mem_…", "conflicting_path": "/…",
               # memory_precondition_failed_error only (memfs extension):
               "actual_content_sha256": "<64 hex>"},
     "request_id": "req_…"}

with the headers ``request-id`` (every response, see :mod:`memfs.api.app`) and
``x-should-retry: false`` on every deterministic 4xx, so that the SDK does not retry a
409 twice (api-contract §2.3). 5xx responses omit it: the SDK may retry those.

The status and ``error.type`` of an error are :func:`memfs.wire.errors.wire_error` of its
class: the table in :mod:`memfs.wire.errors` is the one table, which the HTTP client of
remote mounts reads too, and where the choices the contract leaves open (api-contract
§8) are drawn. A class without a row of its own is sent as its nearest ancestor. Errors
that only exist at the HTTP edge (an unknown route, a method the route does not have, a
request body over :data:`MAX_REQUEST_BODY_BYTES`, a failure we did not foresee) are
subclasses of the domain classes defined here, with a row of their own in
:data:`EDGE_ROWS` where they are sent otherwise than their parent::

    MemfsError
    ├── InvalidInput
    │   ├── RequestTooLarge          body over MAX_REQUEST_BODY_BYTES   → 413
    │   └── MethodNotAllowed         no such method on that route       → 405
    ├── NotFound
    │   └── RouteNotFound            no such route                      → 404
    └── InternalError                an exception memfs did not raise   → 500

A missing scope → 403 ``permission_error`` with ``error_code: api_key_scope_missing``
(the SDK raises ``BetaAPIKeyScopeMissingError``, a ``PermissionDeniedError``).
"""

from __future__ import annotations

import logging
from http import HTTPStatus
from typing import Any

from memfs.core.errors import (
    DatabaseUnreachable,
    InvalidInput,
    MemfsError,
    NotFound,
    PathConflict,
    PreconditionFailed,
    StorageFull,
    StoreBusy,
)
from memfs.wire.errors import WireError, wire_error

__all__ = [
    "EDGE_ROWS",
    "MAX_REQUEST_BODY_BYTES",
    "InternalError",
    "MethodNotAllowed",
    "RequestTooLarge",
    "RouteNotFound",
    "error_body",
    "error_headers",
    "status_and_type",
]

log = logging.getLogger(__name__)

# A request body may hold 102,400 content bytes, which JSON may escape to up to 6 bytes
# each (``\uXXXX``), plus a path and metadata: 1 MiB bounds every valid request.
MAX_REQUEST_BODY_BYTES = 1024 * 1024

# The messages of the retryable 503s: what happened and that nothing changed, without
# the server's paths or hosts (which the server's log has).
_OUTAGE_MESSAGES: dict[type[MemfsError], str] = {
    StoreBusy: "the database is busy with another writer; nothing was changed, try again",
    StorageFull: (
        "disk full: the server's database has no space left; nothing was changed, try "
        "again once space is freed"
    ),
    DatabaseUnreachable: (
        "the server's database can't be reached now; try again (a write cut off during "
        "its commit may have been applied)"
    ),
}


class RequestTooLarge(InvalidInput):
    """Raised when a request body exceeds :data:`MAX_REQUEST_BODY_BYTES`."""

    code = "request_too_large"


class MethodNotAllowed(InvalidInput):
    """Raised when a route exists but not with the request's method."""

    code = "method_not_allowed"


class RouteNotFound(NotFound):
    """Raised when no route matches the request's path."""

    code = "route_not_found"


class InternalError(MemfsError):
    """Stands for an exception memfs did not raise on purpose (logged with its traceback)."""

    code = "internal_error"


# The rows of the classes above that are not sent as their parent is; the others are
# sent by the table of memfs.wire.errors.
EDGE_ROWS: dict[type[MemfsError], WireError] = {
    RequestTooLarge: WireError(HTTPStatus.REQUEST_ENTITY_TOO_LARGE, "invalid_request_error"),
    MethodNotAllowed: WireError(HTTPStatus.METHOD_NOT_ALLOWED, "invalid_request_error"),
}


def status_and_type(exc: MemfsError) -> tuple[HTTPStatus, str]:
    """The HTTP status and ``error.type`` of ``exc``: the row of its most specific class
    that has one, in :data:`EDGE_ROWS` or the table of :mod:`memfs.wire.errors`."""
    wire = wire_error(type(exc), EDGE_ROWS)
    return HTTPStatus(wire.status), wire.type


def error_body(exc: MemfsError, request_id: str | None) -> tuple[HTTPStatus, dict[str, Any]]:
    """The status and JSON envelope (api-contract §2.1) of ``exc``.

    ``memory_path_conflict_error`` carries ``conflicting_memory_id`` and
    ``conflicting_path`` in the error object (api-contract §2.1, SPEC §2 "naming the
    conflicting memory"); ``memory_precondition_failed_error`` carries
    ``actual_content_sha256``, the head's digest at the check, so that a writer can
    tell what it lost to without another request (SPEC §4 remote mounts).
    """
    status, error_type = status_and_type(exc)
    # A 5xx does not leak internals (paths, hosts, tracebacks: in the server log by
    # request_id); a retryable outage says which, in words of its own.
    internal = status >= HTTPStatus.INTERNAL_SERVER_ERROR
    message = exc.message
    if internal:
        message = next(
            (_OUTAGE_MESSAGES[cls] for cls in type(exc).__mro__ if cls in _OUTAGE_MESSAGES),
            "internal server error",
        )
    error: dict[str, Any] = {
        "type": error_type,
        "message": message,
        "details": {"error_code": exc.code},
    }
    if isinstance(exc, PathConflict) and exc.conflicting_memory_id is not None:
        # Left out when the memory in the way is hidden from the caller (SPEC §6).
        error["conflicting_memory_id"] = exc.conflicting_memory_id
        error["conflicting_path"] = exc.conflicting_path
    if isinstance(exc, PreconditionFailed):
        error["actual_content_sha256"] = exc.actual_sha256
    return status, {"type": "error", "error": error, "request_id": request_id}


def error_headers(status: HTTPStatus) -> dict[str, str]:
    """``x-should-retry: false`` for deterministic 4xx (api-contract §2.3), else nothing."""
    if HTTPStatus.BAD_REQUEST <= status < HTTPStatus.INTERNAL_SERVER_ERROR and status not in (
        HTTPStatus.REQUEST_TIMEOUT,
        HTTPStatus.TOO_MANY_REQUESTS,
    ):
        return {"x-should-retry": "false"}
    return {}
