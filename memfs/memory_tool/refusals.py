"""The one table that turns exceptions into the memory tool's error texts.

The memory front ends (the SDK memory tool, the MCP server) answer a refused command with
one line of text, in the words of the SDK's reference implementation
(``anthropic.lib.tools.BetaLocalFilesystemMemoryTool``) where it has words for the
condition, and in the same style where memfs has conditions it does not (the 100 KB
limit, SPEC §1 path and content rules, read-only attachments, archived stores,
concurrent writers). A refusal is a :class:`Refused`; each front end turns it into its
own shape in one place (``ToolError`` for the memory tool, ``isError`` results and
JSON-RPC errors for MCP, keyed on :attr:`Refused.kind`).

Lower layers raise the domain errors of :mod:`memfs.core.errors`; only :func:`refusal_for`
picks a text. The most specific class wins: the exception's MRO is walked and the first
class found in :data:`REFUSAL_BY_ERROR` decides (the shape of
``memfs/fuse/errno_table.py``). Anything else is a bug: it is logged and answered as an
internal error.
"""

from __future__ import annotations

import enum
import logging

from memfs.core import errors as domain
from memfs.core.config import MAX_CONTENT_BYTES

__all__ = ["REFUSAL_BY_ERROR", "Refused", "RefusalKind", "refusal_for"]

log = logging.getLogger(__name__)


class RefusalKind(enum.StrEnum):
    """What kind of refusal a text is; the MCP edge maps each to a JSON-RPC error code."""

    INVALID = "invalid"  # bad input: path rules, content rules, a bad argument
    NOT_FOUND = "not_found"  # no such file or directory (or store)
    EXISTS = "exists"  # the path or destination is taken
    READ_ONLY = "read_only"  # read-only attachment, archived store, the /memories root
    CONFLICT = "conflict"  # a concurrent writer won; nothing was overwritten
    FULL = "full"  # the store holds its limit of memories
    DENIED = "denied"  # the credential may not do this
    UNAVAILABLE = "unavailable"  # the server can't be asked now
    INTERNAL = "internal"  # a bug or a broken store; logged


class Refused(Exception):
    """A memory command was refused; :attr:`text` is what the model reads.

    Attributes:
        text: one line (or a few) in the tool's words.
        kind: the class of refusal (:class:`RefusalKind`).
    """

    def __init__(self, text: str, kind: RefusalKind = RefusalKind.INVALID) -> None:
        super().__init__(text)
        self.text = text
        self.kind = kind

    def __str__(self) -> str:
        return self.text


