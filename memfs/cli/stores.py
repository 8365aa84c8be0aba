"""``memfs store create|list|show|update|archive|delete|restore|fork|merge``: the stores.

Stores are named by name, slug or id (:meth:`memfs.store.stores.Stores.find`). ``--json``
prints the API's objects (:mod:`memfs.wire`); otherwise a table or ``key  value`` lines.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Annotated

import typer

from memfs.cli import short_help
from memfs.cli._common import (
    PAGE_LIMIT,
    DatabaseOption,
    JsonOption,
    MetadataOption,
    StoreArgument,
    all_pages,
    command_actor,
    command_engine,
    command_peek,
    fail,
    format_size,
    format_time,
    page_json,
    parse_metadata,
    print_fields,
    print_json,
    print_table,
)
from memfs.core.errors import MemfsError
from memfs.core.model import (
    MemoryStore,
)
from memfs.core.rules import format_duration_s, parse_retention, slugify
from memfs.wire import (
    store_deleted_to_wire,
    store_to_wire,
)

if TYPE_CHECKING:  # history's objects are imported by the commands that print them
    from memfs.core.history import RestoreStep
    from memfs.store import Engine

__all__ = ["register"]

store_app = typer.Typer(help=short_help("store"))


def register(app: typer.Typer) -> None:
    """Adds ``memfs store …`` to the ``memfs`` app."""
    store_app.info.no_args_is_help = True
    app.add_typer(store_app, name="store")


def _store_fields(store: MemoryStore) -> list[tuple[str, str]]:
    metadata = ", ".join(f"{k}={v}" for k, v in sorted(store.metadata.items()))
    return [
        ("id", store.id),
        ("name", store.name),
        ("description", store.description),
        ("metadata", metadata),
        ("memories", f"{store.entry_count:,}"),
        ("size", f"{store.total_size_bytes:,} bytes"),
        ("created", format_time(store.created_at)),
        ("updated", format_time(store.updated_at)),
        ("retention", _retention_text(store.version_retention_s)),
        ("archived", format_time(store.archived_at) or "no"),
        *_fork_fields(store),
    ]


def _fork_fields(store: MemoryStore) -> list[tuple[str, str]]:
    """The origin and base of a fork (SPEC §10); none for a store that is no fork."""
    if store.forked_from is None:
        return []
    return [
        ("forked from", store.forked_from),
        ("fork base", store.fork_base or "(the origin was empty)"),
    ]


def _retention_text(retention_s: int | None) -> str:
    """How long versions are kept (SPEC §2 retention)."""
    if retention_s is None:
        return "forever"
    return f"{format_duration_s(retention_s)} (older versions are pruned)"


RetentionOption = Annotated[
    str | None,
    typer.Option(
        "--retention",
        help="Keep versions this long, e.g. 30d, 12h, 2w; 'forever' (the default) keeps "
        "every version. The head version of a memory is never pruned.",
    ),
]


def _print_store(store: MemoryStore, as_json: bool) -> None:
    if as_json:
        print_json(store_to_wire(store))
    else:
        print_fields(_store_fields(store))


@store_app.command("create")
def store_create(
    name: Annotated[str, typer.Argument(help="Display name (1-255 characters).")],
    description: Annotated[
        str, typer.Option("--description", help="Up to 1,024 characters; shown to agents.")
    ] = "",
    metadata: MetadataOption = None,
    retention: RetentionOption = None,
    as_json: JsonOption = False,
    database: DatabaseOption = None,
) -> None:
    """Create a memory store."""
    retention_s = None if retention is None else parse_retention(retention)
    with command_engine(database, create=True) as engine:
        store = engine.stores.create(
            name, description, parse_metadata(metadata), version_retention_s=retention_s
        )
        _note_shared_name(engine, store)
    _print_store(store, as_json)


def _note_shared_name(engine: Engine, store: MemoryStore) -> None:
    """Says on stderr when ``store``'s name (or its slug) is another store's too: names
    need not be unique (api-contract §5.1), but the CLI finds stores by name, and a
    shared one then needs an id (``memfs store show NAME`` says which)."""
    from memfs.core.errors import InvalidInput

    slug = slugify(store.name)
    for reference, shared in (
        (store.name, f"another memory store is named {store.name!r} too"),
        (slug, f"another memory store's name has the same slug, {slug!r}"),
    ):
        try:
            engine.stores.find(reference)
        except InvalidInput:
            typer.echo(
                f"memfs: note: {shared}; commands that name this store need its id "
                f"({store.id})",
                err=True,
            )
            return
        except MemfsError:
            continue


@store_app.command("list")
def store_list(
    include_archived: Annotated[
        bool, typer.Option("--archived", help="Include archived stores.")
    ] = False,
    as_json: JsonOption = False,
    database: DatabaseOption = None,
) -> None:
    """List stores, newest first."""
    with command_peek(database) as peek:
        if peek is not None:
            stores = peek.list_stores(include_archived=include_archived)
    if peek is None:
        with command_engine(database, home_secured=True) as engine:
            stores = list(
                all_pages(
                    lambda cursor: engine.stores.list(
                        include_archived=include_archived, limit=PAGE_LIMIT, cursor=cursor
                    )
                )
            )
    if as_json:
        print_json(page_json([store_to_wire(s) for s in stores]))
        return
    rows = [
        (
            s.id,
            s.name,
            f"{s.entry_count:,}",
            format_size(s.total_size_bytes),
            format_time(s.created_at),
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
    with command_peek(database) as peek:
        if peek is not None:
            found = peek.find_store(store)
    if peek is None:
        with command_engine(database, home_secured=True) as engine:
            found = engine.stores.find(store)
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
    retention: RetentionOption = None,
    as_json: JsonOption = False,
    database: DatabaseOption = None,
) -> None:
    """Change a store's name, description, metadata (other keys are kept) or version
    retention."""
    patch: dict[str, str | None] = dict(parse_metadata(metadata))
    for key in unset or ():
        patch[key] = None
    retention_s = ... if retention is None else parse_retention(retention)
    with command_engine(database) as engine:
        found = engine.stores.find(store)
        updated = engine.stores.update(
            found.id,
            name=name,
            description=description,
            metadata_patch=patch or None,
            version_retention_s=retention_s,
        )
        if name is not None and name != found.name:
            _note_shared_name(engine, updated)
    _print_store(updated, as_json)


# SPEC §8: archiving or deleting a store mounted on (identity, template) pairs.
ForceOption = Annotated[
    bool,
    typer.Option(
        "--force", help="Even though (identity, template) pairs mount it (SPEC §8)."
    ),
]


@store_app.command("archive")
def store_archive(
    store: StoreArgument,
    force: ForceOption = False,
    as_json: JsonOption = False,
    database: DatabaseOption = None,
) -> None:
    """Archive a store: one-way; it becomes read-only (SPEC §2)."""
    with command_engine(database) as engine:
        found = engine.stores.find(store)
        archived = engine.for_caller(actor=command_actor()).stores.archive(found.id, force=force)
    if as_json:
        print_json(store_to_wire(archived))
    else:
        typer.echo(f'archived store "{archived.name}" ({archived.id})')


@store_app.command("delete")
def store_delete(
    store: StoreArgument,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")] = False,
    force: ForceOption = False,
    as_json: JsonOption = False,
    database: DatabaseOption = None,
) -> None:
    """Delete a store with all its memories and versions (permanent)."""
    with command_engine(database) as engine:
        found = engine.stores.find(store)
        if not yes:
            if not sys.stdin.isatty():
                fail(f'refusing to delete store "{found.name}" without --yes')
            typer.confirm(
                f'Delete store "{found.name}" ({found.id}) with its {found.entry_count:,} '
                "memories and all their versions?",
                abort=True,
            )
        engine.for_caller(actor=command_actor()).stores.delete(found.id, force=force)
    if as_json:
        print_json(store_deleted_to_wire(found.id))
    else:
        typer.echo(f'deleted store "{found.name}" ({found.id})')


_ACTION_WORDS = {
    "change": "change",
    "delete": "delete",
    "bring_back": "bring back",
    "keep": "keep",
}


def _step_line(step: RestoreStep) -> str:
    from memfs.core.history import RestoreAction

    if step.action is RestoreAction.CHANGE:
        where = (
            f"{step.path_now} -> {step.path_then}"
            if step.path_now != step.path_then
            else str(step.path_now)
        )
        if step.content_changes:
            where += " (content)"
    elif step.action is RestoreAction.KEEP:
        where = f"{step.path_now or '(gone)'}: its content then is redacted"
    else:
        where = str(step.path_then or step.path_now)
    return f"  {_ACTION_WORDS[step.action.value]:<11} {where}  {step.memory_id}"


@store_app.command("restore")
def store_restore(
    store: StoreArgument,
    to: Annotated[
        str,
        typer.Option(
            "--to",
            metavar="POINT",
            help="now, an RFC 3339 time, a snapshot name or snap_ id, or a memver_ id (SPEC §10).",
        ),
    ],
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Print the plan; change nothing.")
    ] = False,
    reason: Annotated[
        str | None, typer.Option("--reason", help="Recorded in the audit trail.")
    ] = None,
    as_json: JsonOption = False,
    database: DatabaseOption = None,
) -> None:
    """Make the store what it was at a point: new versions only, all or nothing, after
    an automatic snapshot (restore to that snapshot to undo)."""
    from memfs.core.history import RestoreAction
    from memfs.core.points import parse_point
    from memfs.wire import restore_plan_to_wire

    point = parse_point(to)
    with command_engine(database) as engine:
        found = engine.stores.find(store)
        restores = engine.for_caller(actor=command_actor()).restores
        plan = (
            restores.plan(found.id, point)
            if dry_run
            else restores.restore(found.id, point, reason=reason)
        )
    if as_json:
        print_json(restore_plan_to_wire(plan))
        return
    verb = "would restore" if dry_run else "restored"
    typer.echo(f"{verb} {found.name} to {plan.point}:")
    for step in plan.steps:
        typer.echo(_step_line(step))
    typer.echo(
        f"{plan.count(RestoreAction.CHANGE)} changed, {plan.count(RestoreAction.DELETE)} "
        f"deleted, {plan.count(RestoreAction.BRING_BACK)} brought back, "
        f"{plan.count(RestoreAction.KEEP)} kept"
        + (" (dry run: nothing changed)" if dry_run else "")
    )
    if plan.snapshot is not None:
        typer.echo(
            f"snapshot {plan.snapshot.name} taken first; undo with: memfs store restore "
            f"{_quote(found.name)} --to {plan.snapshot.name}"
        )


@store_app.command("fork")
def store_fork(
    source: Annotated[
        str,
        typer.Argument(
            metavar="STORE[@POINT]",
            help="The store to fork, at a point (default now): a time, a snapshot, a memver_ id.",
        ),
    ],
    name: Annotated[str, typer.Option("--name", help="The new store's name.")],
    description: Annotated[
        str | None, typer.Option("--description", "-d", help="The new store's description.")
    ] = None,
    as_json: JsonOption = False,
    database: DatabaseOption = None,
) -> None:
    """Make a new store holding this one's memories at a point (SPEC §10 fork): content
    shared, not copied; origin and base remembered, so diff and merge match by them."""
    from memfs.core.points import NOW, split_store_point

    store, point = split_store_point(source)
    with command_engine(database) as engine:
        found = engine.stores.find(store)
        fork = engine.for_caller(actor=command_actor()).history.fork(
            found.id, at=point or NOW, name=name, description=description
        )
    if as_json:
        print_json(store_to_wire(fork))
        return
    base = fork.fork_base or "before its first version"
    typer.echo(
        f"forked {found.name}@{(point or NOW).text} into {fork.name} ({fork.id}): "
        f"{fork.entry_count:,} memories, base {base}"
    )


_MERGE_WORDS = {
    "update": "update",
    "create": "add",
    "delete": "delete",
    "conflict_copy": "conflict",
    "keep": "keep",
}


@store_app.command("merge")
def store_merge(
    fork: Annotated[str, typer.Argument(metavar="FORK", help="The fork to merge back.")],
    into: Annotated[
        str, typer.Option("--into", metavar="ORIGIN", help="The store it was forked from.")
    ],
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Print the plan; change nothing.")
    ] = False,
    reason: Annotated[
        str | None, typer.Option("--reason", help="Recorded in the audit trail.")
    ] = None,
    as_json: JsonOption = False,
    database: DatabaseOption = None,
) -> None:
    """Merge a fork back into its origin (SPEC §10): three-way against the fork's base;
    a memory changed on both sides keeps the origin's content and gets the fork's beside
    it as a conflict copy. All or nothing, after an automatic snapshot of the origin."""
    from memfs.core.history import MergeAction
    from memfs.wire import merge_plan_to_wire

    with command_engine(database) as engine:
        found = engine.stores.find(fork)
        origin = engine.stores.find(into)
        history = engine.for_caller(actor=command_actor()).history
        plan = (
            history.plan_merge(found.id, into=origin.id)
            if dry_run
            else history.merge(found.id, into=origin.id, reason=reason)
        )
    if as_json:
        print_json(merge_plan_to_wire(plan))
        return
    verb = "would merge" if dry_run else "merged"
    typer.echo(f"{verb} {found.name} into {origin.name} (base {plan.base}):")
    for step in plan.steps:
        where = step.path or step.path_before
        if step.action.value == "update" and step.path_before != step.path:
            where = f"{step.path_before} -> {step.path}"
        line = f"  {_MERGE_WORDS[step.action.value]:<9} {where}"
        typer.echo(line + (f"  ({step.note})" if step.note else ""))
    counts = ", ".join(
        f"{plan.count(action)} {_MERGE_WORDS[action.value]}" for action in MergeAction
    )
    typer.echo(counts + (" (dry run: nothing changed)" if dry_run else ""))
    if plan.snapshot is not None:
        typer.echo(
            f"snapshot {plan.snapshot.name} of {origin.name} taken first; undo with: memfs "
            f"store restore {_quote(origin.name)} --to {plan.snapshot.name}"
        )


def _quote(value: str) -> str:
    import shlex

    return shlex.quote(value)
