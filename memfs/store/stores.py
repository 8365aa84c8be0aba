"""Memory stores: create, find, patch, list, archive, delete, and database-wide counts.

Owns the ``stores`` table (its counters ``entry_count``, ``total_size_bytes`` and
``last_change_seq`` are moved by :func:`memfs.store.feed.emit`). Deleting a store
removes its memories, versions and now-unreferenced blobs; its change feed and audit
log stay (see :mod:`memfs.store.feed`).
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, delete, func, insert, select, update

from memfs.core import rules
from memfs.core.errors import InvalidInput, NotFound, StoreArchived
from memfs.core.ids import new_id
from memfs.core.model import Actor, ChangeKind, MemoryStore, Page
from memfs.store import feed, identities, search
from memfs.store import records as record_index
from memfs.store._common import Cursor, check_limit, lock_store, now, store_model, store_row, ts
from memfs.store.blobs import gc_blobs
from memfs.store.schema import blobs, identity_mounts, memories, stores, versions

__all__ = [
    "archive_store",
    "create_store",
    "delete_store",
    "find_store",
    "get_store",
    "list_stores",
    "statistics",
    "update_store",
]


def create_store(
    conn: Connection, name: str, description: str, metadata: dict[str, str] | None
) -> MemoryStore:
    """See :meth:`memfs.store.Engine.create_store`."""
    rules.validate_store_name(name)
    rules.validate_store_description(description)
    clean = rules.validate_metadata(metadata or {})
    created = now()
    store_id = new_id("store")
    conn.execute(
        insert(stores).values(
            id=store_id,
            name=name,
            description=description,
            metadata_json=json.dumps(clean, sort_keys=True),
            created_at=created,
            updated_at=created,
            archived_at=None,
            entry_count=0,
            total_size_bytes=0,
            last_change_seq=0,
        )
    )
    return store_model(store_row(conn, store_id))


def get_store(conn: Connection, store_id: str) -> MemoryStore:
    """A store, archived or not. Raises NotFound."""
    return store_model(store_row(conn, store_id))


def find_store(conn: Connection, name_or_id: str) -> MemoryStore:
    """See :meth:`memfs.store.Engine.find_store`."""
    row = conn.execute(select(stores).where(stores.c.id == name_or_id)).first()
    if row is not None:
        return store_model(row)
    rows = conn.execute(
        select(stores).where(stores.c.name == name_or_id).order_by(stores.c.id)
    ).all()
    if not rows:
        rows = [
            r
            for r in conn.execute(select(stores).order_by(stores.c.id)).all()
            if rules.slugify(r.name) == name_or_id
        ]
    if not rows:
        raise NotFound(f"no memory store is named or has the id {name_or_id!r}")
    if len(rows) > 1:
        ids = ", ".join(r.id for r in rows)
        raise InvalidInput(f"several memory stores are named {name_or_id!r} ({ids}); use an id")
    return store_model(rows[0])


def _patched_metadata(current: dict[str, str], patch: dict[str, str | None]) -> dict[str, str]:
    merged = dict(current)
    for key, value in patch.items():
        if value is None:
            merged.pop(key, None)
        else:
            merged[key] = value
    rules.validate_metadata(merged)
    return merged


def update_store(
    conn: Connection,
    store_id: str,
    *,
    name: str | None,
    description: str | None,
    metadata_patch: dict[str, str | None] | None,
) -> MemoryStore:
    """See :meth:`memfs.store.Engine.update_store`."""
    if name is not None:
        rules.validate_store_name(name)
    if description is not None:
        rules.validate_store_description(description)
    if metadata_patch is not None:
        rules.validate_metadata(metadata_patch, allow_null_values=True)
    row = lock_store(conn, store_id)
    if row.archived_at is not None:
        raise StoreArchived(f"memory store {store_id!r} is archived and can't be updated")
    values: dict[str, Any] = {}
    if name is not None and name != row.name:
        values["name"] = name
    if description is not None and description != row.description:
        values["description"] = description
    if metadata_patch is not None:
        current = json.loads(row.metadata_json)
        merged = _patched_metadata(current, metadata_patch)
        if merged != current:
            values["metadata_json"] = json.dumps(merged, sort_keys=True)
    if values:
        values["updated_at"] = now()
        conn.execute(update(stores).where(stores.c.id == store_id).values(**values))
        feed.emit(conn, store_id, ChangeKind.STORE_UPDATED)
    return store_model(store_row(conn, store_id))


def list_stores(
    conn: Connection,
    *,
    include_archived: bool,
    created_gte: datetime | None,
    created_lte: datetime | None,
    limit: int,
    cursor: str | None,
) -> Page[MemoryStore]:
    """See :meth:`memfs.store.Engine.list_stores`."""
    check_limit(limit)
    fingerprint = Cursor.fingerprint("stores", include_archived, created_gte, created_lte)
    query = select(stores)
    if not include_archived:
        query = query.where(stores.c.archived_at.is_(None))
    if created_gte is not None:
        query = query.where(stores.c.created_at >= ts(created_gte))
    if created_lte is not None:
        query = query.where(stores.c.created_at <= ts(created_lte))
    if cursor is not None:
        query = query.where(stores.c.id < str(Cursor.decode(cursor, fingerprint)))
    rows = conn.execute(query.order_by(stores.c.id.desc()).limit(limit + 1)).all()
    items = [store_model(r) for r in rows[:limit]]
    next_cursor = Cursor.encode(fingerprint, items[-1].id) if len(rows) > limit and items else None
    return Page[MemoryStore](items=items, next_cursor=next_cursor)


def archive_store(
    conn: Connection, store_id: str, *, actor: Actor | None, force: bool = False
) -> MemoryStore:
    """See :meth:`memfs.store.Engine.archive_store`."""
    row = lock_store(conn, store_id)
    if row.archived_at is None:
        identities.check_unbound(conn, store_id, deleting=False, force=force)
        archived = now()
        conn.execute(
            update(stores)
            .where(stores.c.id == store_id)
            .values(archived_at=archived, updated_at=archived)
        )
        feed.audit(conn, store_id, "store_archive", memory_id=None, actor=actor, reason=None)
        feed.emit(conn, store_id, ChangeKind.STORE_ARCHIVED)
    return store_model(store_row(conn, store_id))


def delete_store(
    conn: Connection, store_id: str, *, actor: Actor | None, force: bool = False
) -> None:
    """See :meth:`memfs.store.Engine.delete_store`."""
    lock_store(conn, store_id)
    identities.check_unbound(conn, store_id, deleting=True, force=force)
    conn.execute(delete(identity_mounts).where(identity_mounts.c.store_id == store_id))
    keys = set(
        conn.execute(select(memories.c.blob_key).where(memories.c.store_id == store_id)).scalars()
    ) | set(
        conn.execute(select(versions.c.blob_key).where(versions.c.store_id == store_id)).scalars()
    )
    conn.execute(delete(versions).where(versions.c.store_id == store_id))
    conn.execute(delete(memories).where(memories.c.store_id == store_id))
    search.unindex_store(conn, store_id)
    record_index.unindex_store(conn, store_id)
    search.scrub(conn)
    gc_blobs(conn, store_id, keys)
    last = conn.execute(
        select(stores.c.last_change_seq).where(stores.c.id == store_id)
    ).scalar_one()
    conn.execute(delete(stores).where(stores.c.id == store_id))
    feed.emit_store_deleted(conn, store_id, last)
    feed.audit(conn, store_id, "store_delete", memory_id=None, actor=actor, reason=None)


def statistics(conn: Connection) -> dict[str, int]:
    """Row counts: ``stores``, ``memories`` (live), ``versions``, ``blobs``."""
    return {
        "stores": conn.execute(select(func.count()).select_from(stores)).scalar_one(),
        "memories": conn.execute(
            select(func.count()).select_from(memories).where(memories.c.deleted_at.is_(None))
        ).scalar_one(),
        "versions": conn.execute(select(func.count()).select_from(versions)).scalar_one(),
        "blobs": conn.execute(select(func.count()).select_from(blobs)).scalar_one(),
    }
