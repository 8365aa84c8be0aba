"""Memories of one store: create, list, retrieve, update (``POST`` and its ``PATCH``
alias), delete (api-contract §5.7–5.11), with the SPEC §2 deletion modes, ``forget``
and ``restore``, and the directory rename of remote mounts (``rename_prefix``, SPEC §4).
The delete, forget and restore requests are shared with the store-less routes of
seed 004 (:mod:`memfs.api.routes.by_memory`).

Registration order matters: ``POST …/memories/rename_prefix`` comes before
``POST …/memories/{memory_id}``, which would take ``rename_prefix`` for an id.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Body, Query, Request
from fastapi.responses import JSONResponse

from memfs.api.auth import Principal
from memfs.api.routes._common import (
    AtQuery,
    LimitQuery,
    MinImportanceQuery,
    PageQuery,
    RecordTagQuery,
    RecordTypeQuery,
    View,
    doc,
    json_response,
    page_limit,
    refuse_other_methods,
    run,
    store_of_memory,
)
from memfs.core.config import DEFAULT_PAGE_LIMIT
from memfs.core.errors import InvalidContent, InvalidInput
from memfs.core.model import DeleteMode, Memory, MemoryPrefix, MemoryStatus, Scope
from memfs.core.records import RecordFilter, record_to_wire
from memfs.home import scrub_erased_paths
from memfs.store import Caller, Engine
from memfs.wire import memory_deleted_to_wire, memory_to_wire, prefix_to_wire
from memfs.wire.common import (
    LISTING_PREFIX_PATTERN,
    RECORD_NAME_PATTERN,
    SHA256_PATTERN,
    DeletedObject,
)
from memfs.wire.memories import (
    MemoryCreate,
    MemoryForget,
    MemoryList,
    MemoryOut,
    MemoryPage,
    MemoryRestore,
    MemoryUpdate,
    RenamePrefix,
)

__all__ = [
    "DeleteModeQuery",
    "ExpectedSha256Query",
    "ForgetModeQuery",
    "ReasonQuery",
    "ReplacementQuery",
    "delete_memory_request",
    "forget_memory_request",
    "restore_memory_request",
    "router",
]

router = APIRouter()
# First: the {memory_id} routes below would take rename_prefix for an id.
refuse_other_methods(
    router, "/v1/memory_stores/{memory_store_id}/memories/rename_prefix", ["GET", "PATCH", "DELETE"]
)


def _memory_item(item: Memory | MemoryPrefix, *, full: bool) -> dict[str, Any]:
    if isinstance(item, MemoryPrefix):
        return prefix_to_wire(item)
    return memory_to_wire(item, full=full)


def _with_records(caller: Caller, items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Adds the ``record`` object (SPEC §6, an extension the SDK ignores) to the wire
    memories of ``items`` that are records, as ``caller`` may see them: one index read
    for the whole page."""
    ids = [item["id"] for item in items if item.get("type") == "memory"]
    found = caller.records.get(ids) if ids else {}
    for item in items:
        record = found.get(item.get("id", ""))
        if record is not None:
            item["record"] = record_to_wire(record)
    return items


def _memory_out(caller: Caller, memory: Memory, *, full: bool) -> dict[str, Any]:
    """One memory on the wire, with its ``record`` object when it is a record (as
    ``caller`` may see it)."""
    return _with_records(caller, [memory_to_wire(memory, full=full)])[0]


@router.post("/v1/memory_stores/{memory_store_id}/memories", responses=doc(MemoryOut))
async def create_memory(
    request: Request, memory_store_id: str, body: MemoryCreate, view: View = "basic"
) -> JSONResponse:
    """api-contract §5.7: never overwrites (409 ``memory_path_conflict_error``);
    ``content: null`` is refused (api-contract §8.2)."""

    def op(engine: Engine, principal: Principal) -> dict[str, Any]:
        principal.require(Scope.WRITE, memory_store_id)
        if body.content is None:
            raise InvalidContent('content must be a string; pass "" to create an empty memory')
        # The record header the write parsed comes back with it: no second read.
        memory, record = principal.caller(engine).memories.create_with_record(
            memory_store_id,
            body.path,
            body.content,
            metadata=body.metadata,
        )
        out = memory_to_wire(memory, full=view == "full")
        if record is not None:
            out["record"] = record_to_wire(record)
        return out

    # Its precondition is the path being free: run twice, it can't make two memories.
    return json_response(await run(request, op, repeatable=True))


