"""Namespace operations of tests/fuse/test_fuse_namespace.py, test_fuse_editors.py and
test_fuse_records.py, each a function named by the first argument and given the rest.

Usage: fuse_namespace CASE ARG…
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable


def read_after_unlink(path: str) -> None:
    """Opens PATH, unlinks it, then prints what the open file reads and whether the name
    still exists."""
    with open(path) as f:
        os.unlink(path)
        print(f.read(), end="")
        print(os.path.exists(path))


def save_by_rename(temporary: str, target: str) -> None:
    """Writes TEMPORARY (fsync'd), then renames it over TARGET."""
    with open(temporary, "w") as f:
        f.write("# Plan, v2\n")
        f.flush()
        os.fsync(f.fileno())
    os.replace(temporary, target)


def print_xattrs(path: str, *names: str) -> None:
    """Prints the value of each extended attribute NAME of PATH, one a line."""
    for name in names:
        print(os.getxattr(path, name).decode())


CASES: dict[str, Callable[..., None]] = {
    f.__name__: f for f in (read_after_unlink, save_by_rename, print_xattrs)
}

if __name__ == "__main__":
    CASES[sys.argv[1]](*sys.argv[2:])
