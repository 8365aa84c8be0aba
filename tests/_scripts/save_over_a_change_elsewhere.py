"""A ``sed -i`` style save on MOUNT_FILE racing a write elsewhere: reads the file,
writes a temporary file beside it, writes HEAD_TEXT through OTHER_FILE (the same memory
through another mount), and (with ``applied``) waits until MOUNT has applied that write;
then renames the temporary file over MOUNT_FILE.

Usage: save_over_a_change_elsewhere MOUNT MOUNT_FILE OTHER_FILE HEAD_TEXT at_once|applied
"""

from __future__ import annotations

import os
import sys

from _support.mount import wait_applied

from memfs.store import open_engine


def main(mount: str, path: str, other: str, head: str, when: str) -> None:
    with open(path) as f:
        data = f.read()
    tmp = os.path.join(os.path.dirname(path), "sedAbc125")
    with open(tmp, "w") as f:
        f.write(data.replace("original", "edited"))
    with open(other, "w") as f:
        f.write(head)
    if when == "applied":
        engine = open_engine()
        try:
            wait_applied(mount, engine)
        finally:
            engine.close()
    os.rename(tmp, path)


if __name__ == "__main__":
    main(*sys.argv[1:6])
