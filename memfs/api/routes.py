"""The routes: the 14 endpoints of api-contract §0, the SPEC §2 deletion extensions,
sessions (api-contract §7, SPEC §3), the audit trail, and the three endpoints remote
mounts use (issue 4; wire shapes in :mod:`memfs.remote.client`): the token's own
session, directory rename, and the change feed (a long poll, :mod:`memfs.api.changes`).

Every handler has the same shape: parse the query, then one call into
:func:`_run`, which authenticates the caller and runs one engine operation in a worker
thread (never on the event loop), and serializes the result with :mod:`memfs.wire`.
The scope check comes first inside that call, before the target is resolved, so a
caller without the scope learns nothing about the target (403 before 404).

Every request that may write to a store wakes the long polls parked on it when it ends
(:meth:`ChangeNotifier.notify`), so changes made through this server reach the mounts
watching it at once.

Defaults of ``view`` (api-contract §5): ``full`` for retrieving a memory or a version,
``basic`` everywhere else. With ``view=full`` a page holds at most 20 items: a larger
``limit`` is clamped, not refused (api-contract §3).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Annotated, Any, Literal, TypeVar

import anyio.to_thread
from fastapi import APIRouter, Body, Depends, Query, Request, Security
from fastapi.responses import JSONResponse
from fastapi.security import APIKeyHeader, HTTPBearer

from memfs.api import schemas
from memfs.api.auth import Principal, authenticate, credential_from_headers
from memfs.api.changes import (
    MAX_CHANGES_LIMIT,
    MAX_LONG_POLL_TIMEOUT_S,
    ChangeNotifier,
    change_to_wire,
    run_until_disconnected,
)
from memfs.api.errors import InternalError
from memfs.config import DEFAULT_PAGE_LIMIT, MAX_FULL_VIEW_PAGE_LIMIT, MAX_PAGE_LIMIT
from memfs.errors import InvalidContent, InvalidInput, MemfsError, NotFound, PermissionDenied
from memfs.model import (
    Access,
    Change,
    ChangeKind,
    DeleteMode,
    Memory,
    MemoryPrefix,
    Operation,
    Scope,
)
from memfs.store import Engine, ResourceSpec
from memfs.wire import (
    memory_deleted_to_wire,
    memory_to_wire,
    prefix_to_wire,
    session_to_wire,
    store_deleted_to_wire,
    store_to_wire,
    version_to_wire,
)

__all__ = ["router"]

log = logging.getLogger(__name__)

T = TypeVar("T")

# Declared for /openapi.json; the credential itself is read by credential_from_headers.
_bearer = HTTPBearer(auto_error=False, description="An API key secret or a session token.")
_x_api_key = APIKeyHeader(name="x-api-key", auto_error=False, description="Same as Bearer.")


async def _refuse_nul_in_url(request: Request) -> None:
    """Path and query parameters holding U+0000 are refused with 400 (see
    :class:`memfs.api.schemas._NoNul`; PostgreSQL text can't hold it)."""
    parameters = [*request.path_params.items(), *request.query_params.multi_items()]
    for name, value in parameters:
        if "\x00" in name or "\x00" in value:
            raise InvalidInput(f"parameter {name!r}: {schemas.NUL_MESSAGE}", code="nul_character")


router = APIRouter(
    dependencies=[Security(_bearer), Security(_x_api_key), Depends(_refuse_nul_in_url)]
)

View = Literal["basic", "full"]


def _doc(model: type) -> dict[int | str, dict[str, Any]]:
    return {200: {"model": model}}


async def _run(request: Request, operation: Callable[[Engine, Principal], T]) -> T:
    """Authenticates the request and runs ``operation`` in a worker thread; then, for a
    request other than GET on a store, wakes the long polls parked on that store
    (whether it succeeded or not: a spurious wake-up only costs one read).

    Raises:
        MemfsError: whatever the authentication or the operation raised; any other
            exception is logged and raised as :class:`InternalError`.
    """
    token = credential_from_headers(
        request.headers.get("authorization"), request.headers.get("x-api-key")
    )
    engine: Engine = request.app.state.engine
    insecure_dev: bool = request.app.state.insecure_dev

    def work() -> T:
        principal = authenticate(engine, token, insecure_dev=insecure_dev)
        return operation(engine, principal)

    try:
        return await anyio.to_thread.run_sync(work)
    except MemfsError:
        raise
    except Exception as exc:
        log.exception("request %s failed", getattr(request.state, "request_id", "?"))
        raise InternalError("internal server error") from exc
    finally:
        store_id = request.path_params.get("memory_store_id")
        if request.method != "GET" and store_id is not None:
            _notifier(request).notify(store_id)


def _notifier(request: Request) -> ChangeNotifier:
    notifier: ChangeNotifier = request.app.state.change_notifier
    return notifier


def _json(content: dict[str, Any]) -> JSONResponse:
    return JSONResponse(content)


def _page_limit(limit: int, view: View) -> int:
    return min(limit, MAX_FULL_VIEW_PAGE_LIMIT) if view == "full" else limit


def _utc(value: datetime | None) -> datetime | None:
    """Query datetimes without an offset are taken as UTC (api-contract §1.1)."""
    if value is None or value.tzinfo is not None:
        return value
    return value.replace(tzinfo=UTC)


LimitQuery = Annotated[
    int,
    Query(ge=1, le=MAX_PAGE_LIMIT, description="1 to 100; at most 20 count with view=full."),
]
PageQuery = Annotated[str | None, Query(description="next_page of the previous response.")]
CreatedGte = Annotated[datetime | None, Query(alias="created_at[gte]")]
CreatedLte = Annotated[datetime | None, Query(alias="created_at[lte]")]


# ------------------------------------------------------------------- stores


@router.post("/v1/memory_stores", responses=_doc(schemas.MemoryStoreOut))
async def create_memory_store(request: Request, body: schemas.MemoryStoreCreate) -> JSONResponse:
    """api-contract §5.1."""

    def op(engine: Engine, principal: Principal) -> dict[str, Any]:
        principal.require_unlimited(Scope.WRITE)
        store = engine.create_store(
            body.name, description=body.description or "", metadata=body.metadata or {}
        )
        return store_to_wire(store)

    return _json(await _run(request, op))


@router.get("/v1/memory_stores", responses=_doc(schemas.MemoryStorePage))
async def list_memory_stores(
    request: Request,
    created_at_gte: CreatedGte = None,
    created_at_lte: CreatedLte = None,
    include_archived: bool = False,
    limit: LimitQuery = DEFAULT_PAGE_LIMIT,
    page: PageQuery = None,
) -> JSONResponse:
    """api-contract §5.4: newest first. Keys limited to some stores, and session tokens,
    see only their stores (a page may then hold fewer than ``limit`` items)."""

    def op(engine: Engine, principal: Principal) -> dict[str, Any]:
        if not principal.is_session:
            principal.require(Scope.READ)
        result = engine.list_stores(
            include_archived=include_archived,
            created_gte=_utc(created_at_gte),
            created_lte=_utc(created_at_lte),
            limit=limit,
            cursor=page,
        )
        return {
            "data": [store_to_wire(s) for s in result.items if principal.can_see(s.id)],
            "next_page": result.next_cursor,
        }

    return _json(await _run(request, op))


@router.get("/v1/memory_stores/{memory_store_id}", responses=_doc(schemas.MemoryStoreOut))
async def retrieve_memory_store(request: Request, memory_store_id: str) -> JSONResponse:
    """api-contract §5.2 (archived stores too)."""

    def op(engine: Engine, principal: Principal) -> dict[str, Any]:
        principal.require(Scope.READ, memory_store_id)
        return store_to_wire(engine.get_store(memory_store_id))

    return _json(await _run(request, op))


async def _update_memory_store(
    request: Request, memory_store_id: str, body: schemas.MemoryStoreUpdate
) -> JSONResponse:
    def op(engine: Engine, principal: Principal) -> dict[str, Any]:
        principal.require(Scope.WRITE, memory_store_id, agents=False)
        store = engine.update_store(
            memory_store_id,
            name=body.name,
            description=body.description,
            metadata_patch=body.metadata,
        )
        return store_to_wire(store)

    return _json(await _run(request, op))


@router.post("/v1/memory_stores/{memory_store_id}", responses=_doc(schemas.MemoryStoreOut))
async def update_memory_store(
    request: Request, memory_store_id: str, body: schemas.MemoryStoreUpdate
) -> JSONResponse:
    """api-contract §5.3: a patch; 400 on an archived store."""
    return await _update_memory_store(request, memory_store_id, body)


@router.patch(
    "/v1/memory_stores/{memory_store_id}",
    responses=_doc(schemas.MemoryStoreOut),
    include_in_schema=False,
)
async def patch_memory_store(
    request: Request, memory_store_id: str, body: schemas.MemoryStoreUpdate
) -> JSONResponse:
    """``PATCH`` alias of the update (api-contract §0 notes)."""
    return await _update_memory_store(request, memory_store_id, body)


@router.delete("/v1/memory_stores/{memory_store_id}", responses=_doc(schemas.DeletedObject))
async def delete_memory_store(request: Request, memory_store_id: str) -> JSONResponse:
    """api-contract §5.5: erases the store with every memory and version."""

    def op(engine: Engine, principal: Principal) -> dict[str, Any]:
        principal.require(Scope.HARD_DELETE, memory_store_id, agents=False)
        engine.delete_store(memory_store_id, actor=principal.actor)
        return store_deleted_to_wire(memory_store_id)

    return _json(await _run(request, op))


@router.post("/v1/memory_stores/{memory_store_id}/archive", responses=_doc(schemas.MemoryStoreOut))
async def archive_memory_store(request: Request, memory_store_id: str) -> JSONResponse:
    """api-contract §5.6: one-way; archiving an archived store returns it unchanged."""

    def op(engine: Engine, principal: Principal) -> dict[str, Any]:
        principal.require(Scope.WRITE, memory_store_id, agents=False)
        return store_to_wire(engine.archive_store(memory_store_id, actor=principal.actor))

    return _json(await _run(request, op))


@router.get(
    "/v1/memory_stores/{memory_store_id}/audit_events", responses=_doc(schemas.AuditEventList)
)
async def list_audit_events(
    request: Request, memory_store_id: str, memory_id: str | None = None
) -> JSONResponse:
    """The audit trail of deletions, redactions and restores, newest first (SPEC §2);
    needs the ``admin`` scope. One page holds the whole trail."""

    def op(engine: Engine, principal: Principal) -> dict[str, Any]:
        principal.require(Scope.ADMIN, memory_store_id, agents=False)
        engine.get_store(memory_store_id)
        events = engine.audit_events(memory_store_id, memory_id=memory_id)
        return {"data": events, "next_page": None}

    return _json(await _run(request, op))


# ----------------------------------------------------------------- memories


def _memory_item(item: Memory | MemoryPrefix, *, full: bool) -> dict[str, Any]:
    if isinstance(item, MemoryPrefix):
        return prefix_to_wire(item)
    return memory_to_wire(item, full=full)


@router.post("/v1/memory_stores/{memory_store_id}/memories", responses=_doc(schemas.MemoryOut))
async def create_memory(
    request: Request, memory_store_id: str, body: schemas.MemoryCreate, view: View = "basic"
) -> JSONResponse:
    """api-contract §5.7: never overwrites (409 ``memory_path_conflict_error``);
    ``content: null`` is refused (api-contract §8.2)."""

    def op(engine: Engine, principal: Principal) -> dict[str, Any]:
        principal.require(Scope.WRITE, memory_store_id)
        if body.content is None:
            raise InvalidContent('content must be a string; pass "" to create an empty memory')
        memory = engine.create_memory(
            memory_store_id, body.path, body.content, actor=principal.actor, metadata=body.metadata
        )
        return memory_to_wire(memory, full=view == "full")

    return _json(await _run(request, op))


@router.get("/v1/memory_stores/{memory_store_id}/memories", responses=_doc(schemas.MemoryPage))
async def list_memories(
    request: Request,
    memory_store_id: str,
    path_prefix: Annotated[str, Query(description="Ends with '/'; whole segments.")] = "/",
    depth: Annotated[int, Query(ge=0, description="0 = everything below.")] = 0,
    view: View = "basic",
    limit: LimitQuery = DEFAULT_PAGE_LIMIT,
    page: PageQuery = None,
) -> JSONResponse:
    """api-contract §5.10: path order, deeper entries rolled up into ``memory_prefix``."""
    full = view == "full"

    def op(engine: Engine, principal: Principal) -> dict[str, Any]:
        principal.require(Scope.READ, memory_store_id)
        result = engine.list_memories(
            memory_store_id,
            path_prefix=path_prefix,
            depth=depth,
            limit=_page_limit(limit, view),
            cursor=page,
            with_content=full,
        )
        return {
            "data": [_memory_item(item, full=full) for item in result.items],
            "next_page": result.next_cursor,
        }

    return _json(await _run(request, op))


@router.get(
    "/v1/memory_stores/{memory_store_id}/memories/{memory_id}", responses=_doc(schemas.MemoryOut)
)
async def retrieve_memory(
    request: Request, memory_store_id: str, memory_id: str, view: View = "full"
) -> JSONResponse:
    """api-contract §5.8 (``view`` defaults to ``full`` here)."""
    full = view == "full"

    def op(engine: Engine, principal: Principal) -> dict[str, Any]:
        principal.require(Scope.READ, memory_store_id)
        memory = engine.get_memory(memory_store_id, memory_id, with_content=full)
        return memory_to_wire(memory, full=full)

    return _json(await _run(request, op))


@router.post(
    "/v1/memory_stores/{memory_store_id}/memories/rename_prefix",
    responses=_doc(schemas.MemoryList),
)
async def rename_prefix(
    request: Request, memory_store_id: str, body: schemas.RenamePrefix
) -> JSONResponse:
    """Directory rename (SPEC §4, ``Engine.rename_prefix``): every live memory under
    ``old_prefix`` moves below ``new_prefix`` in one transaction, one ``modified``
    version each, ids kept. Returns the moved memories (``view=basic``) in new-path
    order; ``[]`` when nothing is under ``old_prefix``, so a replayed request is
    harmless. 400 ``invalid_path`` (a prefix, or a resulting path), ``invalid_input``
    (the root, or a move into itself), ``store_archived``; 409
    ``memory_path_conflict_error`` naming a memory in the way (nothing moved).

    Registered before ``POST …/memories/{memory_id}``, which would take
    ``rename_prefix`` for a memory id.
    """

    def op(engine: Engine, principal: Principal) -> dict[str, Any]:
        principal.require(Scope.WRITE, memory_store_id)
        moved = engine.rename_prefix(
            memory_store_id, body.old_prefix, body.new_prefix, actor=principal.actor
        )
        return {"data": [memory_to_wire(m, full=False) for m in moved], "next_page": None}

    return _json(await _run(request, op))


async def _update_memory(
    request: Request,
    memory_store_id: str,
    memory_id: str,
    body: schemas.MemoryUpdate,
    view: View,
) -> JSONResponse:
    def op(engine: Engine, principal: Principal) -> dict[str, Any]:
        principal.require(Scope.WRITE, memory_store_id)
        expected = None
        if body.precondition is not None:
            expected = body.precondition.content_sha256
            if expected is None:
                raise InvalidInput("precondition.content_sha256 is required")
        memory = engine.update_memory(
            memory_store_id,
            memory_id,
            actor=principal.actor,
            content=body.content,
            path=body.path,
            expected_sha256=expected,
            metadata=body.metadata,
            replace=body.replace,
        )
        return memory_to_wire(memory, full=view == "full")

    return _json(await _run(request, op))


@router.post(
    "/v1/memory_stores/{memory_store_id}/memories/{memory_id}", responses=_doc(schemas.MemoryOut)
)
async def update_memory(
    request: Request,
    memory_store_id: str,
    memory_id: str,
    body: schemas.MemoryUpdate,
    view: View = "basic",
) -> JSONResponse:
    """api-contract §5.9: 409 ``memory_precondition_failed_error`` on a stale sha (with
    ``actual_content_sha256``), 409 ``memory_path_conflict_error`` when renaming onto an
    occupied path, unless ``replace: true`` (memfs extension) soft-deletes the memory
    there in the same transaction. A path taken by an ancestor or a descendant is a
    conflict even with ``replace``."""
    return await _update_memory(request, memory_store_id, memory_id, body, view)


@router.patch(
    "/v1/memory_stores/{memory_store_id}/memories/{memory_id}",
    responses=_doc(schemas.MemoryOut),
    include_in_schema=False,
)
async def patch_memory(
    request: Request,
    memory_store_id: str,
    memory_id: str,
    body: schemas.MemoryUpdate,
    view: View = "basic",
) -> JSONResponse:
    """``PATCH`` alias of the update ([secondary] skills reference, api-contract §0)."""
    return await _update_memory(request, memory_store_id, memory_id, body, view)


_DELETE_SCOPES = {
    DeleteMode.SOFT_DELETE: (Scope.DELETE, True),
    DeleteMode.REDACT: (Scope.DELETE, False),  # agents do not redact (api-contract §4.6)
    DeleteMode.HARD_DELETE: (Scope.HARD_DELETE, False),
}


async def _delete_memory(
    request: Request,
    memory_store_id: str,
    memory_id: str,
    *,
    mode: DeleteMode,
    reason: str | None,
    expected_sha256: str | None,
    replacement: str | None,
) -> JSONResponse:
    scope, agents = _DELETE_SCOPES[mode]

    def op(engine: Engine, principal: Principal) -> dict[str, Any]:
        principal.require(scope, memory_store_id, agents=agents)
        if replacement is not None and mode is not DeleteMode.REDACT:
            raise InvalidInput("replacement_content is only allowed with mode=redact")
        engine.delete_memory(
            memory_store_id,
            memory_id,
            actor=principal.actor,
            expected_sha256=expected_sha256,
            mode=mode,
            reason=reason,
            **({"replacement": replacement} if replacement is not None else {}),
        )
        return {**memory_deleted_to_wire(memory_id), "mode": mode.value}

    return _json(await _run(request, op))


@router.delete(
    "/v1/memory_stores/{memory_store_id}/memories/{memory_id}",
    responses=_doc(schemas.DeletedObject),
)
async def delete_memory(
    request: Request,
    memory_store_id: str,
    memory_id: str,
    expected_content_sha256: Annotated[str | None, Query(pattern=schemas.SHA256_PATTERN)] = None,
    mode: Literal["soft_delete", "redact", "hard_delete"] = "soft_delete",
    reason: Annotated[str | None, Query(description="Recorded in the audit trail.")] = None,
    replacement_content: Annotated[str | None, Query(description="mode=redact only.")] = None,
) -> JSONResponse:
    """api-contract §5.11, with the SPEC §2 modes: ``soft_delete`` (default, restorable),
    ``redact`` (content replaced, history redacted), ``hard_delete`` (erased; needs
    ``memory:hard_delete``)."""
    return await _delete_memory(
        request,
        memory_store_id,
        memory_id,
        mode=DeleteMode(mode),
        reason=reason,
        expected_sha256=expected_content_sha256,
        replacement=replacement_content,
    )


_FORGET_FIELDS = tuple(schemas.MemoryForget.model_fields)


def _forget_options(
    request: Request, body: schemas.MemoryForget | None, query: dict[str, str | None]
) -> dict[str, Any]:
    """The options of a forget: body fields and (already validated) query parameters.

    Returns:
        Every field of :class:`schemas.MemoryForget`, None where not given.

    Raises:
        InvalidInput: an unknown query parameter, or a field given in both places with
            different values.
    """
    unknown = sorted(set(request.query_params) - set(_FORGET_FIELDS))
    if unknown:
        raise InvalidInput(
            f"unknown query parameter {unknown[0]!r}; forget takes {', '.join(_FORGET_FIELDS)}"
        )
    given = body.model_dump(exclude_none=True) if body is not None else {}
    for name, value in query.items():
        if value is None:
            continue
        if name in given and given[name] != value:
            raise InvalidInput(f"{name} is given in the body and the query with different values")
        given[name] = value
    return {name: given.get(name) for name in _FORGET_FIELDS}


@router.post(
    "/v1/memory_stores/{memory_store_id}/memories/{memory_id}/forget",
    responses=_doc(schemas.DeletedObject),
)
async def forget_memory(
    request: Request,
    memory_store_id: str,
    memory_id: str,
    body: Annotated[schemas.MemoryForget | None, Body()] = None,
    mode: Annotated[
        Literal["soft_delete", "redact", "hard_delete"] | None,
        Query(description="As the body's mode; default redact."),
    ] = None,
    reason: Annotated[str | None, Query(description="Recorded in the audit trail.")] = None,
    replacement_content: Annotated[str | None, Query(description="mode=redact only.")] = None,
    expected_content_sha256: Annotated[str | None, Query(pattern=schemas.SHA256_PATTERN)] = None,
) -> JSONResponse:
    """Forget a memory: the user wants it gone (SPEC §2 deletion modes).

    Default mode ``redact``: the content is replaced by ``[REDACTED]`` (or
    ``replacement_content``), metadata cleared and every earlier version redacted; it is
    not restorable. ``mode=soft_delete`` (restorable) and ``mode=hard_delete`` (needs
    ``memory:hard_delete``) are the other modes. Options come in a JSON body or as query
    parameters (as on ``DELETE``), ``reason`` is recorded in the audit trail; unknown
    fields or parameters are 400. Redact and hard delete need an API key (a session
    token may only soft-delete, api-contract §4.6).
    """
    query = {
        "mode": mode,
        "reason": reason,
        "replacement_content": replacement_content,
        "expected_content_sha256": expected_content_sha256,
    }
    options = _forget_options(request, body, query)
    return await _delete_memory(
        request,
        memory_store_id,
        memory_id,
        mode=DeleteMode(options["mode"] or DeleteMode.REDACT.value),
        reason=options["reason"],
        expected_sha256=options["expected_content_sha256"],
        replacement=options["replacement_content"],
    )


@router.post(
    "/v1/memory_stores/{memory_store_id}/memories/{memory_id}/restore",
    responses=_doc(schemas.MemoryOut),
)
async def restore_memory(
    request: Request,
    memory_store_id: str,
    memory_id: str,
    body: Annotated[schemas.MemoryRestore | None, Body()] = None,
    view: View = "basic",
) -> JSONResponse:
    """Brings a soft-deleted memory back with its id, path and content (SPEC §2); 409
    ``conflict_error`` when it is live, redacted, or its path is taken."""
    reason = body.reason if body is not None else None

    def op(engine: Engine, principal: Principal) -> dict[str, Any]:
        principal.require(Scope.WRITE, memory_store_id)
        memory = engine.restore_memory(
            memory_store_id, memory_id, actor=principal.actor, reason=reason
        )
        return memory_to_wire(memory, full=view == "full")

    return _json(await _run(request, op))


# ----------------------------------------------------------------- versions


@router.get(
    "/v1/memory_stores/{memory_store_id}/memory_versions",
    responses=_doc(schemas.MemoryVersionPage),
)
async def list_memory_versions(
    request: Request,
    memory_store_id: str,
    memory_id: str | None = None,
    operation: Literal["created", "modified", "deleted"] | None = None,
    session_id: str | None = None,
    api_key_id: str | None = None,
    service_account_id: str | None = None,
    created_at_gte: CreatedGte = None,
    created_at_lte: CreatedLte = None,
    view: View = "basic",
    limit: LimitQuery = DEFAULT_PAGE_LIMIT,
    page: PageQuery = None,
) -> JSONResponse:
    """api-contract §5.12: newest first, filtered by memory, operation, actor and time."""
    full = view == "full"

    def op(engine: Engine, principal: Principal) -> dict[str, Any]:
        principal.require(Scope.READ, memory_store_id)
        result = engine.list_versions(
            memory_store_id,
            memory_id=memory_id,
            operation=Operation(operation) if operation else None,
            session_id=session_id,
            api_key_id=api_key_id,
            service_account_id=service_account_id,
            created_gte=_utc(created_at_gte),
            created_lte=_utc(created_at_lte),
            limit=_page_limit(limit, view),
            cursor=page,
            with_content=full,
        )
        return {
            "data": [version_to_wire(v, full=full) for v in result.items],
            "next_page": result.next_cursor,
        }

    return _json(await _run(request, op))


@router.get(
    "/v1/memory_stores/{memory_store_id}/memory_versions/{memory_version_id}",
    responses=_doc(schemas.MemoryVersionOut),
)
async def retrieve_memory_version(
    request: Request, memory_store_id: str, memory_version_id: str, view: View = "full"
) -> JSONResponse:
    """api-contract §5.13 (``view`` defaults to ``full``; redacted versions succeed)."""
    full = view == "full"

    def op(engine: Engine, principal: Principal) -> dict[str, Any]:
        principal.require(Scope.READ, memory_store_id)
        version = engine.get_version(memory_store_id, memory_version_id, with_content=full)
        return version_to_wire(version, full=full)

    return _json(await _run(request, op))


@router.post(
    "/v1/memory_stores/{memory_store_id}/memory_versions/{memory_version_id}/redact",
    responses=_doc(schemas.MemoryVersionOut),
)
async def redact_memory_version(
    request: Request, memory_store_id: str, memory_version_id: str
) -> JSONResponse:
    """api-contract §5.14; the head version of a live memory is refused with 409
    ``conflict_error`` (SPEC §2 redaction)."""

    def op(engine: Engine, principal: Principal) -> dict[str, Any]:
        principal.require(Scope.DELETE, memory_store_id, agents=False)
        version = engine.redact_version(memory_store_id, memory_version_id, actor=principal.actor)
        return version_to_wire(version, full=True)

    return _json(await _run(request, op))


# -------------------------------------------------------------- change feed

# SQLite integers are signed 64-bit; a larger ``after`` could not even be compared.
MAX_SEQ = 2**63 - 1


def _read_changes(
    engine: Engine, store_id: str, after: int, limit: int
) -> tuple[list[Change], int, bool]:
    """The changes after ``after`` (at most ``limit``), the store's newest seq, and
    whether the store still exists.

    A deleted store answers until its final ``store_deleted`` entry has been read; its
    newest seq is then that entry's.

    Raises:
        NotFound: an unknown store, or a deleted one whose feed was read to the end.
    """
    # Changes first: the newest seq read after them is never below the last one returned.
    changes = engine.changes_since(store_id, after, limit=limit)
    try:
        return changes, engine.last_change_seq(store_id), True
    except NotFound:
        pass
    # Gone: read again (it may have been deleted between the two reads), then find the
    # final entry, reading on past a truncated batch.
    changes = engine.changes_since(store_id, after, limit=limit)
    if not changes:
        raise NotFound(f"memory store {store_id!r} not found")
    final = changes[-1]
    while final.kind is not ChangeKind.STORE_DELETED:
        more = engine.changes_since(store_id, final.seq, limit=MAX_CHANGES_LIMIT)
        if not more:
            break
        final = more[-1]
    return changes, final.seq, False


@router.get("/v1/memory_stores/{memory_store_id}/changes", responses=_doc(schemas.ChangePage))
async def list_changes(
    request: Request,
    memory_store_id: str,
    after: Annotated[
        int, Query(ge=0, le=MAX_SEQ, description="The last seq the caller has seen.")
    ] = 0,
    timeout_s: Annotated[
        float,
        Query(
            ge=0,
            le=MAX_LONG_POLL_TIMEOUT_S,
            allow_inf_nan=False,
            description="Seconds to wait for a change when there is none yet (0 to 30).",
        ),
    ] = 0,
    limit: Annotated[int, Query(ge=1, le=MAX_CHANGES_LIMIT)] = MAX_CHANGES_LIMIT,
) -> JSONResponse:
    """The store's change feed, a long poll (issue 4; wire shape in
    :mod:`memfs.remote.client`): changes with ``seq > after``, oldest first, at once if
    there are any; else it waits up to ``timeout_s`` for one, and answers ``data: []``
    if none came. It never waits when ``after > last_seq`` (the feed was reset: the
    caller must resynchronize) or when the store is deleted. A deleted store answers
    until its ``store_deleted`` entry has been read, then 404. Readable with
    ``memory:read``, or by a session the store is attached to."""

    def read(engine: Engine, principal: Principal) -> tuple[list[dict[str, Any]], int, bool]:
        principal.require(Scope.READ, memory_store_id)
        changes, last_seq, alive = _read_changes(engine, memory_store_id, after, limit)
        return [change_to_wire(c) for c in changes], last_seq, alive

    data, last_seq, alive = await _run(request, read)
    if not data and alive and timeout_s > 0 and after <= last_seq:
        notifier = _notifier(request)

        async def wait() -> None:
            await notifier.wait(memory_store_id, after, timeout_s)

        if await run_until_disconnected(request.receive, wait):
            data, last_seq, _ = await _run(request, read)
    return _json({"data": data, "last_seq": last_seq})


# ----------------------------------------------------------------- sessions


@router.post("/v1/sessions", responses=_doc(schemas.SessionOut))
async def create_session(request: Request, body: schemas.SessionCreate) -> JSONResponse:
    """Attaches 1–8 stores to a new session (api-contract §7, SPEC §3) and returns it
    with its ``token``, shown only here. The caller needs ``memory:write`` on each
    ``read_write`` store and ``memory:read`` on each ``read_only`` one."""
    specs = [
        ResourceSpec(
            r.memory_store_id,
            Access(r.access) if r.access else Access.READ_WRITE,
            r.instructions,
        )
        for r in body.resources
    ]

    def op(engine: Engine, principal: Principal) -> dict[str, Any]:
        for spec in specs:
            scope = Scope.WRITE if spec.access is Access.READ_WRITE else Scope.READ
            principal.require(scope, spec.memory_store_id, agents=False)
        session, token = engine.create_session(specs, title=body.title)
        return {**session_to_wire(session), "token": token}

    return _json(await _run(request, op))


@router.get("/v1/sessions/current", responses=_doc(schemas.SessionOut))
async def retrieve_current_session(request: Request) -> JSONResponse:
    """The session of the bearer session token, without its token (what a remote mount
    asks first: its stores, their access and mount paths). An API key gets 403
    ``session_not_allowed``: it has no session. Registered before
    ``GET /v1/sessions/{session_id}``, which would take ``current`` for an id."""

    def op(engine: Engine, principal: Principal) -> dict[str, Any]:
        if principal.session is None:
            raise PermissionDenied(
                "only a session token has a current session; this credential is an API key",
                code="session_not_allowed",
            )
        return session_to_wire(principal.session)

    return _json(await _run(request, op))


@router.get("/v1/sessions/{session_id}", responses=_doc(schemas.SessionOut))
async def retrieve_session(request: Request, session_id: str) -> JSONResponse:
    """A session without its token: readable by itself, or by a key that may read every
    store attached to it."""

    def op(engine: Engine, principal: Principal) -> dict[str, Any]:
        if principal.session is not None and principal.session.id == session_id:
            return session_to_wire(principal.session)
        if principal.is_session:
            principal.require(Scope.READ, None, agents=False)
        principal.require(Scope.READ)
        session = engine.get_session(session_id)
        for resource in session.resources:
            principal.require(Scope.READ, resource.memory_store_id)
        return session_to_wire(session)

    return _json(await _run(request, op))
