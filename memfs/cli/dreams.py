"""``memfs dream create|ls|show|cancel|archive`` and ``memfs transcript import|show``
(SPEC §11).

``memfs dream create STORE --wait`` runs the dream in this process (the embedded
database), with a progress display; without ``--wait`` it stays ``pending`` until a
``memfs serve`` on the same database runs it. A model other than ``memfs-consolidate``
runs through the Messages API: ``ANTHROPIC_API_KEY``/``ANTHROPIC_BASE_URL``, or
``--dream-api-key-file``/``--dream-base-url`` (:func:`language_dreamer`, which ``memfs
serve`` uses too). ``memfs dream diff`` is ``memfs diff INPUT OUTPUT``; ``memfs dream
apply`` merges the output into the input (SPEC §10 merge).

``memfs transcript import FILE`` takes seed 002's conversations,
``{user_id: [{session_id: [{role, content}]}]}``: one session per conversation (attached
read-only to ``--store``, speaking for that user), each turn an event (``user`` →
``user.message``, ``assistant`` → ``agent.message``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from memfs.cli._common import (
    DatabaseOption,
    JsonOption,
    StoreArgument,
    command_actor,
    command_engine,
    fail,
    format_time,
    is_terminal,
    print_fields,
    print_json,
    print_table,
)
from memfs.core.config import CONSOLIDATE_MODEL
from memfs.core.dreams import Dream, DreamStatus, OutputBehavior
from memfs.core.model import Access
from memfs.core.visibility import make_principal

__all__ = ["register"]

dream_app = typer.Typer(help="Consolidate a memory store: create, list, show, cancel dreams.")
transcript_app = typer.Typer(help="Import and show sessions' transcripts (their events).")


def register(app: typer.Typer) -> None:
    """Adds ``memfs dream …`` and ``memfs transcript …`` to the ``memfs`` app."""
    dream_app.info.no_args_is_help = True
    transcript_app.info.no_args_is_help = True
    app.add_typer(dream_app, name="dream")
    app.add_typer(transcript_app, name="transcript")


DreamBaseUrlOption = Annotated[
    str | None,
    typer.Option(
        "--dream-base-url",
        help="The Messages API that language-model dreams call (default: "
        "$ANTHROPIC_BASE_URL, else Anthropic's).",
    ),
]
DreamKeyFileOption = Annotated[
    Path | None,
    typer.Option(
        "--dream-api-key-file",
        help="A file holding the API key of language-model dreams (default: "
        "$ANTHROPIC_API_KEY).",
    ),
]


def language_dreamer(base_url: str | None, key_file: Path | None) -> Any:
    """The language-model dreamer (:class:`memfs.memory_tool.dreamer.MessagesDreamer`)
    on the endpoint of ``--dream-base-url``/``--dream-api-key-file``, else of
    ``ANTHROPIC_BASE_URL``/``ANTHROPIC_API_KEY`` (:func:`memfs.core.config.dream_endpoint`);
    without a key its dreams fail at once, naming the setting. Fails the command on a
    key file it can't read, or an empty one."""
    from memfs.core.config import dream_endpoint
    from memfs.memory_tool.dreamer import MessagesDreamer

    key = None
    if key_file is not None:
        try:
            key = key_file.read_text(encoding="utf-8").strip()
        except OSError as exc:
            fail(f"can't read --dream-api-key-file {key_file}: {exc.strerror or exc}")
        if not key:
            fail(f"--dream-api-key-file {key_file} is empty")
    try:
        return MessagesDreamer(dream_endpoint(key, base_url))
    except ValueError as exc:  # MEMFS_DREAM_MAX_TURNS, MEMFS_DREAM_TIME_LIMIT
        fail(str(exc))


def _wire(dream: Dream) -> dict[str, Any]:
    from memfs.wire.dreams import dream_to_wire

    return dream_to_wire(dream)


