"""The one table that turns exceptions into errno values on a mount (SPEC §4 errors).

Lower layers raise the domain errors of :mod:`memfs.errors` and the filesystem-only
conditions of :mod:`memfs.fuse.errors`; only :func:`errno_for` picks a number. The most
specific class wins: the exception's MRO is walked and the first class found in
:data:`ERRNO_BY_ERROR` decides. Anything not in the table is a bug and becomes ``EIO``.
"""

from __future__ import annotations

import errno

from memfs import errors as domain
from memfs.fuse import errors as fs

__all__ = ["ERRNO_BY_ERROR", "errno_for"]

ERRNO_BY_ERROR: dict[type[BaseException], int] = {
    # ---- domain errors (memfs.errors) ------------------------------------------------
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
    domain.CorruptedStore: errno.EIO,
    # A remote server away: a read of content not cached locally can't be answered
    # (writes are queued instead). read(2): EIO "a low-level I/O error".
    domain.BackendUnavailable: errno.EIO,
    # ---- filesystem-only conditions (memfs.fuse.errors) -----------------------------
    fs.FilesystemError: errno.EIO,
    fs.NoSuchEntry: errno.ENOENT,
    fs.EntryExists: errno.EEXIST,
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
