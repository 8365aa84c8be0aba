"""Holds unsaved writes to NOTES/hello.md (appended) and NOTES/new.md (created), prints
``ready``, and after a line on standard input (the store is deleted meanwhile) waits
until the deletion reached the mount (NOTES/projects is gone), then closes both and
prints ``close ok`` or ``close ERRNO`` for each.

The writer never forks while its descriptors are open (an exec'd child's close-on-exec
would flush them before the store is deleted).

Usage: close_after_store_deleted NOTES
"""

from __future__ import annotations

import os
import sys

from _support.polling import wait_until

from _scripts import errno_name


def main(notes: str) -> None:
    old = os.open(notes + "/hello.md", os.O_WRONLY | os.O_APPEND)
    os.write(old, b"unsaved\n")
    new = os.open(notes + "/new.md", os.O_WRONLY | os.O_CREAT)
    os.write(new, b"also unsaved\n")
    print("ready", flush=True)
    sys.stdin.readline()  # the store is deleted meanwhile
    wait_until(lambda: not os.path.exists(notes + "/projects"),
               "the deletion to reach the mount", 30)
    for fd in (old, new):
        try:
            os.close(fd)
            print("close ok")
        except OSError as e:
            print("close", errno_name(e))


if __name__ == "__main__":
    main(sys.argv[1])
