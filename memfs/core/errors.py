"""The domain exception tree of memfs.

Every layer below the edges (model, rules, store engine) raises only these
classes. Each edge translates them in exactly one table: the FUSE layer to an
errno (``memfs/fuse/errno_table.py``), the HTTP edges to a status and an
``error.type`` (``memfs/wire/errors.py``), the CLI to one printed line and an
exit status.

::

    MemfsError
    ├── InvalidInput                    bad input; nothing changed
    │   ├── InvalidPath                 SPEC §1 path rules
    │   │   └── PathTooLong             path > 1,024 bytes or 20 segments, a segment > 255 bytes
    │   ├── InvalidContent              not UTF-8 text, or forbidden control chars
    │   │   └── ContentTooLarge         content > 102,400 bytes
    │   ├── InvalidMetadata             SPEC §1 metadata rules (names every problem)
    │   ├── InvalidStoreField           store name / description rules
    │   ├── InvalidCursor               a pagination cursor we did not issue
    │   ├── InvalidTtl                  a session lifetime outside 1 s – 30 days
    │   ├── InvalidRecord               a record header breaks a SPEC §6 rule
    │   ├── InvalidPoint                a point of history that names no moment (SPEC §10)
    │   └── SearchUnavailable           a kind of search this server can't answer
    ├── NotFound                        unknown id, deleted memory, other store's id
    ├── Conflict                        state conflicts (HTTP 409)
    │   ├── PathConflict                path (or a prefix/descendant) is occupied
    │   ├── PreconditionFailed          content_sha256 precondition mismatch
    │   ├── HeadVersionRedaction        head version of a live memory can't be redacted
    │   ├── NotRestorable               restore of a memory that is not soft-deleted
    │   ├── RedactedContent             the past asked for is redacted (SPEC §10)
    │   └── StoreBound                  archive/delete of a store still mounted on a pair
    ├── StoreArchived                   write to an archived store
    ├── StoreFull                       the per-store memory limit is reached
    ├── PermissionDenied                credential lacks a scope / read-only attachment
    ├── AuthenticationFailed            missing or invalid credential
    │   ├── CredentialExpired           a session token past its expires_at
    │   └── CredentialRevoked           a revoked key, a revoked or archived session
    ├── TooManyAttempts                 too many failed sign-ins from one client; wait
    ├── StoreBusy                       the database stayed locked past the busy timeout
    ├── StorageFull                     the disk under the database or a durable file is full
    ├── DatabaseUnavailable             the database can't be opened as asked
    │   ├── DatabaseNotFound            no database there, and creating one was not asked
    │   ├── DatabaseReadOnly            a write to a database opened (or only readable) read-only
    │   ├── ForeignDatabase             a database that is not memfs's; left untouched
    │   └── DatabaseUnreachable         the database server refused, restarted or dropped us
    ├── CorruptedStore                  an invariant fsck checks was found broken
    └── BackendUnavailable              the store can't be asked now (a remote server away)

``REGISTRY`` maps every class's ``code`` (``details.error_code`` on the wire) back to
the class. How each class crosses HTTP (its status and ``error.type``) is not this
module's business: the one table of that is :mod:`memfs.wire.errors`.
"""

from __future__ import annotations

__all__ = [
    "REGISTRY",
    "AuthenticationFailed",
    "BackendUnavailable",
    "Conflict",
    "ContentTooLarge",
    "CorruptedStore",
    "CredentialExpired",
    "CredentialRevoked",
    "DatabaseNotFound",
    "DatabaseReadOnly",
    "DatabaseUnavailable",
    "DatabaseUnreachable",
    "ForeignDatabase",
    "HeadVersionRedaction",
    "InvalidContent",
    "InvalidCursor",
    "InvalidInput",
    "InvalidMetadata",
    "InvalidPath",
    "InvalidPoint",
    "InvalidRecord",
    "InvalidStoreField",
    "InvalidTtl",
    "MemfsError",
    "NotFound",
    "NotRestorable",
    "PathConflict",
    "PathTooLong",
    "PermissionDenied",
    "PreconditionFailed",
    "RedactedContent",
    "SearchUnavailable",
    "StoreArchived",
    "StoreBound",
    "StorageFull",
    "StoreBusy",
    "StoreFull",
    "TooManyAttempts",
]


