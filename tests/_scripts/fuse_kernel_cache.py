"""The programs of tests/fuse/test_fuse_kernel_cache.py, each a function named by the
first argument and given the rest.

Usage: fuse_kernel_cache CASE ARG…
"""

from __future__ import annotations

import ctypes
import os
import struct
import sys
from collections.abc import Callable

SYS_GETDENTS64 = 217  # x86_64


def append_with_cached_attributes(target: str) -> None:
    """Appends a line to TARGET, and stats it before the close commits (so the kernel
    caches the attributes of before the commit)."""
    with open(target, "a") as f:
        f.write("one more line\n")
        f.flush()
        os.fstat(f.fileno())  # attributes cached by the kernel before the commit
        os.stat(target)


def list_while_removing(directory: str) -> None:
    """Reads DIRECTORY with getdents64(2) and a small buffer (one readdir request per
    call): after the first batch, removes every entry not in it, then reads the rest.
    Prints the first batch's names, then the rest's, one line each."""
    libc = ctypes.CDLL(None, use_errno=True)
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    buffer = ctypes.create_string_buffer(512)

    def batch() -> list[str]:
        n = libc.syscall(SYS_GETDENTS64, fd, buffer, len(buffer))
        assert n >= 0, ctypes.get_errno()
        names, pos, raw = [], 0, buffer.raw[:n]
        while pos < n:
            reclen = struct.unpack_from("<H", raw, pos + 16)[0]
            names.append(raw[pos + 19:pos + reclen].split(b"\0", 1)[0].decode())
            pos += reclen
        return names

    first = batch()
    for name in os.listdir(directory):
        if name not in first:
            os.unlink(os.path.join(directory, name))
    rest = []
    while chunk := batch():
        rest += chunk
    print(" ".join(first))
    print(" ".join(rest))


CASES: dict[str, Callable[..., None]] = {
    f.__name__: f for f in (append_with_cached_attributes, list_while_removing)
}

if __name__ == "__main__":
    CASES[sys.argv[1]](*sys.argv[2:])
