"""Admin commands: ``store``, ``memory``, ``version``, ``import``, ``export``, ``fsck``, ``prompt``.

Every command opens the store engine (``--database``, else ``$MEMFS_DATABASE``, else
``$MEMFS_HOME/memfs.db``), makes its calls, and closes it. Stores are named by name,
slug or id (:meth:`memfs.store.Engine.find_store`); memories by path or ``mem_…`` id.

Output: ``--json`` prints the objects of the API (:mod:`memfs.wire`; lists as the API's
``{"data": [...], "next_page": null}`` envelope). Otherwise a table — drawn with rich on
a terminal, aligned plain text on a pipe. Errors print one line,
``memfs: error: <message>``, on stderr and exit with status 1; usage errors exit 2.

Writes made here are attributed to ``user_actor`` with the login name of the operating
system user running the command.
"""

from __future__ import annotations

import contextlib
import enum
import getpass
import json
import os
import re
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer

from memfs.errors import InvalidInput, MemfsError, NotFound
from memfs.model import (
    Access,
    Actor,
    DeleteMode,
    Memory,
    MemoryPrefix,
    MemoryStore,
    MemoryVersion,
    Operation,
)
from memfs.prompt import DEFAULT_MOUNT_ROOT
from memfs.rules import validate_content_bytes, validate_path, validate_path_prefix
from memfs.store import Engine
from memfs.wire import (
    memory_deleted_to_wire,
    memory_to_wire,
    prefix_to_wire,
    store_deleted_to_wire,
    store_to_wire,
    version_to_wire,
)

__all__ = ["command_engine", "print_table", "register"]

_PAGE_LIMIT = 100  # items per engine call when a command walks a whole listing

store_app = typer.Typer(help="Create, inspect, change, archive and delete memory stores.")
memory_app = typer.Typer(help="List, read, write, move, delete and restore memories.")
version_app = typer.Typer(help="Inspect and redact the version history of a store.")


def register(app: typer.Typer) -> None:
    """Adds the admin sub-apps and commands to the ``memfs`` app."""
    for sub_app in (store_app, memory_app, version_app):
        sub_app.info.no_args_is_help = True
    app.add_typer(store_app, name="store")
    app.add_typer(memory_app, name="memory")
    app.add_typer(version_app, name="version")
    app.command("import")(import_command)
    app.command("export")(export_command)
    app.command("fsck")(fsck_command)
    app.command("prompt")(prompt_command)


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
JsonOption = Annotated[bool, typer.Option("--json", help="Print the API's JSON object.")]
StoreArgument = Annotated[str, typer.Argument(help="Store name, slug or memstore_ id.")]
MetadataOption = Annotated[
    list[str] | None,
    typer.Option("--metadata", "-m", help="KEY=VALUE; repeat for several.", show_default=False),
]


# ----------------------------------------------------------------- helpers


def _fail(message: str) -> NoReturn:
    """Prints one error line (the format of ``memfs.cli.main``) and exits with status 1."""
    typer.echo(f"memfs: error: {message}", err=True)
    raise typer.Exit(1)


@contextlib.contextmanager
def command_engine(database: str | None) -> Iterator[Engine]:
    """Opens the engine for one command and closes it afterwards.

    Failures to open (unwritable ``$MEMFS_HOME``, a missing parent directory, an
    unreachable PostgreSQL server, a URL of an unknown kind) become one error line,
    ``cannot open the store database: …``; MemfsError passes through to
    ``memfs.cli.main``. Used by the ``server`` commands too.
    """
    from memfs.store import open_engine

    try:
        engine = open_engine(database)
    except MemfsError:
        raise
    except Exception as exc:  # noqa: BLE001 - any failure to open is the user's setup
        _fail(f"cannot open the store database: {_one_line(exc)}")
    try:
        yield engine
    finally:
        engine.close()


def _one_line(exc: BaseException) -> str:
    """The first line of an exception's text, without SQLAlchemy's ``(module.Class)`` tag."""
    text = str(exc).strip().splitlines()
    return re.sub(r"^\([\w.]+\) ", "", text[0]) if text else type(exc).__name__


def _actor() -> Actor:
    """The actor of writes made by this command: ``user_actor`` with the OS login name."""
    try:
        name = getpass.getuser()
    except (KeyError, OSError):
        name = f"uid-{os.getuid()}"
    return Actor.user(name)


def _is_terminal() -> bool:
    return sys.stdout.isatty()


def _print_json(value: Any) -> None:
    typer.echo(json.dumps(value, indent=2, ensure_ascii=False))


def _page_json(items: list[dict[str, Any]], next_page: str | None = None) -> dict[str, Any]:
    """The list envelope of api-contract §3."""
    return {"data": items, "next_page": next_page}


def _time(value: datetime | None) -> str:
    if value is None:
        return ""
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _size(size_bytes: int | None) -> str:
    return "" if size_bytes is None else f"{size_bytes:,}"


def print_table(columns: Sequence[str], rows: Sequence[Sequence[str]], *, empty: str) -> None:
    """A table: rich on a terminal, aligned plain text with a header on a pipe.

    Numeric columns (named in ``_RIGHT_ALIGNED``) are right-aligned. Nothing is printed
    for no rows on a pipe; ``empty`` is said on a terminal.
    """
    if _is_terminal():
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


