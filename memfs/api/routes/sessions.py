"""Sessions (api-contract §7, SPEC §3): create one with its token, retrieve one, and
the bearer token's own session (``current``, what a remote mount asks first).

Registration order matters: ``GET /v1/sessions/current`` comes before
``GET /v1/sessions/{session_id}``, which would take ``current`` for an id.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from memfs.api import schemas
from memfs.api.auth import Principal
from memfs.api.routes._common import doc, json_response, run
from memfs.errors import PermissionDenied
from memfs.model import Access, Scope
from memfs.store import Engine, ResourceSpec
from memfs.wire import session_to_wire

__all__ = ["router"]

router = APIRouter()

# What a caller must hold on a store to attach it with each access (SPEC §3).
ATTACHMENT_SCOPES: dict[Access, tuple[Scope, ...]] = {
    Access.READ_WRITE: (Scope.READ, Scope.WRITE),
    Access.READ_ONLY: (Scope.READ,),
}


@router.post("/v1/sessions", responses=doc(schemas.SessionOut))
async def create_session(request: Request, body: schemas.SessionCreate) -> JSONResponse:
    """Attaches 1–8 stores to a new session (api-contract §7, SPEC §3) and returns it
    with its ``token``, shown only here.

    A caller hands a session only what it holds itself (SPEC §3): each ``read_write``
    attachment needs ``memory:read`` and ``memory:write`` on its store, each
    ``read_only`` one ``memory:read``; a session token can't create sessions. One
    attachment beyond the caller refuses the whole session (403
    ``api_key_scope_missing``, or 404 for a store the key can't reach)."""
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
            for scope in ATTACHMENT_SCOPES[spec.access]:
                principal.require(scope, spec.memory_store_id, agents=False)
        session, token = engine.create_session(specs, title=body.title)
        return {**session_to_wire(session), "token": token}

    return json_response(await run(request, op))


@router.get("/v1/sessions/current", responses=doc(schemas.SessionOut))
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

    return json_response(await run(request, op))


@router.get("/v1/sessions/{session_id}", responses=doc(schemas.SessionOut))
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

    return json_response(await run(request, op))
