"""``memfs record ls|show|forget``: curating long-term memory records (SPEC §6).

The records are the index the engine keeps of memories whose front matter names a
record type (memfs/records.py). ``ls`` lists and filters them, ``show`` prints one with
its relations both ways (what it points to, what points to it; dangling targets
named), ``forget`` soft-deletes those whose decay score fell below a threshold — a dry
run unless ``--apply``. Without ``--store`` they cover every store of the database
(the CLI is the operator). A store's half-life is its metadata key
``record_half_life_days`` (``memfs store update STORE --metadata
record_half_life_days=7``; default 30 days).
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from typing import TYPE_CHECKING, Annotated, Any

import typer

from memfs.cli import short_help
from memfs.cli._common import (
    DatabaseOption,
    JsonOption,
    command_actor,
    command_engine,
    fail,
    format_time,
    print_fields,
    print_json,
    print_table,
)

if TYPE_CHECKING:
    from memfs.core.records import Record, RecordRelation
    from memfs.store import Engine

__all__ = ["register"]

record_app = typer.Typer(help=short_help("record"))

StoreOption = Annotated[
    list[str] | None,
    typer.Option("--store", help="Store name, slug or id; repeat for several. Default: all."),
]


class Sort(enum.StrEnum):
    """Orders of ``memfs record ls`` (each strongest / newest first)."""

    PATH = "path"
    IMPORTANCE = "importance"
    DECAY = "decay"
    ACCESSED = "accessed"


def register(app: typer.Typer) -> None:
    """Adds ``memfs record …`` to the ``memfs`` app."""
    record_app.info.no_args_is_help = True
    app.add_typer(record_app, name="record")


def _store_ids(engine: Engine, stores: Sequence[str] | None) -> list[str] | None:
    return [engine.stores.find(name).id for name in stores] if stores else None


def _sort_key(sort: Sort) -> Any:
    if sort is Sort.IMPORTANCE:
        return lambda r: (-(r.importance if r.importance is not None else -1.0), r.path)
    if sort is Sort.DECAY:
        return lambda r: (-r.decay_score, r.path)
    if sort is Sort.ACCESSED:
        return lambda r: (-r.last_accessed.timestamp(), r.path)
    return lambda r: (r.store_id, r.path)


def _number(value: float | None) -> str:
    return "" if value is None else f"{value:.2f}"


def _json_record(record: Record) -> dict[str, Any]:
    from memfs.core.records import record_to_wire

    return {
        "memory_id": record.memory_id,
        "memory_store_id": record.store_id,
        "path": record.path,
        "record": record_to_wire(record),
    }


@record_app.command("ls")
def ls_command(
    store: StoreOption = None,
    record_type: Annotated[
        str | None,
        typer.Option(
            "--type", help="Only this type: episodic, semantic, procedural, preference, profile."
        ),
    ] = None,
    tag: Annotated[str | None, typer.Option("--tag", help="Only records with this tag.")] = None,
    min_importance: Annotated[
        float | None,
        typer.Option("--min-importance", help="Only records of at least this importance (0–1)."),
    ] = None,
    user_id: Annotated[
        str | None, typer.Option("--user-id", help="Only records of this user_id.")
    ] = None,
    sort: Annotated[
        Sort, typer.Option("--sort", help="path, importance, decay or accessed (newest first).")
    ] = Sort.PATH,
    as_json: JsonOption = False,
    database: DatabaseOption = None,
) -> None:
    """List records: path, type, scope, importance, decay score, last access, tags."""
    from memfs.core.records import RecordFilter

    record_filter = RecordFilter.of(
        record_type=record_type, tag=tag, min_importance=min_importance, user_id=user_id
    )
    with command_engine(database) as engine:
        store_ids = _store_ids(engine, store)
        records = sorted(engine.records.list(store_ids, record_filter), key=_sort_key(sort))
        names = {r.store_id: engine.stores.get(r.store_id).name for r in records}
    if as_json:
        print_json({"data": [_json_record(r) for r in records]})
        return
    print_table(
        ["STORE", "PATH", "TYPE", "SCOPE", "IMPORTANCE", "DECAY", "LAST ACCESSED", "TAGS"],
        [
            (
                names[r.store_id],
                r.path,
                r.type.value,
                r.scope.value,
                _number(r.importance),
                f"{r.decay_score:.3f}",
                format_time(r.last_accessed),
                ", ".join(r.tags),
            )
            for r in records
        ],
        empty="no record matches",
    )


def _find(engine: Engine, reference: str, stores: Sequence[str] | None) -> tuple[str, str]:
    """``(memory id, path)`` of the live memory named by ``reference`` (a ``mem_…`` id,
    or a path in the one ``--store``). Raises NotFound."""
    if not reference.startswith("mem_"):
        if not stores or len(stores) != 1:
            fail("a path needs exactly one --store (or give the memory's mem_… id)")
        memory = engine.memories.get_by_path(engine.stores.find(stores[0]).id, reference)
        return memory.id, memory.path
    if stores:
        memory = engine.memories.get(engine.stores.find(
            stores[0]
        ).id, reference, with_content=False)
        return memory.id, memory.path
    records = engine.records.get([reference])
    if reference not in records:
        fail(f"{reference} is no live record; give --store to show what points to a memory")
    return reference, records[reference].path


def _outgoing(relation: RecordRelation) -> str:
    where = (
        "dangling: no live memory there"
        if relation.dangling
        else f"{relation.target_path} ({relation.target_memory_id})"
    )
    return f"{relation.type.value} → {relation.target}: {where}"


@record_app.command("show")
def show_command(
    reference: Annotated[str, typer.Argument(help="The record's mem_… id, or its path.")],
    store: StoreOption = None,
    as_json: JsonOption = False,
    database: DatabaseOption = None,
) -> None:
    """One record: its header fields, decay, and relations both ways (dangling named).
    A memory that is no record shows only what points to it."""
    with command_engine(database) as engine:
        memory_id, path = _find(engine, reference, store)
        record = engine.records.get([memory_id]).get(memory_id)
        incoming = engine.records.relations_to(memory_id)
    referenced_by = (
        "\n".join(f"{r.type.value} ← {r.memory_path} ({r.memory_id})" for r in incoming) or "none"
    )
    if as_json:
        print_json(
            {
                "memory_id": memory_id,
                "path": path,
                "record": None if record is None else _json_record(record)["record"],
                "referenced_by": [
                    {"type": r.type.value, "memory_id": r.memory_id, "path": r.memory_path}
                    for r in incoming
                ],
            }
        )
        return
    if record is None:
        print_fields(
            [
                ("memory", f"{path} ({memory_id}): not a record"),
                ("referenced by", referenced_by),
            ]
        )
        return
    fields = [
        ("memory", f"{record.path} ({record.memory_id})"),
        ("store", record.store_id),
        ("type", record.type.value),
        ("scope", record.scope.value),
        ("importance", _number(record.importance)),
        ("confidence", _number(record.confidence)),
        ("source", record.source.value if record.source else ""),
        ("summary", record.summary or ""),
        ("tags", ", ".join(record.tags)),
        ("user_id", record.user_id or ""),
        ("agent_id", record.agent_id or ""),
        ("tenant_id", record.tenant_id or ""),
        ("allowed_users", ", ".join(record.allowed_users)),
        ("allowed_roles", ", ".join(record.allowed_roles)),
        ("version", str(record.version)),
        ("last_accessed", format_time(record.last_accessed)),
        ("decay_score", f"{record.decay_score:.3f}"),
        ("relations", "\n".join(_outgoing(r) for r in record.relations) or "none"),
        ("referenced by", referenced_by),
    ]
    print_fields(fields)


@record_app.command("forget")
def forget_command(
    below: Annotated[
        float, typer.Option("--below", min=0, max=1, help="Forget records whose decay is below.")
    ],
    store: StoreOption = None,
    apply: Annotated[
        bool, typer.Option("--apply", help="Soft-delete them (default: only say what it would do).")
    ] = False,
    as_json: JsonOption = False,
    database: DatabaseOption = None,
) -> None:
    """Soft-delete the records whose decay score fell below a threshold (restorable
    with ``memfs memory restore``). A dry run unless ``--apply``."""
    with command_engine(database) as engine:
        records = engine.for_caller(actor=command_actor()).memories.forget_decayed(
            _store_ids(engine, store),
            below=below,
            apply=apply,
        )
    if as_json:
        print_json({"applied": apply, "data": [_json_record(r) for r in records]})
        return
    verb = "forgot" if apply else "would forget"
    for record in records:
        typer.echo(f"{verb} {record.path} ({record.memory_id}, decay {record.decay_score:.3f})")
    if not apply:
        typer.echo(f"{len(records)} record(s) below {below}; nothing changed (add --apply)")
    else:
        typer.echo(f"{len(records)} record(s) soft-deleted")