def _print_fields(fields: Sequence[tuple[str, str]]) -> None:
    """``key  value`` lines, the keys aligned (the human form of ``show`` commands)."""
    width = max(len(key) for key, _ in fields)
    for key, value in fields:
        lines = value.splitlines() or [""]
        typer.echo(f"{key.ljust(width)}  {lines[0]}".rstrip())
        for more in lines[1:]:
            typer.echo(f"{' ' * width}  {more}".rstrip())


def _parse_metadata(pairs: Iterable[str] | None) -> dict[str, str]:
    result: dict[str, str] = {}
    for pair in pairs or ():
        key, sep, value = pair.partition("=")
        if not sep:
            raise typer.BadParameter(f"{pair!r} is not KEY=VALUE", param_hint="--metadata")
        result[key] = value
    return result


def _prefix(value: str | None) -> str:
    """A listing prefix from user input: ``None`` → ``/``; a missing final ``/`` is added."""
    if not value:
        return "/"
    prefix = value if value.endswith("/") else value + "/"
    return validate_path_prefix(prefix)


def _all_pages(fetch: Callable[[str | None], Any]) -> Iterator[Any]:
    """Every item of a cursor-paginated engine listing; ``fetch(cursor)`` returns a Page."""
    cursor: str | None = None
    while True:
        page = fetch(cursor)
        yield from page.items
        cursor = page.next_cursor
        if cursor is None:
            return


def _find_memory(engine: Engine, store_id: str, reference: str) -> Memory:
    """A live memory by ``mem_…`` id or by path. Raises NotFound, InvalidPath."""
    if reference.startswith("mem_"):
        return engine.get_memory(store_id, reference)
    validate_path(reference)
    return engine.get_memory_by_path(store_id, reference)


# ----------------------------------------------------------------- store


def _store_fields(store: MemoryStore) -> list[tuple[str, str]]:
    metadata = ", ".join(f"{k}={v}" for k, v in sorted(store.metadata.items()))
    return [
        ("id", store.id),
        ("name", store.name),
        ("description", store.description),
        ("metadata", metadata),
        ("memories", f"{store.entry_count:,}"),
        ("size", f"{store.total_size_bytes:,} bytes"),
        ("created", _time(store.created_at)),
        ("updated", _time(store.updated_at)),
        ("archived", _time(store.archived_at) or "no"),
    ]


def _print_store(store: MemoryStore, as_json: bool) -> None:
    if as_json:
        _print_json(store_to_wire(store))
    else:
        _print_fields(_store_fields(store))


@store_app.command("create")
def store_create(
    name: Annotated[str, typer.Argument(help="Display name (1-255 characters).")],
    description: Annotated[
        str, typer.Option("--description", help="Up to 1,024 characters; shown to agents.")
    ] = "",
    metadata: MetadataOption = None,
    as_json: JsonOption = False,
    database: DatabaseOption = None,
) -> None:
    """Create a memory store."""
    with command_engine(database) as engine:
        store = engine.create_store(name, description, _parse_metadata(metadata))
    _print_store(store, as_json)


@store_app.command("list")
def store_list(
    include_archived: Annotated[
        bool, typer.Option("--archived", help="Include archived stores.")
    ] = False,
    as_json: JsonOption = False,
    database: DatabaseOption = None,
) -> None:
    """List stores, newest first."""
    with command_engine(database) as engine:
        stores = list(
            _all_pages(
                lambda cursor: engine.list_stores(
                    include_archived=include_archived, limit=_PAGE_LIMIT, cursor=cursor
                )
            )
        )
    if as_json:
        _print_json(_page_json([store_to_wire(s) for s in stores]))
        return
    rows = [
        (
            s.id,
            s.name,
            f"{s.entry_count:,}",
            _size(s.total_size_bytes),
            _time(s.created_at),
            "archived" if s.archived else "",
        )
        for s in stores
    ]
    print_table(
        ("ID", "NAME", "MEMORIES", "SIZE", "CREATED", "STATE"), rows, empty="no memory stores"
    )


@store_app.command("show")
def store_show(
    store: StoreArgument, as_json: JsonOption = False, database: DatabaseOption = None
) -> None:
    """Show one store with its counters."""
    with command_engine(database) as engine:
        found = engine.find_store(store)
    _print_store(found, as_json)


@store_app.command("update")
def store_update(
    store: StoreArgument,
    name: Annotated[str | None, typer.Option("--name", help="New name.")] = None,
    description: Annotated[
        str | None, typer.Option("--description", help="New description ('' clears it).")
    ] = None,
    metadata: MetadataOption = None,
    unset: Annotated[
        list[str] | None,
        typer.Option("--unset-metadata", help="Remove a metadata KEY; repeat for several."),
    ] = None,
    as_json: JsonOption = False,
    database: DatabaseOption = None,
) -> None:
    """Change a store's name, description or metadata (other keys are kept)."""
    patch: dict[str, str | None] = dict(_parse_metadata(metadata))
    for key in unset or ():
        patch[key] = None
    with command_engine(database) as engine:
        found = engine.find_store(store)
        updated = engine.update_store(
            found.id, name=name, description=description, metadata_patch=patch or None
        )
    _print_store(updated, as_json)


