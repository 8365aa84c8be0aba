"""Opens FIRST and SECOND (one file through two mounts) for writing, checks both read
``base``, then rewrites and closes FIRST, then SECOND.

Usage: two_writers FIRST SECOND
"""

from __future__ import annotations

import sys


def main(first: str, second: str) -> None:
    a = open(first, "r+")  # noqa: SIM115 (both open at once)
    b = open(second, "r+")  # noqa: SIM115
    assert a.read() == b.read() == "base\n"
    a.seek(0)
    a.write("from the first mount\n")
    a.truncate()
    a.close()
    b.seek(0)
    b.write("from the second mount\n")
    b.truncate()
    b.close()


if __name__ == "__main__":
    main(*sys.argv[1:3])
