"""``memfs version ls|show|redact|prune``: the version history of a store, and its
retention (SPEC §2)."""

from __future__ import annotations

import contextlib
import sys
from typing import Annotated, Any

import typer

from memfs.cli import short_help
from memfs.cli._common import (
    PAGE_LIMIT,
    DatabaseOption,
    JsonOption,
    StoreArgument,
    all_pages,
    command_actor,
    command_engine,
    fail,
    format_size,
    format_time,
    page_json,
    print_fields,
    print_json,
    print_table,
)
from memfs.core.errors import NotFound
from memfs.core.model import (
    MemoryVersion,
    Operation,
    format_timestamp,
)
from memfs.core.rules import format_duration_s, validate_path
from memfs.store import Engine, PruneResult
from memfs.wire import (
    version_to_wire,
)

__all__ = ["register"]

version_app = typer.Typer(help=short_help("version"))


def register(app: typer.Typer) -> None:
    """Adds ``memfs version …`` to the ``memfs`` app."""
    version_app.info.no_args_is_help = True
    app.add_typer(version_app, name="version")


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
        memory_ids.append(engine.memories.get_by_path(store_id, path, with_content=False).id)
    memory_ids += [m.id for m in engine.memories.deleted(store_id) if m.path == path]
    if memory_ids:
        versions = [
            v
            for memory_id in dict.fromkeys(memory_ids)
            for v in all_pages(
                lambda cursor, memory_id=memory_id: engine.versions.list(  # type: ignore[misc]
                    store_id, memory_id=memory_id, limit=PAGE_LIMIT, cursor=cursor
                )
            )
        ]
    else:
        versions = [
            v
            for v in all_pages(
                lambda cursor: engine.versions.list(store_id, limit=PAGE_LIMIT, cursor=cursor)
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
        found = engine.stores.find(store)
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
            for version in all_pages(
                lambda cursor: engine.versions.list(
                    found.id,
                    memory_id=memory_id,
                    operation=operation,
                    session_id=session_id,
                    api_key_id=api_key_id,
                    limit=min(PAGE_LIMIT, limit) if limit else PAGE_LIMIT,
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
        print_json(page_json([version_to_wire(v, full=False) for v in versions]))
        return
    rows = [
        (
            v.id,
            format_time(v.created_at),
            v.operation.value,
            _version_path(v),
            str(v.created_by) if v.created_by else "",
            format_size(v.content_size_bytes),
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
        found = engine.stores.find(store)
        version = engine.versions.get(found.id, version_id, with_content=True)
    if as_json:
        print_json(version_to_wire(version, full=True))
        return
    if raw:
        if version.content is None:
            fail(f"version {version.id} has no content ({_no_content_reason(version)})")
        sys.stdout.buffer.write(version.content.encode("utf-8"))
        sys.stdout.buffer.flush()
        return
    size = version.content_size_bytes
    fields = [
        ("id", version.id),
        ("memory", version.memory_id),
        ("operation", version.operation.value),
        ("path", _version_path(version)),
        ("time", format_time(version.created_at)),
        ("author", str(version.created_by) if version.created_by else ""),
        ("sha256", version.content_sha256 or ""),
        ("size", "" if size is None else f"{size:,} bytes"),
    ]
    if version.reason:
        fields.append(("reason", version.reason))
    if version.redacted_at is not None:
        redactor = f" by {version.redacted_by}" if version.redacted_by else ""
        fields.append(("redacted", format_time(version.redacted_at) + redactor))
    print_fields(fields)
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
        found = engine.stores.find(store)
        version = engine.for_caller(actor=command_actor()).versions.redact(found.id, version_id)
    if as_json:
        print_json(version_to_wire(version, full=False))
    else:
        typer.echo(f"redacted {version.id} (memory {version.memory_id})")


def _prune_to_wire(result: PruneResult, *, dry_run: bool) -> dict[str, Any]:
    return {
        "memory_store_id": result.store_id,
        "version_retention_seconds": result.retention_s,
        "written_before": format_timestamp(result.cutoff),
        "versions_pruned": result.versions,
        "versions_kept": result.kept,
        "blobs_purged": result.blobs_purged,
        "dry_run": dry_run,
    }


@version_app.command("prune")
def version_prune(
    store: Annotated[
        str | None,
        typer.Option("--store", help="Only this store (name, slug or memstore_ id)."),
    ] = None,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Count what would be pruned; change nothing.")
    ] = False,
    as_json: JsonOption = False,
    database: DatabaseOption = None,
) -> None:
    """Drop versions older than their store's retention period (SPEC §2; set with
    `memfs store create|update --retention 30d`). The head version of a memory and the
    version a soft-deleted memory would be restored from are always kept; pruned
    content is erased like a redaction's. Stores without a period keep everything."""
    with command_engine(database) as engine:
        store_id = None if store is None else engine.stores.find(store).id
        results = engine.retention.prune(store_id=store_id, dry_run=dry_run)
    if as_json:
        print_json(page_json([_prune_to_wire(r, dry_run=dry_run) for r in results]))
        return
    rows = [
        (
            r.store_id,
            format_duration_s(r.retention_s),
            format_time(r.cutoff),
            f"{r.versions:,}",
            f"{r.kept:,}",
            f"{r.blobs_purged:,}",
        )
        for r in results
    ]
    print_table(
        (
            "STORE",
            "RETENTION",
            "WRITTEN BEFORE",
            "WOULD PRUNE" if dry_run else "PRUNED",
            "KEPT",
            "BLOBS ERASED",
        ),
        rows,
        empty="no store has a retention period (memfs store update STORE --retention 30d)",
    )


@version_app.command("diff")
def version_diff(
    store: StoreArgument,
    old_version: Annotated[str, typer.Argument(metavar="V1", help="A memver_ id.")],
    new_version: Annotated[
        str | None,
        typer.Argument(metavar="V2", help="A memver_ id (default: the memory's head now)."),
    ] = None,
    database: DatabaseOption = None,
) -> None:
    """Show the unified diff of two versions' contents (SPEC §10), as diff(1): exit 0
    equal, 1 different, 2 on an error. A redacted side shows no content."""
    from memfs.cli import exit_status, output_failed
    from memfs.core.errors import MemfsError
    from memfs.core.history import unified_diff

    try:
        with command_engine(database) as engine:
            found = engine.stores.find(store)
            old = engine.versions.get(found.id, old_version, with_content=True)
            if new_version is None:
                head = engine.memories.get(found.id, old.memory_id, with_content=False)
                new_version = head.memory_version_id
            new = engine.versions.get(found.id, new_version, with_content=True)
    except MemfsError as exc:  # diff(1): trouble is 2, whatever it was
        typer.echo(f"memfs: error: {exc.message}", err=True)
        raise typer.Exit(max(2, exit_status(exc))) from None
    for version in (old, new):
        if version.redacted_at is not None:
            typer.echo(f"memfs: error: version {version.id} is redacted: no content", err=True)
            raise typer.Exit(2)
    text, _, _ = unified_diff(
        old.content,
        new.content,
        f"a{_version_path(old)} ({old.id})",
        f"b{_version_path(new)} ({new.id})",
    )
    try:
        typer.echo(text, nl=False)
    except OSError as exc:  # diff(1): output that can't be written is trouble too
        if not output_failed(exc):
            raise
        raise typer.Exit(2) from None
    raise typer.Exit(1 if text else 0)
