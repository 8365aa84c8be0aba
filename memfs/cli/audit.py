"""``memfs audit ls``: the audit trail — who deleted, redacted, restored or pruned what,
and why (SPEC §2 "audited", seed 004 tombstone/audit evidence).

Entries name ids, never a path or content (a redaction must not leave what it erased in
the trail); ``reason`` and ``metadata`` are what the request carried. Entries outlive the
store and the memory they describe.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any

import typer

from memfs.cli import short_help
from memfs.cli._common import (
    DatabaseOption,
    JsonOption,
    command_engine,
    page_json,
    print_json,
    print_table,
)
from memfs.core.errors import InvalidInput, NotFound
from memfs.core.rules import parse_duration_s

__all__ = ["register"]

audit_app = typer.Typer(help=short_help("audit"))


def register(app: typer.Typer) -> None:
    """Adds ``memfs audit …`` to the ``memfs`` app."""
    audit_app.info.no_args_is_help = True
    app.add_typer(audit_app, name="audit")


def _since(value: str, now: datetime) -> datetime:
    """``--since``: an RFC 3339 time (UTC when it has no offset) or a duration back from
    ``now`` (``1h``, ``7d``).

    Raises:
        InvalidInput: neither.
    """
    try:
        return now - timedelta(seconds=parse_duration_s(value))
    except InvalidInput:
        pass
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        raise InvalidInput(
            f"--since {value!r} is neither a time (2026-12-01T09:00:00Z) nor a duration "
            "back from now (30m, 12h, 7d)"
        ) from None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def _row(event: dict[str, Any]) -> tuple[str, ...]:
    actor = f"{event['actor_type']} {event['actor_id']}" if event["actor_type"] else ""
    metadata = json.dumps(event["metadata"], sort_keys=True) if event["metadata"] else ""
    return (
        str(event["created_at"]),
        str(event["memory_store_id"]),
        str(event["action"]),
        event["memory_id"] or "",
        actor,
        event["reason"] or "",
        metadata,
    )


@audit_app.command("ls")
def audit_ls(
    store: Annotated[
        str | None,
        typer.Option(
            "--store",
            help="Only this store's events (name, slug or memstore_ id; a deleted store's "
            "id works too).",
        ),
    ] = None,
    memory_id: Annotated[str | None, typer.Option("--memory", help="A mem_ id.")] = None,
    since: Annotated[
        str | None,
        typer.Option("--since", help="From this time (RFC 3339) or this long ago (12h, 7d)."),
    ] = None,
    limit: Annotated[
        int, typer.Option("--limit", min=0, help="At most this many, newest first (0: all).")
    ] = 50,
    as_json: JsonOption = False,
    database: DatabaseOption = None,
) -> None:
    """List audit events newest first: time, store, action, memory, actor, reason,
    metadata."""
    since_time = None if since is None else _since(since, datetime.now(UTC))
    with command_engine(database) as engine:
        store_id = None
        if store is not None:
            try:
                store_id = engine.stores.find(store).id
            except NotFound:
                if not store.startswith("memstore_"):
                    raise
                store_id = store  # a deleted store: its events outlive it
        events = engine.feed.audit_events(
            store_id, memory_id=memory_id, since=since_time, limit=limit or None
        )
    if as_json:
        print_json(page_json(events))
        return
    print_table(
        ("TIME", "STORE", "ACTION", "MEMORY", "ACTOR", "REASON", "METADATA"),
        [_row(e) for e in events],
        empty="no audit events",
    )
