"""``memfs memory ls|cat|put|mv|rm|restore``: the memories of a store.

Memories are named by path or ``mem_…`` id. ``ls`` and ``cat`` take ``--at POINT`` to
read the store as it was (SPEC §10; a bad point exits 2, naming it). ``--json`` prints
the API's objects (:mod:`memfs.wire`; lists as the ``{"data": [...], "next_page":
null}`` envelope).
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from typing import Annotated

import typer

from memfs.cli import short_help
from memfs.cli._common import (
    PAGE_LIMIT,
    AtOption,
    DatabaseOption,
    JsonOption,
    MetadataOption,
    StoreArgument,
    all_pages,
    command_actor,
    command_engine,
    command_peek,
    fail,
    find_memory,
    format_size,
    format_time,
    listing_prefix,
    page_json,
    parse_metadata,
    print_json,
    print_table,
)
from memfs.core.errors import NotFound
from memfs.core.model import (
    DeleteMode,
    Memory,
    MemoryPrefix,
)
from memfs.core.points import parse_point
from memfs.core.rules import validate_content_bytes, validate_path
from memfs.wire import (
    memory_deleted_to_wire,
    memory_to_wire,
    prefix_to_wire,
)

__all__ = ["register"]

memory_app = typer.Typer(help=short_help("memory"))


def register(app: typer.Typer) -> None:
    """Adds ``memfs memory …`` to the ``memfs`` app."""
    memory_app.info.no_args_is_help = True
    app.add_typer(memory_app, name="memory")


def _memory_rows(items: Iterable[Memory | MemoryPrefix]) -> list[tuple[str, ...]]:
    rows: list[tuple[str, ...]] = []
    for item in items:
        if isinstance(item, MemoryPrefix):
            rows.append((item.path, "", "", ""))
        else:
            rows.append(
                (
                    item.path,
                    format_size(item.content_size_bytes),
                    format_time(item.updated_at),
                    item.id,
                )
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
    at: AtOption = None,
    as_json: JsonOption = False,
    database: DatabaseOption = None,
) -> None:
    """List memories (and, with --depth, directories ending in /)."""
    path_prefix = listing_prefix(prefix)
    point = None if at is None else parse_point(at)
    if point is not None and deleted:
        raise typer.BadParameter("a view of the past has no deleted memories", param_hint="--at")
    items: list[Memory | MemoryPrefix]
    with command_engine(database) as engine:
        found = engine.stores.find(store)
        if point is not None:
            resolved = engine.history.resolve(found.id, point)
            items = list(
                all_pages(
                    lambda cursor: engine.history.list(
                        found.id,
                        resolved,
                        path_prefix=path_prefix,
                        depth=depth,
                        limit=PAGE_LIMIT,
                        cursor=cursor,
                    )
                )
            )
        elif deleted:
            items = [
                m for m in engine.memories.deleted(found.id) if m.path.startswith(path_prefix)
            ]
        else:
            items = list(
                all_pages(
                    lambda cursor: engine.memories.list(
                        found.id,
                        path_prefix=path_prefix,
                        depth=depth,
                        limit=PAGE_LIMIT,
                        cursor=cursor,
                    )
                )
            )
    if as_json:
        print_json(
            page_json(
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
            (m.path, format_size(m.content_size_bytes), format_time(m.deleted_at), m.id)
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
    at: AtOption = None,
    database: DatabaseOption = None,
) -> None:
    """Print a memory's content, byte for byte (as it was, with --at)."""
    point = None if at is None else parse_point(at)
    peek = None
    if point is None:
        with command_peek(database) as peek:
            if peek is not None:
                memory = peek.get_memory(peek.find_store(store).id, path)
    if peek is None:
        # Without --at the peek was asked first, and secured the home already.
        with command_engine(database, home_secured=point is None) as engine:
            found = engine.stores.find(store)
            if point is None:
                memory = find_memory(engine, found.id, path)
            elif path.startswith("mem_"):
                memory = engine.history.get(found.id, path, point)
            else:
                memory = engine.history.get_by_path(found.id, validate_path(path), point)
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
            fail("no content: pass --content TEXT or pipe the content on stdin")
        text = validate_content_bytes(sys.stdin.buffer.read())
    else:
        text = content
    validate_path(path)
    memory_metadata = parse_metadata(metadata) if metadata else None
    actor = command_actor()
    with command_engine(database) as engine:
        found = engine.stores.find(store)
        try:
            current: Memory | None = engine.memories.get_by_path(found.id, path, with_content=False)
        except NotFound:
            current = None
        if current is None:
            if expected_sha256 is not None:
                fail(f"{path}: no such memory (--expected-sha256 was given)")
            memory = engine.for_caller(actor=actor).memories.create(
                found.id,
                path,
                text,
                metadata=memory_metadata,
            )
            action = "created"
        else:
            memory = engine.for_caller(actor=actor).memories.update(
                found.id,
                current.id,
                content=text,
                expected_sha256=expected_sha256 or current.content_sha256,
                metadata=memory_metadata,
            )
            action = (
                "unchanged" if memory.memory_version_id == current.memory_version_id else "updated"
            )
    if as_json:
        print_json(memory_to_wire(memory, full=False))
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
    actor = command_actor()
    with command_engine(database) as engine:
        found = engine.stores.find(store)
        memory: Memory | None = None
        if not old.endswith("/"):
            try:
                memory = find_memory(engine, found.id, old)
            except NotFound:
                memory = None
        if memory is not None:
            moved = [engine.for_caller(actor=actor).memories.update(found.id, memory.id, path=new)]
        else:
            old_prefix, new_prefix = listing_prefix(old), listing_prefix(new)
            moved = engine.for_caller(actor=actor).memories.rename_prefix(
                found.id, old_prefix, new_prefix
            )
            if not moved:
                raise NotFound(f"no memory at {old.rstrip('/')} and none below {old_prefix}")
    if as_json:
        print_json(page_json([memory_to_wire(m, full=False) for m in moved]))
        return
    if memory is not None:
        typer.echo(f"moved {memory.path} -> {moved[0].path} ({memory.id})")
    else:
        typer.echo(
            f"moved {len(moved)} memories from {listing_prefix(old)} to {listing_prefix(new)}"
        )


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
        found = engine.stores.find(store)
        memory = find_memory(engine, found.id, path)
        erased = engine.for_caller(actor=command_actor()).memories.delete(
            found.id,
            memory.id,
            expected_sha256=expected_sha256,
            mode=mode,
            reason=reason,
            replacement=replacement,
        )
    from memfs.home import scrub_erased_paths

    scrub_erased_paths(memory.id, erased)  # logs of mounts not running (SPEC §2)
    if as_json:
        print_json(memory_deleted_to_wire(memory.id))
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
        found = engine.stores.find(store)
        deleted = engine.memories.deleted(found.id)  # newest deletion first
        key = "id" if reference.startswith("mem_") else "path"
        match = next((m for m in deleted if getattr(m, key) == reference), None)
        if match is None:
            raise NotFound(f'no soft-deleted memory {reference} in store "{found.name}"')
        memory = engine.for_caller(actor=command_actor()).memories.restore(
            found.id, match.id, reason=reason
        )
    if as_json:
        print_json(memory_to_wire(memory, full=False))
    else:
        typer.echo(f"restored {memory.path} ({memory.id}, version {memory.memory_version_id})")


