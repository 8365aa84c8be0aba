"""Credentials: sessions (with their attached stores) and API keys, and the tokens and
secrets that authenticate them; :class:`Sessions` and :class:`ApiKeys` are their facades
(``engine.sessions``, ``engine.api_keys``).

Owns the ``sessions``, ``session_resources`` and ``api_keys`` tables. Tokens
(``memfs_st_…``) and secrets (``memfs_sk_…``) are shown once at creation; only their
SHA-256 is stored. SPEC §3 credential lifecycle: a session token expires (default 24 h,
at most 30 days), a session can be revoked or archived (both end its token), and
revoking an API key revokes every session it created, in the same transaction.

Principals (SPEC §6 visibility): a key or a session may carry the user it
speaks for (``principal_user_id``, ``principal_roles_json``), written at creation and
by nothing else — no function here updates them.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Connection, Row, delete, insert, select, update

from memfs.core import rules
from memfs.core.config import DEFAULT_SESSION_TTL_S, MAX_SESSION_TTL_S, MAX_STORES_PER_SESSION
from memfs.core.errors import (
    AuthenticationFailed,
    CredentialExpired,
    CredentialRevoked,
    InvalidInput,
    InvalidTtl,
    NotFound,
    StoreArchived,
)
from memfs.core.ids import new_id, sha256_of
from memfs.core.model import Access, ApiKey, Layout, Page, Scope, Session, SessionResource, utcnow
from memfs.core.visibility import UserPrincipal
from memfs.store._common import Cursor, check_limit, lock_store, now, parse_ts, store_row, ts
from memfs.store._facade import Facade
from memfs.store.schema import api_keys, session_events, session_resources, sessions

__all__ = [
    "API_KEY_SECRET_PREFIX",
    "SESSION_TOKEN_PREFIX",
    "ResourceSpec",
    "api_key_in_force",
    "archive_session",
    "authenticate_api_key",
    "authenticate_session",
    "create_api_key",
    "create_session",
    "delete_session",
    "get_session",
    "list_api_keys",
    "list_sessions",
    "revoke_api_key",
    "revoke_session",
    "session_in_force",
]

SESSION_TOKEN_PREFIX = "memfs_st_"
API_KEY_SECRET_PREFIX = "memfs_sk_"


class ResourceSpec:
    """A store to attach to a new session: id, access mode and optional instructions."""

    def __init__(
        self,
        memory_store_id: str,
        access: Access = Access.READ_WRITE,
        instructions: str | None = None,
    ) -> None:
        self.memory_store_id = memory_store_id
        self.access = access
        self.instructions = instructions


def _check_resources(
    resources: Sequence[ResourceSpec], max_stores: int, layout: Layout
) -> None:
    """Raises InvalidInput unless ``resources`` are 1–``max_stores`` distinct stores with
    valid access and instructions (SPEC §3 sessions), and a flat layout has at most one
    ``read_write`` store (SPEC §4: its one writable default)."""
    if not resources:
        raise InvalidInput("a session needs at least one memory store")
    if len(resources) > max_stores:
        raise InvalidInput(f"a session can attach at most {max_stores} memory stores")
    if layout is Layout.FLAT and sum(Access(r.access) is Access.READ_WRITE for r in resources) > 1:
        raise InvalidInput(
            "a flat session has one writable store, its default: attach the others read_only"
        )
    ids = [r.memory_store_id for r in resources]
    if len(set(ids)) != len(ids):
        raise InvalidInput("a memory store can be attached to a session only once")
    for spec in resources:
        rules.validate_instructions(spec.instructions)
        try:
            Access(spec.access)
        except ValueError as exc:
            raise InvalidInput("access must be read_write or read_only") from exc


def _check_ttl(ttl_s: int | None, with_token: bool) -> int | None:
    """The token lifetime in seconds (the default when None), or None without a token.

    Raises:
        InvalidTtl: not an int from 1 to MAX_SESSION_TTL_S (30 days).
        InvalidInput: a ttl for a session without a token.
    """
    if not with_token:
        if ttl_s is not None:
            raise InvalidInput("a session without a token does not expire; ttl_s needs a token")
        return None
    if ttl_s is None:
        return DEFAULT_SESSION_TTL_S
    if not isinstance(ttl_s, int) or isinstance(ttl_s, bool) or not 1 <= ttl_s <= MAX_SESSION_TTL_S:
        raise InvalidTtl(
            f"a session's ttl must be a whole number of seconds from 1 to {MAX_SESSION_TTL_S} "
            f"(30 days), not {ttl_s!r}"
        )
    return ttl_s


def _lock_active_key(conn: Connection, api_key_id: str) -> None:
    """Locks the key row until commit (so a concurrent revocation either committed and
    is seen here, or waits and then revokes the new session too). Raises NotFound,
    CredentialRevoked."""
    row = conn.execute(
        select(api_keys.c.revoked_at).where(api_keys.c.id == api_key_id).with_for_update()
    ).first()
    if row is None:
        raise NotFound(f"API key {api_key_id!r} not found")
    if row.revoked_at is not None:
        raise CredentialRevoked(f"API key {api_key_id!r} is revoked")


def create_session(
    conn: Connection,
    resources: Sequence[ResourceSpec],
    *,
    mount_root: str,
    with_token: bool,
    title: str | None,
    ttl_s: int | None,
    api_key_id: str | None,
    layout: Layout = Layout.PER_STORE,
    max_stores: int = MAX_STORES_PER_SESSION,
    principal: UserPrincipal | None = None,
) -> tuple[Session, str | None]:
    """See :meth:`memfs.store.credentials.Sessions.create`; ``max_stores`` is 8, or 1 + 10
    for an (identity, template) pair's session (SPEC §8)."""
    layout = Layout(layout)
    _check_resources(resources, max_stores, layout)
    lifetime_s = _check_ttl(ttl_s, with_token)
    token = SESSION_TOKEN_PREFIX + secrets.token_urlsafe(32) if with_token else None
    session_id = new_id("session")
    if api_key_id is not None:
        _lock_active_key(conn, api_key_id)
    store_rows = []
    for spec in resources:
        # Locked, so an archive can't commit between this check and our insert.
        row = lock_store(conn, spec.memory_store_id)
        if row.archived_at is not None:
            raise StoreArchived(
                f"memory store {row.id!r} is archived and can't be attached to a session"
            )
        store_rows.append(row)
    slugs = rules.unique_slugs([(r.id, r.name) for r in store_rows])
    created = utcnow()
    conn.execute(
        insert(sessions).values(
            id=session_id,
            title=title,
            token_hash=sha256_of(token) if token else None,
            created_at=ts(created),
            expires_at=(
                None if lifetime_s is None else ts(created + timedelta(seconds=lifetime_s))
            ),
            api_key_id=api_key_id,
            layout=None if layout is Layout.PER_STORE else layout.value,
            **_principal_values(principal),
        )
    )
    root = mount_root.rstrip("/")
    for position, (spec, row) in enumerate(zip(resources, store_rows, strict=True)):
        conn.execute(
            insert(session_resources).values(
                session_id=session_id,
                position=position,
                store_id=row.id,
                access=Access(spec.access).value,
                instructions=spec.instructions,
                name=row.name,
                description=row.description,
                # Flat (SPEC §4): every store is the mount root itself.
                mount_path=(root or "/") if layout is Layout.FLAT else f"{root}/{slugs[row.id]}",
            )
        )
    return get_session(conn, session_id), token


