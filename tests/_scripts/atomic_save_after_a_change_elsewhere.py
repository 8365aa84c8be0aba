"""Reads A/f.md, writes ``theirs`` through B/f.md (another mount), waits until A shows
that version, then saves ``mine`` over A/f.md with mkstemp + rename; prints what A/f.md
showed before and after.

Usage: atomic_save_after_a_change_elsewhere A B
"""

from __future__ import annotations

import os
import sys
import tempfile

from _support.polling import wait_until


def main(a: str, b: str) -> None:
    with open(a + "/f.md") as f:
        print(f.read(), end="")  # this process's view: v1
    with open(b + "/f.md", "w") as f:  # another mount changes it
        f.write("theirs\n")
    seen = os.getxattr(b + "/f.md", "user.memfs.version_id")
    wait_until(
        lambda: os.getxattr(a + "/f.md", "user.memfs.version_id") == seen,
        "the change to reach mount A", 30,
    )
    fd, name = tempfile.mkstemp(dir=a)
    os.write(fd, b"mine\n")
    os.close(fd)
    os.replace(name, a + "/f.md")
    with open(a + "/f.md") as f:
        print(f.read(), end="")


if __name__ == "__main__":
    main(*sys.argv[1:3])
