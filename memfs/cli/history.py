"""``memfs snapshot create|ls|rm`` and ``memfs diff``: history you can use (SPEC §10).

A point (``--at``, the ``@POINT`` of a diff side) is ``now``, an RFC 3339 time, a
snapshot name or ``snap_`` id, or a ``memver_`` id (:mod:`memfs.core.points`); one that
names no moment exits 2, naming it, as does a snapshot name a user may not give.

``memfs diff A [B]`` follows diff(1) and ``git diff``: exit 0 when the sides are equal,
1 when they differ, 2 on any error; a unified diff per changed memory under a
``diff --memfs a/PATH b/PATH`` header (renames, new and deleted memories said as git
says them), or ``--stat``, ``--name-only``, ``--json`` (the API's
``memory_store_diff``). Each side is ``STORE[@POINT]``; B defaults to A's store now.
"""

from __future__ import annotations

from typing import Annotated

import typer

from memfs.cli import exit_status, output_failed, short_help
from memfs.cli._common import (
    DatabaseOption,
    JsonOption,
    StoreArgument,
    command_actor,
    command_engine,
    format_time,
    page_json,
    print_json,
    print_table,
)
from memfs.core.errors import InvalidInput, MemfsError, NotFound
from memfs.core.history import DiffEntry, DiffStatus, StoreDiff
from memfs.core.points import NOW, Point, parse_point, split_store_point, validate_snapshot_name

__all__ = ["register"]

snapshot_app = typer.Typer(help=short_help("snapshot"))


def register(app: typer.Typer) -> None:
    """Adds ``memfs snapshot …`` and ``memfs diff`` to the ``memfs`` app."""
    snapshot_app.info.no_args_is_help = True
    app.add_typer(snapshot_app, name="snapshot")
    app.command("diff")(diff_command)


# ----------------------------------------------------------------- snapshots


@snapshot_app.command("create")
def snapshot_create(
    store: StoreArgument,
    name: Annotated[str, typer.Argument(help="Unique in the store, e.g. before-cleanup.")],
    description: Annotated[
        str, typer.Option("--description", "-d", help="Up to 1,024 characters.")
    ] = "",
    at: Annotated[
        str,
        typer.Option(
            "--at", metavar="POINT", help="The point it names (default: now; SPEC §10)."
        ),
    ] = "now",
    as_json: JsonOption = False,
    database: DatabaseOption = None,
) -> None:
    """Name the store's present (or another point) so it can be read back later."""
    from memfs.wire import snapshot_to_wire

    try:  # a usage error (exit 2): now, auto-…, a time's form… are not a user's names
        validate_snapshot_name(name, automatic=False)
    except InvalidInput as exc:
        raise typer.BadParameter(exc.message, param_hint="NAME") from exc
    point = parse_point(at)
    with command_engine(database) as engine:
        found = engine.stores.find(store)
        snapshot = engine.for_caller(actor=command_actor()).snapshots.create(
            found.id, name, description=description, at=point
        )
    if as_json:
        print_json(snapshot_to_wire(snapshot))
        return
    after = snapshot.memory_version_id or "before the first version"
    typer.echo(f"created snapshot {snapshot.name} ({snapshot.id}) of {found.name}: {after}")


@snapshot_app.command("ls")
def snapshot_ls(
    store: StoreArgument, as_json: JsonOption = False, database: DatabaseOption = None
) -> None:
    """List a store's snapshots, newest first."""
    from memfs.wire import snapshot_to_wire

    with command_engine(database) as engine:
        found = engine.stores.find(store)
        items = []
        cursor: str | None = None
        while True:
            page = engine.snapshots.list(found.id, limit=100, cursor=cursor)
            items += page.items
            cursor = page.next_cursor
            if cursor is None:
                break
    if as_json:
        print_json(page_json([snapshot_to_wire(s) for s in items]))
        return
    rows = [
        (
            s.name,
            format_time(s.created_at),
            s.memory_version_id or "",
            "" if s.created_by is None else f"{s.created_by.type.value}:{s.created_by.id}",
            s.description,
        )
        for s in items
    ]
    print_table(
        ("NAME", "CREATED", "AFTER VERSION", "BY", "DESCRIPTION"), rows, empty="no snapshots"
    )