# --- principals (SPEC §6): written once, at creation; read into the models.


def _principal_values(principal: UserPrincipal | None) -> dict[str, str | None]:
    """The principal columns of a new key or session row."""
    if principal is None:
        return {"principal_user_id": None, "principal_roles_json": None}
    return {
        "principal_user_id": principal.user_id,
        "principal_roles_json": json.dumps(list(principal.roles)),
    }


def _principal_of(row: Row[Any]) -> UserPrincipal | None:
    """The principal a key or session row carries, or None."""
    if row.principal_user_id is None:
        return None
    return UserPrincipal(
        user_id=row.principal_user_id, roles=tuple(json.loads(row.principal_roles_json or "[]"))
    )


def _session_row(conn: Connection, session_id: str) -> Row[Any]:
    row = conn.execute(select(sessions).where(sessions.c.id == session_id)).first()
    if row is None:
        raise NotFound(f"session {session_id!r} not found")
    return row


def get_session(conn: Connection, session_id: str) -> Session:
    """A session with its resources (expired, revoked and archived ones too). Raises
    NotFound."""
    return _session_model(conn, _session_row(conn, session_id))


def _session_model(conn: Connection, row: Row[Any]) -> Session:
    resource_rows = conn.execute(
        select(session_resources)
        .where(session_resources.c.session_id == row.id)
        .order_by(session_resources.c.position)
    ).all()
    return Session(
        id=row.id,
        title=row.title,
        created_at=datetime.fromisoformat(row.created_at),
        expires_at=parse_ts(row.expires_at),
        revoked_at=parse_ts(row.revoked_at),
        archived_at=parse_ts(row.archived_at),
        api_key_id=row.api_key_id,
        layout=Layout(row.layout) if row.layout else Layout.PER_STORE,
        principal=_principal_of(row),
        resources=[
            SessionResource(
                memory_store_id=r.store_id,
                access=Access(r.access),
                instructions=r.instructions,
                name=r.name,
                description=r.description,
                mount_path=r.mount_path,
            )
            for r in resource_rows
        ],
    )


