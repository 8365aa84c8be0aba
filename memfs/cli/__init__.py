"""The ``memfs`` command: one typer app with sub-apps registered from sibling modules.

Each module owns one group of commands: ``admin`` (store, memory, version, import,
export, fsck, prompt), ``mounting`` (mount, umount, status), ``server`` (serve, key,
session). Errors from :mod:`memfs.errors` are printed as one line, exit status 1.
"""

from __future__ import annotations

import sys

import typer

from memfs.errors import MemfsError

app = typer.Typer(
    name="memfs",
    help="Durable, versioned memory for AI agents, mounted as ordinary files.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


# Commands whose module is imported alone when one of them is invoked: `memfs mount`
# starts in a fraction of the time without the admin and server modules (SQLAlchemy,
# FastAPI). Any other command, --help or a typo registers every module.
_MOUNTING_COMMANDS = frozenset({"mount", "umount", "status"})


def _register(argv: list[str] | None = None) -> None:
    """Registers the sub-apps: only ``mounting`` for its own commands (``argv[1]``),
    every module otherwise."""
    import importlib

    names: tuple[str, ...] = ("admin", "mounting", "server", "mcp")
    if argv is not None and len(argv) > 1 and argv[1] in _MOUNTING_COMMANDS:
        names = ("mounting",)
    for name in names:
        try:
            module = importlib.import_module(f"memfs.cli.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"memfs.cli.{name}":
                raise
            continue
        module.register(app)


def main() -> None:
    """Entry point of the ``memfs`` console script."""
    _register(sys.argv)
    try:
        app()
    except MemfsError as exc:
        print(f"memfs: error: {exc.message}", file=sys.stderr)
        sys.exit(1)
