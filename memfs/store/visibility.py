"""Visibility of records in SQL (SPEC §6): the rule of :mod:`memfs.core.visibility`
as clauses against the record index, so that every read the store answers for a
restricted viewer leaves out what it may not see.

A memory is **hidden** from a :class:`~memfs.core.visibility.Viewer` iff it has a ``records``
row with ``scope = 'private'`` and neither its ``user_id`` is the viewer's, nor a
``record_grants`` row names the viewer's user (``kind='user'``) or one of its roles
(``kind='role'``). A viewer without a user id sees no private record. ``viewer=None``
(an unrestricted caller) hides nothing; every function here is then free.

The index holds exactly the live memories whose head is a record, so a clause on
``memories.id`` (listings, a mount's tree, search documents, the change feed) judges
live memories by their head. A tombstone has no index row: its versions are judged by
their own content (:func:`visible_versions`, :func:`content_visible`), parsed with the
records parser.

Used by the facade (``memfs/store/engine.py``) around the aggregate calls, and by the
listing and search queries through :func:`visible_clause`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import ColumnElement, Connection, and_, exists, func, or_, select, true

from memfs.core.errors import MemfsError, NotFound, PathConflict
from memfs.core.model import Change, MemoryVersion
from memfs.core.records import Record, RecordScope, parse_record
from memfs.core.visibility import RecordVisibility, Viewer, check_writable, is_visible
from memfs.store.schema import blobs, memories, record_grants, records, versions

__all__ = [
    "check_written",
    "content_visible",
    "hidden_among",
    "hidden_ids",
    "hidden_tombstones",
    "keeps_hidden",
    "require_visible",
    "visible_changes",
    "visible_clause",
    "visible_counts",
    "visible_records",
    "visible_versions",
]


def hidden_ids(viewer: Viewer) -> Any:
    """``SELECT memory_id FROM records WHERE <hidden from viewer>`` (module docstring)."""
    query = select(records.c.memory_id).where(records.c.scope == RecordScope.PRIVATE.value)
    if viewer.user_id is None:
        return query
    granted = [and_(record_grants.c.kind == "user", record_grants.c.principal == viewer.user_id)]
    if viewer.roles:
        roles = sorted(viewer.roles)
        granted.append(
            and_(record_grants.c.kind == "role", record_grants.c.principal.in_(roles))
        )
    return query.where(
        or_(records.c.user_id.is_(None), records.c.user_id != viewer.user_id),
        ~exists().where(record_grants.c.memory_id == records.c.memory_id, or_(*granted)),
    )


def visible_clause(viewer: Viewer | None, memory_id: Any) -> ColumnElement[bool]:
    """A WHERE clause keeping the rows whose ``memory_id`` column names a memory the
    viewer sees (TRUE for an unrestricted viewer)."""
    if viewer is None:
        return true()
    clause: ColumnElement[bool] = memory_id.not_in(hidden_ids(viewer))
    return clause


def hidden_among(conn: Connection, viewer: Viewer, memory_ids: Sequence[str]) -> set[str]:
    """Those of the live memories ``memory_ids`` that are hidden from ``viewer`` (one
    query; ids of no live record are never hidden here)."""
    if not memory_ids:
        return set()
    rows = conn.execute(
        hidden_ids(viewer).where(records.c.memory_id.in_(sorted(set(memory_ids))))
    ).scalars()
    return set(rows)


def require_visible(conn: Connection, viewer: Viewer | None, memory_id: str) -> None:
    """Raises NotFound (the message of an unknown id) when the live memory ``memory_id``
    is hidden from ``viewer``: an invisible record does not exist for it (SPEC §6)."""
    if viewer is not None and hidden_among(conn, viewer, [memory_id]):
        raise NotFound(f"memory {memory_id!r} not found")


def masked_conflict(
    conn: Connection, viewer: Viewer | None, conflict: PathConflict, path: str | None
) -> PathConflict:
    """``conflict`` (writing ``path``; None: the memory's own path, a restore) as
    ``viewer`` may be told it: when the memory in
    the way is a record hidden from it, neither its id nor its path is named — the path
    is still not free (paths are unique per store), but what holds it does not exist for
    the viewer (SPEC §6; an ancestor's path would tell where a hidden record lives)."""
    blocker = conflict.conflicting_memory_id
    if viewer is None or blocker is None or not hidden_among(conn, viewer, [blocker]):
        return conflict
    where = "its path" if path is None else f"path {path!r}"
    return PathConflict(
        f"{where} is not free: a memory hidden from you is at it, above it or below it",
        conflicting_memory_id=None,
        conflicting_path=None,
    )


def keeps_hidden(
    conn: Connection, viewer: Viewer | None, store_id: str, path: str | None, replace: bool
) -> bool:
    """``replace`` of an update moving a memory to ``path``, turned off when the live
    memory there is hidden from ``viewer``: a rename over it is then the PathConflict of
    any occupied path, never a soft delete of a record the viewer can't see."""
    if viewer is None or path is None or not replace:
        return replace
    occupant = conn.execute(
        select(memories.c.id).where(
            memories.c.store_id == store_id,
            memories.c.path == path,
            memories.c.deleted_at.is_(None),
        )
    ).scalar()
    return occupant is None or not hidden_among(conn, viewer, [occupant])


def _record_of(conn: Connection, memory_id: str) -> RecordVisibility | None:
    row = conn.execute(
        select(records.c.scope, records.c.user_id).where(records.c.memory_id == memory_id)
    ).first()
    if row is None:
        return None
    grants = conn.execute(
        select(record_grants.c.kind, record_grants.c.principal).where(
            record_grants.c.memory_id == memory_id
        )
    ).all()
    return RecordVisibility(
        scope=RecordScope(row.scope),
        user_id=row.user_id,
        allowed_users=tuple(g.principal for g in grants if g.kind == "user"),
        allowed_roles=tuple(g.principal for g in grants if g.kind == "role"),
    )


def check_written(conn: Connection, viewer: Viewer | None, memory_id: str, path: str) -> None:
    """Inside the write transaction, after the index was updated: refuses (rolling it
    all back) a write whose result its writer could not see (:func:`memfs.core.visibility.
    check_writable`: PermissionDenied ``record_not_visible``)."""
    if viewer is not None:
        check_writable(viewer, _record_of(conn, memory_id), path)


def visible_counts(conn: Connection, viewer: Viewer, store_id: str) -> tuple[int, int]:
    """``(entry_count, total_size_bytes)`` of the live memories of ``store_id`` that
    ``viewer`` sees (SPEC §6: invisible records are not in counts either)."""
    row = conn.execute(
        select(func.count(), func.coalesce(func.sum(memories.c.size_bytes), 0)).where(
            memories.c.store_id == store_id,
            memories.c.deleted_at.is_(None),
            visible_clause(viewer, memories.c.id),
        )
    ).one()
    return int(row[0]), int(row[1])


def visible_changes(
    conn: Connection, viewer: Viewer | None, changes: list[Change]
) -> list[Change]:
    """The change feed as ``viewer`` may read it. An entry about a memory hidden from it
    now keeps its ``seq`` (the feed stays gap-free, which mounts rely on), its kind and
    the memory's opaque id, and loses its path, old path, digest and version: a mount
    asks for the memory, gets 404 and drops any copy it had, and learns nothing of the
    record (README "Visibility"). A memory that is no longer live is judged by its
    newest content."""
    if viewer is None:
        return changes
    memory_ids = sorted({c.memory_id for c in changes if c.memory_id})
    hidden = hidden_among(conn, viewer, memory_ids) | _gone_hidden(conn, viewer, memory_ids)
    blank = {
        "path": None,
        "old_path": None,
        "content_sha256": None,
        "memory_version_id": None,
        "blob_key": None,
    }
    return [c.model_copy(update=blank) if c.memory_id in hidden else c for c in changes]


def _not_live(conn: Connection, memory_ids: Sequence[str]) -> list[str]:
    """Those of ``memory_ids`` without a live memory (tombstones, hard-deleted ones)."""
    live = set(
        conn.execute(
            select(memories.c.id).where(
                memories.c.id.in_(memory_ids), memories.c.deleted_at.is_(None)
            )
        ).scalars()
    )
    return [m for m in memory_ids if m not in live]


def _newest_content(conn: Connection, memory_id: str) -> str | None:
    """The content of the newest version of ``memory_id`` that still holds some."""
    data = conn.execute(
        select(blobs.c.data)
        .select_from(versions.join(blobs, versions.c.blob_key == blobs.c.key))
        .where(versions.c.memory_id == memory_id)
        .order_by(versions.c.seq.desc())
        .limit(1)
    ).scalar()
    return None if data is None else bytes(data).decode()


def _gone_hidden(conn: Connection, viewer: Viewer, memory_ids: Sequence[str]) -> set[str]:
    """The memories of ``memory_ids`` that are not live and whose newest content is a
    record hidden from ``viewer``."""
    if not memory_ids:
        return set()
    return {
        memory_id
        for memory_id in _not_live(conn, memory_ids)
        if not content_visible(viewer, _newest_content(conn, memory_id))
    }


def hidden_tombstones(
    conn: Connection, viewer: Viewer | None, memory_ids: Sequence[str]
) -> set[str]:
    """Those of the tombstones ``memory_ids`` whose last content is a record hidden from
    ``viewer`` (none for an unrestricted one)."""
    if viewer is None:
        return set()
    return _gone_hidden(conn, viewer, sorted(set(memory_ids)))


def content_visible(viewer: Viewer, content: str | None) -> bool:
    """Whether content the index does not hold (a version, a tombstone's last content)
    is visible to ``viewer`` judged as a record (:func:`memfs.core.visibility.is_visible`).
    Content that today's header rules refuse counts as not a record."""
    if content is None:
        return True
    try:
        header = parse_record(content)
    except MemfsError:
        return True
    return is_visible(viewer, RecordVisibility.of(header))


def visible_versions(
    conn: Connection, viewer: Viewer | None, items: list[MemoryVersion]
) -> list[MemoryVersion]:
    """The versions ``viewer`` may see: none of a live memory hidden from it; of a memory
    that is not live, those whose own content is not a record hidden from it (one
    without content — deleted, redacted — goes with its memory's newest content)."""
    if viewer is None or not items:
        return items
    memory_ids = sorted({v.memory_id for v in items})
    hidden = hidden_among(conn, viewer, memory_ids)
    gone = set(_not_live(conn, memory_ids))
    gone_hidden = _gone_hidden(conn, viewer, sorted(gone))
    contents = _version_contents(conn, [v.id for v in items if v.memory_id in gone])
    kept = []
    for version in items:
        if version.memory_id in hidden:
            continue
        if version.memory_id in gone:
            content = contents.get(version.id)
            visible = (
                version.memory_id not in gone_hidden
                if content is None
                else content_visible(viewer, content)
            )
            if not visible:
                continue
        kept.append(version)
    return kept


def _version_contents(conn: Connection, version_ids: Sequence[str]) -> dict[str, str]:
    """The content of each of ``version_ids`` that holds some."""
    if not version_ids:
        return {}
    rows = conn.execute(
        select(versions.c.id, blobs.c.data)
        .select_from(versions.join(blobs, versions.c.blob_key == blobs.c.key))
        .where(versions.c.id.in_(version_ids))
    ).all()
    return {row.id: bytes(row.data).decode() for row in rows}


def visible_records(
    conn: Connection, viewer: Viewer, found: Mapping[str, Record]
) -> dict[str, Record]:
    """The index entries of ``found`` that ``viewer`` sees, each without the current
    path of a relation target hidden from it (the target stays as its author wrote it)."""
    targets = [
        r.target_memory_id
        for record in found.values()
        for r in record.relations
        if r.target_memory_id is not None
    ]
    hidden = hidden_among(conn, viewer, [*found, *targets])
    kept = {}
    for memory_id, record in found.items():
        if memory_id in hidden:
            continue
        relations = tuple(
            dataclasses.replace(r, target_path=None) if r.target_memory_id in hidden else r
            for r in record.relations
        )
        kept[memory_id] = dataclasses.replace(record, relations=relations)
    return kept
