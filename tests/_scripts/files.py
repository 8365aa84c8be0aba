"""Small file operations in a process of their own (so no test process holds a mount):

- ``append PATH TEXT``: appends TEXT to PATH in one open.
- ``cat PATH``: writes PATH's content to standard output.

Usage: files OPERATION PATH [TEXT]
"""

from __future__ import annotations

import sys


def main(operation: str, path: str, text: str = "") -> None:
    if operation == "append":
        with open(path, "a") as f:
            f.write(text)
    elif operation == "cat":
        with open(path) as f:
            sys.stdout.write(f.read())
    else:
        raise SystemExit(f"unknown operation {operation!r}")


if __name__ == "__main__":
    main(*sys.argv[1:4])
