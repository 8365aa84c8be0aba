"""Opens FILE with O_TRUNC and writes new text, redacts the memory (its old content)
through the engine, waits until MOUNT has applied that, then closes and prints
``closed``.

Usage: redact_after_truncation MOUNT FILE STORE_ID /PATH
"""

from __future__ import annotations

import os
import sys

from _support.mount import wait_applied

from memfs.core.model import DeleteMode
from memfs.store import open_engine


def main(mount: str, path: str, store_id: str, memory_path: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_TRUNC)
    os.write(fd, b"brand new text\n")
    engine = open_engine()
    memory = engine.memories.get_by_path(store_id, memory_path, with_content=False)
    engine.memories.delete(store_id, memory.id, mode=DeleteMode.REDACT)
    wait_applied(mount, engine)
    engine.close()
    os.close(fd)
    print("closed")


if __name__ == "__main__":
    main(*sys.argv[1:5])