@router.get("/v1/memory_stores/{memory_store_id}/memories", responses=doc(MemoryPage))
async def list_memories(
    request: Request,
    memory_store_id: str,
    path_prefix: Annotated[
        str,
        Query(
            description="'/' or a path followed by '/'; whole segments.",
            json_schema_extra={"pattern": LISTING_PREFIX_PATTERN},
        ),
    ] = "/",
    depth: Annotated[
        int,
        Query(
            ge=0,
            le=1,
            description="0 (default) lists the whole subtree, 1 only the direct children; "
            "any other value is a 400 (seed 003).",
        ),
    ] = 0,
    view: View = "basic",
    limit: LimitQuery = DEFAULT_PAGE_LIMIT,
    page: PageQuery = None,
    record_type: RecordTypeQuery = None,
    tag: RecordTagQuery = None,
    min_importance: MinImportanceQuery = None,
    user_id: Annotated[
        str | None,
        Query(
            min_length=1,
            max_length=128,
            pattern=RECORD_NAME_PATTERN,
            description="memfs extension (SPEC §6): only records of this user_id.",
        ),
    ] = None,
    include_deleted: Annotated[
        bool,
        Query(
            description="memfs extension (seed 004): list the soft-deleted (restorable) "
            "memories too, with status deleted and no content; depth must be 0."
        ),
    ] = False,
    status: Annotated[
        Literal["active", "deleted"] | None,
        Query(
            description="memfs extension (seed 004): only live (active, the default) or "
            "only soft-deleted (deleted) memories; depth must be 0 for deleted."
        ),
    ] = None,
    at: AtQuery = None,
) -> JSONResponse:
    """api-contract §5.10: path order, deeper entries rolled up into ``memory_prefix``.
    Any of ``record_type``, ``tag``, ``min_importance``, ``user_id`` (memfs extension,
    SPEC §6 curation) keeps only the records matching all of them. With
    ``include_deleted=true`` or ``status=deleted`` (seed 004) soft-deleted memories are
    listed too (or only), in path then id order, so an admin finds what to restore.
    With ``at`` (memfs extension, SPEC §10) the store as it was at that point: each
    memory with its version then (``metadata`` ``{}``: not versioned; no ``record``
    objects, which describe the present); no record filters or deleted memories."""
    full = view == "full"
    wanted = _listing_status(include_deleted, status)

    def op(engine: Engine, principal: Principal) -> dict[str, Any]:
        principal.require(Scope.READ, memory_store_id)
        record_filter = RecordFilter.of(
            record_type=record_type, tag=tag, min_importance=min_importance, user_id=user_id
        )
        caller = principal.caller(engine)
        if at is not None:
            if wanted is not MemoryStatus.ACTIVE or not record_filter.empty:
                raise InvalidInput(
                    "at lists the memories of a point: no deleted memories, no record filters"
                )
            past = caller.history.list(
                memory_store_id,
                at,
                path_prefix=path_prefix,
                depth=depth,
                limit=page_limit(limit, view),
                cursor=page,
                with_content=full,
            )
            return {
                "data": [_memory_item(item, full=full) for item in past.items],
                "next_page": past.next_cursor,
            }
        result = caller.memories.list(
            memory_store_id,
            path_prefix=path_prefix,
            depth=depth,
            limit=page_limit(limit, view),
            cursor=page,
            with_content=full,
            status=wanted,
            record_filter=record_filter,
        )
        return {
            "data": _with_records(caller, [_memory_item(item, full=full) for item in result.items]),
            "next_page": result.next_cursor,
        }

    return json_response(await run(request, op))