def authenticate_session(conn: Connection, token: str) -> Session:
    """See :meth:`memfs.store.credentials.Sessions.authenticate`."""
    row = conn.execute(select(sessions).where(sessions.c.token_hash == sha256_of(token))).first()
    if row is None:
        raise AuthenticationFailed("invalid session token")
    return _session_in_force(conn, row)


def _session_in_force(conn: Connection, row: Row[Any]) -> Session:
    """The session of ``row`` if its token still works (the one statement of when a
    session token stops working, SPEC §3 credential lifecycle)."""
    if row.revoked_at is not None:
        raise CredentialRevoked(f"session {row.id} was revoked at {row.revoked_at}")
    if row.archived_at is not None:
        raise CredentialRevoked(f"session {row.id} was archived at {row.archived_at}")
    if row.expires_at is None or row.expires_at <= now():
        raise CredentialExpired(f"the token of session {row.id} expired at {row.expires_at}")
    return _session_model(conn, row)


def session_in_force(conn: Connection, session_id: str) -> Session:
    """Session ``session_id`` if its token still works: what a console sign-in made
    with that token checks at every request (SPEC §12).

    Raises:
        AuthenticationFailed: no such session (deleted since).
        CredentialRevoked: revoked (itself or with its key) or archived.
        CredentialExpired: past its ``expires_at``.
    """
    row = conn.execute(select(sessions).where(sessions.c.id == session_id)).first()
    if row is None:
        raise AuthenticationFailed(f"session {session_id} no longer exists")
    return _session_in_force(conn, row)


def revoke_session(conn: Connection, session_id: str) -> Session:
    """See :meth:`memfs.store.credentials.Sessions.revoke`."""
    row = _session_row(conn, session_id)
    if row.revoked_at is None:
        conn.execute(update(sessions).where(sessions.c.id == session_id).values(revoked_at=now()))
        row = _session_row(conn, session_id)
    return _session_model(conn, row)


def archive_session(conn: Connection, session_id: str) -> Session:
    """See :meth:`memfs.store.credentials.Sessions.archive`."""
    row = _session_row(conn, session_id)
    if row.archived_at is None:
        conn.execute(update(sessions).where(sessions.c.id == session_id).values(archived_at=now()))
        row = _session_row(conn, session_id)
    return _session_model(conn, row)