# (kind, template); templates see {path} (the path the command named, as given) and
# {message} (the domain error's own line).
REFUSAL_BY_ERROR: dict[type[BaseException], tuple[RefusalKind, str]] = {
    domain.MemfsError: (
        RefusalKind.INTERNAL,
        "memfs could not complete this command on {path}: {message}",
    ),
    domain.InvalidInput: (RefusalKind.INVALID, "Invalid input for {path}: {message}"),
    # SPEC §1 path rules (segments, NFC, control characters, 20 segments).
    domain.InvalidPath: (RefusalKind.INVALID, "Invalid path {path}: {message}"),
    # SPEC §1: path ≤ 1,024 bytes, segment ≤ 255 bytes (NAME_MAX).
    domain.PathTooLong: (RefusalKind.INVALID, "Invalid path {path}: {message}"),
    # SPEC §1 content rules: memories are UTF-8 text; no binary, no control characters
    # other than \n, \r, \t.
    domain.InvalidContent: (
        RefusalKind.INVALID,
        "Cannot write {path}: {message}. Memory files hold UTF-8 text only.",
    ),
    # SPEC §1: content ≤ 102,400 bytes.
    domain.ContentTooLarge: (
        RefusalKind.INVALID,
        "Cannot write {path}: {message}. A memory file holds at most "
        f"{MAX_CONTENT_BYTES:,} bytes (100 KB).",
    ),
    domain.InvalidMetadata: (RefusalKind.INVALID, "Invalid input for {path}: {message}"),
    # Every command looks a path up before it acts; a NotFound afterwards means another
    # writer deleted or renamed it in between. The reference's words for that case.
    domain.NotFound: (
        RefusalKind.NOT_FOUND,
        "The file {path} no longer exists (may have been deleted or renamed concurrently).",
    ),
    domain.Conflict: (RefusalKind.CONFLICT, "Cannot change {path}: {message}"),
    # create: the path (or a directory of that name) exists; the reference's words.
    domain.PathConflict: (RefusalKind.EXISTS, "File {path} already exists"),
    # SPEC §4 concurrent writers: never overwrite a change made since the read.
    domain.PreconditionFailed: (
        RefusalKind.CONFLICT,
        "The file {path} was changed by another writer while this edit was made; nothing "
        "was overwritten. View it again and retry.",
    ),
    # SPEC §2 archive: an archived store is read-only.
    domain.StoreArchived: (
        RefusalKind.READ_ONLY,
        "Cannot modify {path}: its memory store is archived (read-only)",
    ),
    # SPEC §1 limits: 10,000 memories per store (configurable).
    domain.StoreFull: (RefusalKind.FULL, "Cannot create {path}: {message}"),
    # SPEC §3: the server enforces read-only attachments and scopes too.
    domain.PermissionDenied: (RefusalKind.DENIED, "Cannot modify {path}: {message}"),
    domain.AuthenticationFailed: (
        RefusalKind.DENIED,
        "memfs refused the credential of this memory tool: {message}",
    ),
    domain.CorruptedStore: (
        RefusalKind.INTERNAL,
        "memfs found its store damaged while reading {path}: {message}",
    ),
    # The database stayed locked past the busy timeout: nothing was written.
    domain.StoreBusy: (
        RefusalKind.UNAVAILABLE,
        "memfs is busy; {path} was not changed. Try again: {message}",
    ),
    # SPEC §12: the console's sign-in rate limit (the memory tool never signs in): it
    # passes with time, like a busy store.
    domain.TooManyAttempts: (
        RefusalKind.UNAVAILABLE,
        "memfs refused {path} for now (too many attempts). Try again later: {message}",
    ),
    # No space under the database: nothing was written; it works again once space is
    # freed, reads meanwhile too.
    domain.StorageFull: (
        RefusalKind.UNAVAILABLE,
        "memfs's disk is full, so {path} was not changed. Try again once space is freed: "
        "{message}",
    ),
    # The database server is away (restarting, say): a write cut off at its commit may
    # still have been applied, so the model is told to look.
    domain.DatabaseUnreachable: (
        RefusalKind.UNAVAILABLE,
        "memfs's database can't be reached now, so {path} was not read or changed (a "
        "write may still have been applied; view it to check). Try again: {message}",
    ),
    domain.DatabaseUnavailable: (
        RefusalKind.UNAVAILABLE,
        "memfs can't open its database, so {path} was not changed or read: {message}",
    ),
    # A database opened read-only (or one needing a schema upgrade): reads still work.
    domain.DatabaseReadOnly: (
        RefusalKind.READ_ONLY,
        "Cannot modify {path}: memfs's database is read-only here ({message})",
    ),
    # A remote server away (the client's ServerUnavailable): a write whose answer was
    # lost may still have been applied, so the model is told to look.
    domain.BackendUnavailable: (
        RefusalKind.UNAVAILABLE,
        "The memfs server can't be reached now, so {path} was not changed or read "
        "(a write may still have been applied; view it to check): {message}",
    ),
}


def refusal_for(exc: BaseException, path: str) -> Refused:
    """The refusal a memory front end answers for ``exc`` raised while acting on ``path``.

    Args:
        exc: a :class:`Refused` (returned as it is), a domain error, or anything else.
        path: the path the command named, as the model wrote it.

    Returns:
        The entry of the most specific class of ``exc`` in :data:`REFUSAL_BY_ERROR`,
        formatted; an unknown exception is logged and becomes an internal refusal.
    """
    if isinstance(exc, Refused):
        return exc
    for cls in type(exc).__mro__:
        found = REFUSAL_BY_ERROR.get(cls)
        if found is not None:
            kind, template = found
            message = exc.message if isinstance(exc, domain.MemfsError) else str(exc)
            # memfs.core.rules starts some messages with the words the template already has.
            message = message.removeprefix("invalid path: ")
            return Refused(template.format(path=path, message=message), kind)
    log.error("memory command on %s failed unexpectedly", path, exc_info=exc)
    return Refused(
        f"memfs failed on {path} with an internal error ({type(exc).__name__}); "
        "it is logged",
        RefusalKind.INTERNAL,
    )