def _listing_status(include_deleted: bool, status: str | None) -> MemoryStatus | None:
    """The ``status`` filter of a listing; None lists live and soft-deleted memories.

    Raises:
        InvalidInput: ``include_deleted=true`` with ``status=active`` (they contradict).
    """
    if status is None:
        return None if include_deleted else MemoryStatus.ACTIVE
    if include_deleted and status == MemoryStatus.ACTIVE:
        raise InvalidInput("include_deleted=true contradicts status=active; give one of them")
    return MemoryStatus(status)


@router.get(
    "/v1/memory_stores/{memory_store_id}/memories/{memory_id}", responses=doc(MemoryOut)
)
async def retrieve_memory(
    request: Request,
    memory_store_id: str,
    memory_id: str,
    view: View = "full",
    at: AtQuery = None,
) -> JSONResponse:
    """api-contract §5.8 (``view`` defaults to ``full`` here). A full retrieve of a
    record is a read of it: its ``last_accessed`` moves (SPEC §6, batched, no version).
    With ``at`` (memfs extension, SPEC §10) the memory as it was at that point: 404 if
    it did not exist or was deleted then, 409 ``conflict_error`` (``redacted_content``)
    if its version then is redacted."""
    full = view == "full"

    def op(engine: Engine, principal: Principal) -> dict[str, Any]:
        principal.require(Scope.READ, memory_store_id)
        if at is not None:
            past = principal.caller(engine).history.get(
                memory_store_id, memory_id, at, with_content=full
            )
            return memory_to_wire(past, full=full)
        memory = principal.caller(engine).memories.get(
            memory_store_id,
            memory_id,
            with_content=full,
        )
        if full:
            engine.records.note_access([memory.id])
        return _memory_out(principal.caller(engine), memory, full=full)

    return json_response(await run(request, op))


