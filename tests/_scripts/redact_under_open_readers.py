"""Opens FILE twice for reading (reading once through the first), redacts its memory
through the engine, waits until the file leaves the listing, then prints what each
descriptor reads again: the bytes' repr, or the errno of the refusal.

Usage: redact_under_open_readers FILE STORE_ID /PATH EXPECTED_CONTENT
"""

from __future__ import annotations

import os
import sys

from _support.polling import wait_until

from memfs.core.model import DeleteMode
from memfs.store import open_engine


def main(path: str, store_id: str, memory_path: str, expected: str) -> None:
    read_before = os.open(path, os.O_RDONLY)
    assert os.read(read_before, 100) == expected.encode()
    not_read = os.open(path, os.O_RDONLY)
    engine = open_engine()
    memory = engine.memories.get_by_path(store_id, memory_path, with_content=False)
    engine.memories.delete(store_id, memory.id, mode=DeleteMode.REDACT)
    engine.close()
    wait_until(lambda: not os.path.exists(path), "the redacted file to leave the listing")
    for fd in (read_before, not_read):
        try:
            data = os.pread(fd, 100, 0)
        except OSError as exc:
            print(exc.errno)
        else:
            print(repr(data))


if __name__ == "__main__":
    main(*sys.argv[1:5])
