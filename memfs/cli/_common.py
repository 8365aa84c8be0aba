"""What every ``memfs`` command module shares: options, opening the database, output.

- Options: :data:`DatabaseOption` (the one ``--database``), :data:`JsonOption`,
  :data:`StoreArgument`, :data:`MetadataOption`, :data:`AtOption` (a point of history).
- :func:`command_engine`: open the store engine for one command, or say in one line why
  it can't be opened; :func:`command_peek`: the SQLAlchemy-free read-only peek a command
  that only reads tries first.
- Output: :func:`fail` (the one error line, ``memfs: error: <message>``, exit status
  1), :func:`print_json`, :func:`page_json` (api-contract §3 list envelope),
  :func:`print_table` (rich on a terminal, aligned text on a pipe), :func:`print_fields`,
  :func:`format_time`, :func:`format_size`.
- Inputs: :func:`parse_metadata` (``KEY=VALUE``), :func:`listing_prefix`,
  :func:`find_memory` (a path or a ``mem_`` id), :func:`all_pages`.
- :func:`command_actor`: writes made by a command are attributed to ``user_actor`` with the
  login name of the operating system user running it.

Imports stay light (typer and the core rules): SQLAlchemy, pydantic and rich load only
when a command needs them, so ``memfs --help`` starts fast.
"""

from __future__ import annotations

import contextlib
import getpass
import json
import os
import re
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer

from memfs.core.errors import MemfsError
from memfs.core.rules import validate_path, validate_path_prefix

if TYPE_CHECKING:
    from memfs.core.model import Actor, Memory
    from memfs.store import Engine, Peek

__all__ = [
    "PAGE_LIMIT",
    "AtOption",
    "DatabaseOption",
    "JsonOption",
    "MetadataOption",
    "StoreArgument",
    "command_actor",
    "all_pages",
    "LogFormatOption",
    "check_log_format",
    "command_engine",
    "command_peek",
    "fail",
    "find_memory",
    "format_size",
    "format_time",
    "is_terminal",
    "listing_prefix",
    "one_line",
    "os_reason",
    "page_json",
    "parse_metadata",
    "print_fields",
    "print_json",
    "print_table",
    "secure_home",
]

PAGE_LIMIT = 100  # items per engine call when a command walks a whole listing


# ----------------------------------------------------------------- options

