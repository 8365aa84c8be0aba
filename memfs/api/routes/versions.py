"""Memory versions of one store: list, retrieve, redact (api-contract §5.12–5.14)."""

from __future__ import annotations

from typing import Any, Literal

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from memfs.api.auth import Principal
from memfs.api.routes._common import (
    CreatedGte,
    CreatedLte,
    LimitQuery,
    PageQuery,
    View,
    doc,
    json_response,
    page_limit,
    run,
    utc,
)
from memfs.core.config import DEFAULT_PAGE_LIMIT
from memfs.core.model import Operation, Scope
from memfs.store import Engine
from memfs.wire import version_to_wire
from memfs.wire.versions import MemoryVersionOut, MemoryVersionPage

__all__ = ["router"]

router = APIRouter()


@router.get(
    "/v1/memory_stores/{memory_store_id}/memory_versions",
    responses=doc(MemoryVersionPage),
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
        result = principal.caller(engine).versions.list(
            memory_store_id,
            memory_id=memory_id,
            operation=Operation(operation) if operation else None,
            session_id=session_id,
            api_key_id=api_key_id,
            service_account_id=service_account_id,
            created_gte=utc(created_at_gte),
            created_lte=utc(created_at_lte),
            limit=page_limit(limit, view),
            cursor=page,
            with_content=full,
        )
        return {
            "data": [version_to_wire(v, full=full) for v in result.items],
            "next_page": result.next_cursor,
        }

    return json_response(await run(request, op))


@router.get(
    "/v1/memory_stores/{memory_store_id}/memory_versions/{memory_version_id}",
    responses=doc(MemoryVersionOut),
)
async def retrieve_memory_version(
    request: Request, memory_store_id: str, memory_version_id: str, view: View = "full"
) -> JSONResponse:
    """api-contract §5.13 (``view`` defaults to ``full``; redacted versions succeed)."""
    full = view == "full"

    def op(engine: Engine, principal: Principal) -> dict[str, Any]:
        principal.require(Scope.READ, memory_store_id)
        version = principal.caller(engine).versions.get(
            memory_store_id,
            memory_version_id,
            with_content=full,
        )
        return version_to_wire(version, full=full)

    return json_response(await run(request, op))


@router.post(
    "/v1/memory_stores/{memory_store_id}/memory_versions/{memory_version_id}/redact",
    responses=doc(MemoryVersionOut),
)
async def redact_memory_version(
    request: Request, memory_store_id: str, memory_version_id: str
) -> JSONResponse:
    """api-contract §5.14; the head version of a live memory is refused with 409
    ``conflict_error`` (SPEC §2 redaction)."""

    def op(engine: Engine, principal: Principal) -> dict[str, Any]:
        principal.require(Scope.DELETE, memory_store_id, agents=False)
        version = principal.caller(engine).versions.redact(
            memory_store_id, memory_version_id
        )
        return version_to_wire(version, full=True)

    return json_response(await run(request, op))
