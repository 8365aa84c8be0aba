"""Who is calling, and may they do this (SPEC §3 access control).

A request carries one credential, either ``Authorization: Bearer <token>`` (what the
``anthropic`` SDK 2.10.0 sends) or ``x-api-key: <token>`` (older SDKs, curl examples),
api-contract §1.2. The token is one of:

* an **API key secret** (``memfs key create``): scopes ``memory:read``,
  ``memory:write``, ``memory:delete``, ``memory:hard_delete``, ``admin`` (implies all),
  optionally limited to listed stores; writes are recorded as ``api_actor``;
* a **session token** (``POST /v1/sessions``, ``memfs session create``): read access to
  exactly the session's stores, write access to its ``read_write`` attachments, nothing
  else; writes are recorded as ``session_actor``.

The two are told apart by the engine's prefixes (``memfs_sk_…`` keys, ``memfs_st_…``
session tokens); any other token is tried as a key, then as a session token.

What each scope allows (one line per route family, enforced by the routes through
:meth:`Principal.require`):

==========================================  ====================  =====================
operation                                   API key needs         session token needs
==========================================  ====================  =====================
any read (stores, memories, versions)       ``memory:read``       store attached
read a store's change feed                  ``memory:read``       store attached
create / update / archive a store           ``memory:write``      refused
create / update / restore a memory          ``memory:write``      ``read_write`` attach.
rename a directory (``rename_prefix``)      ``memory:write``      ``read_write`` attach.
soft delete a memory                        ``memory:delete``     ``read_write`` attach.
delete ``mode=redact``, redact a version    ``memory:delete``     refused
delete ``mode=hard_delete``, delete store   ``memory:hard_delete``  refused
create a session (``read_write`` attach.)   read and write        refused
create a session (``read_only`` attach.)    ``memory:read``       refused
list / retrieve sessions                    ``memory:read`` (1)   itself only
archive / delete a session                  as creating it        refused
revoke a session                            as creating it        itself only
audit trail                                 ``admin``             refused
the caller's own session (``current``)      refused               always
==========================================  ====================  =====================

(1) a key sees the sessions whose every attached store it may read; another is the
404 of an unknown id. A session records the key that created it: revoking the key
revokes it (SPEC §3 credential lifecycle).

A store the caller can't reach — another store's id with a key limited to some stores,
a store not attached to the session — is 404 ``not_found_error`` with the very message of
an unknown id, so that its existence is not revealed (SPEC §3); only the caller's own
read-only attachment is a 403. A missing scope is checked first, and is a 403 whatever
the id.

Deleting a store erases every memory and version permanently, which is what
``hard_delete`` guards (SPEC §2), hence its scope. A key limited to some stores can't
create stores (it could not reach them) and sees only its stores in listings.

``--insecure-dev`` (loopback only, see :mod:`memfs.api.serve`) makes a request without a
valid credential act as :data:`INSECURE_DEV_KEY_ID`, an admin ``api_actor``; valid
credentials keep their normal meaning so session tokens can still be tried out.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from memfs.core.errors import AuthenticationFailed, NotFound, PermissionDenied
from memfs.core.model import Access, Actor, ApiKey, Scope, Session
from memfs.core.visibility import Viewer
from memfs.store import API_KEY_SECRET_PREFIX, SESSION_TOKEN_PREFIX, Caller, Engine

__all__ = [
    "INSECURE_DEV_KEY_ID",
    "SESSION_TOKEN_PREFIX",
    "Principal",
    "authenticate",
    "credential_from_headers",
]

INSECURE_DEV_KEY_ID = "apikey_insecure_dev"


def _scope_missing(message: str) -> PermissionDenied:
    # The SDK maps (403, "api_key_scope_missing") to BetaAPIKeyScopeMissingError.
    return PermissionDenied(message, code="api_key_scope_missing")


def _unreachable(store_id: str) -> NotFound:
    # Word for word the engine's NotFound for an unknown store id, so a caller can't tell
    # a store it may not reach from one that does not exist.
    return NotFound(f"memory store {store_id!r} not found")


@dataclass(frozen=True)
class Principal:
    """The authenticated caller of one request.

    Exactly one of ``api_key`` and ``session`` is set, or neither for the insecure
    development principal.

    Attributes:
        actor: recorded as ``created_by`` / ``redacted_by`` of what it writes.
    """

    actor: Actor
    api_key: ApiKey | None = None
    session: Session | None = None

    @classmethod
    def of_key(cls, key: ApiKey) -> Principal:
        """The principal of an authenticated API key: its writes are ``api_actor``."""
        return cls(actor=Actor.api_key(key.id), api_key=key)

    @classmethod
    def of_session(cls, session: Session) -> Principal:
        """The principal of an authenticated session: its writes are ``session_actor``."""
        return cls(actor=Actor.session(session.id), session=session)

    @property
    def is_session(self) -> bool:
        return self.session is not None

    @property
    def viewer(self) -> Viewer | None:
        """Whose records this caller sees (SPEC §6, :mod:`memfs.core.visibility`): None for
        an ``admin`` key and the insecure development principal (everything), else
        the principal of its key or session (none: no private record)."""
        if self.session is not None:
            return Viewer.of(self.session.principal)
        if self.api_key is not None and Scope.ADMIN not in self.api_key.scopes:
            return Viewer.of(self.api_key.principal)
        return None

    def caller(self, engine: Engine) -> Caller:
        """The engine's facades acting for this principal: its writes name :attr:`actor`,
        its reads see what :attr:`viewer` may (SPEC §6)."""
        return engine.for_caller(actor=self.actor, viewer=self.viewer)

    def can_see(self, store_id: str) -> bool:
        """True when the caller may read ``store_id`` (listing filter)."""
        if self.session is not None:
            return any(r.memory_store_id == store_id for r in self.session.resources)
        if self.api_key is not None:
            return self.api_key.allows(Scope.READ, store_id)
        return True

    def require(self, scope: Scope, store_id: str | None = None, *, agents: bool = True) -> None:
        """Checks that the caller may act with ``scope`` on ``store_id`` (table above).

        Args:
            scope: the scope the operation needs.
            store_id: the store acted on; None for operations on no particular store
                (listing stores, creating one).
            agents: False when session tokens are refused whatever the attachment
                (store administration, redaction, hard deletion).

        Raises:
            PermissionDenied: with ``error_code`` ``api_key_scope_missing`` (key lacks
                the scope), ``read_only_attachment`` or ``session_not_allowed``.
            NotFound: the key is limited to other stores, or the store is not attached
                to the session: the same 404 as an unknown id (module docstring).
        """
        if self.session is not None:
            self._require_session(self.session, scope, store_id, agents=agents)
        elif self.api_key is not None:
            self._require_key(self.api_key, scope, store_id)

    @staticmethod
    def _require_key(key: ApiKey, scope: Scope, store_id: str | None) -> None:
        if not key.allows(scope):
            raise _scope_missing(f"API key {key.id} lacks the scope {scope.value}")
        if store_id is not None and not key.allows(scope, store_id):
            raise _unreachable(store_id)

    @staticmethod
    def _require_session(
        session: Session, scope: Scope, store_id: str | None, *, agents: bool
    ) -> None:
        if not agents or store_id is None or scope in (Scope.HARD_DELETE, Scope.ADMIN):
            raise PermissionDenied(
                f"session {session.id} can't do this; it needs an API key",
                code="session_not_allowed",
            )
        resource = next((r for r in session.resources if r.memory_store_id == store_id), None)
        if resource is None:
            raise _unreachable(store_id)
        if scope is not Scope.READ and resource.access is Access.READ_ONLY:
            raise PermissionDenied(
                f"memory store {store_id} is attached read_only to session {session.id}",
                code="read_only_attachment",
            )

    def require_unlimited(self, scope: Scope) -> None:
        """Like :meth:`require` for operations that create stores: the key must not be
        limited to listed stores, and session tokens are refused.

        Raises:
            PermissionDenied: as :meth:`require`, or ``store_not_allowed``.
        """
        if self.session is not None:
            raise PermissionDenied(
                f"session {self.session.id} can't do this; it needs an API key",
                code="session_not_allowed",
            )
        self.require(scope)
        if self.api_key is not None and self.api_key.store_ids:
            raise PermissionDenied(
                f"API key {self.api_key.id} is limited to listed memory stores and can't "
                "create new ones",
                code="store_not_allowed",
            )


def credential_from_headers(authorization: str | None, x_api_key: str | None) -> str | None:
    """The token of ``Authorization: Bearer <token>`` or of ``x-api-key``, or None.

    Raises:
        AuthenticationFailed: an ``Authorization`` header with another scheme.
    """
    if authorization:
        scheme, _, token = authorization.strip().partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise AuthenticationFailed(
                "the Authorization header must be 'Bearer <API key or session token>'"
            )
        return token.strip()
    if x_api_key and x_api_key.strip():
        return x_api_key.strip()
    return None


def authenticate(engine: Engine, token: str | None, *, insecure_dev: bool = False) -> Principal:
    """Resolves a token to its principal (blocking: call it off the event loop).

    Args:
        engine: the store engine holding keys and sessions.
        token: from :func:`credential_from_headers`; None when the request had none.
        insecure_dev: a missing or unknown token yields the admin development principal.

    Raises:
        AuthenticationFailed: no token, or an unknown one.
        CredentialRevoked: a revoked key, or a revoked, archived or deleted-key's session.
        CredentialExpired: a session token past its ``expires_at``.
    """
    if token is None:
        if insecure_dev:
            return _insecure_dev_principal()
        raise AuthenticationFailed(
            "missing credentials: send 'Authorization: Bearer <key>' or 'x-api-key: <key>'"
        )
    if token.startswith(SESSION_TOKEN_PREFIX):
        attempts: tuple[Callable[[Engine, str], Principal], ...] = (_as_session,)
    elif token.startswith(API_KEY_SECRET_PREFIX):
        attempts = (_as_key,)
    else:
        attempts = (_as_key, _as_session)
    for attempt in attempts:
        try:
            return attempt(engine, token)
        except AuthenticationFailed as refused:
            # A known credential that stopped working says why (credential_revoked,
            # credential_expired): the mount holding it reports that to its user.
            if type(refused) is not AuthenticationFailed and not insecure_dev:
                raise
    if insecure_dev:
        return _insecure_dev_principal()
    raise AuthenticationFailed("invalid credentials: unknown or revoked API key or session token")


def _as_key(engine: Engine, token: str) -> Principal:
    return Principal.of_key(engine.api_keys.authenticate(token))


def _as_session(engine: Engine, token: str) -> Principal:
    return Principal.of_session(engine.sessions.authenticate(token))


def _insecure_dev_principal() -> Principal:
    return Principal(actor=Actor.api_key(INSECURE_DEV_KEY_ID))
