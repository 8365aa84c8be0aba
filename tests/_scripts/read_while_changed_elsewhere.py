"""Writes 12 versions of different sizes to WRITER_FILE while a thread reads
READER_FILE (the same memory through another mount) in a loop; after each write it
waits until the reader has read that version. Prints the reads that were no whole
version, as (length, NUL count) pairs: ``[]`` when there were none.

Usage: read_while_changed_elsewhere WRITER_FILE READER_FILE
"""

from __future__ import annotations

import sys
import threading
from functools import partial

from _support.polling import wait_until

SIZES = [20, 9000, 50, 5000, 10, 300]


def content(i: int) -> bytes:
    body = (f"{i:06d}-" * (SIZES[i % 6] // 7 + 1))[: SIZES[i % 6]]
    return f"H{i:06d}\n{body}\n".encode()


def main(wpath: str, rpath: str) -> None:
    valid = {content(i) for i in range(13)} | {b"start\n"}
    bad: list[tuple[int, int]] = []
    seen: set[bytes] = set()
    stop = threading.Event()

    def read_loop() -> None:
        while not stop.is_set():
            with open(rpath, "rb") as f:
                data = f.read()
            seen.add(data)
            if data not in valid:
                bad.append((len(data), data.count(b"\0")))

    def has_read(version: bytes) -> bool:
        return version in seen

    thread = threading.Thread(target=read_loop)
    thread.start()
    try:
        for i in range(1, 13):
            with open(wpath, "wb") as f:
                f.write(content(i))
            wait_until(partial(has_read, content(i)), f"the reader to read version {i}")
    finally:
        stop.set()
        thread.join()
    print(bad)


if __name__ == "__main__":
    main(*sys.argv[1:3])