DatabaseOption = Annotated[
    str | None,
    typer.Option(
        "--database",
        help="SQLite file or postgresql:// URL. Default: $MEMFS_DATABASE, "
        "else $MEMFS_HOME/memfs.db.",
        show_default=False,
    ),
]
LogFormatOption = Annotated[
    str,
    typer.Option(
        "--log-format",
        help="text, or json: one object per line with time, level, logger, message and "
        "the ids involved (README: Logs).",
    ),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print the API's JSON object.")]
StoreArgument = Annotated[str, typer.Argument(help="Store name, slug or memstore_ id.")]
AtOption = Annotated[
    str | None,
    typer.Option(
        "--at",
        metavar="POINT",
        help="Read the store as it was: now, an RFC 3339 time, a snapshot name or "
        "snap_ id, or a memver_ id (SPEC §10).",
        show_default=False,
    ),
]
MetadataOption = Annotated[
    list[str] | None,
    typer.Option("--metadata", "-m", help="KEY=VALUE; repeat for several.", show_default=False),
]


# ----------------------------------------------------------------- helpers


def check_log_format(log_format: str) -> None:
    """Exits with status 2 (a usage error) unless ``log_format`` is ``text`` or ``json``."""
    from memfs.logs import LOG_FORMATS

    if log_format not in LOG_FORMATS:
        typer.echo(
            f"memfs: error: --log-format must be {' or '.join(LOG_FORMATS)}, not {log_format!r}",
            err=True,
        )
        raise typer.Exit(2)


def fail(message: str, status: int = 1) -> NoReturn:
    """Prints one error line (the format of ``memfs.cli.main``) and exits with
    ``status`` (1; 2 for what was typed, as :data:`memfs.cli.EXIT_STATUS` has it)."""
    typer.echo(f"memfs: error: {message}", err=True)
    raise typer.Exit(status)


@contextlib.contextmanager
def command_engine(
    database: str | None, *, create: bool = False, home_secured: bool = False
) -> Iterator[Engine]:
    """Opens the engine for one command and closes it afterwards.

    Args:
        database: ``--database`` (None: ``$MEMFS_DATABASE``, else ``$MEMFS_HOME/memfs.db``).
        create: the command makes something (``store create``, ``key create``, ``import
            --create``) and may create the SQLite file; every other command refuses a
            missing file by name (DatabaseNotFound) and leaves nothing behind; a file
            this user may not write is opened read-only (commands that only read never
            need write access).
        home_secured: :func:`secure_home` ran already in this command (its peek,
            :func:`command_peek`, stood aside), so its warning is not printed twice.

    Failures to open (unwritable ``$MEMFS_HOME``, a missing parent directory, an
    unreachable PostgreSQL server, a URL of an unknown kind) become one error line,
    ``cannot open the store database: …``; MemfsError passes through to
    ``memfs.cli.main``.
    """
    from memfs.store import open_engine

    if not home_secured:
        secure_home()
    try:
        # read_only=None: read-only exactly when this user may not write the file.
        engine = open_engine(database, create=create)
    except MemfsError:
        raise
    except Exception as exc:  # any failure to open is the user's setup
        fail(f"cannot open the store database: {one_line(exc)}")
    try:
        yield engine
    finally:
        engine.close()


@contextlib.contextmanager
def command_peek(database: str | None) -> Iterator[Peek | None]:
    """A read-only peek at the database for a command that only reads (no SQLAlchemy:
    README "Performance", CLI start), closed afterwards; None when only the engine can
    answer (see :func:`memfs.store.open_peek`): the command then opens it with
    :func:`command_engine`, whose answers and errors are the same.
    """
    from memfs.store import open_peek

    secure_home()
    try:
        peek = open_peek(database)
    except MemfsError:
        raise
    except Exception as exc:  # a bad setting, as command_engine reports it
        fail(f"cannot open the store database: {one_line(exc)}")
    try:
        yield peek
    finally:
        if peek is not None:
            peek.close()


def secure_home() -> None:
    """Takes group and other access away from an existing ``$MEMFS_HOME`` (one made
    before memfs kept its files private, SPEC §3) and says so on stderr; says
    nothing when there was nothing to change. A failure is reported, not fatal."""
    from memfs import home as local
    from memfs.core.config import memfs_home

    home = memfs_home()
    try:
        changed = local.secure_home(home)
    except OSError as exc:
        typer.echo(f"memfs: could not make {home} private: {os_reason(exc)}", err=True)
        return
    if changed:
        typer.echo(
            f"memfs: {home} was readable by other users: took group and other access away "
            f"from {changed} files and directories",
            err=True,
        )


def one_line(exc: BaseException) -> str:
    """The first line of an exception's text, without SQLAlchemy's ``(module.Class)`` tag."""
    text = str(exc).strip().splitlines()
    return re.sub(r"^\([\w.]+\) ", "", text[0]) if text else type(exc).__name__


def command_actor() -> Actor:
    """The actor of writes made by this command: ``user_actor`` with the OS login name."""
    from memfs.core.model import Actor

    try:
        name = getpass.getuser()
    except (KeyError, OSError):
        name = f"uid-{os.getuid()}"
    return Actor.user(name)


def is_terminal() -> bool:
    return sys.stdout.isatty()


def print_json(value: Any) -> None:
    typer.echo(json.dumps(value, indent=2, ensure_ascii=False))


def page_json(items: list[dict[str, Any]], next_page: str | None = None) -> dict[str, Any]:
    """The list envelope of api-contract §3."""
    return {"data": items, "next_page": next_page}


def format_time(value: datetime | None) -> str:
    if value is None:
        return ""
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def format_size(size_bytes: int | None) -> str:
    return "" if size_bytes is None else f"{size_bytes:,}"


def print_table(columns: Sequence[str], rows: Sequence[Sequence[str]], *, empty: str) -> None:
    """A table: rich on a terminal, aligned plain text with a header on a pipe.

    Numeric columns (named in ``_RIGHT_ALIGNED``) are right-aligned. Nothing is printed
    for no rows on a pipe; ``empty`` is said on a terminal.
    """
    if is_terminal():
        from rich import box
        from rich.console import Console
        from rich.table import Table

        console = Console()
        if not rows:
            console.print(f"[dim]{empty}[/dim]")
            return
        table = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False)
        for column in columns:
            table.add_column(
                column, justify="right" if column in _RIGHT_ALIGNED else "left", overflow="fold"
            )
        for row in rows:
            table.add_row(*row)
        console.print(table)
        return
    if not rows:
        return
    from rich.cells import cell_len

    widths = [
        max(cell_len(str(value)) for value in (column, *(row[i] for row in rows)))
        for i, column in enumerate(columns)
    ]

    def line(values: Sequence[str]) -> str:
        cells = []
        for i, value in enumerate(values):
            pad = " " * (widths[i] - cell_len(value))
            cells.append(pad + value if columns[i] in _RIGHT_ALIGNED else value + pad)
        return "  ".join(cells).rstrip()

    typer.echo(line(columns))
    for row in rows:
        typer.echo(line(row))


