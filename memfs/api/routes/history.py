"""History of one store (SPEC §10, memfs extensions): its snapshots (create, list,
retrieve, delete), the diff of two points, and restoring the store to a point. The
``at=`` of the memory list and retrieve is in :mod:`memfs.api.routes.memories`.

Scopes: reading snapshots or a diff needs ``memory:read`` (a diff with another store,
on both); creating a snapshot ``memory:write``; deleting one ``memory:delete``;
restoring the store what its writes need, ``memory:write`` and ``memory:delete`` (a
dry run ``memory:read``); forking it ``memory:read`` on it and what creating a store
needs (``memory:write`` on every store: a key limited to some stores can't create one);
merging a fork ``memory:read`` on it and ``memory:write`` and ``memory:delete`` on its
origin (a dry run ``memory:read`` on both); reverting one memory ``memory:write`` (bringing a
deleted one back needs no more, as a memory restore).
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import JSONResponse

from memfs.api.auth import Principal
from memfs.api.routes._common import LimitQuery, PageQuery, doc, json_response, run
from memfs.core.config import DEFAULT_PAGE_LIMIT
from memfs.core.model import Scope
from memfs.core.points import NOW
from memfs.store import Engine
from memfs.wire import (
    memory_to_wire,
    merge_plan_to_wire,
    restore_plan_to_wire,
    snapshot_deleted_to_wire,
    snapshot_to_wire,
    store_diff_to_wire,
    store_to_wire,
)
from memfs.wire.history import (
    MemoryRevert,
    MergePlanOut,
    RestorePlanOut,
    SnapshotCreate,
    SnapshotDeleted,
    SnapshotOut,
    SnapshotPage,
    StoreDiffOut,
    StoreFork,
    StoreMerge,
    StoreRestore,
)
from memfs.wire.memories import MemoryOut
from memfs.wire.stores import MemoryStoreOut

__all__ = ["router"]

router = APIRouter()

_SNAPSHOTS = "/v1/memory_stores/{memory_store_id}/snapshots"


@router.post(_SNAPSHOTS, responses=doc(SnapshotOut))
async def create_snapshot(
    request: Request, memory_store_id: str, body: SnapshotCreate
) -> JSONResponse:
    """Names a point of the store's history (default ``now``); one row, whatever the
    store holds. 400 ``invalid_snapshot_name`` (``now``, ``auto-…`` and the forms of
    other points are reserved), ``invalid_point`` (``at``); 409
    ``conflict_error`` (``snapshot_name_taken``)."""

    def op(engine: Engine, principal: Principal) -> dict[str, Any]:
        principal.require(Scope.WRITE, memory_store_id)
        snapshot = principal.caller(engine).snapshots.create(
            memory_store_id,
            body.name,
            description=body.description or "",
            at=body.at or NOW,
        )
        return snapshot_to_wire(snapshot)

    return json_response(await run(request, op))


@router.get(_SNAPSHOTS, responses=doc(SnapshotPage))
async def list_snapshots(
    request: Request,
    memory_store_id: str,
    limit: LimitQuery = DEFAULT_PAGE_LIMIT,
    page: PageQuery = None,
) -> JSONResponse:
    """The store's snapshots, newest first (api-contract §3 pages)."""

    def op(engine: Engine, principal: Principal) -> dict[str, Any]:
        principal.require(Scope.READ, memory_store_id)
        result = principal.caller(engine).snapshots.list(
            memory_store_id, limit=limit, cursor=page
        )
        return {
            "data": [snapshot_to_wire(s) for s in result.items],
            "next_page": result.next_cursor,
        }

    return json_response(await run(request, op))


@router.get(_SNAPSHOTS + "/{snapshot_id}", responses=doc(SnapshotOut))
async def retrieve_snapshot(
    request: Request, memory_store_id: str, snapshot_id: str
) -> JSONResponse:
    """One snapshot by ``snap_…`` id; 404 when the store has none of that id."""

    def op(engine: Engine, principal: Principal) -> dict[str, Any]:
        principal.require(Scope.READ, memory_store_id)
        snapshot = principal.caller(engine).snapshots.get(memory_store_id, snapshot_id)
        return snapshot_to_wire(snapshot)

    return json_response(await run(request, op))


@router.delete(_SNAPSHOTS + "/{snapshot_id}", responses=doc(SnapshotDeleted))
async def delete_snapshot(
    request: Request, memory_store_id: str, snapshot_id: str
) -> JSONResponse:
    """Deletes a snapshot (audited); the versions only it needed become prunable."""

    def op(engine: Engine, principal: Principal) -> dict[str, Any]:
        principal.require(Scope.DELETE, memory_store_id)
        principal.caller(engine).snapshots.delete(memory_store_id, snapshot_id)
        return snapshot_deleted_to_wire(snapshot_id)

    return json_response(await run(request, op))


