"""For each line on standard input, appends ``line <i>`` to PATH with
open(O_WRONLY|O_APPEND|O_CREAT)/write/close and prints ``<i> <seconds close() took>``
once close() returned 0; exits at the end of the input.

Usage: timed_appender PATH
"""

from __future__ import annotations

import os
import sys
import time


def main(path: str) -> None:
    for i, _ in enumerate(sys.stdin):
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        os.write(fd, f"line {i}\n".encode())
        started = time.monotonic()
        os.close(fd)
        print(i, time.monotonic() - started, flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