def delete_session(conn: Connection, session_id: str) -> None:
    """See :meth:`memfs.store.credentials.Sessions.delete`."""
    _session_row(conn, session_id)
    # Its transcript is data memfs keeps for it (SPEC §11): erased with it.
    conn.execute(delete(session_events).where(session_events.c.session_id == session_id))
    conn.execute(delete(session_resources).where(session_resources.c.session_id == session_id))
    conn.execute(delete(sessions).where(sessions.c.id == session_id))


def list_sessions(
    conn: Connection,
    *,
    store_id: str | None,
    include_archived: bool,
    limit: int,
    cursor: str | None,
) -> Page[Session]:
    """See :meth:`memfs.store.credentials.Sessions.list`."""
    check_limit(limit)
    fingerprint = Cursor.fingerprint("sessions", store_id, include_archived)
    query = select(sessions)
    if store_id is not None:
        query = query.where(
            select(session_resources.c.session_id)
            .where(
                session_resources.c.session_id == sessions.c.id,
                session_resources.c.store_id == store_id,
            )
            .exists()
        )
    if not include_archived:
        query = query.where(sessions.c.archived_at.is_(None))
    if cursor is not None:
        query = query.where(sessions.c.id < str(Cursor.decode(cursor, fingerprint)))
    rows = conn.execute(query.order_by(sessions.c.id.desc()).limit(limit + 1)).all()
    items = [_session_model(conn, r) for r in rows[:limit]]
    next_cursor = Cursor.encode(fingerprint, items[-1].id) if len(rows) > limit and items else None
    return Page[Session](items=items, next_cursor=next_cursor)


def _api_key_model(row: Row[Any]) -> ApiKey:
    return ApiKey(
        id=row.id,
        name=row.name,
        scopes=[Scope(s) for s in json.loads(row.scopes_json)],
        store_ids=json.loads(row.store_ids_json),
        created_at=datetime.fromisoformat(row.created_at),
        revoked_at=parse_ts(row.revoked_at),
        principal=_principal_of(row),
    )


def _api_key_row(conn: Connection, api_key_id: str) -> Row[Any]:
    row = conn.execute(select(api_keys).where(api_keys.c.id == api_key_id)).first()
    if row is None:
        raise NotFound(f"API key {api_key_id!r} not found")
    return row


def create_api_key(
    conn: Connection,
    name: str,
    scopes: Sequence[Scope],
    store_ids: Sequence[str],
    principal: UserPrincipal | None = None,
) -> tuple[ApiKey, str]:
    """See :meth:`memfs.store.credentials.ApiKeys.create`."""
    if not scopes:
        raise InvalidInput("an API key needs at least one scope")
    try:
        clean_scopes = sorted({Scope(s).value for s in scopes})
    except ValueError as exc:
        raise InvalidInput(
            "scopes are memory:read, memory:write, memory:delete, memory:hard_delete, admin"
        ) from exc
    secret = API_KEY_SECRET_PREFIX + secrets.token_urlsafe(32)
    key_id = new_id("api_key")
    for store_id in store_ids:
        store_row(conn, store_id)
    conn.execute(
        insert(api_keys).values(
            id=key_id,
            name=name,
            secret_hash=sha256_of(secret),
            scopes_json=json.dumps(clean_scopes),
            store_ids_json=json.dumps(list(dict.fromkeys(store_ids))),
            created_at=now(),
            **_principal_values(principal),
        )
    )
    return _api_key_model(_api_key_row(conn, key_id)), secret


def list_api_keys(conn: Connection) -> list[ApiKey]:
    """Every key, newest first."""
    rows = conn.execute(select(api_keys).order_by(api_keys.c.id.desc())).all()
    return [_api_key_model(r) for r in rows]


