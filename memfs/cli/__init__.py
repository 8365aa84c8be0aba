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


def _register() -> None:
    import importlib

    for name in ("admin", "mounting", "server"):
        try:
            module = importlib.import_module(f"memfs.cli.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"memfs.cli.{name}":
                raise
            continue
        module.register(app)


def main() -> None:
    """Entry point of the ``memfs`` console script."""
    _register()
    try:
        app()
    except MemfsError as exc:
        print(f"memfs: error: {exc.message}", file=sys.stderr)
        sys.exit(1)
