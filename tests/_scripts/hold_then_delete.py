"""Opens HELD with MODE, deletes the same file through ELSEWHERE (the other mount),
waits until HELD's mount (at MOUNT) has applied the delete, then writes TEXT (if given)
and closes. (A name held open stays listed until its close: the status file's ``seq``
says when the delete was applied.)

Usage: hold_then_delete MOUNT HELD ELSEWHERE MODE [TEXT]
"""

from __future__ import annotations

import os
import sys

from _support.mount import wait_applied

from memfs.store import open_engine


def main(mount: str, held: str, elsewhere: str, mode: str, text: str | None = None) -> None:
    f = open(held, mode)  # noqa: SIM115 (held across the delete)
    os.unlink(elsewhere)
    engine = open_engine()
    try:
        wait_applied(mount, engine, 10)
    finally:
        engine.close()
    if text is not None:
        f.write(text)
    f.close()


if __name__ == "__main__":
    main(*sys.argv[1:6])
