"""Holds FILE open for writing (not written), changes its memory through the engine,
waits until the mount shows that version (and stats it: the kernel caches a size), then
closes, appends ``X`` with O_APPEND and prints ``appended``.

Usage: append_after_a_change_elsewhere FILE STORE_ID /PATH
"""

from __future__ import annotations

import os
import sys

from _support.polling import wait_until

from memfs.store import open_engine


def main(path: str, store_id: str, memory_path: str) -> None:
    # Open for writing (and not written): the mount keeps what it served.
    reader = open(path, "r+")  # noqa: SIM115 (held across the change)
    assert os.stat(path).st_size == 4
    engine = open_engine()  # another writer (like the API or the CLI)
    memory = engine.memories.get_by_path(store_id, memory_path, with_content=False)
    new = engine.memories.update(
                               store_id,
                               memory.id,
                               content="one\nTWO written via API\n",
                           )
    engine.close()
    wait_until(
        lambda: os.getxattr(path, "user.memfs.version_id").decode() == new.memory_version_id,
        "the change to reach the mount",
    )
    os.stat(path)  # the kernel caches a size now
    reader.close()
    fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    os.write(fd, b"X\n")
    os.close(fd)
    print("appended")


if __name__ == "__main__":
    main(*sys.argv[1:4])