@snapshot_app.command("rm")
def snapshot_rm(
    store: StoreArgument,
    name: Annotated[str, typer.Argument(help="Snapshot name (or snap_ id).")],
    database: DatabaseOption = None,
) -> None:
    """Delete a snapshot (the versions only it needed become prunable again)."""
    with command_engine(database) as engine:
        found = engine.stores.find(store)
        try:
            snapshot = engine.snapshots.get_by_name(found.id, name)
        except NotFound:
            if not name.startswith("snap_"):
                raise
            snapshot = engine.snapshots.get(found.id, name)
        engine.for_caller(actor=command_actor()).snapshots.delete(found.id, snapshot.id)
    typer.echo(f"deleted snapshot {snapshot.name} ({snapshot.id}) of {found.name}")


# ----------------------------------------------------------------- diff


def _header(entry: DiffEntry) -> list[str]:
    """git's extended header lines of one entry."""
    old, new = entry.old_path or entry.path, entry.new_path or entry.path
    lines = [f"diff --memfs a{old} b{new}"]
    if entry.status is DiffStatus.ADDED:
        lines.append(f"new memory {entry.memory_id}")
    elif entry.status is DiffStatus.REMOVED:
        lines.append(f"deleted memory {entry.memory_id}")
    elif entry.status is DiffStatus.RENAMED:
        lines += [f"rename from {entry.old_path}", f"rename to {entry.new_path}"]
    if entry.redacted:
        lines.append("redacted content: not shown (SPEC §2)")
    return lines


def _print_patch(diff: StoreDiff) -> None:
    for entry in diff.entries:
        for line in _header(entry):
            typer.echo(line)
        if entry.diff:
            typer.echo(entry.diff, nl=False)


def _print_stat(diff: StoreDiff) -> None:
    names = [
        f"{e.old_path} => {e.new_path}" if e.status is DiffStatus.RENAMED else e.path
        for e in diff.entries
    ]
    width = max((len(name) for name in names), default=0)
    for name, entry in zip(names, diff.entries, strict=True):
        changes = entry.insertions + entry.deletions
        bar = "+" * entry.insertions + "-" * entry.deletions
        shown = "redacted" if entry.redacted else f"{changes} {bar}".rstrip()
        typer.echo(f" {name.ljust(width)} | {shown}")
    count = len(diff.entries)
    typer.echo(
        f" {count} memor{'y' if count == 1 else 'ies'} changed, "
        f"{diff.insertions} insertion{'s' if diff.insertions != 1 else ''}(+), "
        f"{diff.deletions} deletion{'s' if diff.deletions != 1 else ''}(-)"
    )


def diff_command(
    old: Annotated[str, typer.Argument(metavar="A", help="STORE[@POINT] (default point: now).")],
    new: Annotated[
        str | None,
        typer.Argument(metavar="[B]", help="STORE[@POINT]; default: A's store now."),
    ] = None,
    stat: Annotated[bool, typer.Option("--stat", help="Lines changed per memory.")] = False,
    name_only: Annotated[
        bool, typer.Option("--name-only", help="Only the paths of the memories that differ.")
    ] = False,
    as_json: JsonOption = False,
    database: DatabaseOption = None,
) -> None:
    """Show what changed between two points of a store: exit 0 equal, 1 different, 2 error."""
    run_diff(old, new, stat=stat, name_only=name_only, as_json=as_json, database=database)


def run_diff(
    old: str,
    new: str | None,
    *,
    stat: bool,
    name_only: bool,
    as_json: bool,
    database: str | None,
    forked_only: bool = False,
) -> None:
    """:func:`diff_command`'s work; ``forked_only``: B is a fork of A and what it never
    had is left out (:meth:`memfs.store.history.History.diff`, ``memfs dream diff``)."""
    from memfs.wire import store_diff_to_wire

    new_point: Point | None
    try:
        old_store, old_point = split_store_point(old)
        if new is None:
            new_store, new_point = old_store, NOW
        else:
            new_store, new_point = split_store_point(new)
        with command_engine(database) as engine:
            old_id = engine.stores.find(old_store).id
            new_id = old_id if new_store == old_store else engine.stores.find(new_store).id
            diff = engine.history.diff(
                old_id, old_point or NOW, new_id, new_point or NOW, forked_only=forked_only
            )
    except MemfsError as exc:  # diff(1): trouble is 2, whatever it was
        typer.echo(f"memfs: error: {exc.message}", err=True)
        raise typer.Exit(max(2, exit_status(exc))) from None
    try:
        if as_json:
            print_json(store_diff_to_wire(diff))
        elif name_only:
            for entry in diff.entries:
                typer.echo(entry.path)
        elif stat:
            _print_stat(diff)
        else:
            _print_patch(diff)
    except OSError as exc:  # diff(1): output that can't be written is trouble too
        if not output_failed(exc):
            raise
        raise typer.Exit(2) from None
    raise typer.Exit(1 if diff.entries else 0)
