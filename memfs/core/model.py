"""Values the engine returns: stores, memories, versions, actors, sessions, keys.

These are immutable pydantic models with no I/O. Field names follow the wire format of
api-contract §4 where one exists, so the API layer serializes them with little code;
fields beyond the wire (``entry_count``, ``metadata`` on memories, …) are the
extensions SPEC §1 allows.
"""

from __future__ import annotations

import enum
import unicodedata
from datetime import UTC, datetime
from typing import Any, Generic, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, field_validator

from memfs.core.errors import InvalidInput

__all__ = [
    "Access",
    "Actor",
    "ActorType",
    "ApiKey",
    "Change",
    "ConsoleSignIn",
    "ChangeKind",
    "DeleteMode",
    "IdentityMount",
    "Layout",
    "Memory",
    "MemoryPrefix",
    "MemoryStatus",
    "MemoryStore",
    "MemoryVersion",
    "Operation",
    "Page",
    "Scope",
    "Session",
    "SessionResource",
    "UserPrincipal",
    "format_timestamp",
    "utcnow",
]


def utcnow() -> datetime:
    """The current time, timezone-aware UTC, microsecond precision."""
    return datetime.now(UTC)


def format_timestamp(value: datetime) -> str:
    """RFC 3339 UTC with microseconds and ``Z``, e.g. ``2026-01-02T03:04:05.123456Z``."""
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class _Frozen(BaseModel):
    # A model's validator is built when it first validates, not at import: a process
    # pays only for the models it validates (README "Performance", CLI start).
    model_config = ConfigDict(frozen=True, defer_build=True)


class ActorType(enum.StrEnum):
    """Who wrote a version (api-contract §4.7)."""

    SESSION = "session_actor"
    API = "api_actor"
    USER = "user_actor"
    SERVICE_ACCOUNT = "service_account_actor"


# The id field each actor type carries on the wire (api-contract §4.7).
_ACTOR_ID_FIELD = {
    ActorType.SESSION: "session_id",
    ActorType.API: "api_key_id",
    ActorType.USER: "user_id",
    ActorType.SERVICE_ACCOUNT: "service_account_id",
}


class Actor(_Frozen):
    """The author of a change: a type and the id of the session, key, user or account.

    ``Actor(type=ActorType.SESSION, id="sesn_…")`` is ``{"type": "session_actor",
    "session_id": "sesn_…"}`` on the wire (:meth:`to_wire`).
    """

    type: ActorType
    id: str

    def to_wire(self) -> dict[str, str]:
        """The api-contract §4.7 object."""
        return {"type": self.type.value, _ACTOR_ID_FIELD[self.type]: self.id}

    @classmethod
    def session(cls, session_id: str) -> Actor:
        return cls(type=ActorType.SESSION, id=session_id)

    @classmethod
    def api_key(cls, api_key_id: str) -> Actor:
        return cls(type=ActorType.API, id=api_key_id)

    @classmethod
    def user(cls, user_id: str) -> Actor:
        return cls(type=ActorType.USER, id=user_id)

    def __str__(self) -> str:
        return f"{self.type.value}:{self.id}"


class Operation(enum.StrEnum):
    """The kind of change a version records (api-contract §6)."""

    CREATED = "created"
    MODIFIED = "modified"
    DELETED = "deleted"


class DeleteMode(enum.StrEnum):
    """Deletion modes of SPEC §2."""

    SOFT_DELETE = "soft_delete"
    REDACT = "redact"
    HARD_DELETE = "hard_delete"


class MemoryStatus(enum.StrEnum):
    """A memory's ``status`` on the wire (seed 004): live, or soft-deleted (restorable).
    Redacted tombstones are never returned, so they have none."""

    ACTIVE = "active"
    DELETED = "deleted"


class Access(enum.StrEnum):
    """Access mode of a store attached to a session (api-contract §7.1)."""

    READ_WRITE = "read_write"
    READ_ONLY = "read_only"


class Layout(enum.StrEnum):
    """How attached stores appear under the mount point (SPEC §4 layouts)."""

    PER_STORE = "per-store"
    FLAT = "flat"


class Scope(enum.StrEnum):
    """API key scopes (SPEC §3)."""

    READ = "memory:read"
    WRITE = "memory:write"
    DELETE = "memory:delete"
    HARD_DELETE = "memory:hard_delete"
    ADMIN = "admin"


