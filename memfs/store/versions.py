"""Memory versions and their redaction (SPEC §2 versions, redaction); :class:`Versions` is
their facade (``engine.versions``, ``engine.for_caller(…).versions``).

Owns the ``versions`` table: immutable snapshots, one per write, of which only
redaction (and retention pruning, :mod:`memfs.store.retention`) changes anything. A redacted
version keeps its id, memory id, operation, time and actors; its path, content, digest
and size become null, and the path is scrubbed from the change feed once nothing
unredacted holds it.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Connection, Row, insert, or_, select, update

from memfs.core.errors import HeadVersionRedaction, InvalidCursor, InvalidInput, NotFound
from memfs.core.ids import new_id
from memfs.core.model import Actor, ActorType, ChangeKind, MemoryVersion, Operation, Page
from memfs.store import _hot, feed, search, visibility
from memfs.store._common import (
    Cursor,
    actor_columns,
    check_limit,
    insert_many,
    lock_store,
    now,
    store_row,
    ts,
    version_model,
)
from memfs.store._facade import Facade
from memfs.store.blobs import blob_data, gc_blobs
from memfs.store.schema import changes, memories, versions

__all__ = [
    "get_version",
    "insert_version",
    "insert_versions",
    "list_versions",
    "redact_version",
    "redact_version_row",
    "scrub_path",
]

_INSERT_VERSION = insert(versions)


def insert_version(
    conn: Connection,
    *,
    store_id: str,
    memory_id: str,
    operation: Operation,
    path: str | None,
    blob_key: str | None,
    sha: str | None,
    size: int | None,
    actor: Actor | None,
    now: str,
    reason: str | None = None,
    redacted: bool = False,
) -> str:
    """Writes one version row; returns its new ``memver_…`` id.

    ``redacted``: the version is born redacted by ``actor`` (a redaction's ``deleted``
    version; ``path`` must then be None).
    """
    assert (path is None) == redacted, "a version has no path exactly when it is redacted"
    version_id = new_id("version")
    actor_type, actor_id = actor_columns(actor)
    _hot.run(
        conn,
        _INSERT_VERSION,
        dict(
            id=version_id,
            store_id=store_id,
            memory_id=memory_id,
            operation=operation.value,
            path=path,
            blob_key=blob_key,
            content_sha256=sha,
            size_bytes=size,
            created_at=now,
            actor_type=actor_type,
            actor_id=actor_id,
            reason=reason,
            redacted_at=now if redacted else None,
            redacted_by_type=actor_type if redacted else None,
            redacted_by_id=actor_id if redacted else None,
        ),
    )
    return version_id


def insert_versions(
    conn: Connection, rows: list[tuple[Any, ...]], *, actor: Actor | None, now: str
) -> list[str]:
    """Writes many version rows in one executemany (a directory rename); returns their
    new ids in the order of ``rows``.

    Args:
        rows: ``(store_id, memory_id, operation value, path, blob_key, content_sha256,
            size_bytes)`` of each version.
    """
    actor_type, actor_id = actor_columns(actor)
    version_ids = [new_id("version") for _ in rows]
    insert_many(
        conn,
        "versions",
        (
            "store_id",
            "memory_id",
            "operation",
            "path",
            "blob_key",
            "content_sha256",
            "size_bytes",
            "id",
            "created_at",
            "actor_type",
            "actor_id",
        ),
        [
            (*row, version_id, now, actor_type, actor_id)
            for row, version_id in zip(rows, version_ids, strict=True)
        ],
    )
    return version_ids


def list_versions(
    conn: Connection,
    store_id: str,
    *,
    memory_id: str | None,
    operation: Operation | None,
    actor_filters: dict[ActorType, str | None],
    created_gte: datetime | None,
    created_lte: datetime | None,
    limit: int,
    cursor: str | None,
    with_content: bool,
) -> Page[MemoryVersion]:
    """See :meth:`memfs.store.versions.Versions.list`.

    Args:
        actor_filters: actor type → the id a version's creator must have (None: any).
    """
    check_limit(limit)
    if operation is not None:
        try:
            operation = Operation(operation)
        except ValueError as exc:
            raise InvalidInput("operation must be created, modified or deleted") from exc
    fingerprint = Cursor.fingerprint(
        "versions",
        store_id,
        memory_id,
        operation,
        *actor_filters.values(),
        created_gte,
        created_lte,
    )
    query = select(versions).where(versions.c.store_id == store_id)
    if memory_id is not None:
        query = query.where(versions.c.memory_id == memory_id)
    if operation is not None:
        query = query.where(versions.c.operation == operation.value)
    for actor_type, actor_id in actor_filters.items():
        if actor_id is not None:
            query = query.where(
                versions.c.actor_type == actor_type.value, versions.c.actor_id == actor_id
            )
    if created_gte is not None:
        query = query.where(versions.c.created_at >= ts(created_gte))
    if created_lte is not None:
        query = query.where(versions.c.created_at <= ts(created_lte))
    if cursor is not None:
        seq = Cursor.decode(cursor, fingerprint)
        if not isinstance(seq, int):
            raise InvalidCursor("page cursor is malformed")
        query = query.where(versions.c.seq < seq)
    query = query.order_by(versions.c.seq.desc()).limit(limit + 1)
    store_row(conn, store_id)
    rows = conn.execute(query).all()
    page_rows = rows[:limit]
    items = [
        version_model(r, blob_data(conn, r.blob_key) if with_content else None) for r in page_rows
    ]
    next_cursor = (
        Cursor.encode(fingerprint, page_rows[-1].seq) if len(rows) > limit and page_rows else None
    )
    return Page[MemoryVersion](items=items, next_cursor=next_cursor)


def _version_row(conn: Connection, store_id: str, version_id: str) -> Row[Any]:
    row = conn.execute(
        select(versions).where(versions.c.id == version_id, versions.c.store_id == store_id)
    ).first()
    if row is None:
        raise NotFound(f"memory version {version_id!r} not found in memory store {store_id!r}")
    return row


def get_version(
    conn: Connection, store_id: str, version_id: str, *, with_content: bool
) -> MemoryVersion:
    """See :meth:`memfs.store.versions.Versions.get`."""
    store_row(conn, store_id)
    row = _version_row(conn, store_id, version_id)
    return version_model(row, blob_data(conn, row.blob_key) if with_content else None)


def redact_version(
    conn: Connection, store_id: str, version_id: str, *, actor: Actor | None
) -> MemoryVersion:
    """See :meth:`memfs.store.versions.Versions.redact`."""
    lock_store(conn, store_id)
    row = _version_row(conn, store_id, version_id)
    if row.redacted_at is not None:
        return version_model(row)
    head_of_live = conn.execute(
        select(memories.c.id).where(
            memories.c.head_version_id == version_id, memories.c.deleted_at.is_(None)
        )
    ).first()
    if head_of_live is not None:
        raise HeadVersionRedaction(
            f"memory version {version_id!r} is the head version of the live memory "
            f"{head_of_live.id!r}: write a new version or delete the memory first"
        )
    redact_version_row(conn, row, actor, now())
    feed.audit(conn, store_id, "redact_version", memory_id=row.memory_id, actor=actor, reason=None)
    feed.emit(conn, store_id, ChangeKind.VERSION_REDACTED, memory_id=row.memory_id)
    gc_blobs(conn, store_id, [row.blob_key])
    # The version's content may have been a head once: its tokens can linger in FTS
    # segments written before it was replaced (SPEC §7: the indexes are data too), or
    # still be the memory's document, waiting for the indexer to take the newer head.
    search.settle(conn, [row.memory_id])
    search.scrub(conn)
    return version_model(conn.execute(select(versions).where(versions.c.seq == row.seq)).one())


def redact_version_row(
    conn: Connection, version_row: Row[Any], actor: Actor | None, redacted_at: str
) -> None:
    """Nulls a version's path and content columns and records who redacted it; the
    caller collects its blob (:func:`memfs.store.blobs.gc_blobs`)."""
    actor_type, actor_id = actor_columns(actor)
    conn.execute(
        update(versions)
        .where(versions.c.seq == version_row.seq)
        .values(
            path=None,
            blob_key=None,
            content_sha256=None,
            size_bytes=None,
            redacted_at=redacted_at,
            redacted_by_type=actor_type,
            redacted_by_id=actor_id,
        )
    )
    scrub_path(conn, version_row.memory_id, version_row.path)


def scrub_path(conn: Connection, memory_id: str, path: str | None) -> None:
    """Nulls ``path`` out of the change feed of ``memory_id`` once no unredacted
    version and no memory row holds it any more: redaction scrubs the path too
    (SPEC §2), and the feed is a place memfs keeps data."""
    if path is None:
        return
    still_held = conn.execute(
        select(
            or_(
                select(versions.c.seq)
                .where(
                    versions.c.memory_id == memory_id,
                    versions.c.path == path,
                    versions.c.redacted_at.is_(None),
                )
                .exists(),
                select(memories.c.id)
                .where(memories.c.id == memory_id, memories.c.path == path)
                .exists(),
            )
        )
    ).scalar()
    if still_held:
        return
    for column in (changes.c.path, changes.c.old_path):
        conn.execute(
            update(changes)
            .where(changes.c.memory_id == memory_id, column == path)
            .values({column.name: None})
        )


class Versions(Facade):
    """The versions of the stores, as one caller sees them (SPEC §6: those of records
    hidden from its viewer are left out); redactions name its actor."""

    def get(self, store_id: str, version_id: str, *, with_content: bool = True) -> MemoryVersion:
        """A version, redacted or not. Raises NotFound (also: hidden from the viewer)."""
        with self._read() as conn:
            version = get_version(conn, store_id, version_id, with_content=with_content)
            if not visibility.visible_versions(conn, self.viewer, [version]):
                raise NotFound(f"memory version {version_id!r} not found")
            return version

    def redact(self, store_id: str, version_id: str) -> MemoryVersion:
        """Scrubs a version (SPEC §2 redaction); already-redacted ones come back unchanged.

        The version's content, path, digest and size become null; its bytes are erased
        from the database (and, on SQLite, from the WAL by a checkpoint) unless another
        version or a live memory still holds identical content.

        Raises:
            NotFound, HeadVersionRedaction (head version of a live memory).
        """
        with self._write() as conn:
            result = redact_version(conn, store_id, version_id, actor=self.actor)
        self._db.checkpoint()
        return result

    def list(
        self,
        store_id: str,
        *,
        memory_id: str | None = None,
        operation: Operation | None = None,
        session_id: str | None = None,
        api_key_id: str | None = None,
        service_account_id: str | None = None,
        created_gte: datetime | None = None,
        created_lte: datetime | None = None,
        limit: int = 20,
        cursor: str | None = None,
        with_content: bool = False,
    ) -> Page[MemoryVersion]:
        """Versions newest first, filtered (api-contract §5.12); without those the viewer
        may not see (:func:`memfs.store.visibility.visible_versions`; a page may then hold
        fewer than ``limit``).

        Raises:
            NotFound (store), InvalidInput (operation, limit), InvalidCursor.
        """
        with self._read() as conn:
            page = list_versions(
                conn,
                store_id,
                memory_id=memory_id,
                operation=operation,
                actor_filters={
                    ActorType.SESSION: session_id,
                    ActorType.API: api_key_id,
                    ActorType.SERVICE_ACCOUNT: service_account_id,
                },
                created_gte=created_gte,
                created_lte=created_lte,
                limit=limit,
                cursor=cursor,
                with_content=with_content,
            )
            if self.viewer is None:
                return page
            return page.model_copy(
                update={"items": visibility.visible_versions(conn, self.viewer, page.items)}
            )