@store_app.command("archive")
def store_archive(
    store: StoreArgument, as_json: JsonOption = False, database: DatabaseOption = None
) -> None:
    """Archive a store: one-way; it becomes read-only (SPEC §2)."""
    with command_engine(database) as engine:
        found = engine.find_store(store)
        archived = engine.archive_store(found.id, actor=_actor())
    if as_json:
        _print_json(store_to_wire(archived))
    else:
        typer.echo(f'archived store "{archived.name}" ({archived.id})')


@store_app.command("delete")
def store_delete(
    store: StoreArgument,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")] = False,
    as_json: JsonOption = False,
    database: DatabaseOption = None,
) -> None:
    """Delete a store with all its memories and versions (permanent)."""
    with command_engine(database) as engine:
        found = engine.find_store(store)
        if not yes:
            if not sys.stdin.isatty():
                _fail(f'refusing to delete store "{found.name}" without --yes')
            typer.confirm(
                f'Delete store "{found.name}" ({found.id}) with its {found.entry_count:,} '
                "memories and all their versions?",
                abort=True,
            )
        engine.delete_store(found.id, actor=_actor())
    if as_json:
        _print_json(store_deleted_to_wire(found.id))
    else:
        typer.echo(f'deleted store "{found.name}" ({found.id})')


# ----------------------------------------------------------------- memory


def _memory_rows(items: Iterable[Memory | MemoryPrefix]) -> list[tuple[str, ...]]:
    rows: list[tuple[str, ...]] = []
    for item in items:
        if isinstance(item, MemoryPrefix):
            rows.append((item.path, "", "", ""))
        else:
            rows.append(
                (item.path, _size(item.content_size_bytes), _time(item.updated_at), item.id)
            )
    return rows


@memory_app.command("ls")
def memory_ls(
    store: StoreArgument,
    prefix: Annotated[
        str | None, typer.Argument(help="Directory to list, e.g. /projects/ (default /).")
    ] = None,
    depth: Annotated[
        int,
        typer.Option("--depth", min=0, help="0 lists everything below; 1 direct children only, …"),
    ] = 0,
    deleted: Annotated[
        bool, typer.Option("--deleted", help="List soft-deleted (restorable) memories instead.")
    ] = False,
    as_json: JsonOption = False,
    database: DatabaseOption = None,
) -> None:
    """List memories (and, with --depth, directories ending in /)."""
    path_prefix = _prefix(prefix)
    with command_engine(database) as engine:
        found = engine.find_store(store)
        if deleted:
            items: list[Memory | MemoryPrefix] = [
                m for m in engine.deleted_memories(found.id) if m.path.startswith(path_prefix)
            ]
        else:
            items = list(
                _all_pages(
                    lambda cursor: engine.list_memories(
                        found.id,
                        path_prefix=path_prefix,
                        depth=depth,
                        limit=_PAGE_LIMIT,
                        cursor=cursor,
                    )
                )
            )
    if as_json:
        _print_json(
            _page_json(
                [
                    prefix_to_wire(i)
                    if isinstance(i, MemoryPrefix)
                    else memory_to_wire(i, full=False)
                    for i in items
                ]
            )
        )
        return
    if deleted:
        rows = [
            (m.path, _size(m.content_size_bytes), _time(m.deleted_at), m.id)
            for m in items
            if isinstance(m, Memory)
        ]
        print_table(("PATH", "SIZE", "DELETED", "ID"), rows, empty="no deleted memories")
    else:
        print_table(("PATH", "SIZE", "UPDATED", "ID"), _memory_rows(items), empty="no memories")


@memory_app.command("cat")
def memory_cat(
    store: StoreArgument,
    path: Annotated[str, typer.Argument(help="Memory path (or mem_ id).")],
    database: DatabaseOption = None,
) -> None:
    """Print a memory's content, byte for byte."""
    with command_engine(database) as engine:
        found = engine.find_store(store)
        memory = _find_memory(engine, found.id, path)
    assert memory.content is not None
    sys.stdout.buffer.write(memory.content.encode("utf-8"))
    sys.stdout.buffer.flush()


@memory_app.command("put")
def memory_put(
    store: StoreArgument,
    path: Annotated[str, typer.Argument(help="Memory path, e.g. /notes/today.md.")],
    content: Annotated[
        str | None,
        typer.Option("--content", "-c", help="The text; without it, read from stdin."),
    ] = None,
    metadata: MetadataOption = None,
    expected_sha256: Annotated[
        str | None,
        typer.Option(
            "--expected-sha256", help="Only overwrite if the current content has this digest."
        ),
    ] = None,
    as_json: JsonOption = False,
    database: DatabaseOption = None,
) -> None:
    """Create a memory, or replace its content (no version when nothing changes)."""
    if content is None:
        if sys.stdin.isatty():
            _fail("no content: pass --content TEXT or pipe the content on stdin")
        text = validate_content_bytes(sys.stdin.buffer.read())
    else:
        text = content
    validate_path(path)
    memory_metadata = _parse_metadata(metadata) if metadata else None
    actor = _actor()
    with command_engine(database) as engine:
        found = engine.find_store(store)
        try:
            current: Memory | None = engine.get_memory_by_path(found.id, path, with_content=False)
        except NotFound:
            current = None
        if current is None:
            if expected_sha256 is not None:
                _fail(f"{path}: no such memory (--expected-sha256 was given)")
            memory = engine.create_memory(
                found.id, path, text, actor=actor, metadata=memory_metadata
            )
            action = "created"
        else:
            memory = engine.update_memory(
                found.id,
                current.id,
                actor=actor,
                content=text,
                expected_sha256=expected_sha256 or current.content_sha256,
                metadata=memory_metadata,
            )
            action = (
                "unchanged" if memory.memory_version_id == current.memory_version_id else "updated"
            )
    if as_json:
        _print_json(memory_to_wire(memory, full=False))
    else:
        typer.echo(
            f"{action} {memory.path} ({memory.content_size_bytes:,} bytes, "
            f"{memory.id}, version {memory.memory_version_id})"
        )


