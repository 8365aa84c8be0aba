"""The one table that turns exceptions into errno values on a mount (SPEC §4 errors).

Lower layers raise the domain errors of :mod:`memfs.core.errors` and the filesystem-only
conditions of :mod:`memfs.fuse.errors`; only :func:`errno_for` picks a number. The most
specific class wins: the exception's MRO is walked and the first class found in
:data:`ERRNO_BY_ERROR` decides. Anything not in the table is a bug and becomes ``EIO``.
:func:`handler` applies the table to every request handler of
:class:`memfs.fuse.operations.Operations`.
"""

from __future__ import annotations

import errno
import functools
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar, cast

import pyfuse3

from memfs import metrics
from memfs.core import errors as domain
from memfs.fuse import errors as fs
from memfs.home import is_disk_full

__all__ = ["ERRNO_BY_ERROR", "errno_for", "handler", "storage_full_of"]

log = logging.getLogger("memfs.fuse.operations")

ERRNO_BY_ERROR: dict[type[BaseException], int] = {
    # ---- domain errors (memfs.core.errors) ------------------------------------------------
    domain.MemfsError: errno.EIO,
    domain.InvalidInput: errno.EINVAL,
    # SPEC §4: invalid path component (whitespace, control/format chars, not NFC, `\`).
    domain.InvalidPath: errno.EINVAL,
    # SPEC §4: component > 255 bytes / path > 1,024 bytes. path_resolution(7):
    # "ENAMETOOLONG ... a component exceeded NAME_MAX or the pathname PATH_MAX".
    domain.PathTooLong: errno.ENAMETOOLONG,
    # SPEC §4: content that is not UTF-8 text or has forbidden control characters.
    # errno(3): EILSEQ "Invalid or incomplete multibyte or wide character".
    domain.InvalidContent: errno.EILSEQ,
    # SPEC §4: content beyond 102,400 bytes. write(2): EFBIG "An attempt was made to
    # write a file that exceeds the implementation-defined maximum file size".
    domain.ContentTooLarge: errno.EFBIG,
    domain.InvalidMetadata: errno.EINVAL,
    # SPEC §6: a record header that breaks a rule is refused at close with EINVAL.
    domain.InvalidRecord: errno.EINVAL,
    domain.NotFound: errno.ENOENT,
    # The only conflicts a mount can meet unhandled are path conflicts (a name taken by
    # another writer between our lookup and our commit); precondition failures are
    # resolved by the conflict-copy rule of SPEC §4 before they get here.
    domain.Conflict: errno.EEXIST,
    domain.StoreArchived: errno.EROFS,
    # SPEC §4: store full. write(2)/open(2): ENOSPC "no room for the new file".
    domain.StoreFull: errno.ENOSPC,
    # Read-only attachments are refused locally with ReadOnly (EROFS); a credential
    # lacking a scope is an access problem. open(2): EACCES.
    domain.PermissionDenied: errno.EACCES,
    domain.AuthenticationFailed: errno.EACCES,
    # SPEC §3: an expired or revoked session token is a credential that no longer works.
    domain.CredentialExpired: errno.EACCES,
    domain.CredentialRevoked: errno.EACCES,
    # SPEC §1: a session TTL outside 1 s .. 30 days is bad input.
    domain.InvalidTtl: errno.EINVAL,
    # SPEC §7: semantic search asked for without a model; no mount operation searches.
    domain.SearchUnavailable: errno.EINVAL,
    # The database stayed locked past the busy timeout; nothing was committed, so the
    # caller may try again. errno(3): EAGAIN "Resource temporarily unavailable".
    domain.StoreBusy: errno.EAGAIN,
    # SPEC §12: the console's sign-in rate limit; no mount operation signs in, but a
    # refusal that passes with time is EAGAIN "Resource temporarily unavailable".
    domain.TooManyAttempts: errno.EAGAIN,
    # No space under the database or a durable file: write(2)'s ENOSPC "The device
    # containing the file ... has no room for the data"; nothing was committed.
    domain.StorageFull: errno.ENOSPC,
    # The database file is missing, foreign or can't be opened: a low-level I/O error.
    domain.DatabaseUnavailable: errno.EIO,
    domain.DatabaseNotFound: errno.EIO,
    domain.ForeignDatabase: errno.EIO,
    # The database server refused or dropped the connection (restarting, say); nothing
    # was committed. errno(3): EAGAIN "Resource temporarily unavailable".
    domain.DatabaseUnreachable: errno.EAGAIN,
    # A write to a database opened read-only (or that this user may not write).
    # open(2)/write(2): EROFS "a write on a read-only filesystem".
    domain.DatabaseReadOnly: errno.EROFS,
    domain.CorruptedStore: errno.EIO,
    # A remote server away: a read of content not cached locally can't be answered
    # (writes are queued instead). read(2): EIO "a low-level I/O error".
    domain.BackendUnavailable: errno.EIO,
    # A database this daemon may only read (read-only file, or a schema upgrade is
    # due): every write is refused as on a read-only filesystem. write(2): EROFS.
    domain.DatabaseReadOnly: errno.EROFS,
    # ---- filesystem-only conditions (memfs.fuse.errors) -----------------------------
    fs.FilesystemError: errno.EIO,
    fs.NoSuchEntry: errno.ENOENT,
    fs.EntryExists: errno.EEXIST,
    fs.StaleEntry: errno.ESTALE,
    fs.NotADirectory: errno.ENOTDIR,
    fs.IsADirectory: errno.EISDIR,
    # rmdir(2): ENOTEMPTY "pathname contains entries other than . and ..".
    fs.DirectoryNotEmpty: errno.ENOTEMPTY,
    # SPEC §4: read-only attachment, archived store, mount root.
    fs.ReadOnly: errno.EROFS,
    # rename(2): EXDEV "oldpath and newpath are not on the same mounted filesystem";
    # mv(1) then falls back to copy + unlink, which is what SPEC §4 asks for.
    fs.CrossStore: errno.EXDEV,
    # symlink(2), link(2), mknod(2): EPERM "the filesystem ... does not support the
    # creation of symbolic links / hard links / the type of node requested".
    fs.NotSupported: errno.EPERM,
    # getxattr(2): ENODATA (ENOATTR) "The named attribute does not exist".
    fs.NoSuchAttribute: errno.ENODATA,
    # setxattr(2): ENOTSUP "The namespace prefix of name is not valid"; cp(1) and rsync(1)
    # treat ENOTSUP as "this filesystem has no such xattrs" and carry on.
    fs.UnknownAttribute: errno.ENOTSUP,
    # setxattr(2): EPERM "The file is marked immutable"; user.memfs.* mirror the store.
    fs.ReadOnlyAttribute: errno.EPERM,
    # setxattr(2): E2BIG "The size of name or value exceeds a filesystem-specific limit".
    fs.AttributeTooLarge: errno.E2BIG,
    # setxattr(2): ENOSPC "insufficient space remaining to store the extended attribute".
    fs.TooManyAttributes: errno.ENOSPC,
}


