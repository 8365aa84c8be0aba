"""Runs ``memfs ARGS`` in this interpreter (its output swallowed), then prints one JSON
line: its exit status, its output, the top-level packages it imported, memfs's own
modules it imported, every module it imported, and memfs's pydantic models whose
validator was built (a model built with ``defer_build`` has none until it validates).

Run it by its file path (not ``-m``), so nothing but the command is imported.

Usage: cli_imports.py ARG…
"""

from __future__ import annotations

import contextlib
import io
import json
import sys


def _built_models() -> list[str]:
    """memfs's pydantic models (in the modules imported) whose validator exists."""
    if "pydantic" not in sys.modules:
        return []
    from pydantic import BaseModel

    built = set()
    for name, module in list(sys.modules.items()):
        if name.startswith("memfs."):
            for value in vars(module).values():
                if (isinstance(value, type) and issubclass(value, BaseModel)
                        and value.__module__ == name and value.__pydantic_complete__):
                    built.add(f"{name}.{value.__qualname__}")
    return sorted(built)


def main() -> None:
    sys.argv = ["memfs", *sys.argv[1:]]
    from memfs.cli import main as memfs_main

    status: object
    raw = io.BytesIO()  # commands that write bytes use sys.stdout.buffer
    with contextlib.redirect_stdout(io.TextIOWrapper(raw, encoding="utf-8")) as out:
        try:
            memfs_main()
        except SystemExit as exc:
            status = exc.code
        else:
            status = 0
        out.flush()
    print(json.dumps({"status": status, "out": raw.getvalue().decode("utf-8"),
                      "modules": sorted({name.split(".")[0] for name in sys.modules}),
                      "memfs_modules": sorted(n for n in sys.modules if n.startswith("memfs.")),
                      "all_modules": sorted(sys.modules),
                      "built_models": _built_models()}))


if __name__ == "__main__":
    main()