def _show(dream: Dream) -> None:
    print_fields(
        [
            ("id", dream.id),
            ("status", dream.status.value),
            ("input", dream.input_store_id),
            ("output", dream.output_store_id or "-"),
            ("behavior", dream.output_behavior.value),
            ("model", dream.model_id),
            # Whose records it saw (SPEC §6, §11): its creator's view.
            ("sees", "every record" if dream.viewer is None
             else f"what {dream.viewer.describe()} sees"),
            ("session", dream.session_id or "-"),
            ("created", format_time(dream.created_at)),
            ("ended", format_time(dream.ended_at)),
            ("error", "-" if dream.error_type is None
             else f"{dream.error_type}: {dream.error_message}"),
        ]
    )
    if dream.result is not None:
        typer.echo("result:")
        typer.echo(json.dumps(dream.result, indent=2, sort_keys=True))


@dream_app.command("create")
def dream_create(
    store: StoreArgument,
    session: Annotated[
        list[str] | None, typer.Option("--session", help="A session whose transcript it reads.")
    ] = None,
    model: Annotated[str, typer.Option(help="memfs-consolidate, or a model id.")] = (
        CONSOLIDATE_MODEL
    ),
    instructions: Annotated[str | None, typer.Option(help="1 to 4,096 characters.")] = None,
    update_existing: Annotated[
        bool,
        typer.Option("--update-existing", help="Write into STORE itself (a snapshot first)."),
    ] = False,
    wait: Annotated[bool, typer.Option("--wait", help="Run it here and wait for its end.")] = False,
    dream_base_url: DreamBaseUrlOption = None,
    dream_api_key_file: DreamKeyFileOption = None,
    as_json: JsonOption = False,
    database: DatabaseOption = None,
) -> None:
    """Create a dream of STORE; with --wait, run it in this process to its end."""
    from memfs.dreams import run_dream

    dreamer = (
        language_dreamer(dream_base_url, dream_api_key_file)
        if wait and model != CONSOLIDATE_MODEL
        else None
    )
    with command_engine(database) as engine:
        found = engine.stores.find(store)
        dream = engine.dreams.create(
            found.id,
            session_ids=session or None,
            model_id=model,
            instructions=instructions,
            output_behavior=(
                OutputBehavior.UPDATE_EXISTING if update_existing else OutputBehavior.CREATE_NEW
            ),
        )
        if wait:
            claimed = engine.dreams.claim("cli")
            if claimed is not None and claimed.id != dream.id:  # an older pending one
                run_dream(engine, claimed, language_model=dreamer)
                claimed = engine.dreams.claim("cli")
            if claimed is not None:
                dream = _run_with_progress(engine, claimed, dreamer)
            else:
                dream = engine.dreams.get(dream.id)
    if as_json:
        print_json(_wire(dream))
    else:
        _show(dream)
        if not wait:
            typer.echo("pending: memfs serve on this database runs it (or use --wait)")
    if dream.status is DreamStatus.FAILED:
        raise typer.Exit(1)


def _run_with_progress(engine: Any, dream: Dream, dreamer: Any) -> Dream:
    from rich.console import Console

    from memfs.dreams import run_dream

    if not is_terminal():
        return run_dream(
            engine, dream, progress=lambda line: typer.echo(line, err=True),
            language_model=dreamer,
        )
    console = Console(stderr=True)
    with console.status(f"dream {dream.id}: starting") as status:

        def progress(line: str) -> None:
            console.log(line)
            status.update(f"dream {dream.id}: {line}")

        return run_dream(engine, dream, progress=progress, language_model=dreamer)


@dream_app.command("ls")
def dream_ls(
    status: Annotated[
        list[DreamStatus] | None, typer.Option("--status", help="Only these statuses.")
    ] = None,
    include_archived: Annotated[bool, typer.Option("--all", help="Archived ones too.")] = False,
    as_json: JsonOption = False,
    database: DatabaseOption = None,
) -> None:
    """List dreams, newest first."""
    with command_engine(database) as engine:
        page = engine.dreams.list(
            statuses=status or (), include_archived=include_archived, limit=100
        )
    if as_json:
        print_json({"data": [_wire(d) for d in page.items], "next_page": page.next_cursor})
        return
    print_table(
        ["ID", "STATUS", "INPUT", "OUTPUT", "MODEL", "CREATED"],
        [
            [d.id, d.status.value, d.input_store_id, d.output_store_id or "-", d.model_id,
             format_time(d.created_at)]
            for d in page.items
        ],
        empty="no dreams",
    )