def errno_for(exc: BaseException) -> int:
    """The errno a mount reports for ``exc``.

    Args:
        exc: any exception; :class:`memfs.fuse.errors.RefusedWrite` reports the errno of
            the write refusal it carries.

    Returns:
        The entry of the most specific class of ``exc`` in :data:`ERRNO_BY_ERROR`;
        ``errno.EIO`` when no class of its MRO is in the table.
    """
    if isinstance(exc, fs.RefusedWrite):
        return errno_for(exc.cause)
    for cls in type(exc).__mro__:
        found = ERRNO_BY_ERROR.get(cls)
        if found is not None:
            return found
    return errno.EIO


F = TypeVar("F", bound=Callable[..., Awaitable[Any]])


def storage_full_of(exc: BaseException) -> domain.StorageFull | None:
    """The full disk ``exc`` reports, or None: a :class:`memfs.core.errors.StorageFull`
    (carried by a RefusedWrite too), or an OSError ``ENOSPC``/``EDQUOT`` that reached
    a handler unconverted (named by its file)."""
    if isinstance(exc, fs.RefusedWrite):
        exc = exc.cause
    if isinstance(exc, domain.StorageFull):
        return exc
    if is_disk_full(exc):
        assert isinstance(exc, OSError)
        where = None if exc.filename is None else str(exc.filename)
        return domain.StorageFull(str(exc), path=where)
    return None


def _shown(args: tuple[Any, ...]) -> tuple[Any, ...]:
    """A handler's first three arguments as a log line shows them: a buffer (``write``'s
    data, an xattr value) as ``<N bytes>``, never its content."""
    return tuple(
        f"<{len(arg)} bytes>" if isinstance(arg, (bytes, bytearray, memoryview)) else arg
        for arg in args[:3]
    )


def _bookkeep(action: Callable[[], None], what: str) -> None:
    """Runs bookkeeping of an error path (the status file): its own failure is logged
    and dropped, never raised out of a handler or turned into another errno."""
    try:
        action()
    except Exception as exc:  # the errno of the request must stay the one it earned
        log.error("could not record %s: %s: %s", what, type(exc).__name__, exc)


def handler(fn: F) -> F:
    """Runs a request handler so that it raises nothing but ``FUSEError``.

    Domain and filesystem errors become their errno (this table, most specific class
    wins); a full disk (:class:`memfs.core.errors.StorageFull`, or an ``ENOSPC``/``EDQUOT``
    OSError) is ``ENOSPC`` and is recorded in the status file of the handler's object
    (``self.status``: ``memfs status`` says "disk full"); anything else is a bug:
    logged with its traceback, recorded in the status file, reported as EIO. Recording
    never raises out of here (README "A full disk").
    """

    operation = fn.__name__
    # Bound once: every request of a mount passes here (`find` sends 224).
    count = metrics.FUSE_REQUESTS.count
    clock = time.perf_counter

    @functools.wraps(fn)
    async def wrapper(self: Any, *args: Any) -> Any:
        # Counted by operation and errno (memfs.metrics): two dict lookups and a few
        # additions in the finally clause, no I/O.
        started = clock()
        answered = "OK"
        try:
            return await fn(self, *args)
        except pyfuse3.FUSEError as exc:
            answered = errno.errorcode.get(exc.errno, str(exc.errno))
            raise
        except Exception as exc:
            full = storage_full_of(exc)
            if full is not None:
                answered = "ENOSPC"
                log.debug("%s%r: ENOSPC (%s)", fn.__name__, _shown(args), exc)
                _bookkeep(lambda: self.status.record_storage_full(full.path), "a full disk")
                raise pyfuse3.FUSEError(errno.ENOSPC) from None
            if isinstance(exc, (domain.MemfsError, fs.FilesystemError)):
                code = errno_for(exc)
                answered = errno.errorcode[code]
                log.debug("%s%r: %s (%s)", fn.__name__, _shown(args), answered, exc)
                raise pyfuse3.FUSEError(code) from None
            answered = "EIO"
            log.exception("unexpected error in %s%r", fn.__name__, _shown(args))
            message = f"{fn.__name__}: {type(exc).__name__}: {exc}"
            _bookkeep(lambda: self.status.record_error(message), "an error")
            raise pyfuse3.FUSEError(errno.EIO) from None
        finally:
            count(operation, answered, clock() - started)

    return cast(F, wrapper)