@router.post(
    "/v1/memory_stores/{memory_store_id}/memories/rename_prefix",
    responses=doc(MemoryList),
)
async def rename_prefix(
    request: Request, memory_store_id: str, body: RenamePrefix
) -> JSONResponse:
    """Directory rename (SPEC §4, ``engine.memories.rename_prefix``): every live memory under
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
        moved = principal.caller(engine).memories.rename_prefix(
            memory_store_id,
            body.old_prefix,
            body.new_prefix,
        )
        return {"data": [memory_to_wire(m, full=False) for m in moved], "next_page": None}

    return json_response(await run(request, op))


async def _update_memory(
    request: Request,
    memory_store_id: str,
    memory_id: str,
    body: MemoryUpdate,
    view: View,
) -> JSONResponse:
    def op(engine: Engine, principal: Principal) -> dict[str, Any]:
        principal.require(Scope.WRITE, memory_store_id)
        expected = None
        if body.precondition is not None:
            expected = body.precondition.content_sha256
            if expected is None:
                raise InvalidInput("precondition.content_sha256 is required")
        memory = principal.caller(engine).memories.update(
            memory_store_id,
            memory_id,
            content=body.content,
            path=body.path,
            expected_sha256=expected,
            metadata=body.metadata,
            replace=body.replace,
        )
        return _memory_out(principal.caller(engine), memory, full=view == "full")

    return json_response(await run(request, op, repeatable=body.precondition is not None))


@router.post(
    "/v1/memory_stores/{memory_store_id}/memories/{memory_id}", responses=doc(MemoryOut)
)
async def update_memory(
    request: Request,
    memory_store_id: str,
    memory_id: str,
    body: MemoryUpdate,
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
    responses=doc(MemoryOut),
)
async def patch_memory(
    request: Request,
    memory_store_id: str,
    memory_id: str,
    body: MemoryUpdate,
    view: View = "basic",
) -> JSONResponse:
    """``PATCH`` alias of the update ([secondary] skills reference, api-contract §0)."""
    return await _update_memory(request, memory_store_id, memory_id, body, view)


DeleteModeQuery = Literal["soft_delete", "redact", "hard_delete"]
ForgetModeQuery = Annotated[
    DeleteModeQuery | None, Query(description="As the body's mode; default redact.")
]
ReasonQuery = Annotated[str | None, Query(description="Recorded in the audit trail.")]
ReplacementQuery = Annotated[str | None, Query(description="mode=redact only.")]
ExpectedSha256Query = Annotated[str | None, Query(pattern=SHA256_PATTERN)]

_DELETE_SCOPES = {
    DeleteMode.SOFT_DELETE: (Scope.DELETE, True),
    DeleteMode.REDACT: (Scope.DELETE, False),  # agents do not redact (api-contract §4.6)
    DeleteMode.HARD_DELETE: (Scope.HARD_DELETE, False),
}


async def delete_memory_request(
    request: Request,
    memory_store_id: str | None,
    memory_id: str,
    *,
    mode: DeleteMode,
    reason: str | None,
    expected_sha256: str | None,
    replacement: str | None,
    audit_metadata: dict[str, str] | None = None,
) -> JSONResponse:
    """A delete or forget of ``memory_id`` in ``memory_store_id``, or in the store the
    memory is in when None (the seed 004 store-less routes, :mod:`.by_memory`): the
    scope of ``mode`` first, then the target; audited with ``reason`` and
    ``audit_metadata``."""
    scope, agents = _DELETE_SCOPES[mode]

    def op(engine: Engine, principal: Principal) -> dict[str, Any]:
        store_id = _target(request, engine, principal, memory_store_id, memory_id, scope, agents)
        if replacement is not None and mode is not DeleteMode.REDACT:
            raise InvalidInput("replacement_content is only allowed with mode=redact")
        replacement_option: dict[str, Any] = (
            {} if replacement is None else {"replacement": replacement}
        )
        erased = principal.caller(engine).memories.delete(
            store_id,
            memory_id,
            expected_sha256=expected_sha256,
            mode=mode,
            reason=reason,
            audit_metadata=audit_metadata,
            **replacement_option,
        )
        # The server's own $MEMFS_HOME may hold logs of mounts not running (SPEC §2).
        scrub_erased_paths(memory_id, erased)
        return {**memory_deleted_to_wire(memory_id), "mode": mode.value}

    return json_response(await run(request, op))


def _target(
    request: Request,
    engine: Engine,
    principal: Principal,
    memory_store_id: str | None,
    memory_id: str,
    scope: Scope,
    agents: bool,
) -> str:
    """The store acted on, checked for ``scope``: the route's, or the memory's own."""
    if memory_store_id is None:
        return store_of_memory(request, engine, principal, memory_id, scope, agents=agents)
    principal.require(scope, memory_store_id, agents=agents)
    return memory_store_id


@router.delete(
    "/v1/memory_stores/{memory_store_id}/memories/{memory_id}",
    responses=doc(DeletedObject),
)
async def delete_memory(
    request: Request,
    memory_store_id: str,
    memory_id: str,
    expected_content_sha256: ExpectedSha256Query = None,
    mode: DeleteModeQuery = "soft_delete",
    reason: ReasonQuery = None,
    replacement_content: ReplacementQuery = None,
) -> JSONResponse:
    """api-contract §5.11, with the SPEC §2 modes: ``soft_delete`` (default, restorable),
    ``redact`` (content replaced, history redacted), ``hard_delete`` (erased; needs
    ``memory:hard_delete``)."""
    return await delete_memory_request(
        request,
        memory_store_id,
        memory_id,
        mode=DeleteMode(mode),
        reason=reason,
        expected_sha256=expected_content_sha256,
        replacement=replacement_content,
    )


_FORGET_FIELDS = tuple(MemoryForget.model_fields)
# What a forget takes as query parameters: every body field but metadata (an object).
_FORGET_QUERY = tuple(name for name in _FORGET_FIELDS if name != "metadata")



def _forget_options(
    request: Request, body: MemoryForget | None, query: dict[str, str | None]
) -> dict[str, Any]:
    """The options of a forget: body fields and (already validated) query parameters.

    Returns:
        Every field of :class:`MemoryForget`, None where not given.

    Raises:
        InvalidInput: an unknown query parameter, or a field given in both places with
            different values.
    """
    unknown = sorted(set(request.query_params) - set(_FORGET_QUERY))
    if unknown:
        raise InvalidInput(
            f"unknown query parameter {unknown[0]!r}; forget takes {', '.join(_FORGET_QUERY)}"
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
    responses=doc(DeletedObject),
)
async def forget_memory(
    request: Request,
    memory_store_id: str,
    memory_id: str,
    body: Annotated[MemoryForget | None, Body()] = None,
    mode: ForgetModeQuery = None,
    reason: ReasonQuery = None,
    replacement_content: ReplacementQuery = None,
    expected_content_sha256: ExpectedSha256Query = None,
) -> JSONResponse:
    """Forget a memory: the user wants it gone (SPEC §2 deletion modes).

    Default mode ``redact``: the content is replaced by ``[REDACTED]`` (or
    ``replacement_content``), metadata cleared and every earlier version redacted; it is
    not restorable. ``mode=soft_delete`` (restorable) and ``mode=hard_delete`` (needs
    ``memory:hard_delete``) are the other modes. Options come in a JSON body or as query
    parameters (as on ``DELETE``), ``reason`` is recorded in the audit trail, and the
    body's ``metadata`` is kept with the audit event (seed 004); unknown fields or
    parameters are 400. Redact and hard delete need an API key (a session token may
    only soft-delete, api-contract §4.6).
    """
    query = {
        "mode": mode,
        "reason": reason,
        "replacement_content": replacement_content,
        "expected_content_sha256": expected_content_sha256,
    }
    return await forget_memory_request(request, memory_store_id, memory_id, body, query)


async def forget_memory_request(
    request: Request,
    memory_store_id: str | None,
    memory_id: str,
    body: MemoryForget | None,
    query: dict[str, str | None],
) -> JSONResponse:
    """A forget (see :func:`forget_memory`) in ``memory_store_id``, or in the memory's own
    store when None (seed 004 store-less route)."""
    options = _forget_options(request, body, query)
    return await delete_memory_request(
        request,
        memory_store_id,
        memory_id,
        mode=DeleteMode(options["mode"] or DeleteMode.REDACT.value),
        reason=options["reason"],
        expected_sha256=options["expected_content_sha256"],
        replacement=options["replacement_content"],
        audit_metadata=options["metadata"],
    )


@router.post(
    "/v1/memory_stores/{memory_store_id}/memories/{memory_id}/restore",
    responses=doc(MemoryOut),
)
async def restore_memory(
    request: Request,
    memory_store_id: str,
    memory_id: str,
    body: Annotated[MemoryRestore | None, Body()] = None,
    view: View = "basic",
) -> JSONResponse:
    """Brings a soft-deleted memory back with its id, path and content (SPEC §2); 409
    ``conflict_error`` when it is live, redacted, or its path is taken. ``reason`` and
    ``metadata`` are kept with the audit event (seed 004)."""
    return await restore_memory_request(request, memory_store_id, memory_id, body, view)


async def restore_memory_request(
    request: Request,
    memory_store_id: str | None,
    memory_id: str,
    body: MemoryRestore | None,
    view: View,
) -> JSONResponse:
    """A restore in ``memory_store_id``, or in the memory's own store when None (seed
    004 store-less route)."""
    reason = body.reason if body is not None else None
    audit_metadata = body.metadata if body is not None else None

    def op(engine: Engine, principal: Principal) -> dict[str, Any]:
        store_id = _target(
            request, engine, principal, memory_store_id, memory_id, Scope.WRITE, True
        )
        memory = principal.caller(engine).memories.restore(
            store_id,
            memory_id,
            reason=reason,
            audit_metadata=audit_metadata,
        )
        return _memory_out(principal.caller(engine), memory, full=view == "full")

    return json_response(await run(request, op))