@dream_app.command("show")
def dream_show(
    dream_id: Annotated[str, typer.Argument(metavar="DREAM")],
    as_json: JsonOption = False,
    database: DatabaseOption = None,
) -> None:
    """Show a dream: status, output store, error, and what it did."""
    with command_engine(database) as engine:
        dream = engine.dreams.get(dream_id)
    if as_json:
        print_json(_wire(dream))
    else:
        _show(dream)


@dream_app.command("cancel")
def dream_cancel(
    dream_id: Annotated[str, typer.Argument(metavar="DREAM")],
    database: DatabaseOption = None,
) -> None:
    """Cancel a pending or running dream (it stops at its next step)."""
    with command_engine(database) as engine:
        dream = engine.dreams.cancel(dream_id)
    typer.echo(f"{dream.id}: {dream.status.value}")


@dream_app.command("apply")
def dream_apply(
    dream_id: Annotated[str, typer.Argument(metavar="DREAM")],
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Print the merge plan; change nothing.")
    ] = False,
    database: DatabaseOption = None,
) -> None:
    """Apply a completed dream's output to its input store (SPEC §11): the output (a
    fork of the input, ``create_new``) is merged into the input, three-way against the
    fork's base, after an automatic snapshot (`memfs store merge`), with the notes of
    what kept memories absorbed (memfs_absorbed). Review it first with
    `memfs dream diff DREAM`. A dream made with --update-existing changed its input
    already: there is nothing to apply."""
    from memfs.dreams.apply import apply_dream

    with command_engine(database) as engine:
        dream = engine.dreams.get(dream_id)
        if dream.status is not DreamStatus.COMPLETED:
            fail(f"dream {dream.id} is {dream.status.value}, not completed: nothing to apply")
        if dream.output_behavior is OutputBehavior.UPDATE_EXISTING:
            typer.echo(f"dream {dream.id} wrote into its input store already (update_existing); "
                       "its automatic snapshot undoes it")
            return
        plan, carried = apply_dream(engine, dream, actor=command_actor(), dry_run=dry_run)
    verb = "would apply" if dry_run else "applied"
    counts: dict[str, int] = {}
    for step in plan.steps:
        counts[step.action.value] = counts.get(step.action.value, 0) + 1
    summary = ", ".join(f"{n} {action}" for action, n in sorted(counts.items())) or "no change"
    typer.echo(f"{verb} dream {dream.id} to {dream.input_store_id}: {summary}")
    if carried:
        typer.echo(f"{carried} note{'s' if carried != 1 else ''} of what a kept memory absorbed "
                   "(memfs_absorbed) carried to the input")
    if plan.snapshot is not None:
        typer.echo(f"snapshot {plan.snapshot.name} taken first; undo with: memfs store restore "
                   f"{dream.input_store_id} --to {plan.snapshot.name}")


def _dream_points(engine: Any, dream: Dream) -> tuple[str, str]:
    """``(A, B)`` for ``memfs diff`` of what ``dream`` changed: ``INPUT OUTPUT`` for
    ``create_new``; ``INPUT@<its automatic snapshot> INPUT`` for ``update_existing``."""
    if dream.output_store_id is None:
        fail(f"dream {dream.id} is {dream.status.value} and has no output store yet")
    if dream.output_behavior is OutputBehavior.CREATE_NEW:
        return dream.input_store_id, dream.output_store_id
    wanted = f"before dream {dream.id}"
    cursor = None
    while True:
        page = engine.snapshots.list(dream.input_store_id, limit=100, cursor=cursor)
        for snapshot in page.items:
            if snapshot.description == wanted:
                return f"{dream.input_store_id}@{snapshot.name}", dream.input_store_id
        cursor = page.next_cursor
        if cursor is None:
            fail(f"dream {dream.id} wrote into its input, and its automatic snapshot "
                 "is gone: nothing to compare it with")


