"""The ``memfs`` command: a click group whose commands load on demand.

One module per command group, each with a ``register(app)`` that adds its typer
commands:

======================  ====================================================
module                  commands
======================  ====================================================
``stores``              ``store create|list|show|update|archive|delete``
``memories``            ``memory ls|cat|put|mv|rm|restore``
``versions``            ``version ls|show|redact|prune``
``audit``               ``audit ls``
``import_export``       ``import``, ``export``
``fsck_prompt``         ``fsck``, ``vacuum``, ``prompt``
``backup``              ``backup``, ``restore``
``server``              ``serve``
``credentials``         ``key create|list|revoke``, ``session create|show|list|revoke``
``mounting``            ``mount``, ``umount``, ``status`` (the last two in ``unmounting``)
``search``              ``search``
``identity``            ``identity mount|unmount|mounts|default|session`` (SPEC §8)
``record``              ``record ls|show|forget``
``watch``               ``watch`` (change feeds as JSON lines)
``history``             ``snapshot create|ls|rm``, ``diff`` (SPEC §10)
``_common``             the ``--database`` option, opening the database, output
======================  ====================================================

:data:`COMMANDS` names each command's module and one-line help, so ``memfs --help``
lists every command without importing any of them, and ``memfs store list`` imports
only ``stores`` (so that SQLAlchemy, pydantic and FastAPI load only for the commands
that use them). Errors from :mod:`memfs.core.errors` are printed as one line; the exit
status is the row of :data:`EXIT_STATUS` of the nearest class (1 without one).
"""

from __future__ import annotations

import errno
import functools
import importlib
import sys
from typing import Any

import typer
import typer.core
import typer.main

from memfs.core.errors import InvalidPoint, MemfsError

__all__ = [
    "COMMANDS",
    "EXIT_STATUS",
    "app",
    "exit_status",
    "main",
    "output_failed",
    "short_help",
]

# The exit status of an error a command lets through: the row of the nearest class of
# its method resolution order; 1 for every class without one. 2 is a usage error, as
# click's own (a bad option value): a point of history that names no moment (SPEC §10)
# is what was typed, not the state of a store.
EXIT_STATUS: dict[type[MemfsError], int] = {MemfsError: 1, InvalidPoint: 2}

# name → (module under memfs.cli, one-line help shown by `memfs --help`), in help order.
COMMANDS: dict[str, tuple[str, str]] = {
    "store": ("stores", "Create, inspect, change, archive and delete memory stores."),
    "memory": ("memories", "List, read, write, move, delete, restore and revert memories."),
    "version": ("versions", "Inspect, diff, redact and prune the version history of a store."),
    "audit": ("audit", "Show who deleted, redacted, restored or pruned what, and why."),
    "import": ("import_export", "Import a folder or a .jsonl file into a store."),
    "export": ("import_export", "Write a store's memories out to a folder or a .jsonl file."),
    "mount": ("mounting", "Mount memory stores as a directory tree (FUSE)."),
    "umount": ("mounting", "Commit pending writes, then unmount."),
    "status": ("mounting", "Show a mount's daemon, stores, session and last errors."),
    "serve": ("server", "Serve the REST API (anthropic SDK compatible)."),
    "key": ("credentials", "Create, list and revoke API keys (a secret is shown once)."),
    "session": ("credentials", "Attach memory stores to an agent session; print its token."),
    "search": ("search", "Find memories by words across stores, best first."),
    "identity": (
        "identity",
        "Mount stores on (identity, template) pairs; their default stores and sessions.",
    ),
    "record": ("record", "List, show and forget long-term memory records (typed headers)."),
    "fsck": ("fsck_prompt", "Check every storage invariant."),
    "backup": ("backup", "Copy the database, consistently, while mounts and servers write."),
    "restore": ("backup", "Put a backup back (nothing may have the database open)."),
    "vacuum": ("fsck_prompt", "Take erased bytes out of the database files (PostgreSQL)."),
    "prompt": ("fsck_prompt", "Print the system-prompt note describing a mount."),
    "mcp": ("mcp", "Serve memory stores to an MCP client over stdio (memory tool commands)."),
    "watch": ("watch", "Print the changes of memory stores as JSON lines, as they happen."),
    "snapshot": ("history", "Name points of a store's history: create, ls, rm."),
    "diff": ("history", "Show what changed between two points of a store (STORE[@POINT])."),
    "dream": (
        "dreams", "Consolidate a store (SPEC §11): create, ls, show, diff, apply, cancel, archive."
    ),
    "transcript": ("dreams", "Import and show sessions' transcripts (their events)."),
    "outbox": ("outbox", "List remote mounts' queued writes; replay one under a new token."),
}


def short_help(name: str) -> str:
    """The one-line help of command ``name`` (what ``memfs --help`` lists)."""
    return COMMANDS[name][1]


@functools.cache
def _module_group(module_name: str) -> Any:
    """The typer group of the commands one module registers (imported on first use)."""
    module = importlib.import_module(f"memfs.cli.{module_name}")
    sub_app = typer.Typer(add_completion=False, pretty_exceptions_enable=False)
    module.register(sub_app)
    sub_app.callback()(_no_options)  # a group even when the module has one command
    return typer.main.get_command(sub_app)


