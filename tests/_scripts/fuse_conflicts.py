"""Writers meeting another writer (tests/fuse/test_fuse_conflicts.py and
test_fuse_append.py), each a function named by the first argument and given the rest.

Usage: fuse_conflicts CASE ARG…
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable

from memfs.core.model import Actor
from memfs.store import open_engine


def close_after_another_writer(path: str, store_id: str, memory_path: str) -> None:
    """Opens PATH for writing, lets the engine write ``theirs`` (like the API), then
    writes ``mine`` and closes; prints ``closed``."""
    f = open(path, "r+")  # noqa: SIM115 (held across the other write)
    assert f.read() == "hello\n"
    engine = open_engine()  # another writer, through the engine (like the API)
    memory = engine.memories.get_by_path(store_id, memory_path)
    engine.for_caller(actor=Actor.api_key("apikey_other")).memories.update(
                         store_id,
                         memory.id,
                         content="theirs\n",
                     )
    engine.close()
    f.seek(0)
    f.write("mine\n")
    f.truncate()
    f.close()  # succeeds: nothing is lost
    print("closed")


def close_after_a_delete(path: str, store_id: str, memory_id: str) -> None:
    """Appends to PATH, lets the engine delete the memory, then closes; prints
    ``closed``."""
    f = open(path, "a")  # noqa: SIM115 (held across the delete)
    f.write("appended\n")
    f.flush()
    engine = open_engine()
    engine.memories.delete(store_id, memory_id)
    engine.close()
    f.close()  # nothing is lost: the content is stored again
    print("closed")


def rename_while_written(path: str, new_path: str, then_append: str = "") -> None:
    """Appends ``line2`` to PATH, renames it to NEW_PATH before the close, then (with
    THEN_APPEND) appends that text by the new name."""
    f = open(path, "a")  # noqa: SIM115 (held across the rename)
    f.write("line2\n")
    f.flush()
    os.rename(path, new_path)
    f.close()
    if then_append:
        with open(new_path, "a") as g:  # and once more, by its new name
            g.write(then_append)


CASES: dict[str, Callable[..., None]] = {
    f.__name__: f for f in (close_after_another_writer, close_after_a_delete, rename_while_written)
}

if __name__ == "__main__":
    CASES[sys.argv[1]](*sys.argv[2:])
