"""Memory stores: create, find, patch, list, archive, delete, and database-wide counts;
:class:`Stores` is their facade (``engine.stores``, ``engine.for_caller(…).stores``).

Owns the ``stores`` table (its counters ``entry_count``, ``total_size_bytes`` and
``last_change_seq`` are moved by :func:`memfs.store.feed.emit`). Deleting a store
removes its memories, versions and now-unreferenced blobs; its change feed and audit
log stay (see :mod:`memfs.store.feed`).
"""

from __future__ import annotations

import json
from datetime import datetime
from types import EllipsisType
from typing import Any

from sqlalchemy import Connection, delete, func, insert, select, update

from memfs.core import rules
from memfs.core.errors import StoreArchived
from memfs.core.ids import new_id
from memfs.core.model import Actor, ChangeKind, MemoryStore, Page
from memfs.core.visibility import Viewer
from memfs.store import feed, visibility
from memfs.store._common import Cursor, check_limit, lock_store, now, store_model, store_row, ts
from memfs.store._facade import Facade
from memfs.store._light import only_store
from memfs.store.bindings import check_unbound
from memfs.store.blobs import gc_blobs
from memfs.store.schema import blobs, identity_mounts, memories, snapshots, stores, versions

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
    """See :meth:`Stores.create_store`."""
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
    """See :meth:`Stores.find_store`."""
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
    return store_model(only_store(rows, name_or_id))


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
    """See :meth:`Stores.update_store`."""
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
    """See :meth:`Stores.list_stores`."""
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
    # Page[MemoryStore](…) would build the validators of both models to check rows the
    # store made itself (_common.store_model).
    page: Page[MemoryStore] = Page.model_construct(items=items, next_cursor=next_cursor)
    return page


def archive_store(
    conn: Connection, store_id: str, *, actor: Actor | None, force: bool = False
) -> MemoryStore:
    """See :meth:`Stores.archive_store`."""
    row = lock_store(conn, store_id)
    if row.archived_at is None:
        check_unbound(conn, store_id, deleting=False, force=force)
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
    """See :meth:`Stores.delete_store`."""
    # Imported here, not at module load: listing stores needs neither (README
    # "Performance": `memfs store list` loads only what it runs).
    from memfs.store import records as record_index
    from memfs.store import search

    lock_store(conn, store_id)
    check_unbound(conn, store_id, deleting=True, force=force)
    conn.execute(delete(identity_mounts).where(identity_mounts.c.store_id == store_id))
    keys = set(
        conn.execute(select(memories.c.blob_key).where(memories.c.store_id == store_id)).scalars()
    ) | set(
        conn.execute(select(versions.c.blob_key).where(versions.c.store_id == store_id)).scalars()
    )
    conn.execute(delete(snapshots).where(snapshots.c.store_id == store_id))
    search.unindex_store(conn, store_id)  # while its memory rows still name its queue rows
    conn.execute(delete(versions).where(versions.c.store_id == store_id))
    conn.execute(delete(memories).where(memories.c.store_id == store_id))
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


def feed_seqs(conn: Connection) -> dict[str, int]:
    """The newest change-feed seq of every store, by store id (archived stores too)."""
    rows = conn.execute(select(stores.c.id, stores.c.last_change_seq))
    return {row.id: int(row.last_change_seq) for row in rows}


def counted(conn: Connection, viewer: Viewer | None, store: MemoryStore) -> MemoryStore:
    """``store`` with the counts ``viewer`` sees (SPEC §6: hidden records are not
    counted); as it is for an unrestricted viewer."""
    if viewer is None:
        return store
    entry_count, total_size_bytes = visibility.visible_counts(conn, viewer, store.id)
    return store.model_copy(
        update={"entry_count": entry_count, "total_size_bytes": total_size_bytes}
    )