class MemfsError(Exception):
    """Base of every error memfs raises on purpose.

    Attributes:
        message: one human-readable line naming the problem.
        code: a stable machine-readable code (``details.error_code`` on the wire).
    """

    code: str = "memfs_error"

    def __init__(self, message: str, *, code: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code

    def __str__(self) -> str:
        return self.message


class InvalidInput(MemfsError):
    """Raised when a request is malformed or breaks a SPEC §1 rule; nothing changed."""

    code = "invalid_input"


class InvalidPath(InvalidInput):
    """Raised when a memory path breaks a SPEC §1 path rule (the message names which)."""

    code = "invalid_path"


class PathTooLong(InvalidPath):
    """Raised when a path exceeds 1,024 UTF-8 bytes or 20 segments, or a segment exceeds
    255 (NAME_MAX); a directory a mount makes, when no file could go in it (19 segments,
    1,022 bytes: :func:`memfs.core.rules.validate_directory_path`)."""

    code = "path_too_long"


class InvalidContent(InvalidInput):
    """Raised when content is not UTF-8 text or holds a control character other than
    ``\\n``, ``\\r``, ``\\t`` (SPEC §1 content rules)."""

    code = "invalid_content"


class ContentTooLarge(InvalidContent):
    """Raised when content exceeds 102,400 bytes (SPEC §1)."""

    code = "content_too_large"


class InvalidMetadata(InvalidInput):
    """Raised when metadata breaks a SPEC §1 metadata rule.

    Attributes:
        problems: one line per problem found, all of them, not just the first.
    """

    code = "invalid_metadata"

    def __init__(self, problems: list[str]) -> None:
        super().__init__("invalid metadata: " + "; ".join(problems))
        self.problems = problems


class InvalidStoreField(InvalidInput):
    """Raised when a store name or description breaks a SPEC §1 rule."""

    code = "invalid_store_field"


class InvalidCursor(InvalidInput):
    """Raised when a pagination cursor is malformed or was issued for another query."""

    code = "invalid_cursor"


class InvalidTtl(InvalidInput):
    """Raised when a session's lifetime is not a whole number of seconds from 1 to 30
    days (SPEC §3 credential lifecycle)."""

    code = "invalid_ttl"


class InvalidRecord(InvalidInput):
    """Raised when a memory's front matter makes it a record (``type`` is one of the
    five record types) and a key of it breaks a SPEC §6 rule; nothing changed.

    Attributes:
        key: the key of the first problem (e.g. ``"importance"``,
            ``"relations[0].target"``); ``""`` when unknown (an error rebuilt from a
            wire message).
        problems: one ``"<key>: <rule>"`` line per problem found, all of them.
    """

    code = "invalid_record"

    def __init__(self, message: str, *, key: str = "", problems: list[str] | None = None) -> None:
        super().__init__(message)
        self.key = key
        self.problems = [message] if problems is None else problems


class InvalidPoint(InvalidInput):
    """Raised when a point of a store's history (SPEC §10: ``now``, an RFC 3339 time, a
    snapshot name, a ``memver_`` id) names no moment of it: unparsable text, a time in
    the future, a snapshot or a version the store does not have. The message names the
    point and what is wrong with it. A time before the store existed is not an error
    (the store was empty then)."""

    code = "invalid_point"


class SearchUnavailable(InvalidInput):
    """Raised when semantic search is asked for and no embedding model is configured
    (SPEC §7: the message names the setting, ``MEMFS_SEARCH_MODEL_DIR``); full-text
    search keeps working."""

    code = "search_unavailable"


class NotFound(MemfsError):
    """Raised when an id is unknown, deleted, or belongs to another store."""

    code = "not_found"


class Conflict(MemfsError):
    """Base of state conflicts (HTTP 409)."""

    code = "conflict"


class PathConflict(Conflict):
    """Raised when a path is occupied by a live memory, or by a memory above or below it
    (``/a`` and ``/a/b`` can't coexist, SPEC §1).

    Attributes:
        conflicting_memory_id: the ``mem_…`` id of the memory in the way; None when it
            is a record hidden from the caller (SPEC §6: it does not exist for it).
        conflicting_path: that memory's path; None likewise.
    """

    code = "memory_path_conflict"

    def __init__(
        self, message: str, *, conflicting_memory_id: str | None, conflicting_path: str | None
    ) -> None:
        super().__init__(message)
        self.conflicting_memory_id = conflicting_memory_id
        self.conflicting_path = conflicting_path


class PreconditionFailed(Conflict):
    """Raised when ``content_sha256`` does not match the head (SPEC §2 optimistic
    concurrency).

    Attributes:
        actual_sha256: the head's digest at the time of the check.
    """

    code = "memory_precondition_failed"

    def __init__(self, message: str, *, actual_sha256: str) -> None:
        super().__init__(message)
        self.actual_sha256 = actual_sha256


class HeadVersionRedaction(Conflict):
    """Raised when redacting the head version of a live memory (SPEC §2 redaction)."""

    code = "head_version_redaction"


class NotRestorable(Conflict):
    """Raised when restoring a memory that is live, redacted, or whose path is taken."""

    code = "not_restorable"


class RedactedContent(Conflict):
    """Raised when a view of the past asks for content that was redacted since (SPEC §2,
    §10: redaction wins, a redacted version shows as redacted, never as content): a
    memory read by id at a point where its version is redacted. The message names the
    memory, the point and the redacted version."""

    code = "redacted_content"


class StoreBound(Conflict):
    """Raised when a store still mounted on an (identity, template) pair is archived or
    deleted without ``force``, or a system-managed default store is deleted while its
    pair has mounts (SPEC §8). The message names the bindings."""

    code = "store_bound"


class StoreArchived(MemfsError):
    """Raised on a write the archive rule forbids (SPEC §2 archive)."""

    code = "store_archived"


class StoreFull(MemfsError):
    """Raised when a create would exceed the per-store memory limit (SPEC §1 limits)."""

    code = "store_full"


class PermissionDenied(MemfsError):
    """Raised when the caller's credential lacks the scope, store or access mode needed."""

    code = "permission_denied"


class AuthenticationFailed(MemfsError):
    """Raised when a credential is missing, unknown or revoked."""

    code = "authentication_failed"


class CredentialExpired(AuthenticationFailed):
    """Raised when a session token is used after its ``expires_at`` (SPEC §3)."""

    code = "credential_expired"


class CredentialRevoked(AuthenticationFailed):
    """Raised when a credential was revoked: an API key, a session (revoked by itself,
    with the key that created it, or archived), SPEC §3 credential lifecycle."""

    code = "credential_revoked"


class TooManyAttempts(MemfsError):
    """Raised when one client failed to sign in too often in a short time (the console's
    sign-in form, SPEC §12: rate limiting of failed sign-ins); nothing was looked at,
    and the same attempt may succeed after ``retry_after_s``.

    Attributes:
        retry_after_s: how long to wait before trying again, in seconds.
    """

    code = "too_many_attempts"

    def __init__(self, message: str, *, retry_after_s: float) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class StoreBusy(MemfsError):
    """Raised when the database stayed locked by another writer (or, on SQLite, a
    checkpoint) for longer than the busy timeout; nothing was changed, and the same
    call may be retried (contention gives a typed outcome, never a 500).

    Attributes:
        retry_after_s: a suggested wait before retrying, in seconds.
    """

    code = "store_busy"

    def __init__(self, message: str, *, retry_after_s: float = 1.0) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class StorageFull(MemfsError):
    """Raised when a write found no space: the filesystem under the database or a durable
    file of memfs's answered ``ENOSPC``/``EDQUOT``, or SQLite ``SQLITE_FULL``. Nothing was
    written (the transaction rolled back, the file was not replaced); the same call may
    succeed once space is freed, and reads keep working meanwhile.

    Attributes:
        path: the file or directory that could not grow, when known (shown by
            ``memfs status``); None when the driver did not say.
        retry_after_s: a suggested wait before retrying, in seconds.
    """

    code = "storage_full"

    def __init__(
        self, message: str, *, path: str | None = None, retry_after_s: float = 5.0
    ) -> None:
        super().__init__(message)
        self.path = path
        self.retry_after_s = retry_after_s


class DatabaseUnavailable(MemfsError):
    """Base of the reasons a database can't be opened as asked; nothing was changed."""

    code = "database_unavailable"


class DatabaseNotFound(DatabaseUnavailable):
    """Raised when opening a SQLite database file that does not exist, by a caller that
    did not ask to create it (``Engine(url, create=False)``)."""

    code = "database_not_found"


class DatabaseReadOnly(DatabaseUnavailable):
    """Raised when a write reaches a database opened read-only (``Engine(read_only=…)``,
    or a SQLite file this user may not write), or one that needs a schema upgrade;
    nothing was changed. Reads keep working."""

    code = "database_read_only"


class ForeignDatabase(DatabaseUnavailable):
    """Raised when a database holds tables but not memfs's schema (no memfs revision in
    ``alembic_version``): memfs refuses it by name and never modifies it."""

    code = "foreign_database"


class DatabaseUnreachable(DatabaseUnavailable):
    """Raised when the database server can't be reached or dropped the connection: it
    refused it, is starting up or shutting down (PostgreSQL SQLSTATE ``57P01``–``57P03``),
    has no connection slot left (``53300``), or the connection was lost mid-transaction
    (SQLSTATE class ``08``, or none at all). The transaction rolled back unless the
    connection was lost during its COMMIT, when the write may have been applied: a
    retry of a write carries its precondition, or looks first. The same call may
    succeed once the server is back.

    Attributes:
        retry_after_s: a suggested wait before retrying, in seconds.
    """

    code = "database_unreachable"

    def __init__(self, message: str, *, retry_after_s: float = 1.0) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class CorruptedStore(MemfsError):
    """Raised when the engine meets a broken invariant (e.g. a blob whose bytes no longer
    hash to its key). ``memfs fsck`` reports the same conditions without raising."""

    code = "corrupted_store"


class BackendUnavailable(MemfsError):
    """Raised when the store can't be asked now (a remote server is unreachable or
    answered 5xx); nothing about the request itself is wrong, and asking again later
    may succeed. Reads of uncached content fail with it (EIO); writes are queued by the
    remote backend instead of raising it (SPEC §4: writes queue durably). Raised by
    backends, never sent by the server (it is sent as its parent is)."""

    code = "backend_unavailable"


def _tree(cls: type[MemfsError]) -> list[type[MemfsError]]:
    """``cls`` and its subclasses defined in this module, in pre-order (as drawn above)."""
    found: list[type[MemfsError]] = [cls]
    for sub in cls.__subclasses__():
        if sub.__module__ == __name__:
            found.extend(_tree(sub))
    return found


# The registry: ``code`` → class, for every class of this module, in the order of the
# tree drawn above (codes are unique: tests/remote/test_error_registry.py).
REGISTRY: dict[str, type[MemfsError]] = {cls.code: cls for cls in _tree(MemfsError)}

