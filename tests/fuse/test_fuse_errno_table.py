"""The one errno table of the FUSE layer (memfs/fuse/errno_table.py): SPEC §4 rows, the
most specific class wins, and nothing maps by accident. No mount needed."""

from __future__ import annotations

import errno
import inspect

import pytest

from memfs.core import errors as domain
from memfs.fuse import errors as fs
from memfs.fuse.errno_table import ERRNO_BY_ERROR, errno_for


def _path_conflict() -> domain.PathConflict:
    return domain.PathConflict("taken", conflicting_memory_id="mem_x", conflicting_path="/a")


@pytest.mark.parametrize(
    ("exception", "expected"),
    [
        # SPEC §4 errno table, row by row.
        (fs.ReadOnly("read-only attachment"), errno.EROFS),
        (domain.StoreArchived("archived"), errno.EROFS),
        (domain.ContentTooLarge("too big"), errno.EFBIG),
        (domain.PathTooLong("too long"), errno.ENAMETOOLONG),
        (domain.InvalidPath("bad name"), errno.EINVAL),
        (domain.InvalidContent("not text"), errno.EILSEQ),
        (domain.StoreFull("full"), errno.ENOSPC),
        # SPEC §4 mapping table.
        (fs.CrossStore("other store"), errno.EXDEV),
        (fs.DirectoryNotEmpty("not empty"), errno.ENOTEMPTY),
        (fs.NotSupported("symlink"), errno.EPERM),
        (fs.ReadOnlyAttribute("user.memfs.id"), errno.EPERM),
        (fs.NoSuchAttribute("user.meta.x"), errno.ENODATA),
        (fs.UnknownAttribute("user.other"), errno.ENOTSUP),
        (fs.AttributeTooLarge("value"), errno.E2BIG),
        (fs.TooManyAttributes("17 keys"), errno.ENOSPC),
        (domain.NotFound("gone"), errno.ENOENT),
        (fs.NoSuchEntry("gone"), errno.ENOENT),
        (_path_conflict(), errno.EEXIST),
    ],
)
def test_spec_rows(exception: BaseException, expected: int) -> None:
    assert errno.errorcode[errno_for(exception)] == errno.errorcode[expected]


def test_the_most_specific_class_wins() -> None:
    # ContentTooLarge is an InvalidContent, PathTooLong an InvalidPath: both have their own.
    assert issubclass(domain.ContentTooLarge, domain.InvalidContent)
    assert errno_for(domain.ContentTooLarge("x")) == errno.EFBIG
    assert issubclass(domain.PathTooLong, domain.InvalidPath)
    assert errno_for(domain.PathTooLong("x")) == errno.ENAMETOOLONG

    class NarrowerPathTooLong(domain.PathTooLong):
        pass

    assert errno_for(NarrowerPathTooLong("x")) == errno.ENAMETOOLONG


def test_a_refused_write_reports_the_errno_of_its_cause() -> None:
    cause = domain.InvalidContent("not UTF-8")
    assert errno_for(fs.RefusedWrite("refused", cause=cause)) == errno.EILSEQ
    too_big = domain.ContentTooLarge("too big")
    assert errno_for(fs.RefusedWrite("refused", cause=too_big)) == errno.EFBIG


def test_anything_else_is_eio() -> None:
    assert errno_for(ValueError("a bug")) == errno.EIO
    assert errno_for(domain.CorruptedStore("bad blob")) == errno.EIO


def test_every_error_class_has_a_considered_entry() -> None:
    """A new error class must get a row (or deliberately inherit one): list them all."""
    classes = [
        cls for module in (domain, fs) for cls in vars(module).values()
        if inspect.isclass(cls) and issubclass(cls, Exception) and cls.__module__ == module.__name__
    ]
    inheriting = {fs.RefusedWrite, domain.InvalidStoreField, domain.InvalidCursor,
                  domain.HeadVersionRedaction, domain.NotRestorable, domain.PreconditionFailed,
                  domain.PathConflict, domain.StoreBound,
                  # SPEC §10: a bad point is bad input (EINVAL), a redacted past a
                  # conflict of state (EEXIST); no mount operation takes a point yet.
                  domain.InvalidPoint, domain.RedactedContent}
    missing = [c.__name__ for c in classes if c not in ERRNO_BY_ERROR and c not in inheriting]
    assert missing == []