def revoke_api_key(conn: Connection, api_key_id: str) -> ApiKey:
    """See :meth:`memfs.store.credentials.ApiKeys.revoke`."""
    row = _api_key_row(conn, api_key_id)
    if row.revoked_at is None:
        revoked = now()
        conn.execute(update(api_keys).where(api_keys.c.id == api_key_id).values(revoked_at=revoked))
        # SPEC §3: revoking a key revokes every session it created.
        conn.execute(
            update(sessions)
            .where(sessions.c.api_key_id == api_key_id, sessions.c.revoked_at.is_(None))
            .values(revoked_at=revoked)
        )
    return _api_key_model(_api_key_row(conn, api_key_id))


def authenticate_api_key(conn: Connection, secret: str) -> ApiKey:
    """See :meth:`memfs.store.credentials.ApiKeys.authenticate`."""
    row = conn.execute(select(api_keys).where(api_keys.c.secret_hash == sha256_of(secret))).first()
    if row is None:
        raise AuthenticationFailed("invalid API key")
    return _api_key_in_force(row)


def _api_key_in_force(row: Row[Any]) -> ApiKey:
    """The key of ``row`` if it is not revoked (SPEC §3 credential lifecycle)."""
    if row.revoked_at is not None:
        raise CredentialRevoked(f"API key {row.id} was revoked at {row.revoked_at}")
    return _api_key_model(row)


def api_key_in_force(conn: Connection, api_key_id: str) -> ApiKey:
    """Key ``api_key_id`` if it is not revoked: what a console sign-in made with its
    secret checks at every request (SPEC §12).

    Raises:
        AuthenticationFailed: no such key.
        CredentialRevoked: the key is revoked.
    """
    row = conn.execute(select(api_keys).where(api_keys.c.id == api_key_id)).first()
    if row is None:
        raise AuthenticationFailed(f"API key {api_key_id} no longer exists")
    return _api_key_in_force(row)


