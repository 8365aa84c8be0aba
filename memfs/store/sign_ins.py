"""Console sign-ins (SPEC §12): a person signed in to the web console with an API key or
a session token; :class:`ConsoleSignIns` is their facade (``engine.console_sign_ins``).

Owns the ``console_sign_ins`` table. A sign-in is named by a random id (256 bits) that
only the browser holds, in an HttpOnly cookie; the table keeps its SHA-256, so neither a
copy of the database nor a log of it signs anybody in. The sign-in remembers which
credential made it, never the credential's secret, and every :meth:`ConsoleSignIns.resolve`
checks that credential again with the very rules of :mod:`memfs.store.credentials`
(:func:`~memfs.store.credentials.api_key_in_force`,
:func:`~memfs.store.credentials.session_in_force`): revoking the key or the session, or
its token expiring, ends the sign-in at its next request.

Times are the engine's clock (``Engine(clock=…)``), so tests can move past an expiry
without sleeping.
"""

from __future__ import annotations

import secrets
from datetime import datetime, timedelta

from sqlalchemy import Connection, delete, insert, select

from memfs.core.config import CONSOLE_SIGN_IN_TTL_S
from memfs.core.errors import AuthenticationFailed, InvalidTtl
from memfs.core.ids import sha256_of
from memfs.core.model import ApiKey, ConsoleSignIn, Session, format_timestamp
from memfs.store._facade import Facade
from memfs.store.credentials import api_key_in_force, session_in_force
from memfs.store.schema import console_sign_ins

__all__ = ["SIGN_IN_ID_BYTES", "ConsoleSignIns"]

# The random part of a sign-in id, in bytes (256 bits: not guessable, not enumerable).
SIGN_IN_ID_BYTES = 32


class ConsoleSignIns(Facade):
    """Console sign-ins: made from a credential in force, resolved at every request,
    ended by signing out, by expiring, or with their credential (SPEC §12)."""

    def create(
        self,
        *,
        api_key: ApiKey | None = None,
        session: Session | None = None,
        ttl_s: int = CONSOLE_SIGN_IN_TTL_S,
    ) -> tuple[ConsoleSignIn, str]:
        """Signs in with one credential the caller has just authenticated; returns the
        sign-in and its id (for the cookie: shown this once, only its SHA-256 is kept).

        The sign-in lasts ``ttl_s`` seconds, never past the session token's own
        ``expires_at``. Expired sign-ins of anybody are deleted in the same transaction.

        Args:
            api_key: the key signed in with, or None.
            session: the session whose token signed in, or None (exactly one is given).
            ttl_s: the longest the sign-in lasts, in seconds (at least 1).

        Raises:
            InvalidTtl: ``ttl_s`` below 1.
            ValueError: not exactly one of ``api_key`` and ``session``.
            AuthenticationFailed: the credential is no longer in force (revoked between
                authenticating and signing in), as :meth:`resolve`.
        """
        if (api_key is None) == (session is None):
            raise ValueError("a sign-in is made with exactly one of api_key and session")
        if ttl_s < 1:
            raise InvalidTtl(f"a sign-in lasts at least 1 second, not {ttl_s}")
        created = self._parts.clock()
        expires = created + timedelta(seconds=ttl_s)
        if session is not None and session.expires_at is not None:
            expires = min(expires, session.expires_at)
        sign_in_id = secrets.token_urlsafe(SIGN_IN_ID_BYTES)
        with self._write() as conn:
            conn.execute(
                delete(console_sign_ins).where(
                    console_sign_ins.c.expires_at <= format_timestamp(created)
                )
            )
            conn.execute(
                insert(console_sign_ins).values(
                    id_hash=sha256_of(sign_in_id),
                    api_key_id=api_key.id if api_key is not None else None,
                    session_id=session.id if session is not None else None,
                    created_at=format_timestamp(created),
                    expires_at=format_timestamp(expires),
                )
            )
            return _in_force(conn, sign_in_id, created), sign_in_id

    def resolve(self, sign_in_id: str) -> ConsoleSignIn:
        """The sign-in named by ``sign_in_id`` (the cookie's value), with its credential
        as it is now.

        Raises:
            AuthenticationFailed: no such sign-in (never made, signed out, or expired).
            CredentialRevoked: its key or session was revoked (or the session archived).
            CredentialExpired: its session token expired.
        """
        now = self._parts.clock()
        with self._read() as conn:
            return _in_force(conn, sign_in_id, now)

    def delete(self, sign_in_id: str) -> None:
        """Signs out: the sign-in named by ``sign_in_id`` is gone (nothing when it is
        already)."""
        with self._write() as conn:
            conn.execute(
                delete(console_sign_ins).where(console_sign_ins.c.id_hash == sha256_of(sign_in_id))
            )


def _in_force(conn: Connection, sign_in_id: str, now: datetime) -> ConsoleSignIn:
    """See :meth:`ConsoleSignIns.resolve`."""
    row = conn.execute(
        select(console_sign_ins).where(console_sign_ins.c.id_hash == sha256_of(sign_in_id))
    ).first()
    if row is None:
        raise AuthenticationFailed("not signed in (unknown or ended sign-in)")
    expires_at = datetime.fromisoformat(row.expires_at)
    if expires_at <= now:
        raise AuthenticationFailed(f"the sign-in expired at {row.expires_at}; sign in again")
    if row.api_key_id is not None:
        return ConsoleSignIn(
            created_at=datetime.fromisoformat(row.created_at),
            expires_at=expires_at,
            api_key=api_key_in_force(conn, row.api_key_id),
        )
    return ConsoleSignIn(
        created_at=datetime.fromisoformat(row.created_at),
        expires_at=expires_at,
        session=session_in_force(conn, row.session_id),
    )
