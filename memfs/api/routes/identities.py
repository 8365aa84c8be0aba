"""Identities, templates and default stores (SPEC §8, seed 000; memfs extension):
stores mounted on (identity, template) pairs.

=======  ===============================================================  ==============
method   path                                                             answers
=======  ===============================================================  ==============
POST     /v1/identities/{identity_id}/templates/{template_id}/mounts      the mount
GET      /v1/identities/{identity_id}/templates/{template_id}/mounts      the pair's
DELETE   /v1/identities/{identity_id}/templates/{template_id}/mounts/     a deletion
         {memory_store_id}
POST     /v1/identities/{identity_id}/templates/{template_id}/            the store
         default_store
GET      /v1/memory_stores/{memory_store_id}/mounts                       the store's
=======  ===============================================================  ==============

Mounting makes a store readable by the pair's sessions, so it takes what creating a
``read_only`` attachment takes plus the right to administer the store: an API key with
``memory:read`` and ``memory:write`` on it (session tokens are refused). Listing a
pair's mounts needs ``memory:read`` and shows only the stores the key may read;
listing a store's needs ``memory:read`` on it. Creating the default store creates a
store: a key not limited to stores with ``memory:write``.

A pair's session is ``POST /v1/sessions`` with ``identity_id`` and ``template_id``
(:mod:`memfs.api.routes.sessions`).
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Path, Request
from fastapi.responses import JSONResponse

from memfs.api.auth import Principal
from memfs.api.routes._common import doc, json_response, run
from memfs.core.model import Scope
from memfs.store import Engine
from memfs.wire import (
    identity_mount_deleted_to_wire,
    identity_mount_to_wire,
    store_to_wire,
)
from memfs.wire.identities import (
    IDENTITY_ID_PATTERN,
    TEMPLATE_ID_PATTERN,
    IdentityMountCreate,
    IdentityMountDeleted,
    IdentityMountList,
    IdentityMountOut,
)
from memfs.wire.stores import MemoryStoreOut

__all__ = ["router"]

router = APIRouter()

IdentityId = Annotated[str, Path(pattern=IDENTITY_ID_PATTERN)]
TemplateId = Annotated[str, Path(pattern=TEMPLATE_ID_PATTERN)]
_PAIR = "/v1/identities/{identity_id}/templates/{template_id}"


@router.post(f"{_PAIR}/mounts", responses=doc(IdentityMountOut))
async def create_mount(
    request: Request,
    identity_id: IdentityId,
    template_id: TemplateId,
    body: IdentityMountCreate,
) -> JSONResponse:
    """Mounts a store on the pair, read-only (SPEC §8); mounting it again returns the
    same mount. 400 for ``read_write``, an archived store, or an 11th explicit mount
    (``error_code: mount_limit_reached``, at most 10 a pair); 409 for a default store."""

    def op(engine: Engine, principal: Principal) -> dict[str, Any]:
        for scope in (Scope.READ, Scope.WRITE):
            principal.require(scope, body.memory_store_id, agents=False)
        mount, _ = engine.identities.mount(identity_id, template_id, body.memory_store_id)
        return identity_mount_to_wire(mount)

    return json_response(await run(request, op))


@router.get(f"{_PAIR}/mounts", responses=doc(IdentityMountList))
async def list_pair_mounts(
    request: Request, identity_id: IdentityId, template_id: TemplateId
) -> JSONResponse:
    """The pair's mounts: its default store first, then explicit mounts by creation time
    (one page; empty for a pair memfs has not seen)."""

    def op(engine: Engine, principal: Principal) -> dict[str, Any]:
        principal.require(Scope.READ, agents=False)
        mounts = engine.identities.pair_mounts(identity_id, template_id)
        return {
            "data": [
                identity_mount_to_wire(m) for m in mounts if principal.can_see(m.memory_store_id)
            ],
            "next_page": None,
        }

    return json_response(await run(request, op))


@router.delete(f"{_PAIR}/mounts/{{memory_store_id}}", responses=doc(IdentityMountDeleted))
async def delete_mount(
    request: Request, identity_id: IdentityId, template_id: TemplateId, memory_store_id: str
) -> JSONResponse:
    """Unmounts a store from the pair (the store itself stays). 404 when it is not
    mounted there; 409 for the pair's default store, which can't be unmounted."""

    def op(engine: Engine, principal: Principal) -> dict[str, Any]:
        for scope in (Scope.READ, Scope.WRITE):
            principal.require(scope, memory_store_id, agents=False)
        engine.identities.unmount(identity_id, template_id, memory_store_id)
        return identity_mount_deleted_to_wire(memory_store_id, identity_id, template_id)

    return json_response(await run(request, op))


@router.post(f"{_PAIR}/default_store", responses=doc(MemoryStoreOut))
async def ensure_default_store(
    request: Request, identity_id: IdentityId, template_id: TemplateId
) -> JSONResponse:
    """The pair's system-managed default store, created by the first call (named
    ``default:<identity_id>:<template_id>``); later calls, and racing ones, return the
    same store."""

    def op(engine: Engine, principal: Principal) -> dict[str, Any]:
        principal.require_unlimited(Scope.WRITE)
        store, _ = engine.identities.ensure_default_store(identity_id, template_id)
        return store_to_wire(store)

    return json_response(await run(request, op))


@router.get("/v1/memory_stores/{memory_store_id}/mounts", responses=doc(IdentityMountList))
async def list_store_mounts(request: Request, memory_store_id: str) -> JSONResponse:
    """The (identity, template) pairs the store is mounted on, oldest mount first."""

    def op(engine: Engine, principal: Principal) -> dict[str, Any]:
        principal.require(Scope.READ, memory_store_id, agents=False)
        mounts = engine.identities.store_mounts(memory_store_id)
        return {"data": [identity_mount_to_wire(m) for m in mounts], "next_page": None}

    return json_response(await run(request, op))
