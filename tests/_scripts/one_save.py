"""The Python savers of tests/fuse/test_fuse_one_save.py, each a function named by the
first argument and given the rest: how Python programs save a file atomically.

Usage: one_save CASE ARG…
"""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Callable

from atomicwrites import atomic_write

from _scripts import errno_name


def atomicwrites_rename(path: str, content: str) -> None:
    """``atomic_write(path, overwrite=True)``: a ``mkstemp`` file beside PATH
    (``tmpXXXXXXXX``), written, fsync'd, renamed over it."""
    with atomic_write(path, overwrite=True) as f:
        f.write(content)


def atomicwrites_link(path: str, content: str) -> None:
    """``atomic_write(path)``, whose default ``overwrite=False`` is the no-clobber rename:
    ``link(temporary, path)`` then ``unlink(temporary)``; prints ``EEXIST`` when PATH
    exists (the temporary file is removed then)."""
    try:
        with atomic_write(path) as f:
            f.write(content)
    except OSError as e:
        print(errno_name(e))


def named_temporary_replace(path: str, content: str) -> None:
    """``tempfile.NamedTemporaryFile(dir=…, delete=False)``, written, then ``os.replace``."""
    with tempfile.NamedTemporaryFile("w", dir=os.path.dirname(path), delete=False) as f:
        f.write(content)
    os.replace(f.name, path)


def mkstemp_replace(path: str, content: str) -> None:
    """``tempfile.mkstemp(dir=…)``, written, closed, then ``os.replace``."""
    fd, temporary = tempfile.mkstemp(dir=os.path.dirname(path))
    with os.fdopen(fd, "w") as f:
        f.write(content)
    os.replace(temporary, path)


def hold_temp(directory: str, content: str) -> None:
    """The first half of a save: ``mkstemp`` in DIRECTORY, CONTENT written, closed. Prints
    the temporary file's name (the test's signal), then waits for the end of its standard
    input and exits without renaming: the test kills the mount's daemon meanwhile."""
    fd, temporary = tempfile.mkstemp(dir=directory)
    with os.fdopen(fd, "w") as f:
        f.write(content)
    print(os.path.basename(temporary), flush=True)
    sys.stdin.read()


CASES: dict[str, Callable[..., None]] = {
    f.__name__: f
    for f in (
        atomicwrites_rename, atomicwrites_link, named_temporary_replace, mkstemp_replace,
        hold_temp,
    )
}

if __name__ == "__main__":
    CASES[sys.argv[1]](*sys.argv[2:])