class MemoryStore(_Frozen):
    """A memory store (api-contract §4.1) with its counters.

    ``entry_count`` and ``total_size_bytes`` count live (not soft-deleted) memories and
    their content bytes; fsck checks them against the rows.

    SPEC §8: ``identity_id`` and ``template_id`` name the (identity, template) pair whose
    system-managed default store this is (both None for a store a user created);
    ``identity_template_count`` is how many pairs mount it (``binding_info`` on the wire).
    """

    id: str
    name: str
    description: str
    metadata: dict[str, str]
    created_at: datetime
    updated_at: datetime
    archived_at: datetime | None
    entry_count: int
    total_size_bytes: int
    identity_id: str | None = None
    template_id: str | None = None
    identity_template_count: int = 0
    version_retention_s: int | None = None  # SPEC §2 retention; None keeps versions forever
    forked_from: str | None = None  # SPEC §10 fork: the origin store's id; None: no fork
    fork_base: str | None = None  # the origin's memver_ at the fork's base point (a point)

    @property
    def archived(self) -> bool:
        return self.archived_at is not None

    @property
    def system_managed(self) -> bool:
        """True for the default store memfs created for a pair (SPEC §8)."""
        return self.identity_id is not None

    @property
    def status(self) -> Literal["active", "archived"]:
        """``active`` or ``archived`` (SPEC §8 store ``status``)."""
        return "archived" if self.archived else "active"


class IdentityMount(_Frozen):
    """A store mounted on an (identity, template) pair (SPEC §8, seed 000's mount record).

    ``access`` is ``read_write`` only for the pair's system-managed default store; every
    explicit mount is ``read_only``. ``name``, ``status`` and ``entry_count`` are the
    mounted store's, read with the mount.
    """

    memory_store_id: str
    identity_id: str
    template_id: str
    access: Access
    system_managed: bool
    name: str
    status: Literal["active", "archived"]
    entry_count: int
    created_at: datetime


class Memory(_Frozen):
    """A live memory (api-contract §4.3).

    ``content`` is None unless the caller asked for it (``view=full``). ``blob_key`` is
    the content-addressed key of its bytes (xxh3-128 hex), internal to memfs.
    ``deleted_at`` is set only on soft-deleted memories returned by restore listings.
    """

    id: str
    memory_store_id: str
    path: str
    content: str | None
    content_sha256: str
    content_size_bytes: int
    memory_version_id: str
    metadata: dict[str, str]
    created_at: datetime
    updated_at: datetime
    blob_key: str
    deleted_at: datetime | None = None


class MemoryPrefix(_Frozen):
    """A directory marker in a depth-limited listing (api-contract §4.4); ends with ``/``."""

    path: str


class MemoryVersion(_Frozen):
    """An immutable version (api-contract §4.6).

    ``content``, ``content_sha256``, ``content_size_bytes`` are None for ``deleted``
    versions and after redaction; ``path`` is None only after redaction. ``reason`` is
    the audited reason of a deletion, if one was given (SPEC §2 deletion modes).
    """

    id: str
    memory_id: str
    memory_store_id: str
    operation: Operation
    created_at: datetime
    content: str | None
    content_sha256: str | None
    content_size_bytes: int | None
    path: str | None
    created_by: Actor | None
    redacted_at: datetime | None
    redacted_by: Actor | None
    reason: str | None = None


class ChangeKind(enum.StrEnum):
    """What a change-feed entry records (SPEC §4: how mounts learn of changes made elsewhere)."""

    MEMORY_WRITTEN = "memory_written"  # created, modified, restored or renamed
    MEMORY_DELETED = "memory_deleted"
    VERSION_REDACTED = "version_redacted"
    STORE_UPDATED = "store_updated"
    STORE_ARCHIVED = "store_archived"
    STORE_DELETED = "store_deleted"
    BLOB_PURGED = "blob_purged"  # bytes erased by redaction or hard delete: drop from caches


class Change(_Frozen):
    """One entry of a store's change feed.

    ``seq`` increases by one per mutation of the store, with no gaps. ``old_path`` is
    set on renames; ``blob_key`` and ``content_sha256`` name the bytes a ``blob_purged``
    entry erased, so every mount drops them from its cache (SPEC §2 redaction). On
    ``memory_written`` entries ``memory_version_id`` and ``content_sha256`` give the new head.
    """

    seq: int
    memory_store_id: str
    kind: ChangeKind
    memory_id: str | None
    path: str | None
    old_path: str | None
    blob_key: str | None
    created_at: datetime
    content_sha256: str | None = None
    memory_version_id: str | None = None


T = TypeVar("T")

# SPEC §6: user ids are 1–128 chars without control characters; roles follow the same
# rule (they are compared with a record's allowed_roles, strings of that kind).
MAX_PRINCIPAL_TEXT_CHARS = 128
MAX_PRINCIPAL_ROLES = 32


