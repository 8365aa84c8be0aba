"""Who may see a record: principals, viewers and the visibility rule (SPEC §6, §3).

Pure: no I/O. The store applies the same rule in SQL (``memfs/store/visibility.py``,
a join against the record index) so that every edge inherits it; this module is its
definition and what the store's tests compare against.

* A :class:`UserPrincipal` (``user_id`` and ``roles``) is what an API key or a session
  may carry, set at creation and never changed afterwards (SPEC §3, §6).
* A :class:`Viewer` is what a read is filtered by: the principal of a caller that is not
  an admin, or a caller without one (``user_id`` None). A store caller bound with no
  viewer (``engine.for_caller(viewer=None)``, the engine itself) is unrestricted: an
  ``admin`` key, the insecure development principal, and local callers holding the
  database file itself (the CLI, embedded mounts without a principal), who could read
  every row anyway.

The rule (:func:`is_visible`), SPEC §6 "Visibility":

=============================  ============================================================
memory                         visible to a viewer …
=============================  ============================================================
not a record                   always (visibility is about records only)
record, ``share``/``public``   always (every caller that can read the store)
record, ``private``            whose ``user_id`` is the record's ``user_id`` or one of its
                               ``allowed_users``, or who holds one of ``allowed_roles``
=============================  ============================================================

A viewer without a principal (a plain non-admin key, a session created without one)
therefore sees no ``private`` record at all: the safe reading of "visible only to …".
``scope`` defaults to ``private`` (SPEC §6 table).

Writing (:func:`check_writable`): a restricted viewer may not write a record it could
not see afterwards (it would vanish for its writer, and nothing a user wrote may be
silently lost): refused with PermissionDenied ``record_not_visible``, nothing changed.

Transcripts (:func:`sees_transcript`, SPEC §11: visibility by ``user_id``): a
session's transcript is seen by an unrestricted caller, and by a restricted one when
the session speaks for no user or for the viewer's own user.

Handing (:func:`handed_principal`): a caller hands a new session only what it holds
(SPEC §3): an admin any principal; a key with a principal that principal or the same
user with fewer roles (its own when it names none); a key without a principal none.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from memfs.core.errors import InvalidInput, PermissionDenied
from memfs.core.model import MAX_PRINCIPAL_ROLES, MAX_PRINCIPAL_TEXT_CHARS, UserPrincipal
from memfs.core.records import RecordHeader, RecordScope

__all__ = [
    "MAX_PRINCIPAL_ROLES",
    "MAX_PRINCIPAL_TEXT_CHARS",
    "RECORD_NOT_VISIBLE",
    "RecordScope",
    "RecordVisibility",
    "UserPrincipal",
    "Viewer",
    "check_writable",
    "handed_principal",
    "is_visible",
    "make_principal",
    "sees_transcript",
]

RECORD_NOT_VISIBLE = "record_not_visible"


def make_principal(user_id: str | None, roles: Sequence[str] = ()) -> UserPrincipal | None:
    """The principal of ``user_id`` and ``roles``, or None when neither is given.

    Raises:
        InvalidInput: roles without a user id, or a value breaking the rules of
            :class:`UserPrincipal` (the message names it).
    """
    if user_id is None:
        if roles:
            raise InvalidInput("roles need a user_id: a principal is a user with roles")
        return None
    return UserPrincipal(user_id=user_id, roles=tuple(roles))


@dataclass(frozen=True)
class Viewer:
    """A restricted reader: the principal of a non-admin caller, or none at all.

    ``Viewer.of(None)`` (no principal) sees no private record; see the module table.
    """

    user_id: str | None = None
    roles: frozenset[str] = frozenset()

    @classmethod
    def of(cls, principal: UserPrincipal | None) -> Viewer:
        if principal is None:
            return cls()
        return cls(user_id=principal.user_id, roles=frozenset(principal.roles))

    def describe(self) -> str:
        """``user 'u' (roles a, b)`` or ``a caller without a principal`` (for messages)."""
        if self.user_id is None:
            return "a caller without a principal (user_id)"
        roles = f" (roles {', '.join(sorted(self.roles))})" if self.roles else ""
        return f"user {self.user_id!r}{roles}"


@dataclass(frozen=True)
class RecordVisibility:
    """The fields of a record's header that decide who sees it (SPEC §6).

    ``scope`` is the header's (``private`` when absent); the lists are empty when
    absent.
    """

    scope: RecordScope = RecordScope.PRIVATE
    user_id: str | None = None
    allowed_users: tuple[str, ...] = ()
    allowed_roles: tuple[str, ...] = ()

    @classmethod
    def of(cls, header: RecordHeader | None) -> RecordVisibility | None:
        """The visibility fields of a parsed header (None: not a record)."""
        if header is None:
            return None
        return cls(
            scope=header.scope,
            user_id=header.user_id,
            allowed_users=tuple(header.allowed_users),
            allowed_roles=tuple(header.allowed_roles),
        )


def is_visible(viewer: Viewer | None, record: RecordVisibility | None) -> bool:
    """Whether ``viewer`` sees a memory whose record fields are ``record`` (SPEC §6).

    Args:
        viewer: None for an unrestricted caller (admin, local), which sees everything.
        record: None for a memory that is not a record, which everyone sees.
    """
    if viewer is None or record is None or record.scope is not RecordScope.PRIVATE:
        return True
    if viewer.user_id is None:
        return False
    if viewer.user_id == record.user_id or viewer.user_id in record.allowed_users:
        return True
    return not viewer.roles.isdisjoint(record.allowed_roles)


def check_writable(viewer: Viewer | None, record: RecordVisibility | None, path: str) -> None:
    """Refuses a write that would leave ``viewer`` unable to see what it wrote at ``path``.

    Raises:
        PermissionDenied: code ``record_not_visible``; the message says which header
            keys would make the record visible to the writer.
    """
    if is_visible(viewer, record):
        return
    assert viewer is not None  # an unrestricted viewer sees everything
    raise PermissionDenied(
        f"{path}: this private record would be invisible to its writer, "
        f"{viewer.describe()}; give it 'user_id: {viewer.user_id or '<your user id>'}' "
        "(or list the writer in allowed_users / allowed_roles), or 'scope: share'",
        code=RECORD_NOT_VISIBLE,
    )


def sees_transcript(viewer: Viewer | None, speaks_for: str | None) -> bool:
    """Whether ``viewer`` may read the transcript of a session whose principal's user id
    is ``speaks_for`` (None: the session has no principal); module docstring."""
    if viewer is None or speaks_for is None:
        return True
    return viewer.user_id == speaks_for


def handed_principal(
    holder: UserPrincipal | None, *, admin: bool, requested: UserPrincipal | None
) -> UserPrincipal | None:
    """The principal a new session gets from a caller holding ``holder`` (module
    docstring, "Handing").

    Args:
        holder: the creating credential's principal (None: it has none).
        admin: the creating credential is unrestricted (an ``admin`` key).
        requested: the principal asked for at creation, or None.

    Raises:
        PermissionDenied: code ``principal_not_allowed``: a principal (or roles) the
            caller does not hold.
    """
    if admin:
        return requested
    if requested is None:
        return holder
    if holder is None:
        raise PermissionDenied(
            f"this credential has no principal, so it can't create a session for user "
            f"{requested.user_id!r}; that needs an admin key or a key with that principal",
            code="principal_not_allowed",
        )
    extra_roles = set(requested.roles) - set(holder.roles)
    if requested.user_id != holder.user_id or extra_roles:
        raise PermissionDenied(
            f"this credential speaks for user {holder.user_id!r}"
            + (f" with roles {', '.join(holder.roles)}" if holder.roles else " without roles")
            + f"; it can't hand user {requested.user_id!r}"
            + (f" roles {', '.join(sorted(extra_roles))}" if extra_roles else ""),
            code="principal_not_allowed",
        )
    return requested
