"""Imports the modules of IMPORT (comma-separated), then prints the sorted list of the
names of CHECK (comma-separated) that are in ``sys.modules``.

Usage: imported_modules IMPORT CHECK
"""

from __future__ import annotations

import importlib
import sys


def main(to_import: str, to_check: str) -> None:
    for name in to_import.split(","):
        importlib.import_module(name)
    print(sorted(m for m in to_check.split(",") if m in sys.modules))


if __name__ == "__main__":
    main(*sys.argv[1:3])
