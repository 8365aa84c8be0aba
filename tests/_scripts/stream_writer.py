"""Appends one line per open/write/close to PATH, COUNT times, printing each index once
close() returned 0; waits for a line on standard input before write PAUSE_AFTER.

Usage: stream_writer PATH COUNT PAUSE_AFTER
"""

from __future__ import annotations

import sys


def main(path: str, count: str, pause_after: str) -> None:
    for i in range(int(count)):
        if i == int(pause_after):
            sys.stdin.readline()
        with open(path, "a") as f:
            f.write(f"line {i:02d}\n")
        print(i, flush=True)


if __name__ == "__main__":
    main(*sys.argv[1:4])
