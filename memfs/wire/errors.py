"""How the errors of :mod:`memfs.core.errors` cross HTTP (api-contract §2.1): the one
table from each error class to the status and ``error.type`` it is sent as, and the
error envelope.

Both HTTP edges read the table, and nothing else: the server sends
:func:`wire_error` of the exception's class (``memfs/api/errors.py``), and the remote
client turns a response back into a class with :func:`error_class_for`
(``memfs/remote/client.py``). A class without a row of its own is sent as its nearest
ancestor with one (the most specific class wins), so a class added to the core tree
later is sent as its parent is until it gets a row. The rows (→ status, ``error.type``)::

    MemfsError               500 api_error
    InvalidInput             400 invalid_request_error   (all its subclasses too,
    ContentTooLarge          413 invalid_request_error    but ContentTooLarge)
    InvalidPoint             400 invalid_request_error   (SPEC §10: error_code invalid_point)
    NotFound                 404 not_found_error
    Conflict                 409 conflict_error          (HeadVersionRedaction,
    PathConflict             409 memory_path_conflict_error   NotRestorable, StoreBound,
                                                          RedactedContent)
    PreconditionFailed       409 memory_precondition_failed_error
    StoreArchived, StoreFull 400 invalid_request_error   (permanent refusals; a 409
                                                          would mean "re-read and retry")
    PermissionDenied         403 permission_error
    AuthenticationFailed     401 authentication_error
    TooManyAttempts          429 rate_limit_error        (retry-after is set)
    StoreBusy                503 overloaded_error        (transient: retry-after is set)
    StorageFull              503 overloaded_error        (transient once space is freed)
    DatabaseUnreachable      503 overloaded_error        (transient: the server comes back)
    CorruptedStore           500 api_error

The classes without a row and what they inherit: the subclasses of InvalidInput (400),
of Conflict (409) and of AuthenticationFailed (401); DatabaseUnavailable and its
subclasses, and BackendUnavailable (500 api_error: the server never meant to send
them; a remote mount raises BackendUnavailable itself).

Choices the contract leaves open (api-contract §8), decided once here:

* ``ContentTooLarge`` → **413** ``invalid_request_error`` (SDK ``ContentTooLargeError``);
  the SDK's sync helper treats 400 and 413 alike as a permanent refusal.
* ``StoreFull`` → **400** ``invalid_request_error`` (``error_code: store_full``): a
  permanent refusal, not a state the caller can resolve by re-reading (which a 409 means
  to the SDK sync helper).
* ``StoreArchived`` → **400** ``invalid_request_error`` (api-contract §5.3, §5.6, §8.1).
* ``StoreBusy``, ``StorageFull``, ``DatabaseUnreachable`` → **503**:
  ``ServiceUnavailableError``, which the SDK retries, honouring the ``retry-after``
  header the server adds (api-contract §2.2, §2.3; ``memfs.api.app``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from memfs.core.errors import (
    REGISTRY,
    AuthenticationFailed,
    Conflict,
    ContentTooLarge,
    CorruptedStore,
    DatabaseUnreachable,
    InvalidInput,
    InvalidPoint,
    MemfsError,
    NotFound,
    PathConflict,
    PermissionDenied,
    PreconditionFailed,
    StorageFull,
    StoreArchived,
    StoreBusy,
    StoreFull,
    TooManyAttempts,
)
from memfs.wire.common import WireObject

__all__ = [
    "WIRE_ERRORS",
    "ErrorEnvelope",
    "ErrorObject",
    "WireError",
    "error_class_for",
    "wire_error",
]


@dataclass(frozen=True)
class WireError:
    """How an error class is sent at the HTTP edge (api-contract §2.1).

    Attributes:
        status: the HTTP status code, e.g. 409.
        type: the envelope's ``error.type``, e.g. ``"memory_path_conflict_error"``.
    """

    status: int
    type: str


_API_ERROR = WireError(500, "api_error")
_INVALID_REQUEST = WireError(400, "invalid_request_error")
_OVERLOADED = WireError(503, "overloaded_error")

# The table drawn in the module docstring (tests/remote/test_error_registry.py checks
# that the drawing and the table agree).
WIRE_ERRORS: Mapping[type[MemfsError], WireError] = {
    MemfsError: _API_ERROR,
    InvalidInput: _INVALID_REQUEST,
    ContentTooLarge: WireError(413, "invalid_request_error"),
    # SPEC §10: a bad point of history (``at=``, a snapshot's point, a diff side); its
    # own row so that the remote client maps ``invalid_point`` back by code.
    InvalidPoint: _INVALID_REQUEST,
    NotFound: WireError(404, "not_found_error"),
    Conflict: WireError(409, "conflict_error"),
    PathConflict: WireError(409, "memory_path_conflict_error"),
    PreconditionFailed: WireError(409, "memory_precondition_failed_error"),
    StoreArchived: _INVALID_REQUEST,
    StoreFull: _INVALID_REQUEST,
    PermissionDenied: WireError(403, "permission_error"),
    AuthenticationFailed: WireError(401, "authentication_error"),
    TooManyAttempts: WireError(429, "rate_limit_error"),
    StoreBusy: _OVERLOADED,
    StorageFull: _OVERLOADED,
    DatabaseUnreachable: _OVERLOADED,
    CorruptedStore: _API_ERROR,
}


def wire_error(
    cls: type[MemfsError], edge_rows: Mapping[type[MemfsError], WireError] | None = None
) -> WireError:
    """The status and ``error.type`` ``cls`` is sent as: the row of the nearest class of
    its method resolution order that has one (``cls`` itself first).

    Args:
        cls: a :class:`MemfsError` subclass.
        edge_rows: rows of error classes that exist only at an HTTP edge (the server's
            ``RequestTooLarge``, …), consulted before :data:`WIRE_ERRORS` at each step.
    """
    for klass in cls.__mro__:
        if edge_rows is not None and klass in edge_rows:
            return edge_rows[klass]
        if klass in WIRE_ERRORS:
            return WIRE_ERRORS[klass]
    return _API_ERROR


def error_class_for(status: int, error_type: str | None, code: str | None) -> type[MemfsError]:
    """The class an HTTP error response stands for: the inverse of :func:`wire_error`.

    Args:
        status: the response's HTTP status.
        error_type: its ``error.type``, or None when the body has none.
        code: its ``details.error_code``, or None.

    Returns:
        The class registered under ``code`` (:data:`memfs.core.errors.REGISTRY`); else
        the first class of the tree (pre-order: the most general) sent as ``(status,
        error_type)``; else the first sent as ``error_type`` (a 412
        ``memory_precondition_failed_error`` is a PreconditionFailed); else the first
        sent with ``status``; else :class:`MemfsError`. So a code the registry does not
        hold (a ``PermissionDenied`` whose code says why, e.g. ``read_only_attachment``,
        or an error of the HTTP edge only, e.g. ``route_not_found``) comes back as the
        most general class of its status and type.
    """
    if code in REGISTRY:
        return REGISTRY[code]
    sent = {cls: wire_error(cls) for cls in REGISTRY.values()}
    wanted = WireError(status, error_type or "")
    for cls, wire in sent.items():
        if wire == wanted:
            return cls
    for cls, wire in sent.items():
        if wire.type == error_type:
            return cls
    for cls, wire in sent.items():
        if wire.status == status:
            return cls
    return MemfsError


class ErrorObject(WireObject):
    """api-contract §2.1; ``conflicting_*`` on memory_path_conflict_error only,
    ``actual_content_sha256`` on memory_precondition_failed_error only."""

    type: str
    message: str
    details: dict[str, Any] | None = None
    conflicting_memory_id: str | None = None
    conflicting_path: str | None = None
    actual_content_sha256: str | None = None


class ErrorEnvelope(WireObject):
    """api-contract §2.1."""

    type: Literal["error"]
    error: ErrorObject
    request_id: str | None = None
