"""Memory stores: create, list, retrieve, update (``POST`` and its ``PATCH`` alias),
delete, archive (api-contract §5.1–5.6), and a store's audit trail (SPEC §2)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import JSONResponse

from memfs.api.auth import Principal
from memfs.api.routes._common import (
    CreatedGte,
    CreatedLte,
    LimitQuery,
    PageQuery,
    doc,
    json_response,
    run,
    utc,
)
from memfs.core.config import DEFAULT_PAGE_LIMIT
from memfs.core.model import Scope
from memfs.store import Engine
from memfs.wire import store_deleted_to_wire, store_to_wire
from memfs.wire.common import DeletedObject
from memfs.wire.stores import (
    AuditEventList,
    MemoryStoreCreate,
    MemoryStoreOut,
    MemoryStorePage,
    MemoryStoreUpdate,
)

__all__ = ["router"]

router = APIRouter()


@router.post("/v1/memory_stores", responses=doc(MemoryStoreOut))
async def create_memory_store(request: Request, body: MemoryStoreCreate) -> JSONResponse:
    """api-contract §5.1; ``version_retention_seconds`` is a memfs extension (SPEC §2)."""

    def op(engine: Engine, principal: Principal) -> dict[str, Any]:
        principal.require_unlimited(Scope.WRITE)
        store = engine.stores.create(
            body.name,
            description=body.description or "",
            metadata=body.metadata or {},
            version_retention_s=body.version_retention_seconds or None,
        )
        return store_to_wire(store)

    return json_response(await run(request, op))


@router.get("/v1/memory_stores", responses=doc(MemoryStorePage))
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
        result = principal.caller(engine).stores.list(
            include_archived=include_archived,
            created_gte=utc(created_at_gte),
            created_lte=utc(created_at_lte),
            limit=limit,
            cursor=page,
        )
        return {
            "data": [store_to_wire(s) for s in result.items if principal.can_see(s.id)],
            "next_page": result.next_cursor,
        }

    return json_response(await run(request, op))


@router.get("/v1/memory_stores/{memory_store_id}", responses=doc(MemoryStoreOut))
async def retrieve_memory_store(request: Request, memory_store_id: str) -> JSONResponse:
    """api-contract §5.2 (archived stores too)."""

    def op(engine: Engine, principal: Principal) -> dict[str, Any]:
        principal.require(Scope.READ, memory_store_id)
        return store_to_wire(principal.caller(engine).stores.get(memory_store_id))

    return json_response(await run(request, op))


async def _update_memory_store(
    request: Request, memory_store_id: str, body: MemoryStoreUpdate
) -> JSONResponse:
    def op(engine: Engine, principal: Principal) -> dict[str, Any]:
        principal.require(Scope.WRITE, memory_store_id, agents=False)
        store = principal.caller(engine).stores.update(
            memory_store_id,
            name=body.name,
            description=body.description,
            metadata_patch=body.metadata,
            version_retention_s=(
                ...
                if body.version_retention_seconds is None
                else body.version_retention_seconds or None  # 0: keep forever
            ),
        )
        return store_to_wire(store)

    return json_response(await run(request, op))


@router.post("/v1/memory_stores/{memory_store_id}", responses=doc(MemoryStoreOut))
async def update_memory_store(
    request: Request, memory_store_id: str, body: MemoryStoreUpdate
) -> JSONResponse:
    """api-contract §5.3: a patch; 400 on an archived store."""
    return await _update_memory_store(request, memory_store_id, body)


@router.patch(
    "/v1/memory_stores/{memory_store_id}",
    responses=doc(MemoryStoreOut),
)
async def patch_memory_store(
    request: Request, memory_store_id: str, body: MemoryStoreUpdate
) -> JSONResponse:
    """``PATCH`` alias of the update (api-contract §0 notes)."""
    return await _update_memory_store(request, memory_store_id, body)


# SPEC §8 (memfs extension): archive or delete a store still mounted on a pair.
ForceQuery = Annotated[
    bool,
    Query(
        description="Archive or delete the store although (identity, template) pairs "
        "mount it (without it: 409 naming the bindings)."
    ),
]


@router.delete("/v1/memory_stores/{memory_store_id}", responses=doc(DeletedObject))
async def delete_memory_store(
    request: Request, memory_store_id: str, force: ForceQuery = False
) -> JSONResponse:
    """api-contract §5.5: erases the store with every memory and version. A store still
    mounted on a pair is 409 ``store_bound`` (naming the bindings) unless ``force``; a
    pair's default store is 409 while its pair has explicit mounts, even forced
    (SPEC §8)."""

    def op(engine: Engine, principal: Principal) -> dict[str, Any]:
        principal.require(Scope.HARD_DELETE, memory_store_id, agents=False)
        principal.caller(engine).stores.delete(memory_store_id, force=force)
        return store_deleted_to_wire(memory_store_id)

    return json_response(await run(request, op))


@router.post("/v1/memory_stores/{memory_store_id}/archive", responses=doc(MemoryStoreOut))
async def archive_memory_store(
    request: Request, memory_store_id: str, force: ForceQuery = False
) -> JSONResponse:
    """api-contract §5.6: one-way; archiving an archived store returns it unchanged. A
    store still mounted on a pair is 409 ``store_bound`` unless ``force`` (SPEC §8)."""

    def op(engine: Engine, principal: Principal) -> dict[str, Any]:
        principal.require(Scope.WRITE, memory_store_id, agents=False)
        archived = principal.caller(engine).stores.archive(
            memory_store_id,
            force=force,
        )
        return store_to_wire(archived)

    return json_response(await run(request, op))


@router.get(
    "/v1/memory_stores/{memory_store_id}/audit_events", responses=doc(AuditEventList)
)
async def list_audit_events(
    request: Request, memory_store_id: str, memory_id: str | None = None
) -> JSONResponse:
    """The audit trail of deletions, redactions and restores, newest first (SPEC §2);
    needs the ``admin`` scope. One page holds the whole trail."""

    def op(engine: Engine, principal: Principal) -> dict[str, Any]:
        principal.require(Scope.ADMIN, memory_store_id, agents=False)
        engine.stores.get(memory_store_id)
        events = engine.feed.audit_events(memory_store_id, memory_id=memory_id)
        return {"data": events, "next_page": None}

    return json_response(await run(request, op))
