"""``memfs fsck`` (check the storage invariants), ``memfs vacuum`` (take erased bytes
out of the database files) and ``memfs prompt`` (the system-prompt note describing a
mount, a set of stores or a session)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated

import typer

from memfs.cli._common import (
    DatabaseOption,
    command_engine,
    fail,
    one_line,
    parse_metadata,
    secure_home,
)
from memfs.cli.prompt_note import DEFAULT_MOUNT_ROOT
from memfs.core.errors import InvalidInput, MemfsError
from memfs.core.model import (
    Access,
    Layout,
    MemoryStore,
)
from memfs.core.rules import parse_store_spec
from memfs.store import Engine

__all__ = ["register"]


def register(app: typer.Typer) -> None:
    """Adds ``memfs fsck`` and ``memfs prompt`` to the ``memfs`` app."""
    app.command("fsck")(fsck_command)
    app.command("vacuum")(vacuum_command)
    app.command("prompt")(prompt_command)


def vacuum_command(database: DatabaseOption = None) -> None:
    """After a redaction, hard delete, store deletion or prune: take the erased bytes
    out of the database files. PostgreSQL: VACUUM FULL of every table that holds content
    or paths (an exclusive lock on each while it is rewritten). SQLite erases at once;
    this only completes an erasure a reader left pending."""
    with command_engine(database) as engine:
        tables = engine.vacuum_erased()
    if tables:
        typer.echo(f"vacuum: rewrote {', '.join(tables)} (VACUUM FULL)")
    else:
        typer.echo("vacuum: no erased bytes left in the SQLite file or its WAL")


def fsck_command(
    quick: Annotated[
        bool,
        typer.Option("--quick", help="SQLite's quick_check instead of the full integrity_check."),
    ] = False,
    records: Annotated[
        bool,
        typer.Option(
            "--records",
            help="Also list record relations whose target is no live memory (dangling).",
        ),
    ] = False,
    database: DatabaseOption = None,
) -> None:
    """Check the database (SQLite integrity_check) and every storage invariant; print
    each problem and exit 1 if there is any.

    A database that can't be opened (missing, not memfs's, damaged beyond opening) is
    itself the one finding; nothing is created or changed (the check is read-only).
    The record index is always checked against the heads; ``--records`` also reports
    dangling relations (SPEC §6: reported, never refused, so not a problem: the exit
    status stays 0)."""
    from memfs.store import fsck_database, open_engine

    secure_home()
    try:
        findings = fsck_database(database, sqlite_check="quick" if quick else "integrity")
    except MemfsError:
        raise
    except Exception as exc:  # an unreachable server, an unknown URL
        findings = [f"database: cannot open the store database: {one_line(exc)}"]
    for finding in findings:
        typer.echo(f"fsck: {finding}")
    if findings:
        fail(f"fsck found {len(findings)} problem{'s' if len(findings) != 1 else ''}")
    with open_engine(database, create=False, read_only=True) as engine:
        counts = engine.statistics()
        dangling = engine.records.findings() if records else []
        record_count = len(engine.records.list(None)) if records else 0
    typer.echo(
        f"fsck: clean ({counts['stores']} stores, {counts['memories']} memories, "
        f"{counts['versions']} versions, {counts['blobs']} blobs checked)"
    )
    if records:
        for finding in dangling:
            typer.echo(f"fsck: {finding}")
        typer.echo(
            f"fsck: records: {record_count} records, {len(dangling)} dangling "
            "relation(s) (reported, not refused)"
        )


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
    allow_other: Annotated[
        bool,
        typer.Option(
            "--allow-other",
            help="With --store: as given to `memfs mount` (the note then says a write to a "
            "read-only store is EACCES for an agent that is not root).",
        ),
    ] = False,
    database: DatabaseOption = None,
) -> None:
    """Print the system-prompt note describing a mount (name, path, access, description)."""
    from memfs.cli.prompt_note import plan_resources, render_prompt

    if [bool(mount), bool(stores), bool(session_id)].count(True) != 1:
        raise typer.BadParameter("give one of --mount, --store (one or more) or --session")
    given = parse_metadata(instructions, option="--instructions", shape="STORE=TEXT")
    if session_id is not None and given:
        raise typer.BadParameter("with --session the instructions are the session's own")
    with command_engine(database) as engine:
        if session_id is not None:
            session = engine.sessions.get(session_id)
            resources, layout = session.resources, session.layout
        else:
            if mount is not None:
                attachments, mount_paths, layout, allow_other = _mounted_stores(engine, mount)
            else:
                attachments = []
                for spec in stores or ():
                    name, read_only = parse_store_spec(spec)
                    access = Access.READ_ONLY if read_only else Access.READ_WRITE
                    attachments.append((engine.stores.find(name), access, None))
            attachments = _with_instructions(attachments, given, stores or [])
            resources = plan_resources(attachments, mount_root=root, flat=layout is Layout.FLAT)
            if mount is not None:
                resources = [
                    r.model_copy(update={"mount_path": path})
                    for r, path in zip(resources, mount_paths, strict=True)
                ]
        with_records = bool(engine.records.stores_with_records(
            [r.memory_store_id for r in resources]
        ))
    note = render_prompt(
        resources, layout=layout, with_records=with_records, modes_checked=allow_other
    )
    typer.echo(note, nl=False)


_Attachment = tuple[MemoryStore, Access, str | None]


def _mounted_stores(
    engine: Engine, mountpoint: Path
) -> tuple[list[_Attachment], list[str], Layout, bool]:
    """The stores a running mount serves, from the status file its daemon keeps.

    Returns:
        ``(store, access, None)`` per store in attachment order, each store's
        directory (the mount point itself in the flat layout), the layout, and whether
        the kernel checks modes there (``--allow-other``).

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
        attachments.append((engine.stores.get(entry["id"]), access, None))
        directory = entry.get("directory") or "."
        paths.append(target if directory == "." else f"{target}/{directory}")
    layout = Layout(status.get("layout") or Layout.PER_STORE)
    return attachments, paths, layout, bool(status.get("modes_checked"))


def _with_instructions(
    attachments: list[_Attachment], given: dict[str, str], specs: Sequence[str]
) -> list[_Attachment]:
    """Adds ``--instructions STORE=TEXT`` to the attachment it names (by spec, name, slug
    or id). Raises InvalidInput when one names no attached store."""
    from memfs.core.rules import slugify

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