def _check_text(what: str, value: object) -> str:
    """``value`` if it is 1–128 characters without control characters (SPEC §6 rule for
    ``user_id``). Raises InvalidInput naming ``what``."""
    if not isinstance(value, str) or not 1 <= len(value) <= MAX_PRINCIPAL_TEXT_CHARS:
        raise InvalidInput(f"{what} must be a string of 1 to {MAX_PRINCIPAL_TEXT_CHARS} characters")
    if any(unicodedata.category(c) == "Cc" for c in value):
        raise InvalidInput(f"{what} must not contain control characters")
    return value


class UserPrincipal(BaseModel):
    """Who an API key or a session speaks for (SPEC §6 "Visibility", §3 credentials).

    Attributes:
        user_id: 1–128 characters, no control characters.
        roles: at most 32 distinct roles, each like a user id; kept sorted.

    Raises (at construction):
        InvalidInput: a value breaking these rules (the validators raise it as is).
    """

    model_config = ConfigDict(frozen=True, defer_build=True)

    user_id: str
    roles: tuple[str, ...] = ()

    @field_validator("user_id")
    @classmethod
    def _valid_user_id(cls, value: str) -> str:
        return _check_text("user_id", value)

    @field_validator("roles")
    @classmethod
    def _valid_roles(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        if len(value) > MAX_PRINCIPAL_ROLES:
            raise InvalidInput(f"a principal has at most {MAX_PRINCIPAL_ROLES} roles")
        return tuple(sorted({_check_text("a role", role) for role in value}))

    def to_wire(self) -> dict[str, object]:
        """``{"user_id": …, "roles": [...]}`` (memfs extension on keys and sessions)."""
        return {"user_id": self.user_id, "roles": list(self.roles)}




class Page(_Frozen, Generic[T]):
    """One page of a keyset-paginated listing; ``next_cursor`` is None on the last page."""

    items: list[T]
    next_cursor: str | None


class SessionResource(_Frozen):
    """A store attached to a session (api-contract §7.2), snapshotted at attach time."""

    memory_store_id: str
    access: Access
    instructions: str | None
    name: str
    description: str
    mount_path: str

    def to_wire(self) -> dict[str, Any]:
        return {
            "type": "memory_store",
            "memory_store_id": self.memory_store_id,
            "access": self.access.value,
            "instructions": self.instructions,
            "name": self.name,
            "description": self.description,
            "mount_path": self.mount_path,
        }


class Session(_Frozen):
    """An attachment of up to 8 stores to one agent sandbox (SPEC §1, §3).

    ``expires_at`` is when its token stops working (None: a session without a token,
    an embedded mount's); ``revoked_at`` when it was revoked (by itself or with the API
    key ``api_key_id`` that created it); ``archived_at`` when it was archived (ended:
    its token no longer works and listings leave it out unless asked). ``principal``
    is the user it speaks for (SPEC §6 visibility), set at creation, never changed.
    """

    id: str
    created_at: datetime
    resources: list[SessionResource]
    title: str | None = None
    expires_at: datetime | None = None
    revoked_at: datetime | None = None
    archived_at: datetime | None = None
    api_key_id: str | None = None
    layout: Layout = Layout.PER_STORE
    principal: UserPrincipal | None = None


class ApiKey(_Frozen):
    """An API key's public record; the secret is never stored or returned after creation.

    ``store_ids`` empty means every store. ``principal`` is the user the key speaks for
    (SPEC §6 visibility), set at creation, never changed; an ``admin`` key sees every
    record whatever its principal.
    """

    id: str
    name: str
    scopes: list[Scope]
    store_ids: list[str]
    created_at: datetime
    revoked_at: datetime | None
    principal: UserPrincipal | None = None

    def allows(self, scope: Scope, store_id: str | None = None) -> bool:
        """True when this key has ``scope`` (``admin`` implies all) on ``store_id``."""
        if self.revoked_at is not None:
            return False
        if Scope.ADMIN not in self.scopes and scope not in self.scopes:
            return False
        return not (store_id is not None and self.store_ids and store_id not in self.store_ids)


class ConsoleSignIn(_Frozen):
    """A person signed in to the console (SPEC §12) with one credential: exactly one of
    ``api_key`` and ``session`` is set, as it is now (a sign-in is only handed out while
    that credential is in force). ``expires_at`` ends the sign-in whatever the credential.
    """

    created_at: datetime
    expires_at: datetime
    api_key: ApiKey | None = None
    session: Session | None = None


ViewName = Literal["basic", "full"]
