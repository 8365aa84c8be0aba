"""Opens PATH with MODE, writes TEXT and flushes (a write the close has not committed
yet), prints ``written`` when ANNOUNCE is given, holds the file open until its standard
input ends, then closes it, printing ``close: <strerror>`` if the close fails.

Usage: hold_open PATH MODE TEXT [announce]
"""

from __future__ import annotations

import sys


def main(path: str, mode: str, text: str, announce: str = "") -> None:
    f = open(path, mode)  # noqa: SIM115 (held until told)
    f.write(text)
    f.flush()
    if announce:
        print("written", flush=True)
    sys.stdin.read()
    try:
        f.close()
    except OSError as e:
        print("close:", e.strerror, flush=True)


if __name__ == "__main__":
    main(*sys.argv[1:5])
