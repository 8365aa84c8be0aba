"""Listing memories: paginated prefix listings with depth roll-up (api-contract §5.10),
a mount's whole tree, and the restorable tombstones.

Read-only over the ``memories`` table; cursors are the keyset cursors of
:class:`memfs.store._common.Cursor`.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, Row, and_, bindparam, or_, select

from memfs.core import rules
from memfs.core.errors import InvalidCursor, InvalidInput
from memfs.core.model import DeleteMode, Memory, MemoryPrefix, MemoryStatus, Page
from memfs.core.records import RecordFilter
from memfs.core.visibility import Viewer
from memfs.store._common import (
    Cursor,
    check_limit,
    descendant_upper_bound,
    memory_model,
    store_row,
)
from memfs.store.blobs import blob_data
from memfs.store.records import records_matching
from memfs.store.schema import memories
from memfs.store.visibility import visible_clause

__all__ = ["all_memories", "deleted_memories", "list_memories", "list_with_deleted"]

# A mount's whole tree (all_memories): the columns of a live memory without content, as
# plain tuples, in path order (index ix_memories_live_path). store_id and deleted_at are
# known (the argument; NULL), delete_mode is not part of a Memory.
_LIVE_MEMORY_TREE = (
    select(
        memories.c.id,
        memories.c.path,
        memories.c.blob_key,
        memories.c.content_sha256,
        memories.c.size_bytes,
        memories.c.head_version_id,
        memories.c.metadata_json,
        memories.c.created_at,
        memories.c.updated_at,
    )
    .where(memories.c.store_id == bindparam("store_id"), memories.c.deleted_at.is_(None))
    .order_by(memories.c.path)
)


def _position(cursor: str | None, fingerprint: str, path_prefix: str) -> tuple[str, str]:
    """Where a page starts: (">", path) after a memory, (">=", bound) after a rolled-up
    prefix; the prefix itself without a cursor."""
    if cursor is None:
        return ">=", path_prefix
    decoded = Cursor.decode(cursor, fingerprint)
    if not (isinstance(decoded, list) and len(decoded) == 2 and decoded[0] in (">", ">=")):
        raise InvalidCursor("page cursor is malformed")
    return decoded[0], str(decoded[1])


def _page_rows(
    conn: Connection,
    store_id: str,
    path_prefix: str,
    depth: int,
    limit: int,
    position: tuple[str, str],
    viewer: Viewer | None,
    record_filter: RecordFilter | None = None,
) -> list[Row[Any] | MemoryPrefix]:
    """Up to ``limit + 1`` items from ``position``: rows, or prefixes rolled up by depth;
    with ``record_filter``, only the records it keeps (SPEC §6 curation)."""
    op, key = position
    upper = descendant_upper_bound(path_prefix) if path_prefix != "/" else None
    items: list[Row[Any] | MemoryPrefix] = []
    while len(items) <= limit:
        batch = limit + 1 - len(items)
        query = select(memories).where(
            memories.c.store_id == store_id,
            memories.c.deleted_at.is_(None),
            memories.c.path > key if op == ">" else memories.c.path >= key,
            visible_clause(viewer, memories.c.id),  # visibility (SPEC §6)
        )
        if upper is not None:
            query = query.where(memories.c.path < upper)
        if record_filter is not None:
            query = query.where(memories.c.id.in_(records_matching(record_filter)))
        rows = conn.execute(query.order_by(memories.c.path).limit(batch)).all()
        if not rows:
            break
        rolled_up = False
        for row in rows:
            rel = row.path[len(path_prefix) :].split("/")
            if depth == 0 or len(rel) <= depth:
                items.append(row)
                op, key = ">", row.path
            else:
                prefix = path_prefix + "/".join(rel[:depth]) + "/"
                items.append(MemoryPrefix(path=prefix))
                op, key = ">=", descendant_upper_bound(prefix)
                rolled_up = True
                break
            if len(items) > limit:
                break
        if not rolled_up and len(rows) < batch:
            break
    return items


def list_memories(
    conn: Connection,
    store_id: str,
    *,
    path_prefix: str,
    depth: int,
    limit: int,
    cursor: str | None,
    with_content: bool,
    viewer: Viewer | None = None,
    record_filter: RecordFilter | None = None,
) -> Page[Memory | MemoryPrefix]:
    """See :meth:`memfs.store.memories.Memories.list`."""
    if record_filter is not None and record_filter.empty:
        record_filter = None
    rules.validate_path_prefix(path_prefix)
    if not isinstance(depth, int) or isinstance(depth, bool) or depth < 0:
        raise InvalidInput("depth must be an integer ≥ 0")
    check_limit(limit)
    fingerprint = Cursor.fingerprint(
        "memories",
        store_id,
        path_prefix,
        depth,
        *([] if record_filter is None else [record_filter]),
    )
    position = _position(cursor, fingerprint, path_prefix)
    store_row(conn, store_id)
    items = _page_rows(
        conn, store_id, path_prefix, depth, limit, position, viewer, record_filter
    )
    more = len(items) > limit
    result: list[Memory | MemoryPrefix] = []
    for item in items[:limit]:
        if isinstance(item, MemoryPrefix):
            result.append(item)
        else:
            content = blob_data(conn, item.blob_key) if with_content else None
            result.append(memory_model(item, content))
    next_cursor = None
    if more and result:
        last = result[-1]
        after = (
            [">=", descendant_upper_bound(last.path)]
            if isinstance(last, MemoryPrefix)
            else [">", last.path]
        )
        next_cursor = Cursor.encode(fingerprint, after)
    return Page[Memory | MemoryPrefix](items=result, next_cursor=next_cursor)


def list_with_deleted(
    conn: Connection,
    store_id: str,
    *,
    path_prefix: str,
    status: MemoryStatus | None,
    limit: int,
    cursor: str | None,
    with_content: bool,
    viewer: Viewer | None,
) -> Page[Memory | MemoryPrefix]:
    """The soft-deleted memories under ``path_prefix`` (``status`` deleted), or those and
    the live ones (None), in byte order of path, then id (tombstones may share a path
    with each other and with a live memory); see :meth:`memfs.store.memories.Memories.list`.
    A tombstone has no content (``with_content`` gives the live ones theirs). Live
    memories hidden from ``viewer`` are left out here; hidden tombstones by the caller
    (their record is judged by their last content)."""
    rules.validate_path_prefix(path_prefix)
    check_limit(limit)
    fingerprint = Cursor.fingerprint("memories+deleted", store_id, path_prefix, status)
    soft_deleted = memories.c.delete_mode == DeleteMode.SOFT_DELETE.value
    query = select(memories).where(
        memories.c.store_id == store_id,
        soft_deleted
        if status is MemoryStatus.DELETED
        else or_(memories.c.deleted_at.is_(None), soft_deleted),
        memories.c.path >= path_prefix,
        visible_clause(viewer, memories.c.id),  # visibility (SPEC §6)
    )
    if path_prefix != "/":
        query = query.where(memories.c.path < descendant_upper_bound(path_prefix))
    if cursor is not None:
        after = Cursor.decode(cursor, fingerprint)
        if not (isinstance(after, list) and len(after) == 2):
            raise InvalidCursor("page cursor is malformed")
        path, memory_id = str(after[0]), str(after[1])
        query = query.where(
            or_(memories.c.path > path, and_(memories.c.path == path, memories.c.id > memory_id))
        )
    store_row(conn, store_id)
    rows = conn.execute(query.order_by(memories.c.path, memories.c.id).limit(limit + 1)).all()
    items: list[Memory | MemoryPrefix] = [
        memory_model(
            row, blob_data(conn, row.blob_key) if with_content and row.deleted_at is None else None
        )
        for row in rows[:limit]
    ]
    next_cursor = None
    if len(rows) > limit:
        last = rows[limit - 1]
        next_cursor = Cursor.encode(fingerprint, [last.path, last.id])
    return Page[Memory | MemoryPrefix](items=items, next_cursor=next_cursor)


def all_memories(conn: Connection, store_id: str, viewer: Viewer | None = None) -> list[Memory]:
    """See :meth:`memfs.store.memories.Memories.all`."""
    store_row(conn, store_id)
    tree = _LIVE_MEMORY_TREE
    if viewer is not None:  # visibility (SPEC §6)
        tree = tree.where(visible_clause(viewer, memories.c.id))
    rows = conn.execute(tree, {"store_id": store_id}).tuples().all()
    parse_ts = datetime.fromisoformat
    # Rows the store wrote, every field given with its type: no validation (a mount of
    # 10,000 memories spent a third of its start in pydantic here).
    return [
        Memory.model_construct(
            id=memory_id,
            memory_store_id=store_id,
            path=path,
            content=None,
            content_sha256=content_sha256,
            content_size_bytes=size_bytes,
            memory_version_id=head_version_id,
            # json.dumps of no metadata (nearly every memory) is "{}".
            metadata={} if metadata_json == "{}" else json.loads(metadata_json),
            created_at=parse_ts(created_at),
            updated_at=parse_ts(updated_at),
            blob_key=blob_key or "",
        )
        for (
            memory_id,
            path,
            blob_key,
            content_sha256,
            size_bytes,
            head_version_id,
            metadata_json,
            created_at,
            updated_at,
        ) in rows
    ]


def deleted_memories(conn: Connection, store_id: str) -> list[Memory]:
    """See :meth:`memfs.store.memories.Memories.deleted`."""
    store_row(conn, store_id)
    rows = conn.execute(
        select(memories)
        .where(
            memories.c.store_id == store_id,
            memories.c.delete_mode == DeleteMode.SOFT_DELETE.value,
        )
        .order_by(memories.c.deleted_at.desc(), memories.c.id.desc())
    ).all()
    return [memory_model(r) for r in rows]
