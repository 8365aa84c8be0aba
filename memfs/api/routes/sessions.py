"""Sessions (api-contract §7, SPEC §3) in the SDK's shapes (``client.beta.sessions``):
create one with its token, list, retrieve, archive, delete; revoke one (memfs
extension, ``POST /v1/sessions/{id}/revoke``); and the bearer token's own session
(``current``, what a remote mount asks first).

Who may do what (SPEC §3, "a caller can hand a session only what it holds itself"):

* create: an API key holding, on each store, what the attachment grants
  (:data:`ATTACHMENT_SCOPES`); the session remembers the key, and revoking the key
  revokes it. Session tokens can't create sessions.
* list, retrieve: a key with ``memory:read`` sees the sessions whose every store it
  may read (another is the 404 of an unknown id); a session token sees only itself
  (another session: 403 ``session_not_allowed``).
* archive, delete, revoke: a key that could have created the session (the same scopes
  on every attached store); a session token may revoke itself (a logout), nothing else.

A token stops working when its session expires (``expires_at``: 24 h by default,
``ttl_s`` at creation, at most 30 days), is revoked, archived or deleted: 401.

Registration order matters: ``…/sessions/current`` comes before
``…/sessions/{session_id}``, which would take ``current`` for an id.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from memfs.api.auth import Principal
from memfs.api.routes._common import (
    LimitQuery,
    PageQuery,
    doc,
    json_response,
    refuse_other_methods,
    run,
)
from memfs.core.config import (
    DEFAULT_PAGE_LIMIT,
    DEFAULT_PAIR_MOUNT_ROOT,
    DEFAULT_SESSION_MOUNT_ROOT,
)
from memfs.core.errors import InvalidInput, NotFound, PermissionDenied
from memfs.core.model import Access, Layout, Scope, Session
from memfs.core.visibility import UserPrincipal, handed_principal, make_principal
from memfs.store import Engine, ResourceSpec
from memfs.wire import session_deleted_to_wire, session_to_wire
from memfs.wire.sessions import DeletedSession, SessionCreate, SessionOut, SessionPage

__all__ = ["ATTACHMENT_SCOPES", "router"]

router = APIRouter()
# First: the {session_id} routes below would take "current" for an id.
refuse_other_methods(router, "/v1/sessions/current", ["DELETE", "POST"])

# What a caller must hold on a store to attach it with each access (SPEC §3).
ATTACHMENT_SCOPES: dict[Access, tuple[Scope, ...]] = {
    Access.READ_WRITE: (Scope.READ, Scope.WRITE),
    Access.READ_ONLY: (Scope.READ,),
}


def _requested_principal(body: SessionCreate) -> UserPrincipal | None:
    """The principal asked for: ``principal`` or the flat ``user_id``/``roles`` (memfs
    extension, SPEC §6). Raises InvalidInput for both forms at once, or bad values."""
    if body.principal is not None:
        if body.user_id is not None or body.roles is not None:
            raise InvalidInput("give either principal or user_id/roles, not both")
        return make_principal(body.principal.user_id, body.principal.roles)
    return make_principal(body.user_id, body.roles or ())


def _ts(value: datetime | None) -> str | None:
    return None if value is None else value.isoformat().replace("+00:00", "Z")


def session_out(session: Session) -> dict[str, Any]:
    """A session on the wire: :func:`memfs.wire.session_to_wire` and its lifecycle
    (``expires_at``, ``revoked_at``, ``archived_at``; RFC 3339 or null)."""
    return {
        **session_to_wire(session),
        "expires_at": _ts(session.expires_at),
        "revoked_at": _ts(session.revoked_at),
        "archived_at": _ts(session.archived_at),
    }


def _require_handing(principal: Principal, session: Session) -> None:
    """The caller could have created ``session``: it holds, on every attached store,
    what the attachment grants (403 ``api_key_scope_missing`` or 404 otherwise)."""
    for resource in session.resources:
        for scope in ATTACHMENT_SCOPES[resource.access]:
            principal.require(scope, resource.memory_store_id, agents=False)


def _may_see(principal: Principal, session: Session) -> bool:
    if principal.session is not None:
        return principal.session.id == session.id
    return all(principal.can_see(r.memory_store_id) for r in session.resources)


def _visible_session(engine: Engine, principal: Principal, session_id: str) -> Session:
    """The session, if the caller may read it; else the 404 of an unknown id (a session
    token asking for another session: 403 ``session_not_allowed``)."""
    if principal.session is not None and principal.session.id != session_id:
        raise PermissionDenied(
            f"session {principal.session.id} can only see itself; this needs an API key",
            code="session_not_allowed",
        )
    if principal.session is None:
        principal.require(Scope.READ)
    session = engine.sessions.get(session_id)
    if not _may_see(principal, session):
        raise NotFound(f"session {session_id!r} not found")
    return session


@router.post("/v1/sessions", responses=doc(SessionOut))
async def create_session(request: Request, body: SessionCreate) -> JSONResponse:
    """Attaches 1–8 stores to a new session (api-contract §7, SPEC §3) and returns it
    with its ``token``, shown only here; the token expires after ``ttl_s`` seconds
    (memfs extension, the SDK passes it in ``extra_body``; default 24 h, at most 30
    days: 400 ``invalid_ttl`` beyond).

    A caller hands a session only what it holds itself (SPEC §3): each ``read_write``
    attachment needs ``memory:read`` and ``memory:write`` on its store, each
    ``read_only`` one ``memory:read``; a session token can't create sessions. One
    attachment beyond the caller refuses the whole session (403
    ``api_key_scope_missing``, or 404 for a store the key can't reach).

    ``principal`` (or ``user_id`` and ``roles``; memfs extension, SPEC §6) is the user
    the session speaks for, fixed for its life: an admin key hands any, a key with a
    principal its own (the default) or fewer of its roles, a key without one none
    (403 ``principal_not_allowed``).

    With ``identity_id`` and ``template_id`` instead of ``resources`` (memfs extension,
    SPEC §8), memfs builds the resources of the pair itself: its default store (created
    the first time) ``read_write``, then every active explicit mount ``read_only`` by
    mount time, in the flat layout at ``/data/.qoder/awareness`` unless ``mount_root``
    is given. That needs a key not limited to stores with ``memory:read`` and
    ``memory:write`` (it may create the default store)."""
    pair = (body.identity_id, body.template_id)
    if body.resources is None and None in pair:
        raise InvalidInput(
            "a session needs resources, or identity_id and template_id (SPEC §8)"
        )
    if body.resources is not None and pair != (None, None):
        raise InvalidInput(
            "give resources or identity_id and template_id, not both: a pair's session "
            "is built from its mounts"
        )
    if body.resources is None:
        return await _create_pair_session(request, body)
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
        key = principal.api_key
        session_principal = handed_principal(
            None if key is None else key.principal,
            admin=principal.viewer is None,
            requested=_requested_principal(body),
        )
        session, token = engine.sessions.create(
            specs,
            mount_root=body.mount_root or DEFAULT_SESSION_MOUNT_ROOT,
            title=body.title,
            ttl_s=body.ttl_s,
            api_key_id=None if key is None else key.id,
            principal=session_principal,
            layout=Layout(body.layout or Layout.PER_STORE),
        )
        return {**session_out(session), "token": token}

    return json_response(await run(request, op))


async def _create_pair_session(request: Request, body: SessionCreate) -> JSONResponse:
    """``POST /v1/sessions`` for an (identity, template) pair (SPEC §8)."""
    if body.layout not in (None, Layout.FLAT.value):
        raise InvalidInput("a session for an (identity, template) pair is always flat")
    identity_id, template_id = body.identity_id, body.template_id
    assert identity_id is not None
    assert template_id is not None

    def op(engine: Engine, principal: Principal) -> dict[str, Any]:
        principal.require_unlimited(Scope.WRITE)
        principal.require(Scope.READ, agents=False)
        key = principal.api_key
        session_principal = handed_principal(
            None if key is None else key.principal,
            admin=principal.viewer is None,
            requested=_requested_principal(body),
        )
        session, token = engine.identities.create_session(
            identity_id,
            template_id,
            mount_root=body.mount_root or DEFAULT_PAIR_MOUNT_ROOT,
            title=body.title,
            ttl_s=body.ttl_s,
            api_key_id=None if key is None else key.id,
            principal=session_principal,
        )
        return {**session_out(session), "token": token}

    return json_response(await run(request, op))


@router.get("/v1/sessions", responses=doc(SessionPage))
async def list_sessions(
    request: Request,
    memory_store_id: str | None = None,
    include_archived: bool = False,
    limit: LimitQuery = DEFAULT_PAGE_LIMIT,
    page: PageQuery = None,
) -> JSONResponse:
    """``client.beta.sessions.list``: newest first, expired and revoked sessions
    included, archived ones only with ``include_archived``; ``memory_store_id`` keeps
    the sessions attaching that store. A key sees the sessions whose every store it
    may read (a page may then hold fewer than ``limit``); a session token only itself."""

    def op(engine: Engine, principal: Principal) -> dict[str, Any]:
        if principal.session is None:
            principal.require(Scope.READ, memory_store_id)
        result = engine.sessions.list(
            memory_store_id, include_archived=include_archived, limit=limit, cursor=page
        )
        return {
            "data": [session_out(s) for s in result.items if _may_see(principal, s)],
            "next_page": result.next_cursor,
            "prev_page": None,
        }

    return json_response(await run(request, op))


@router.get("/v1/sessions/current", responses=doc(SessionOut))
async def retrieve_current_session(request: Request) -> JSONResponse:
    """The session of the bearer session token, without its token (what a remote mount
    asks first: its stores, their access and mount paths). An API key gets 403
    ``session_not_allowed``: it has no session."""

    def op(engine: Engine, principal: Principal) -> dict[str, Any]:
        if principal.session is None:
            raise PermissionDenied(
                "only a session token has a current session; this credential is an API key",
                code="session_not_allowed",
            )
        return session_out(principal.session)

    return json_response(await run(request, op))


@router.get("/v1/sessions/{session_id}", responses=doc(SessionOut))
async def retrieve_session(request: Request, session_id: str) -> JSONResponse:
    """``client.beta.sessions.retrieve``: a session without its token, readable by
    itself or by a key that may read every store attached to it (404 otherwise)."""

    def op(engine: Engine, principal: Principal) -> dict[str, Any]:
        return session_out(_visible_session(engine, principal, session_id))

    return json_response(await run(request, op))


@router.delete("/v1/sessions/{session_id}", responses=doc(DeletedSession))
async def delete_session(request: Request, session_id: str) -> JSONResponse:
    """``client.beta.sessions.delete``: the session and its attachments are gone, its
    token gets 401. Needs a key that could have created it."""

    def op(engine: Engine, principal: Principal) -> dict[str, Any]:
        _require_handing(principal, _visible_session(engine, principal, session_id))
        engine.sessions.delete(session_id)
        return session_deleted_to_wire(session_id)

    return json_response(await run(request, op))


@router.post("/v1/sessions/{session_id}/archive", responses=doc(SessionOut))
async def archive_session(request: Request, session_id: str) -> JSONResponse:
    """``client.beta.sessions.archive``: the session is ended (its token gets 401) and
    left out of listings unless ``include_archived``. Idempotent. Needs a key that could
    have created it."""

    def op(engine: Engine, principal: Principal) -> dict[str, Any]:
        _require_handing(principal, _visible_session(engine, principal, session_id))
        return session_out(engine.sessions.archive(session_id))

    return json_response(await run(request, op))


@router.post("/v1/sessions/{session_id}/revoke", responses=doc(SessionOut))
async def revoke_session(request: Request, session_id: str) -> JSONResponse:
    """Revokes a session's token (memfs extension; ``memfs session revoke`` does the
    same): from the next request on it gets 401 ``credential_revoked``; the session
    stays listed. Idempotent. Needs a key that could have created it, or the session's
    own token."""

    def op(engine: Engine, principal: Principal) -> dict[str, Any]:
        session = _visible_session(engine, principal, session_id)
        if principal.session is None:
            _require_handing(principal, session)
        return session_out(engine.sessions.revoke(session_id))

    return json_response(await run(request, op))
