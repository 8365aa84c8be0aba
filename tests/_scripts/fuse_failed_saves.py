"""The writers of tests/fuse/test_fuse_failed_saves.py, each a function named by the
first argument and given the rest.

Usage: fuse_failed_saves CASE ARG…
"""

from __future__ import annotations

import ast
import os
import shutil
import sys
from collections.abc import Callable

from _scripts import errno_name


def overwrite(path: str, flags: str, writes: str, truncate_to: str) -> None:
    """Opens PATH with FLAGS (an int), then makes WRITES (the repr of a list of
    ``(offset, bytes)``: offset None is write(2) looped until all is written or refused,
    a negative one an ftruncate(2) to TRUNCATE_TO, any other a pwrite(2)); prints each
    refusal and what the close says."""
    fd = os.open(path, int(flags))
    for offset, data in ast.literal_eval(writes):
        try:
            if offset is None:
                while data:
                    data = data[os.write(fd, data):]
            elif offset < 0:
                os.ftruncate(fd, int(truncate_to))
            else:
                os.pwrite(fd, data, offset)
        except OSError as e:
            print("write", errno_name(e))
    try:
        os.close(fd)
        print("close ok")
    except OSError as e:
        print("close", errno_name(e))


def write_too_much(path: str) -> None:
    """Python's own ``open(…, "w").write`` of 200,000 characters; prints the refusal."""
    try:
        with open(path, "w") as f:
            f.write("y" * 200000)
    except OSError as e:
        print(e.strerror)


def copy(source: str, destination: str) -> None:
    """``shutil.copy``; prints the refusal."""
    try:
        shutil.copy(source, destination)
    except OSError as e:
        print(e.strerror)


CASES: dict[str, Callable[..., None]] = {
    f.__name__: f for f in (overwrite, write_too_much, copy)
}

if __name__ == "__main__":
    CASES[sys.argv[1]](*sys.argv[2:])