_RIGHT_ALIGNED = frozenset({"MEMORIES", "SIZE"})


def print_fields(fields: Sequence[tuple[str, str]]) -> None:
    """``key  value`` lines, the keys aligned (the human form of ``show`` commands)."""
    width = max(len(key) for key, _ in fields)
    for key, value in fields:
        lines = value.splitlines() or [""]
        typer.echo(f"{key.ljust(width)}  {lines[0]}".rstrip())
        for more in lines[1:]:
            typer.echo(f"{' ' * width}  {more}".rstrip())


def parse_metadata(
    pairs: Iterable[str] | None, *, option: str = "--metadata", shape: str = "KEY=VALUE"
) -> dict[str, str]:
    """``KEY=VALUE`` options (repeated) → a dict; the last of a repeated key wins.

    Raises:
        typer.BadParameter: an item without ``=`` (a usage error naming ``option``).
    """
    result: dict[str, str] = {}
    for pair in pairs or ():
        key, sep, value = pair.partition("=")
        if not sep:
            raise typer.BadParameter(f"{pair!r} is not {shape}", param_hint=option)
        result[key] = value
    return result


def listing_prefix(value: str | None) -> str:
    """A listing prefix from user input: ``None`` → ``/``; a missing final ``/`` is added.

    Raises:
        InvalidPath: a prefix without its leading ``/`` (the message shows the one meant,
            where the rule's own message would name the ``/`` added at the end), or one
            that breaks another SPEC §1 path rule.
    """
    if not value:
        return "/"
    prefix = value if value.endswith("/") else value + "/"
    if not prefix.startswith("/"):
        from memfs.core.errors import InvalidPath

        raise InvalidPath(
            f"a path prefix starts with '/': {value!r} is not one (did you mean "
            f"'/{prefix}'?)"
        )
    return validate_path_prefix(prefix)


def all_pages(fetch: Callable[[str | None], Any]) -> Iterator[Any]:
    """Every item of a cursor-paginated engine listing; ``fetch(cursor)`` returns a Page."""
    cursor: str | None = None
    while True:
        page = fetch(cursor)
        yield from page.items
        cursor = page.next_cursor
        if cursor is None:
            return


def find_memory(engine: Engine, store_id: str, reference: str) -> Memory:
    """A live memory by ``mem_…`` id or by path. Raises NotFound, InvalidPath."""
    if reference.startswith("mem_"):
        return engine.memories.get(store_id, reference)
    validate_path(reference)
    return engine.memories.get_by_path(store_id, reference)


def os_reason(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return one_line(exc)