@memory_app.command("mv")
def memory_mv(
    store: StoreArgument,
    old: Annotated[str, typer.Argument(help="Current path (or mem_ id), or a directory.")],
    new: Annotated[str, typer.Argument(help="New path.")],
    as_json: JsonOption = False,
    database: DatabaseOption = None,
) -> None:
    """Rename a memory (its id is kept), or move a whole directory in one transaction."""
    actor = _actor()
    with command_engine(database) as engine:
        found = engine.find_store(store)
        memory: Memory | None = None
        if not old.endswith("/"):
            try:
                memory = _find_memory(engine, found.id, old)
            except NotFound:
                memory = None
        if memory is not None:
            moved = [engine.update_memory(found.id, memory.id, actor=actor, path=new)]
        else:
            old_prefix, new_prefix = _prefix(old), _prefix(new)
            moved = engine.rename_prefix(found.id, old_prefix, new_prefix, actor=actor)
            if not moved:
                raise NotFound(f"no memory at {old.rstrip('/')} and none below {old_prefix}")
    if as_json:
        _print_json(_page_json([memory_to_wire(m, full=False) for m in moved]))
        return
    if memory is not None:
        typer.echo(f"moved {memory.path} -> {moved[0].path} ({memory.id})")
    else:
        typer.echo(f"moved {len(moved)} memories from {_prefix(old)} to {_prefix(new)}")


@memory_app.command("rm")
def memory_rm(
    store: StoreArgument,
    path: Annotated[str, typer.Argument(help="Memory path (or mem_ id).")],
    mode: Annotated[
        DeleteMode,
        typer.Option(
            "--mode",
            help="soft_delete (restorable), redact (content scrubbed, history redacted) "
            "or hard_delete (memory and history erased).",
        ),
    ] = DeleteMode.SOFT_DELETE,
    reason: Annotated[
        str | None, typer.Option("--reason", help="Recorded in the audit trail.")
    ] = None,
    replacement: Annotated[
        str,
        typer.Option(
            "--replacement",
            help="With --mode redact: the text the memory's tombstone keeps in place of "
            "its content (stored, not served: a deleted memory and its deleted version "
            "show no content).",
        ),
    ] = "[REDACTED]",
    expected_sha256: Annotated[
        str | None,
        typer.Option("--expected-sha256", help="Only delete if the content has this digest."),
    ] = None,
    as_json: JsonOption = False,
    database: DatabaseOption = None,
) -> None:
    """Delete a memory (soft by default: restorable with `memfs memory restore`)."""
    with command_engine(database) as engine:
        found = engine.find_store(store)
        memory = _find_memory(engine, found.id, path)
        engine.delete_memory(
            found.id,
            memory.id,
            actor=_actor(),
            expected_sha256=expected_sha256,
            mode=mode,
            reason=reason,
            replacement=replacement,
        )
    if as_json:
        _print_json(memory_deleted_to_wire(memory.id))
    elif mode is DeleteMode.SOFT_DELETE:
        typer.echo(
            f"deleted {memory.path} ({memory.id}; restore with: "
            f"memfs memory restore {_quote(store)} {memory.id})"
        )
    else:
        typer.echo(f"deleted {memory.path} ({memory.id}, {mode.value})")


def _quote(value: str) -> str:
    import shlex

    return shlex.quote(value)


@memory_app.command("restore")
def memory_restore(
    store: StoreArgument,
    reference: Annotated[str, typer.Argument(help="Path or mem_ id of a soft-deleted memory.")],
    reason: Annotated[
        str | None, typer.Option("--reason", help="Recorded in the audit trail.")
    ] = None,
    as_json: JsonOption = False,
    database: DatabaseOption = None,
) -> None:
    """Bring back a soft-deleted memory with its id, path and content."""
    with command_engine(database) as engine:
        found = engine.find_store(store)
        deleted = engine.deleted_memories(found.id)  # newest deletion first
        key = "id" if reference.startswith("mem_") else "path"
        match = next((m for m in deleted if getattr(m, key) == reference), None)
        if match is None:
            raise NotFound(f'no soft-deleted memory {reference} in store "{found.name}"')
        memory = engine.restore_memory(found.id, match.id, actor=_actor(), reason=reason)
    if as_json:
        _print_json(memory_to_wire(memory, full=False))
    else:
        typer.echo(f"restored {memory.path} ({memory.id}, version {memory.memory_version_id})")