class Stores(Facade):
    """The stores, as one caller sees them: counts are those its viewer sees; archive
    and delete are audited with its actor."""

    def create(
        self,
        name: str,
        description: str = "",
        metadata: dict[str, str] | None = None,
        *,
        version_retention_s: int | None = None,
    ) -> MemoryStore:
        """Creates a store (api-contract §5.1).

        Args:
            version_retention_s: prune versions older than this many seconds (SPEC §2
                retention, :meth:`memfs.store.retention.Retention.prune`); None keeps
                them forever.

        Raises:
            InvalidStoreField: name or description breaks SPEC §1.
            InvalidMetadata: metadata breaks SPEC §1 (every problem named).
            InvalidInput: a retention period out of range (1 s to 100 years).
        """
        rules.validate_retention_s(version_retention_s)
        with self._write() as conn:
            store = create_store(conn, name, description, metadata)
            if version_retention_s is None:
                return store
            from memfs.store import retention  # only with a retention period

            retention.init_version_retention(conn, store.id, version_retention_s)
            return get_store(conn, store.id)

    def get(self, store_id: str) -> MemoryStore:
        """A store, archived or not, with the counts the viewer sees. Raises NotFound."""
        with self._read() as conn:
            return counted(conn, self.viewer, get_store(conn, store_id))

    def find(self, name_or_id: str) -> MemoryStore:
        """A store by id, else by exact name, else by slug (CLI convenience).

        Raises:
            NotFound: nothing matches.
            InvalidInput: several stores share that name or slug (the message lists ids).
        """
        with self._read() as conn:
            return find_store(conn, name_or_id)

    def update(
        self,
        store_id: str,
        *,
        name: str | None = None,
        description: str | None = None,
        metadata_patch: dict[str, str | None] | None = None,
        version_retention_s: int | None | EllipsisType = ...,
    ) -> MemoryStore:
        """Patches a store; None means "no change"; a metadata value None removes the key.

        ``updated_at`` moves only when something changed (api-contract §5.3). The store
        comes back with the counts the viewer sees.

        Args:
            version_retention_s: the new retention period in seconds, None to keep
                versions forever; ``...`` (default) leaves it unchanged (SPEC §2).

        Raises:
            NotFound, StoreArchived (updating an archived store), InvalidStoreField,
            InvalidMetadata (also when the patched result has more than 16 keys),
            InvalidInput (a retention period out of range).
        """
        if version_retention_s is not ...:
            rules.validate_retention_s(version_retention_s)
        from memfs.store import retention  # imported when used (delete_store says why)

        with self._write() as conn:
            store = update_store(
                conn, store_id, name=name, description=description, metadata_patch=metadata_patch
            )
            if version_retention_s is not ... and retention.set_version_retention(
                conn, store_id, version_retention_s
            ):
                store = get_store(conn, store_id)
            return counted(conn, self.viewer, store)

    def list(
        self,
        *,
        include_archived: bool = False,
        created_gte: datetime | None = None,
        created_lte: datetime | None = None,
        limit: int = 20,
        cursor: str | None = None,
    ) -> Page[MemoryStore]:
        """Stores newest first (by id, which sorts by creation time), with the counts the
        viewer sees.

        Raises:
            InvalidInput: limit outside 1–100.
            InvalidCursor: a cursor from another query.
        """
        with self._read() as conn:
            page = list_stores(
                conn,
                include_archived=include_archived,
                created_gte=created_gte,
                created_lte=created_lte,
                limit=limit,
                cursor=cursor,
            )
            if self.viewer is None:
                return page
            items = [counted(conn, self.viewer, store) for store in page.items]
            return page.model_copy(update={"items": items})

    def archive(self, store_id: str, *, force: bool = False) -> MemoryStore:
        """Archives a store (one-way; an archived store comes back unchanged).

        Raises:
            NotFound.
            StoreBound: the store is mounted on an (identity, template) pair and
                ``force`` is False (SPEC §8; the message names the bindings).
        """
        with self._write() as conn:
            return archive_store(conn, store_id, actor=self.actor, force=force)

    def delete(self, store_id: str, *, force: bool = False) -> None:
        """Deletes a store with its memories, versions, mounts and now-unreferenced blobs.

        A final ``store_deleted`` entry stays in the change feed so mounts learn of it.

        Raises:
            NotFound.
            StoreBound: the store is mounted on a pair and ``force`` is False, or it is
                a pair's default store and the pair has explicit mounts (SPEC §8).
        """
        with self._write() as conn:
            delete_store(conn, store_id, actor=self.actor, force=force)
        self._db.checkpoint()