@dream_app.command("diff")
def dream_diff(
    dream_id: Annotated[str, typer.Argument(metavar="DREAM")],
    stat: Annotated[bool, typer.Option("--stat", help="Lines changed per memory.")] = False,
    name_only: Annotated[
        bool, typer.Option("--name-only", help="Only the paths of the memories that differ.")
    ] = False,
    as_json: JsonOption = False,
    database: DatabaseOption = None,
) -> None:
    """Show what a dream changed: `memfs diff INPUT OUTPUT` (create_new) without the
    input's memories its output never had (records hidden from the dream's creator,
    memories made since), or its input since the automatic snapshot it took
    (--update-existing). Exit 0 equal, 1 different,
    2 error."""
    from memfs.cli.history import run_diff

    with command_engine(database) as engine:
        old, new = _dream_points(engine, engine.dreams.get(dream_id))
    # The output holds only what the dream's creator could see (SPEC §6): what it was
    # never given is no change of the dream's.
    run_diff(old, new, stat=stat, name_only=name_only, as_json=as_json, database=database,
             forked_only=True)


@dream_app.command("archive")
def dream_archive(
    dream_id: Annotated[str, typer.Argument(metavar="DREAM")],
    database: DatabaseOption = None,
) -> None:
    """Archive an ended dream (left out of `memfs dream ls` unless --all)."""
    with command_engine(database) as engine:
        dream = engine.dreams.archive(dream_id)
    typer.echo(f"{dream.id}: archived")


@transcript_app.command("import")
def transcript_import(
    file: Annotated[Path, typer.Argument(help="Seed 002's {user_id: [{session_id: [turns]}]}.")],
    store: Annotated[str, typer.Option("--store", help="The store the sessions attach.")],
    as_json: JsonOption = False,
    database: DatabaseOption = None,
) -> None:
    """Create a session per conversation of FILE, its turns as events."""
    from memfs.store import ResourceSpec

    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        fail(f"can't read {file}: {exc}")
    if not isinstance(data, dict):
        fail(f"{file}: expected {{user_id: [{{session_id: [{{role, content}}]}}]}}")
    made: list[dict[str, Any]] = []
    with command_engine(database, create=True) as engine:
        found = engine.stores.find(store)
        for user_id, conversations in data.items():
            for conversation in conversations:
                for name, turns in conversation.items():
                    session, _ = engine.sessions.create(
                        [ResourceSpec(found.id, Access.READ_ONLY)],
                        with_token=False,
                        title=str(name),
                        principal=make_principal(str(user_id), ()),
                    )
                    events = [
                        {
                            "type": "agent.message" if turn.get("role") == "assistant"
                            else "user.message",
                            "content": [{"type": "text", "text": str(turn.get("content", ""))}],
                        }
                        for turn in turns
                    ]
                    if events:
                        engine.transcripts.append(session.id, events)
                    made.append({"user_id": user_id, "conversation": name,
                                 "session_id": session.id, "events": len(events)})
    if as_json:
        print_json({"data": made})
        return
    for row in made:
        typer.echo(f"{row['session_id']}  {row['user_id']}/{row['conversation']}: "
                   f"{row['events']} events")


@transcript_app.command("show")
def transcript_show(
    session_id: Annotated[str, typer.Argument(metavar="SESSION")],
    as_json: JsonOption = False,
    database: DatabaseOption = None,
) -> None:
    """Print a session's transcript, one event per line."""
    from memfs.wire.dreams import event_to_wire

    with command_engine(database) as engine:
        events = engine.transcripts.all(session_id)
    if as_json:
        print_json({"data": [event_to_wire(e) for e in events]})
        return
    for event in events:
        typer.echo(f"{format_time(event.processed_at)}  {event.type:<14} {event.text()}")