def _no_options() -> None:
    pass


class _LazyGroup(typer.core.TyperGroup):
    """Lists :data:`COMMANDS` from the table; imports a command's module only when the
    command is looked up to run (or to show its own ``--help``)."""

    def list_commands(self, ctx: Any) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        entry = COMMANDS.get(cmd_name)
        if entry is None:
            return None
        return _module_group(entry[0]).get_command(ctx, cmd_name)

    def shell_complete(self, ctx: Any, incomplete: str) -> list[Any]:
        """Shell completion (``memfs --show-completion``) of a command name from
        :data:`COMMANDS`, importing no command's module: a TAB costs what ``memfs
        --version`` does. Options (``-…``) are completed as click does."""
        if incomplete.startswith("-"):  # no command name matches: nothing is imported
            return list(super().shell_complete(ctx, incomplete))
        try:  # typer ≥ 0.24 carries its own click
            from typer._click.shell_completion import CompletionItem
        except ImportError:  # an older typer, on click itself
            from click.shell_completion import CompletionItem  # type: ignore[assignment]
        return [
            CompletionItem(name, help=help_text)
            for name, (_, help_text) in COMMANDS.items()
            if name.startswith(incomplete)
        ]

    def format_commands(self, ctx: Any, formatter: Any) -> None:
        with formatter.section("Commands"):
            formatter.write_dl([(name, help_text) for name, (_, help_text) in COMMANDS.items()])


def _print_version(value: bool) -> None:
    if value:
        from memfs import __version__

        typer.echo(f"memfs {__version__}")
        raise typer.Exit()


def _root(
    version: bool = typer.Option(
        False, "--version", callback=_print_version, is_eager=True,
        help="Print memfs's version and exit.",
    ),
) -> None:
    pass


app = typer.Typer(
    name="memfs",
    help="Durable, versioned memory for AI agents, mounted as ordinary files.",
    cls=_LazyGroup,
    no_args_is_help=True,
    # --install-completion / --show-completion (bash, zsh, fish, PowerShell): typer's.
    add_completion=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,  # the top-level help without rich: it would cost 0.1 s
)
app.callback()(_root)


def main() -> None:
    """Entry point of the ``memfs`` console script.

    What a command lets through becomes one line on stderr, never a traceback:

    - a MemfsError: its message, with the status of :data:`EXIT_STATUS`;
    - output that can't be written (``memfs memory cat … > /dev/full``: ENOSPC, EIO):
      ``cannot write the output``, status 1 (a reader that went away, EPIPE, typer
      ends quietly itself);
    - an argument that is not valid UTF-8 reaching a store name, path or content (the
      shell passes bytes; memfs's names are UTF-8): status 2, a usage error.
    """
    try:
        app()
    except MemfsError as exc:
        print(f"memfs: error: {exc.message}", file=sys.stderr)
        sys.exit(exit_status(exc))
    except OSError as exc:
        if not output_failed(exc):
            raise  # not the output (a file the command was asked to use, a socket, …)
        sys.exit(1)
    except UnicodeEncodeError:
        undecodable = [arg for arg in sys.argv[1:] if _not_utf8(arg)]
        if not undecodable:
            raise
        shown = undecodable[0].encode("utf-8", "surrogateescape")
        print(f"memfs: error: the argument {shown!r} is not valid UTF-8: "
              "memfs's store names, paths and content are UTF-8", file=sys.stderr)
        sys.exit(2)


# What a write to standard output fails with when it can't take the bytes (a full disk
# or quota, a file too large, a terminal gone): with no file name, as the store types
# its own I/O errors (StorageFull, DatabaseUnavailable) and file errors carry theirs.
_OUTPUT_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO})


def output_failed(exc: OSError) -> bool:
    """Whether ``exc`` is standard output failing to take what a command wrote (ENOSPC,
    EDQUOT, EFBIG, EIO, with no file name); if so, says ``memfs: error: cannot write the
    output: <reason>`` on stderr and points the output at /dev/null (the interpreter's
    last flush at exit would fail again). The caller exits with its error status: 1,
    or 2 for the commands that exit as diff(1)."""
    if exc.filename is not None or exc.errno not in _OUTPUT_ERRNOS:
        return False
    _drop_output()
    print(f"memfs: error: cannot write the output: {exc.strerror}", file=sys.stderr)
    return True


def _not_utf8(arg: str) -> bool:
    """Whether a command-line argument holds bytes that are not UTF-8 (Python keeps
    them as lone surrogates: PEP 383)."""
    try:
        arg.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _drop_output() -> None:
    """Points standard output at /dev/null, so that the interpreter's last flush at exit
    does not fail again (and print "Exception ignored") on what could not be written."""
    import os

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


def exit_status(exc: MemfsError) -> int:
    """The exit status of ``exc``: :data:`EXIT_STATUS`'s row of its nearest class."""
    return next(EXIT_STATUS[cls] for cls in type(exc).__mro__ if cls in EXIT_STATUS)