class Sessions(Facade):
    """Sessions: creating, authenticating, listing and ending them (SPEC §3)."""

    def create(
        self,
        resources: Sequence[ResourceSpec],
        *,
        mount_root: str = "/mnt/memory",
        with_token: bool = True,
        title: str | None = None,
        ttl_s: int | None = None,
        api_key_id: str | None = None,
        layout: Layout = Layout.PER_STORE,
        principal: UserPrincipal | None = None,
    ) -> tuple[Session, str | None]:
        """Attaches 1–8 non-archived stores; returns the session and its token (once).

        Each resource snapshots the store's name and description and gets a mount path
        ``<mount_root>/<slug>`` (SPEC §4 per-store layout; collisions get ``-2``, ``-3``),
        or ``<mount_root>`` itself in the flat layout (which has at most one
        ``read_write`` store, its default).
        The token is ``memfs_st_…``; only its SHA-256 is stored. It expires ``ttl_s``
        seconds after creation (``Session.expires_at``; SPEC §3 credential lifecycle).

        Args:
            with_token: False for an embedded mount's session: no token, no expiry.
            ttl_s: the token's lifetime in seconds, 1 to 30 days (2,592,000); None means
                the default, 24 h (:data:`memfs.core.config.DEFAULT_SESSION_TTL_S`).
            api_key_id: the API key creating the session (the API passes its caller's);
                revoking that key revokes the session. None for local callers.
            principal: the user the session speaks for (SPEC §6 visibility), kept for
                its whole life; None for none. Who may hand which principal is the
                caller's rule (the API's: a key hands its own, an admin key any).

        Raises:
            InvalidInput: no store, more than 8, a store twice, bad access or instructions,
                a ttl without a token.
            InvalidTtl: ttl_s not an int from 1 to 2,592,000.
            NotFound: an unknown store or API key.
            CredentialRevoked: ``api_key_id`` is revoked.
            StoreArchived: an archived store can't be attached.
        """
        with self._write() as conn:
            return create_session(
                conn,
                resources,
                mount_root=mount_root,
                with_token=with_token,
                title=title,
                ttl_s=ttl_s,
                api_key_id=api_key_id,
                layout=layout,
                principal=principal,
            )

    def get(self, session_id: str) -> Session:
        """A session, whatever its state (check ``expires_at``, ``revoked_at``,
        ``archived_at``). Raises NotFound."""
        with self._read() as conn:
            return get_session(conn, session_id)

    def authenticate(self, token: str) -> Session:
        """The session a ``memfs_st_…`` token belongs to, if the token still works.

        Raises:
            AuthenticationFailed: no session has this token.
            CredentialRevoked: the session was revoked (itself, or with the API key that
                created it) or archived.
            CredentialExpired: the session's ``expires_at`` has passed.
        """
        with self._read() as conn:
            return authenticate_session(conn, token)

    def revoke(self, session_id: str) -> Session:
        """Revokes a session: its token gets CredentialRevoked from now on (idempotent;
        the session stays listed). Raises NotFound."""
        with self._write() as conn:
            return revoke_session(conn, session_id)

    def archive(self, session_id: str) -> Session:
        """Archives a session (the SDK's ``sessions.archive``): it is ended, its token
        gets CredentialRevoked, and listings leave it out unless ``include_archived``.
        Idempotent. Raises NotFound."""
        with self._write() as conn:
            return archive_session(conn, session_id)

    def delete(self, session_id: str) -> None:
        """Deletes a session, its attachments and its transcript (the SDK's
        ``sessions.delete``); its token then gets AuthenticationFailed. Memories and
        versions it wrote keep its id as their actor. Raises NotFound."""
        with self._write() as conn:
            delete_session(conn, session_id)

    def list(
        self,
        store_id: str | None = None,
        *,
        include_archived: bool = False,
        limit: int = 20,
        cursor: str | None = None,
    ) -> Page[Session]:
        """Sessions newest first (by id), expired and revoked ones included; archived ones
        only with ``include_archived`` (the SDK's ``sessions.list`` default).

        Args:
            store_id: only sessions that attach this store (``memory_store_id=`` of the
                SDK's ``client.beta.sessions.list``); an unknown id gives an empty page.

        Raises:
            InvalidInput: limit outside 1–100.
            InvalidCursor: a cursor from another query.
        """
        with self._read() as conn:
            return list_sessions(
                conn,
                store_id=store_id,
                include_archived=include_archived,
                limit=limit,
                cursor=cursor,
            )


class ApiKeys(Facade):
    """API keys: creating, authenticating, listing and revoking them (SPEC §3)."""

    def create(
        self,
        name: str,
        scopes: Sequence[Scope],
        store_ids: Sequence[str] = (),
        *,
        principal: UserPrincipal | None = None,
    ) -> tuple[ApiKey, str]:
        """Creates a key; returns it and its ``memfs_sk_…`` secret, shown this once.
        ``principal`` is the user it speaks for (SPEC §6 visibility), kept for its
        whole life.

        Raises:
            InvalidInput: no scope, or an unknown scope.
            NotFound: a listed store does not exist.
        """
        with self._write() as conn:
            return create_api_key(conn, name, scopes, store_ids, principal)

    def revoke(self, api_key_id: str) -> ApiKey:
        """Revokes a key and, in the same transaction, every session it created (SPEC §3
        credential lifecycle). Idempotent. Raises NotFound."""
        with self._write() as conn:
            return revoke_api_key(conn, api_key_id)

    def authenticate(self, secret: str) -> ApiKey:
        """The active key with this secret.

        Raises:
            AuthenticationFailed: no key has this secret.
            CredentialRevoked: the key is revoked.
        """
        with self._read() as conn:
            return authenticate_api_key(conn, secret)

    def list(self) -> list[ApiKey]:
        """Every key, newest first (secrets are never stored, so never shown)."""
        with self._read() as conn:
            return list_api_keys(conn)