# ----------------------------------------------------------------- version


def _version_path(version: MemoryVersion) -> str:
    return "(redacted)" if version.redacted_at is not None else (version.path or "")


def _versions_for_path(engine: Engine, store_id: str, path: str) -> list[MemoryVersion]:
    """The history of whatever memories have lived at ``path``, newest first.

    The memories are the live one at the path and soft-deleted ones last seen there
    (whole histories, earlier paths included). When there is none (the memory moved
    away), the versions written at that path are returned instead.
    """
    validate_path(path)
    memory_ids: list[str] = []
    with contextlib.suppress(NotFound):
        memory_ids.append(engine.get_memory_by_path(store_id, path, with_content=False).id)
    memory_ids += [m.id for m in engine.deleted_memories(store_id) if m.path == path]
    if memory_ids:
        versions = [
            v
            for memory_id in dict.fromkeys(memory_ids)
            for v in _all_pages(
                lambda cursor, memory_id=memory_id: engine.list_versions(  # type: ignore[misc]
                    store_id, memory_id=memory_id, limit=_PAGE_LIMIT, cursor=cursor
                )
            )
        ]
    else:
        versions = [
            v
            for v in _all_pages(
                lambda cursor: engine.list_versions(store_id, limit=_PAGE_LIMIT, cursor=cursor)
            )
            if v.path == path
        ]
    versions.sort(key=lambda v: (v.created_at, v.id), reverse=True)
    return versions


@version_app.command("ls")
def version_ls(
    store: StoreArgument,
    path: Annotated[
        str | None,
        typer.Option("--path", help="History of the memory at this path (all its paths)."),
    ] = None,
    memory_id: Annotated[str | None, typer.Option("--memory", help="A mem_ id.")] = None,
    operation: Annotated[
        Operation | None, typer.Option("--operation", help="created, modified or deleted.")
    ] = None,
    session_id: Annotated[
        str | None, typer.Option("--session", help="Only versions written by this session.")
    ] = None,
    api_key_id: Annotated[
        str | None, typer.Option("--api-key", help="Only versions written with this API key.")
    ] = None,
    limit: Annotated[
        int, typer.Option("--limit", min=0, help="At most this many, newest first (0: all).")
    ] = 50,
    as_json: JsonOption = False,
    database: DatabaseOption = None,
) -> None:
    """List versions, newest first, with their operation, path, author and time."""
    with command_engine(database) as engine:
        found = engine.find_store(store)
        if path is not None:
            versions = _versions_for_path(engine, found.id, path)
            versions = [
                v
                for v in versions
                if (memory_id is None or v.memory_id == memory_id)
                and (operation is None or v.operation is operation)
                and (session_id is None or (v.created_by and v.created_by.id == session_id))
                and (api_key_id is None or (v.created_by and v.created_by.id == api_key_id))
            ]
        else:
            versions = []
            for version in _all_pages(
                lambda cursor: engine.list_versions(
                    found.id,
                    memory_id=memory_id,
                    operation=operation,
                    session_id=session_id,
                    api_key_id=api_key_id,
                    limit=min(_PAGE_LIMIT, limit) if limit else _PAGE_LIMIT,
                    cursor=cursor,
                )
            ):
                versions.append(version)
                if limit and len(versions) > limit:
                    break
    more = bool(limit) and len(versions) > limit
    if limit:
        versions = versions[:limit]
    if as_json:
        _print_json(_page_json([version_to_wire(v, full=False) for v in versions]))
        return
    rows = [
        (
            v.id,
            _time(v.created_at),
            v.operation.value,
            _version_path(v),
            str(v.created_by) if v.created_by else "",
            _size(v.content_size_bytes),
        )
        for v in versions
    ]
    print_table(
        ("VERSION", "TIME", "OPERATION", "PATH", "AUTHOR", "SIZE"), rows, empty="no versions"
    )
    if more:
        typer.echo(f"(only the newest {limit}; see more with --limit 0)", err=True)


@version_app.command("show")
def version_show(
    store: StoreArgument,
    version_id: Annotated[str, typer.Argument(help="A memver_ id.")],
    raw: Annotated[
        bool, typer.Option("--raw", help="Print only the content, byte for byte.")
    ] = False,
    as_json: JsonOption = False,
    database: DatabaseOption = None,
) -> None:
    """Show one version with its content."""
    with command_engine(database) as engine:
        found = engine.find_store(store)
        version = engine.get_version(found.id, version_id, with_content=True)
    if as_json:
        _print_json(version_to_wire(version, full=True))
        return
    if raw:
        if version.content is None:
            _fail(f"version {version.id} has no content ({_no_content_reason(version)})")
        sys.stdout.buffer.write(version.content.encode("utf-8"))
        sys.stdout.buffer.flush()
        return
    size = version.content_size_bytes
    fields = [
        ("id", version.id),
        ("memory", version.memory_id),
        ("operation", version.operation.value),
        ("path", _version_path(version)),
        ("time", _time(version.created_at)),
        ("author", str(version.created_by) if version.created_by else ""),
        ("sha256", version.content_sha256 or ""),
        ("size", "" if size is None else f"{size:,} bytes"),
    ]
    if version.reason:
        fields.append(("reason", version.reason))
    if version.redacted_at is not None:
        redactor = f" by {version.redacted_by}" if version.redacted_by else ""
        fields.append(("redacted", _time(version.redacted_at) + redactor))
    _print_fields(fields)
    typer.echo("")
    if version.content is None:
        typer.echo(f"({_no_content_reason(version)})")
    else:
        typer.echo(version.content, nl=not version.content.endswith("\n"))


