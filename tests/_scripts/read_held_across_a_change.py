"""Holds FILE open for reading (after reading it first, with ``read_first``), changes
its memory to CONTENT through the engine, waits until stat shows the new size, then
prints what the change elsewhere left to read, in MODE:

- ``append``: ``cat`` FILE, ``echo more >> FILE``, then what the held descriptor reads.
- ``sed``: a second open, what the held descriptor reads at 0, ``cat`` FILE, then a
  ``sed -i`` over FILE.

Usage: read_held_across_a_change FILE STORE_ID /PATH CONTENT append|sed [read_first]
"""

from __future__ import annotations

import os
import subprocess
import sys

from _support.polling import wait_until

from memfs.store import open_engine


def main(path: str, store_id: str, memory_path: str, content: str, mode: str,
         read_first: str = "") -> None:
    held = os.open(path, os.O_RDONLY)  # like `exec 3<file`
    if read_first:
        os.read(held, 100)
    engine = open_engine()
    memory = engine.memories.get_by_path(store_id, memory_path, with_content=False)
    engine.memories.update(store_id, memory.id, content=content)
    engine.close()
    wait_until(lambda: os.stat(path).st_size == len(content), "stat to show the new size")
    if mode == "append":
        cat = subprocess.run(["cat", path], capture_output=True, text=True)
        print(cat.stdout, end="")
        subprocess.run(["sh", "-c", "echo more >> " + path], check=True)
        print(os.read(held, 100).decode(), end="")  # like a local file: the latest content
        os.close(held)
        return
    other = os.open(path, os.O_RDONLY)
    print(os.pread(held, 100, 0).decode(), end="")
    cat = subprocess.run(["cat", path], capture_output=True, text=True)
    print(cat.stdout, end="")
    subprocess.run(["sed", "-i", "s/$/ edited/", path], check=True)
    os.close(held)
    os.close(other)


if __name__ == "__main__":
    main(*sys.argv[1:7])
