"""Opens DIRECTORY/e<i>.txt with FLAGS (``create``: O_CREAT|O_WRONLY, ``truncate``:
O_WRONLY|O_TRUNC) and closes it without a write, ROUNDS times; right after each close
returned, reads the row from the SQLite DATABASE (read-only) and prints how many were
there, empty. No wait: a commit left to the asynchronous FUSE release would not be
there yet.

Usage: rows_after_close DATABASE ROUNDS DIRECTORY create|truncate
"""

from __future__ import annotations

import os
import sqlite3
import sys

FLAGS = {"create": os.O_CREAT | os.O_WRONLY, "truncate": os.O_WRONLY | os.O_TRUNC}


def main(database: str, rounds: str, directory: str, flags: str) -> None:
    db = sqlite3.connect(f"file:{database}?mode=ro", uri=True)

    def row(path: str) -> object:
        return db.execute(
            "select size_bytes from memories where path = ? and deleted_at is null", (path,)
        ).fetchone()

    found = 0
    for i in range(int(rounds)):
        fd = os.open(f"{directory}/e{i}.txt", FLAGS[flags])
        os.close(fd)
        found += row(f"/e{i}.txt") == (0,)
    print(found)


if __name__ == "__main__":
    main(*sys.argv[1:5])