def _no_content_reason(version: MemoryVersion) -> str:
    if version.redacted_at is not None:
        return "redacted"
    if version.operation is Operation.DELETED:
        return "a deletion has no content"
    return "no content"


@version_app.command("redact")
def version_redact(
    store: StoreArgument,
    version_id: Annotated[str, typer.Argument(help="A memver_ id (not a live memory's head).")],
    as_json: JsonOption = False,
    database: DatabaseOption = None,
) -> None:
    """Scrub a historical version's content and path for good (SPEC §2 redaction)."""
    with command_engine(database) as engine:
        found = engine.find_store(store)
        version = engine.redact_version(found.id, version_id, actor=_actor())
    if as_json:
        _print_json(version_to_wire(version, full=False))
    else:
        typer.echo(f"redacted {version.id} (memory {version.memory_id})")


# ----------------------------------------------------------------- import / export


class ExportFormat(enum.StrEnum):
    FILES = "files"
    JSONL = "jsonl"


@contextlib.contextmanager
def _progress(enabled: bool) -> Iterator[Any]:
    """A rich progress bar on a terminal; None (and silence) otherwise."""
    if not enabled:
        yield None
        return
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
    )

    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        transient=True,
    ) as progress:
        yield progress


def import_command(
    source: Annotated[
        Path,
        typer.Argument(
            help="A folder of text files, or a .jsonl file as written by `memfs export`.",
            show_default=False,
        ),
    ],
    store: Annotated[str, typer.Option("--store", "-s", help="Target store (name or id).")],
    prefix: Annotated[
        str, typer.Option("--prefix", help="Memory directory to import into, e.g. /docs/.")
    ] = "/",
    create: Annotated[
        bool, typer.Option("--create", help="Create the store if no store has that name.")
    ] = False,
    include_hidden: Annotated[
        bool, typer.Option("--include-hidden", help="Also import names starting with '.'.")
    ] = False,
    strict: Annotated[
        bool, typer.Option("--strict", help="Exit with status 1 if any file was refused.")
    ] = False,
    verbose: Annotated[
        bool, typer.Option("--verbose", "-v", help="Print every file, not only refusals.")
    ] = False,
    as_json: JsonOption = False,
    database: DatabaseOption = None,
) -> None:
    """Import a folder: DIR/a/b.txt becomes PREFIX/a/b.txt (a .jsonl file: PREFIX/PATH).

    Files that can't be memories (binary, over 102,400 bytes, invalid names, path conflicts,
    hidden or scratch files) are refused and reported with the reason; the rest is imported.
    Memories whose content is unchanged get no new version.
    Exit status 0 unless something fatal happened (or --strict and a file was refused).
    """
    from memfs import transfer

    target_prefix = _prefix(prefix)
    try:
        if source.is_file() and source.suffix == ".jsonl":
            with open(source, encoding="utf-8") as stream:
                candidates = transfer.plan_jsonl_import(
                    stream, source_name=source.name, prefix=target_prefix
                )
        else:
            candidates = transfer.plan_directory_import(
                source, prefix=target_prefix, include_hidden=include_hidden
            )
    except (OSError, UnicodeDecodeError) as exc:
        _fail(f"cannot import {source}: {_os_reason(exc)}")
    counts = {status: 0 for status in transfer.ImportStatus}
    outcomes: list[transfer.ImportOutcome] = []
    total_bytes = 0
    terminal = _is_terminal() and not as_json
    fatal: MemfsError | None = None
    interrupted = False
    with command_engine(database) as engine:
        try:
            found = engine.find_store(store)
        except NotFound:
            if not create:
                raise NotFound(
                    f'no memory store named "{store}" (create it with --create or '
                    "`memfs store create`)"
                ) from None
            found = engine.create_store(store)
        with _progress(terminal) as progress:
            task = (
                progress.add_task(f"importing into {found.name}", total=len(candidates))
                if progress
                else None
            )
            say = _terminal_printer(progress.console) if progress else _stderr
            try:
                for outcome in transfer.import_candidates(
                    engine, found.id, candidates, actor=_actor()
                ):
                    outcomes.append(outcome)
                    counts[outcome.status] += 1
                    if outcome.status is not transfer.ImportStatus.REFUSED:
                        total_bytes += outcome.size_bytes or 0
                    if not as_json:
                        _report_outcome(outcome, verbose, say)
                    if progress is not None:
                        progress.advance(task)
            except MemfsError as exc:
                fatal = exc
            except KeyboardInterrupt:
                interrupted = True
        store_name = found.name
        store_id = found.id
    refused = counts[transfer.ImportStatus.REFUSED]
    if as_json:
        _print_json(
            {
                "memory_store_id": store_id,
                "source": str(source),
                "prefix": target_prefix,
                **{status.value: n for status, n in counts.items()},
                "error": fatal.message if fatal else None,
                "files": [o.to_json() for o in outcomes],
            }
        )
    else:
        imported = len(outcomes) - refused
        typer.echo(
            f'imported {source} into "{store_name}": {counts[transfer.ImportStatus.CREATED]} '
            f"created, {counts[transfer.ImportStatus.UPDATED]} updated, "
            f"{counts[transfer.ImportStatus.UNCHANGED]} unchanged, {refused} refused "
            f"({imported} files, {total_bytes:,} bytes)"
        )
    not_done = len(candidates) - len(outcomes)
    if fatal is not None:
        _fail(f"import stopped: {fatal.message} ({not_done} entries not imported)")
    if interrupted:
        typer.echo(f"memfs: error: import interrupted ({not_done} entries not imported)", err=True)
        raise typer.Exit(130)
    if strict and refused:
        raise typer.Exit(1)


