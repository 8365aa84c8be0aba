"""The store-less memory routes of seed 004: ``DELETE /v1/memories/{memory_id}``,
``POST /v1/memories/{memory_id}/forget`` and ``POST /v1/memories/{memory_id}/restore``.

The memory's store is found from its id (ids are unique across stores); then each route
is exactly its store-scoped twin under ``/v1/memory_stores/{memory_store_id}/memories/``
(:mod:`memfs.api.routes.memories`): the same scopes, checked before the target is
resolved (403 before 404), the same modes, the same audit entry (``reason`` and the
request's ``metadata`` kept with it), the same responses. A memory in a store the
caller can't reach is the 404 of an unknown id
(:func:`memfs.api.routes._common.store_of_memory`).

Seed 004 names ``X-API-Key``; the SDK's ``Authorization: Bearer`` works too (as on every
route). The unmodified SDK has no method for these routes: clients call them over HTTP.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Body, Request
from fastapi.responses import JSONResponse

from memfs.api.routes._common import View, doc
from memfs.api.routes.memories import (
    DeleteModeQuery,
    ExpectedSha256Query,
    ForgetModeQuery,
    ReasonQuery,
    ReplacementQuery,
    delete_memory_request,
    forget_memory_request,
    restore_memory_request,
)
from memfs.core.model import DeleteMode
from memfs.wire.common import DeletedObject
from memfs.wire.memories import MemoryForget, MemoryOut, MemoryRestore

__all__ = ["router"]

router = APIRouter()

_MEMORY = "/v1/memories/{memory_id}"


@router.delete(_MEMORY, responses=doc(DeletedObject))
async def delete_memory(
    request: Request,
    memory_id: str,
    mode: DeleteModeQuery = "soft_delete",
    reason: ReasonQuery = None,
    replacement_content: ReplacementQuery = None,
    expected_content_sha256: ExpectedSha256Query = None,
) -> JSONResponse:
    """Seed 004 ``DELETE /v1/memories/{memory_id}?mode=&reason=``: as ``DELETE
    /v1/memory_stores/{memory_store_id}/memories/{memory_id}`` in the memory's store.
    ``soft_delete`` (default, restorable; ``memory:delete``), ``redact``
    (``memory:delete``, API keys only), ``hard_delete`` (``memory:hard_delete``)."""
    return await delete_memory_request(
        request,
        None,
        memory_id,
        mode=DeleteMode(mode),
        reason=reason,
        expected_sha256=expected_content_sha256,
        replacement=replacement_content,
    )


@router.post(f"{_MEMORY}/forget", responses=doc(DeletedObject))
async def forget_memory(
    request: Request,
    memory_id: str,
    body: Annotated[MemoryForget | None, Body()] = None,
    mode: ForgetModeQuery = None,
    reason: ReasonQuery = None,
    replacement_content: ReplacementQuery = None,
    expected_content_sha256: ExpectedSha256Query = None,
) -> JSONResponse:
    """Seed 004 ``POST /v1/memories/{memory_id}/forget`` (MemoryForgetRequest: ``mode``,
    ``reason``, ``replacement_content``, ``metadata``): as the store-scoped forget in the
    memory's store; default mode ``redact``; ``metadata`` is kept with the audit event."""
    query = {
        "mode": mode,
        "reason": reason,
        "replacement_content": replacement_content,
        "expected_content_sha256": expected_content_sha256,
    }
    return await forget_memory_request(request, None, memory_id, body, query)


@router.post(f"{_MEMORY}/restore", responses=doc(MemoryOut))
async def restore_memory(
    request: Request,
    memory_id: str,
    body: Annotated[MemoryRestore | None, Body()] = None,
    view: View = "basic",
) -> JSONResponse:
    """Seed 004 ``POST /v1/memories/{memory_id}/restore`` (MemoryRestoreRequest:
    ``reason``, ``metadata``): brings a soft-deleted memory back (``status: active``,
    one new version) in its store; 409 ``conflict_error`` when it is live or was redacted,
    ``memory_path_conflict_error`` when its path is taken. Needs ``memory:write``."""
    return await restore_memory_request(request, None, memory_id, body, view)
