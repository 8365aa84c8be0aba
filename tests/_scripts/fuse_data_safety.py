"""The writers of tests/fuse/test_fuse_data_safety.py, each a function named by the
first argument and given the rest (paths on a mount).

Usage: fuse_data_safety CASE ARG…
"""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Callable

from _scripts import errno_name


def _close(fd: int, *, say_ok: bool = True) -> None:
    """Closes ``fd``; prints ``close ok`` (with ``say_ok``) or ``close ERRNO``."""
    try:
        os.close(fd)
        if say_ok:
            print("close ok")
    except OSError as e:
        print("close", errno_name(e))


def mkstemp_save(notes: str) -> None:
    """An atomic save of NOTES/hello.md through a mkstemp name; prints the file before
    and after, and the listing."""
    target = notes + "/hello.md"
    with open(target) as f:
        print(f.read(), end="")  # this process's view
    fd, name = tempfile.mkstemp(dir=notes)
    os.write(fd, b"hello again\n")
    os.close(fd)
    os.replace(name, target)
    with open(target) as f:
        print(f.read(), end="")
    print(sorted(os.listdir(notes)))


def one_refused_write(path: str) -> None:
    """Creates PATH and writes around refused writes; prints each refusal and the close."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    os.write(fd, b"hello\n")
    attempts: list[Callable[[], object]] = [
        lambda: os.pwrite(fd, b"x", 200000),
        lambda: os.write(fd, b"bell\x07"),
        lambda: os.ftruncate(fd, 200000),
        lambda: os.write(fd, b"after\n"),
    ]
    for attempt in attempts:
        try:
            attempt()
        except OSError as e:
            print(errno_name(e))
    _close(fd)


def oversized_write(path: str) -> None:
    """One write of 200,000 bytes to a new PATH; prints its outcome and the close."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT)
    try:
        print("wrote", os.write(fd, b"x" * 200000))
    except OSError as e:
        print(errno_name(e))
    _close(fd)


def oversized_append(path: str) -> None:
    """Appends 200,000 bytes to PATH, then the rest the first write left; prints each
    outcome and the close's refusal."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    data = b"x" * 200000
    written = os.write(fd, data)
    print("wrote", written)
    try:
        os.write(fd, data[written:])
    except OSError as e:
        print(errno_name(e))
    _close(fd, say_ok=False)


def refused_truncate(path: str) -> None:
    """Truncates PATH beyond the limit; prints the refusal, the size and whether the
    times stayed."""
    before = os.stat(path)
    try:
        os.truncate(path, 200000)
    except OSError as e:
        print(errno_name(e))
    after = os.stat(path)
    print(after.st_size, after.st_mtime_ns == before.st_mtime_ns,
          after.st_ctime_ns == before.st_ctime_ns)


def zero_fill(path: str) -> None:
    """Appends, extends PATH with ftruncate and closes (the NULs stay); then extends it
    again and fills the extension before the close."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    os.write(fd, b"more\n")
    os.ftruncate(fd, 20)
    print(os.fstat(fd).st_size)
    _close(fd)
    fd = os.open(path, os.O_WRONLY)
    os.ftruncate(fd, 12)
    os.pwrite(fd, b"filled", 6)
    os.close(fd)
    print("filled ok")


def every_write_refused(path: str) -> None:
    """Creates PATH and writes only a BEL; prints the write's and the close's errno."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT)
    try:
        os.write(fd, b"\x07")
    except OSError as e:
        print(errno_name(e))
    _close(fd, say_ok=False)


def close_to_open(a: str, b: str) -> None:
    """Writes through mount A, reads through mount B at once, 50 times, for a changed
    file and for new ones; prints how many reads were stale or missing."""
    with open(b + "/c.md") as f:
        print(f.read(), end="")  # B has it cached
    stale = missing = 0
    for i in range(50):
        s = f"value {i} " + "z" * (i % 7) + "\n"
        with open(a + "/c.md", "w") as f:
            f.write(s)
        with open(b + "/c.md") as f:
            stale += f.read() != s
        with open(a + f"/new{i}.md", "w") as f:
            f.write(s)
        try:
            with open(b + f"/new{i}.md") as f:
                stale += f.read() != s
        except FileNotFoundError:
            missing += 1
    print(f"stale {stale}/100, missing {missing}/50")


def exclusive_create(first_path: str, second_path: str) -> None:
    """O_EXCL creates of one name through two mounts; prints the second's refusal."""
    first = os.open(first_path, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    try:
        os.open(second_path, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        print("the second creator won too")
    except OSError as e:
        print(errno_name(e))
    os.write(first, b"owner a\n")
    os.close(first)


CASES: dict[str, Callable[..., None]] = {
    f.__name__: f
    for f in (mkstemp_save, one_refused_write, oversized_write, oversized_append,
              refused_truncate, zero_fill, every_write_refused, close_to_open,
              exclusive_create)
}

if __name__ == "__main__":
    CASES[sys.argv[1]](*sys.argv[2:])
