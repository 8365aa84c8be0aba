"""``memfs backup`` and ``memfs restore``: a consistent, checked copy of an embedded
(SQLite) database made while mounts and servers keep writing, and putting one back
(the store does both: :meth:`memfs.store.Engine.backup_to`,
:func:`memfs.store.restore_database`). PostgreSQL is backed up with ``pg_dump``
(README "Backup and restore")."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Annotated

import typer

from memfs.cli._common import DatabaseOption, command_engine, fail, format_size, secure_home

__all__ = ["register"]

# The name a backup gets when DEST is a directory: memfs-20260102T030405.123456Z.db.
BACKUP_NAME_FORMAT = "memfs-{timestamp}.db"


def register(app: typer.Typer) -> None:
    """Adds ``memfs backup`` and ``memfs restore`` to the ``memfs`` app."""
    app.command("backup")(backup_command)
    app.command("restore")(restore_command)


def _summary(counts: dict[str, int]) -> str:
    return (
        f"{counts['stores']} stores, {counts['memories']} memories, "
        f"{counts['versions']} versions, {counts['blobs']} blobs; "
        f"{format_size(counts['size_bytes'])} bytes"
    )


def backup_command(
    destination: Annotated[
        Path,
        typer.Argument(
            help="The backup file, or an existing directory to write "
            "memfs-<UTC time>.db into.",
            show_default=False,
        ),
    ],
    force: Annotated[
        bool, typer.Option("--force", help="Replace an existing backup file.")
    ] = False,
    database: DatabaseOption = None,
) -> None:
    """Copy the SQLite database while mounts and servers keep writing: one consistent
    snapshot (VACUUM INTO), checked as memfs fsck checks, 0600. Erased content
    (redactions, hard deletes, prunes) is in no page of it."""
    from memfs.home import compact_timestamp

    if destination.is_dir():
        stamp = compact_timestamp(datetime.now().astimezone())
        destination = destination / BACKUP_NAME_FORMAT.format(timestamp=stamp)
    elif not destination.parent.is_dir():
        fail(f"no directory {destination.parent} to write the backup into")
    with command_engine(database) as engine:
        counts = engine.backup_to(destination, replace=force)
    typer.echo(f"backup: wrote {destination} ({_summary(counts)}), fsck clean")


def restore_command(
    source: Annotated[
        Path, typer.Argument(help="A backup made by memfs backup.", show_default=False)
    ],
    home: Annotated[
        Path | None,
        typer.Option(
            "--home",
            help="Restore into this (new) MEMFS_HOME, as its memfs.db, instead of the "
            "database in use.",
        ),
    ] = None,
    force: Annotated[
        bool,
        typer.Option("--force", help="Replace the existing database (when nothing has it open)."),
    ] = False,
    database: DatabaseOption = None,
) -> None:
    """Put a backup back: checked, then renamed over the database (default
    $MEMFS_DATABASE, else $MEMFS_HOME/memfs.db) — refused while any process (a mount,
    memfs serve, a command) has it open — or into a new home with --home."""
    from memfs.store import restore_database

    if home is not None and database is not None:
        fail("give --home or --database, not both")
    if not source.is_file():
        fail(f"no backup file at {source}")
    target = str(home.expanduser().resolve() / "memfs.db") if home is not None else database
    secure_home()
    path, counts = restore_database(str(source.resolve()), target, replace=force)
    typer.echo(f"restore: {path} is now the backup {source} ({_summary(counts)}), fsck clean")