@memory_app.command("revert")
def memory_revert(
    store: StoreArgument,
    reference: Annotated[
        str,
        typer.Argument(
            metavar="PATH|ID",
            help="The memory: its mem_ id, its path now, or (deleted since) its path then.",
        ),
    ],
    to: Annotated[
        str,
        typer.Option(
            "--to",
            metavar="POINT|VERSION",
            help="A point (now, an RFC 3339 time, a snapshot name or snap_ id) or a memver_ id.",
        ),
    ],
    reason: Annotated[
        str | None, typer.Option("--reason", help="Recorded in the audit trail.")
    ] = None,
    expected_sha256: Annotated[
        str | None,
        typer.Option("--expected-sha256", help="Only revert if the content now has this digest."),
    ] = None,
    as_json: JsonOption = False,
    database: DatabaseOption = None,
) -> None:
    """Give one memory back its content and path of a point or version (SPEC §10): one
    new version; a soft-deleted memory comes back under its id."""
    point = parse_point(to)
    with command_engine(database) as engine:
        found = engine.stores.find(store)
        if reference.startswith("mem_"):
            memory_id = reference
        else:
            validate_path(reference)
            try:
                memory_id = engine.memories.get_by_path(found.id, reference, with_content=False).id
            except NotFound:
                memory_id = engine.history.get_by_path(
                    found.id, reference, point, with_content=False
                ).id
        memory = engine.for_caller(actor=command_actor()).restores.revert(
            found.id, memory_id, point, expected_sha256=expected_sha256, reason=reason
        )
    if as_json:
        print_json(memory_to_wire(memory, full=False))
    else:
        typer.echo(
            f"reverted {memory.path} ({memory.id}) to {point.text}: "
            f"version {memory.memory_version_id}"
        )
