"""Two writers over redacted bytes (test_fuse_read): opens NOTES/u.md with an unsaved
change and NOTES/t.md for writing, then through the engine redacts u.md and replaces
t.md, redacting its old version; waits until MOUNT has applied that, and prints what can
still be read, what t.md shows, what closing each writer says, and what grep finds.

No fork while the writers are open: an exec'd child's close-on-exec flushes them too,
and would be the close told of the discarded change.

Usage: redact_under_open_writers MOUNT NOTES STORE_ID
"""

from __future__ import annotations

import os
import subprocess
import sys

from _support.mount import wait_applied

from memfs.core.model import DeleteMode
from memfs.store import open_engine

OLD_T = "token=ZEBRA-SECRET-42\n"


def main(mount: str, notes: str, store_id: str) -> None:
    dirty = os.open(notes + "/u.md", os.O_RDWR)
    os.pwrite(dirty, b"A", 0)  # an unsaved change on the secret
    clean = os.open(notes + "/t.md", os.O_RDWR)  # open for writing, nothing written
    engine = open_engine()
    u = engine.memories.get_by_path(store_id, "/u.md", with_content=False)
    engine.memories.delete(store_id, u.id, mode=DeleteMode.REDACT)
    t = engine.memories.get_by_path(store_id, "/t.md", with_content=False)
    engine.memories.update(store_id, t.id, content="token=<removed>\n")
    old = [v for v in engine.versions.list(store_id, memory_id=t.id).items
           if v.content_size_bytes == len(OLD_T)][0]
    engine.versions.redact(store_id, old.id)
    wait_applied(mount, engine)
    engine.close()
    for directory, _, names in os.walk(notes):
        for name in names:
            with open(os.path.join(directory, name)) as f:
                text = f.read()
            if "SECRET" in text:
                print("readable:", name, text)
    with open(notes + "/t.md") as f:
        print(f.read(), end="")
    os.pwrite(clean, b"!", 0)
    os.close(clean)
    try:
        os.close(dirty)
    except OSError as exc:
        print("close of the dirty writer:", exc.errno)
    print(subprocess.run(["grep", "-r", "SECRET", notes], capture_output=True,
                         text=True).stdout or "grep: nothing")


if __name__ == "__main__":
    main(*sys.argv[1:4])
