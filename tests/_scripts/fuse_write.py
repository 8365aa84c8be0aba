"""The writers of tests/fuse/test_fuse_write.py, each a function named by the first
argument and given the rest (paths on the mount; numbers as text).

Usage: fuse_write CASE ARG…
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable

from _scripts import errno_name


def many_writes(path: str) -> None:
    """Appends 50 lines to PATH, flushing after each, in one open."""
    with open(path, "a") as f:
        for i in range(50):
            f.write(f"line {i}\n")
            f.flush()


def fsync_then_close(path: str) -> None:
    """Creates PATH, fsyncs, prints ``synced``, then closes a dup and the descriptor."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT)
    os.write(fd, b"durable\n")
    os.fsync(fd)
    print("synced")
    fd2 = os.dup(fd)
    os.close(fd)
    os.close(fd2)


def rewrite_then_read(path: str) -> None:
    """Rewrites PATH, then prints what a new open reads."""
    with open(path, "w") as f:
        f.write("rewritten\n")
    with open(path) as f:
        print(f.read(), end="")


def control_byte(path: str) -> None:
    """Appends a BEL to PATH; prints what the write and the close say."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    try:
        os.write(fd, b"bell\x07\n")
    except OSError as e:
        print("write", errno_name(e))
    try:
        os.close(fd)
    except OSError as e:
        print("close", errno_name(e))
    else:
        print("close ok")


def cut_utf8(path: str) -> None:
    """Truncates PATH and writes a UTF-8 sequence cut short; prints the close's errno."""
    fd = os.open(path, os.O_WRONLY | os.O_TRUNC)
    os.write(fd, b"caf\xc3")  # a UTF-8 sequence cut short: only the whole shows it
    try:
        os.close(fd)
    except OSError as e:
        print(errno_name(e))


def one_byte_too_many(path: str, limit: str) -> None:
    """Fills PATH to LIMIT bytes, then appends one more; prints the write's and the
    close's errno."""
    with open(path, "w") as f:
        f.write("x" * int(limit))
    fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    try:
        os.write(fd, b"y")
    except OSError as e:
        print("write", errno_name(e))
    try:
        os.close(fd)
    except OSError as e:
        print("close", errno_name(e))


def create_many(directory: str, count: str) -> None:
    """Creates DIRECTORY/n0.md … n{COUNT-1}.md."""
    for i in range(int(count)):
        with open(directory + f"/n{i}.md", "w") as f:
            f.write("x\n")


CASES: dict[str, Callable[..., None]] = {
    f.__name__: f
    for f in (many_writes, fsync_then_close, rewrite_then_read, control_byte, cut_utf8,
              one_byte_too_many, create_many)
}

if __name__ == "__main__":
    CASES[sys.argv[1]](*sys.argv[2:])
