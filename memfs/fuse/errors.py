"""Conditions only the filesystem has, raised by the namespace and operations layers.

The domain errors of :mod:`memfs.core.errors` cover everything the store can refuse. A few
refusals exist only on a mount (a rename across stores, a non-empty ``rmdir``, a
symlink); they are typed here so that every errno still comes from the one table in
:mod:`memfs.fuse.errno_table` and no handler picks a number itself.

::

    FilesystemError
    ├── NoSuchEntry             the name is not in the directory
    ├── EntryExists             the name is taken (mkdir over an existing entry)
    ├── NotADirectory           a directory operation on a file
    ├── IsADirectory            a file operation on a directory
    ├── DirectoryNotEmpty       rmdir / rename over a directory with entries
    ├── ReadOnly                read-only attachment, archived store or the mount root
    ├── CrossStore              rename between two stores
    ├── NotSupported            symlink, hard link, mknod (no such thing as a memory)
    ├── NoSuchAttribute         xattr not set
    ├── UnknownAttribute        xattr outside the namespaces memfs serves
    ├── ReadOnlyAttribute       set/remove of a ``user.memfs.*`` attribute
    ├── AttributeTooLarge       xattr name or value beyond the metadata limits
    ├── TooManyAttributes       a 17th ``user.meta.*`` key
    └── RefusedWrite            a close whose content the store refused (or lost)
"""

from __future__ import annotations

__all__ = [
    "AttributeTooLarge",
    "CrossStore",
    "DirectoryNotEmpty",
    "EntryExists",
    "FilesystemError",
    "IsADirectory",
    "NoSuchAttribute",
    "NoSuchEntry",
    "NotADirectory",
    "NotSupported",
    "ReadOnly",
    "ReadOnlyAttribute",
    "RefusedWrite",
    "StaleEntry",
    "TooManyAttributes",
    "UnknownAttribute",
]


class FilesystemError(Exception):
    """Base of the conditions only a mount has; carries one human-readable line."""


class NoSuchEntry(FilesystemError):
    """Raised when a name is not in a directory, or an inode is no longer known."""


class StaleEntry(FilesystemError):
    """Raised by an open whose catch-up found the file deleted or moved elsewhere: the
    path the kernel resolved names it no longer. ``ESTALE`` makes the kernel walk the
    path again with fresh lookups (``LOOKUP_REVAL``), so the open then meets what the
    path names now: nothing (``ENOENT``, or a new file with ``O_CREAT``) or another file
    (SPEC §4 close-to-open)."""


class EntryExists(FilesystemError):
    """Raised when creating a name that is already taken."""


class NotADirectory(FilesystemError):
    """Raised when a directory operation targets a file."""


class IsADirectory(FilesystemError):
    """Raised when a file operation targets a directory."""


class DirectoryNotEmpty(FilesystemError):
    """Raised by rmdir, or by a rename over a directory, when it still has entries."""


class ReadOnly(FilesystemError):
    """Raised on any mutation of a read-only attachment, an archived store or the mount
    root (SPEC §4 errno table, first row)."""


class CrossStore(FilesystemError):
    """Raised when a rename would move an entry between two stores (SPEC §4 mapping)."""


class NotSupported(FilesystemError):
    """Raised by symlink, link and mknod: a store holds only regular files (SPEC §4)."""


class NoSuchAttribute(FilesystemError):
    """Raised when an extended attribute is not set on the inode."""


class UnknownAttribute(FilesystemError):
    """Raised when setting an extended attribute outside ``user.meta.*``."""


class ReadOnlyAttribute(FilesystemError):
    """Raised when setting or removing one of the ``user.memfs.*`` attributes."""


class AttributeTooLarge(FilesystemError):
    """Raised when a ``user.meta.*`` key exceeds 64 characters or a value 512."""


class TooManyAttributes(FilesystemError):
    """Raised when setting a ``user.meta.*`` key would exceed 16 metadata keys."""


class RefusedWrite(FilesystemError):
    """Raised by a close (flush) whose content was refused at commit (it is kept under
    ``rejected/``) or discarded (a redaction of its base): the close reports why.

    Attributes:
        cause: the error that refused the write (e.g. :class:`memfs.core.errors.InvalidContent`).
    """

    def __init__(self, message: str, *, cause: BaseException) -> None:
        super().__init__(message)
        self.cause = cause
