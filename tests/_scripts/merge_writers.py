"""Writers whose saves meet another writer's and are merged (SPEC §4 concurrent writers;
tests/fuse/test_fuse_merging.py, tests/faults/test_remote_merging.py), each a function
named by the first argument and given the rest.

Usage: merge_writers CASE ARG…
"""

from __future__ import annotations

import sys
from collections.abc import Callable


def append_lines(path: str, tag: str, count: str) -> None:
    """Appends ``<tag>-<i>`` for i in 1..COUNT to PATH, one open(O_APPEND)/write/close
    per line (what ``echo … >> log`` in a loop does); prints ``appended``."""
    for i in range(1, int(count) + 1):
        with open(path, "a") as f:
            f.write(f"{tag}-{i}\n")
    print("appended")


def save_over_a_save_elsewhere(path: str, other: str, ours: str, theirs: str) -> None:
    """Opens PATH for reading and writing and reads it (the base), saves THEIRS through
    OTHER (the same memory through another mount: committed at its close), then writes
    OURS over PATH and closes; prints what PATH reads afterwards. The two saves are
    given in full, with ``\\n`` for line endings."""
    with open(path, "r+") as f:
        f.read()
        with open(other, "w") as g:
            g.write(theirs.replace("\\n", "\n"))
        f.seek(0)
        f.write(ours.replace("\\n", "\n"))
        f.truncate()
    with open(path) as f:
        print(f.read(), end="")


def append_over_an_append_elsewhere(path: str, other: str) -> None:
    """Appends ``ours`` to PATH through a descriptor held open while ``theirs`` is
    appended through OTHER (another mount: committed at its close); prints what PATH
    reads after the close."""
    with open(path, "a") as f:
        f.write("ours\n")
        f.flush()
        with open(other, "a") as g:
            g.write("theirs\n")
    with open(path) as f:
        print(f.read(), end="")


CASES: dict[str, Callable[..., None]] = {
    f.__name__: f
    for f in (append_lines, save_over_a_save_elsewhere, append_over_an_append_elsewhere)
}

if __name__ == "__main__":
    CASES[sys.argv[1]](*sys.argv[2:])