@router.get("/v1/memory_stores/{memory_store_id}/diff", responses=doc(StoreDiffOut))
async def diff_store(
    request: Request,
    memory_store_id: str,
    from_: Annotated[
        str,
        Query(alias="from", min_length=1, max_length=1024, description="Side A's point."),
    ],
    to: Annotated[
        str, Query(min_length=1, max_length=1024, description="Side B's point (default now).")
    ] = "now",
    other_store: Annotated[
        str | None,
        Query(description="Side B's store (default: this one); memories match by id."),
    ] = None,
) -> JSONResponse:
    """What changed from ``from`` to ``to`` (``memory_store_diff``, as ``memfs diff
    --json`` prints it): memories added, removed, modified, renamed, each changed text
    as a unified diff; a redacted side shows no content."""

    def op(engine: Engine, principal: Principal) -> dict[str, Any]:
        other = other_store or memory_store_id
        principal.require(Scope.READ, memory_store_id)
        principal.require(Scope.READ, other)
        diff = principal.caller(engine).history.diff(memory_store_id, from_, other, to)
        return store_diff_to_wire(diff)

    return json_response(await run(request, op))


@router.post("/v1/memory_stores/{memory_store_id}/restore", responses=doc(RestorePlanOut))
async def restore_store(request: Request, memory_store_id: str, body: StoreRestore) -> JSONResponse:
    """Makes the store what it was at ``to`` (SPEC §10): new versions only, all or
    nothing, after an automatic snapshot (restore to it to undo); one audit event.
    ``dry_run`` answers the plan and changes nothing. 400 ``invalid_point``,
    ``store_archived``; 409 when a memory to bring back can't get its path."""

    def op(engine: Engine, principal: Principal) -> dict[str, Any]:
        caller = principal.caller(engine)
        if body.dry_run:
            principal.require(Scope.READ, memory_store_id)
            return restore_plan_to_wire(caller.restores.plan(memory_store_id, body.to))
        principal.require(Scope.WRITE, memory_store_id)
        principal.require(Scope.DELETE, memory_store_id)
        plan = caller.restores.restore(memory_store_id, body.to, reason=body.reason)
        return restore_plan_to_wire(plan)

    return json_response(await run(request, op))


@router.post("/v1/memory_stores/{memory_store_id}/fork", responses=doc(MemoryStoreOut))
async def fork_store(request: Request, memory_store_id: str, body: StoreFork) -> JSONResponse:
    """A new store holding this one's memories at ``at`` (SPEC §10 fork; default now):
    content shared, not copied; the answer is the new ``memory_store`` with the
    extensions ``forked_from`` and ``fork_base``. What the caller may not see (SPEC §6)
    and what is redacted at the point is not forked. 400 ``invalid_point``, a bad name;
    404 an unknown store; 409 ``conflict_error`` (``store_name_taken``) when a store
    already has the name."""

    def op(engine: Engine, principal: Principal) -> dict[str, Any]:
        principal.require(Scope.READ, memory_store_id)
        principal.require_unlimited(Scope.WRITE)
        fork = principal.caller(engine).history.fork(
            memory_store_id,
            at=body.at or NOW,
            name=body.name,
            description=body.description,
        )
        return store_to_wire(fork)

    return json_response(await run(request, op))


@router.post("/v1/memory_stores/{memory_store_id}/merge", responses=doc(MergePlanOut))
async def merge_fork(request: Request, memory_store_id: str, body: StoreMerge) -> JSONResponse:
    """Merges this fork back into its origin (SPEC §10): three-way against the fork's
    base; a memory changed on both sides keeps the origin's content and gets the fork's
    beside it as a conflict copy. All or nothing, after an automatic snapshot of the
    origin; one audit event. ``dry_run`` answers the plan. 400 ``invalid_input`` (no
    fork, or not of ``into``), ``store_archived``."""

    def op(engine: Engine, principal: Principal) -> dict[str, Any]:
        caller = principal.caller(engine)
        principal.require(Scope.READ, memory_store_id)
        origin = caller.stores.get(memory_store_id).forked_from or memory_store_id
        if body.dry_run:
            principal.require(Scope.READ, origin)
            return merge_plan_to_wire(
                caller.history.plan_merge(memory_store_id, into=body.into)
            )
        principal.require(Scope.WRITE, origin)
        principal.require(Scope.DELETE, origin)
        plan = caller.history.merge(memory_store_id, into=body.into, reason=body.reason)
        return merge_plan_to_wire(plan)

    return json_response(await run(request, op))


@router.post(
    "/v1/memory_stores/{memory_store_id}/memories/{memory_id}/revert",
    responses=doc(MemoryOut),
)
async def revert_memory(
    request: Request, memory_store_id: str, memory_id: str, body: MemoryRevert
) -> JSONResponse:
    """Gives one memory back its content and path of ``to`` (SPEC §10 revert): one new
    version; a soft-deleted memory comes back under its id. Answers the ``memory`` with
    its content. 400 ``invalid_point``; 404 not live then; 409 ``redacted_content``
    (its content then is redacted), ``precondition_failed`` (the head's digest is not
    ``precondition.content_sha256``), a path conflict."""

    def op(engine: Engine, principal: Principal) -> dict[str, Any]:
        principal.require(Scope.WRITE, memory_store_id)
        expected = None if body.precondition is None else body.precondition.content_sha256
        memory = principal.caller(engine).restores.revert(
            memory_store_id, memory_id, body.to, expected_sha256=expected, reason=body.reason
        )
        return memory_to_wire(memory, full=True)

    return json_response(await run(request, op))