def _stderr(message: str) -> None:
    typer.echo(message, err=True)


def _terminal_printer(console: Any) -> Callable[[str], None]:
    """Prints lines above a live progress bar, verbatim (file names are not rich markup)."""

    def say(message: str) -> None:
        console.print(message, markup=False, highlight=False, soft_wrap=True)

    return say


def _report_outcome(outcome: Any, verbose: bool, say: Callable[[str], None]) -> None:
    from memfs.transfer import ImportStatus

    if outcome.status is ImportStatus.REFUSED:
        target = f" -> {outcome.path}" if outcome.path else ""
        say(f"refused {outcome.source}{target}: {outcome.reason}")
    elif verbose:
        say(f"{outcome.status.value} {outcome.path} ({_size(outcome.size_bytes)} bytes)")


def _os_reason(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return _one_line(exc)


def export_command(
    store: StoreArgument,
    destination: Annotated[
        str,
        typer.Argument(help="Folder to write into, or a file (- for stdout) with --format jsonl."),
    ],
    prefix: Annotated[
        str, typer.Option("--prefix", help="Export only this memory directory.")
    ] = "/",
    output_format: Annotated[
        ExportFormat,
        typer.Option(
            "--format",
            help="files: one file per memory; jsonl: one API memory object per line "
            "(keeps metadata; `memfs import FILE.jsonl` reads it back).",
        ),
    ] = ExportFormat.FILES,
    force: Annotated[
        bool, typer.Option("--force", help="Write into a non-empty folder or over a file.")
    ] = False,
    database: DatabaseOption = None,
) -> None:
    """Write a store's memories out: PREFIX/a/b.txt becomes DEST/a/b.txt."""
    from memfs import transfer

    source_prefix = _prefix(prefix)
    to_stdout = destination == "-"
    if to_stdout and output_format is not ExportFormat.JSONL:
        _fail("exporting to stdout (-) needs --format jsonl")
    target = Path(destination)
    if not to_stdout and not force:
        if output_format is ExportFormat.FILES and target.is_dir() and any(target.iterdir()):
            _fail(f"{target} is not empty (pass --force to write into it)")
        if output_format is ExportFormat.JSONL and target.exists():
            _fail(f"{target} exists (pass --force to overwrite it)")
    terminal = _is_terminal() and not to_stdout
    count = 0
    total_bytes = 0
    selected = 0
    written: list[Path] = []
    with command_engine(database) as engine:
        found = engine.find_store(store)
        with contextlib.ExitStack() as stack:
            progress = stack.enter_context(_progress(terminal))
            task = progress.add_task(f"exporting {found.name}", total=None) if progress else None

            def on_total(total: int) -> None:
                nonlocal selected
                selected = total
                if progress is not None:
                    progress.update(task, total=total)

            try:
                if output_format is ExportFormat.JSONL:
                    stream = (
                        sys.stdout
                        if to_stdout
                        else stack.enter_context(open(target, "w", encoding="utf-8"))
                    )
                    outcomes = transfer.export_jsonl(
                        engine, found.id, stream, prefix=source_prefix, on_total=on_total
                    )
                else:
                    outcomes = transfer.export_tree(
                        engine, found.id, target, prefix=source_prefix, on_total=on_total
                    )
                for outcome in outcomes:
                    count += 1
                    total_bytes += outcome.size_bytes
                    if outcome.file is not None:
                        written.append(outcome.file)
                    if progress is not None:
                        progress.advance(task)
            except BrokenPipeError:
                raise  # the reader went away (`| head`): click exits quietly
            except OSError as exc:
                if progress is not None:
                    stack.close()  # take the progress bar down before printing
                reason = f"cannot write {exc.filename or target}: {_os_reason(exc)}"
                if output_format is ExportFormat.FILES:
                    # Each file is written whole or not at all: say which ones were.
                    for file in written:
                        _stderr(f"written {file}")
                    reason += (
                        f" (export stopped: {len(written)} of {selected} memories written"
                        f"{', listed above' if written else ''})"
                    )
                _fail(reason)
    if not to_stdout:
        typer.echo(
            f'exported {count} memories ({total_bytes:,} bytes) from "{found.name}" to {target}'
        )


# ----------------------------------------------------------------- fsck, prompt


def fsck_command(database: DatabaseOption = None) -> None:
    """Check every storage invariant; print each problem and exit 1 if there is any."""
    findings = 0
    with command_engine(database) as engine:
        for finding in engine.iter_fsck_findings():
            findings += 1
            typer.echo(f"fsck: {finding}")
        counts = engine.statistics()
    if findings:
        _fail(f"fsck found {findings} problem{'s' if findings != 1 else ''}")
    typer.echo(
        f"fsck: clean ({counts['stores']} stores, {counts['memories']} memories, "
        f"{counts['versions']} versions, {counts['blobs']} blobs checked)"
    )


def _parse_store_spec(spec: str) -> tuple[str, Access]:
    """``NAME[:ro|:rw]`` → (name, access), the syntax of ``memfs mount --store``."""
    for suffix, access in ((":ro", Access.READ_ONLY), (":rw", Access.READ_WRITE)):
        if spec.endswith(suffix):
            return spec[: -len(suffix)], access
    return spec, Access.READ_WRITE


class Layout(enum.StrEnum):
    PER_STORE = "per-store"
    FLAT = "flat"


def prompt_command(
    mount: Annotated[
        Path | None,
        typer.Option("--mount", help="A running `memfs mount`: describe what it mounts."),
    ] = None,
    stores: Annotated[
        list[str] | None,
        typer.Option(
            "--store", "-s", help="NAME_OR_ID[:ro] as given to `memfs mount`; repeat for several."
        ),
    ] = None,
    session_id: Annotated[
        str | None, typer.Option("--session", help="Render for an API session (sesn_ id).")
    ] = None,
    root: Annotated[
        str, typer.Option("--root", help="With --store: the mount point.")
    ] = DEFAULT_MOUNT_ROOT,
    layout: Annotated[
        Layout, typer.Option("--layout", help="With --store: as given to `memfs mount`.")
    ] = Layout.PER_STORE,
    instructions: Annotated[
        list[str] | None,
        typer.Option(
            "--instructions",
            help="STORE=TEXT: guidance for the agent on one store; repeat for several.",
        ),
    ] = None,
    database: DatabaseOption = None,
) -> None:
    """Print the system-prompt note describing a mount (name, path, access, description)."""
    from memfs.prompt import plan_resources, render_prompt

    if [bool(mount), bool(stores), bool(session_id)].count(True) != 1:
        raise typer.BadParameter("give one of --mount, --store (one or more) or --session")
    given: dict[str, str] = {}
    for item in instructions or ():
        key, sep, value = item.partition("=")
        if not sep:
            raise typer.BadParameter(f"{item!r} is not STORE=TEXT", param_hint="--instructions")
        given[key] = value
    if session_id is not None and given:
        raise typer.BadParameter("with --session the instructions are the session's own")
    with command_engine(database) as engine:
        if session_id is not None:
            resources = engine.get_session(session_id).resources
        else:
            if mount is not None:
                attachments, mount_paths = _mounted_stores(engine, mount)
            else:
                attachments = []
                for spec in stores or ():
                    name, access = _parse_store_spec(spec)
                    attachments.append((engine.find_store(name), access, None))
            attachments = _with_instructions(attachments, given, stores or [])
            resources = plan_resources(attachments, mount_root=root, flat=layout is Layout.FLAT)
            if mount is not None:
                resources = [
                    r.model_copy(update={"mount_path": path})
                    for r, path in zip(resources, mount_paths, strict=True)
                ]
    typer.echo(render_prompt(resources), nl=False)


_Attachment = tuple[MemoryStore, Access, str | None]


def _mounted_stores(engine: Engine, mountpoint: Path) -> tuple[list[_Attachment], list[str]]:
    """The stores a running mount serves, from the status file its daemon keeps.

    Returns:
        ``(store, access, None)`` per store in attachment order, and each store's
        directory (the mount point itself in the flat layout).

    Raises:
        InvalidInput: no memfs mount daemon runs at ``mountpoint``.
    """
    from memfs.fuse.status import read_status

    target = os.path.realpath(mountpoint)
    status = read_status(target)
    if status is None:
        raise InvalidInput(f"{target} is not a memfs mount (see `memfs status {target}`)")
    attachments: list[_Attachment] = []
    paths: list[str] = []
    for entry in status["stores"]:
        access = Access.READ_ONLY if entry["access"] == "read_only" else Access.READ_WRITE
        attachments.append((engine.get_store(entry["id"]), access, None))
        directory = entry.get("directory") or "."
        paths.append(target if directory == "." else f"{target}/{directory}")
    return attachments, paths


def _with_instructions(
    attachments: list[_Attachment], given: dict[str, str], specs: Sequence[str]
) -> list[_Attachment]:
    """Adds ``--instructions STORE=TEXT`` to the attachment it names (by spec, name, slug
    or id). Raises InvalidInput when one names no attached store."""
    from memfs.rules import slugify

    used: set[str] = set()
    result: list[_Attachment] = []
    for index, (store, access, _) in enumerate(attachments):
        keys = [store.id, store.name, slugify(store.name)]
        if index < len(specs):
            keys.insert(0, specs[index])
        text = next((given[k] for k in keys if k in given), None)
        used.update(k for k in keys if k in given)
        result.append((store, access, text))
    unused = sorted(set(given) - used)
    if unused:
        raise InvalidInput(
            "--instructions names a store that is not attached: " + ", ".join(unused)
        )
    return result
