"""Deleting memories in the three SPEC §2 modes, restoring soft-deleted ones, and
retracting an exclusive create whose every write was refused.

Each locks the store row first and writes the memory's version (:mod:`memfs.store.versions`),
its change (:mod:`memfs.store.feed`) and its audit entry with it; the tombstone itself
is :func:`memfs.store.memory_rows.tombstone`.
"""

from __future__ import annotations

from sqlalchemy import (
    Connection,
    delete,
    select,
)

from memfs.core import rules
from memfs.core.errors import (
    InvalidInput,
    InvalidRecord,
    NotFound,
    NotRestorable,
)
from memfs.core.model import Actor, ChangeKind, DeleteMode, Memory, Operation
from memfs.core.records import RecordHeader, parse_record
from memfs.store import feed, search
from memfs.store import records as record_index
from memfs.store._common import (
    actor_columns,
    lock_store,
    memory_model,
    now,
    require_writable,
)
from memfs.store.blobs import blob_data, gc_blobs, put_blob
from memfs.store.memory_rows import (
    MEMORY_BY_ID,
    check_capacity,
    check_precondition,
    checked_audit_metadata,
    live_row,
    require_free,
    set_memory_columns,
    tombstone,
)
from memfs.store.schema import memories, versions
from memfs.store.versions import insert_version, redact_version_row


def retract_create(conn: Connection, store_id: str, memory_id: str, *, actor: Actor) -> bool:
    """See :meth:`memfs.store.memories.Memories.retract_create`."""
    lock_store(conn, store_id)
    row = live_row(conn, store_id, memory_id)
    history = conn.execute(
        select(
            versions.c.operation, versions.c.size_bytes, versions.c.actor_type, versions.c.actor_id
        ).where(versions.c.memory_id == memory_id)
    ).all()
    placeholder = (Operation.CREATED.value, 0, *actor_columns(actor))
    if row.size_bytes or [tuple(version) for version in history] != [placeholder]:
        return False
    delete_memory(
        conn,
        store_id,
        memory_id,
        actor=actor,
        expected_sha256=None,
        mode=DeleteMode.HARD_DELETE,
        reason="exclusive create retracted: every write to it was refused",
        replacement="[REDACTED]",
    )
    return True



def delete_memory(
    conn: Connection,
    store_id: str,
    memory_id: str,
    *,
    actor: Actor | None,
    expected_sha256: str | None,
    mode: DeleteMode,
    reason: str | None,
    replacement: str,
    audit_metadata: dict[str, str] | None = None,
) -> frozenset[str]:
    """See :meth:`memfs.store.memories.Memories.delete`."""
    try:
        mode = DeleteMode(mode)
    except ValueError as exc:
        raise InvalidInput("mode must be soft_delete, redact or hard_delete") from exc
    replacement_data = rules.validate_content(replacement).encode("utf-8")
    audit_metadata = checked_audit_metadata(audit_metadata)
    lock_store(conn, store_id)
    row = live_row(conn, store_id, memory_id)
    check_precondition(row, expected_sha256)
    deleted_at = now()
    if mode is DeleteMode.SOFT_DELETE:
        tombstone(
            conn,
            store_id,
            row,
            mode=mode,
            actor=actor,
            reason=reason,
            now=deleted_at,
            content={"blob_key": None},
            audit_metadata=audit_metadata,
        )
        return frozenset()
    old_versions = conn.execute(select(versions).where(versions.c.memory_id == memory_id)).all()
    erased_paths = frozenset(
        {v.path for v in old_versions if v.path} | {row.path} | feed.paths_of(conn, memory_id)
    )
    purged_keys = {v.blob_key for v in old_versions} | {row.blob_key}
    if mode is DeleteMode.REDACT:
        key, digest = put_blob(conn, replacement_data)
        for version_row in old_versions:
            if version_row.redacted_at is None:
                redact_version_row(conn, version_row, actor, deleted_at)
        tombstone(
            conn,
            store_id,
            row,
            mode=DeleteMode.REDACT,
            actor=actor,
            reason=reason,
            now=deleted_at,
            content={
                "blob_key": key,
                "content_sha256": digest,
                "size_bytes": len(replacement_data),
                "metadata_json": "{}",
            },
            audit_metadata=audit_metadata,
        )
    else:
        conn.execute(delete(versions).where(versions.c.memory_id == memory_id))
        conn.execute(delete(memories).where(memories.c.id == memory_id))
        search.unindex_memory(conn, memory_id)
        record_index.unindex_memory(conn, memory_id)
        feed.audit(
            conn,
            store_id,
            mode.value,
            memory_id=memory_id,
            actor=actor,
            reason=reason,
            metadata=audit_metadata,
        )
        feed.emit(
            conn,
            store_id,
            ChangeKind.MEMORY_DELETED,
            memory_id=memory_id,
            entries=-1,
            size_bytes=-row.size_bytes,
        )
    # Every path the memory ever had leaves the change feed too (ids stay).
    feed.forget_paths(conn, memory_id)
    gc_blobs(conn, store_id, purged_keys)
    search.scrub(conn)
    return erased_paths


def restore_memory(
    conn: Connection,
    store_id: str,
    memory_id: str,
    *,
    actor: Actor | None,
    reason: str | None,
    memory_limit: int,
    audit_metadata: dict[str, str] | None = None,
    path: str | None = None,
    source_seq: int | None = None,
) -> Memory:
    """See :meth:`memfs.store.memories.Memories.restore`.

    Args:
        path: bring it back at this path (None: the path it was deleted at); a store
            restore (SPEC §10) brings a memory back where it was at the point.
        source_seq: the ``seq`` of the version whose content comes back (None: the
            newest content version); NotRestorable if it is redacted.
    """
    audit_metadata = checked_audit_metadata(audit_metadata)
    store = lock_store(conn, store_id)
    row = conn.execute(
        select(memories).where(memories.c.id == memory_id, memories.c.store_id == store_id)
    ).first()
    if row is None:
        raise NotFound(f"memory {memory_id!r} not found in memory store {store_id!r}")
    if row.deleted_at is None:
        raise NotRestorable(f"memory {memory_id!r} is not deleted")
    if row.delete_mode != DeleteMode.SOFT_DELETE.value:
        raise NotRestorable(f"memory {memory_id!r} was redacted and can't be restored")
    require_writable(store)
    sources = select(versions).where(
        versions.c.memory_id == memory_id, versions.c.operation != Operation.DELETED.value
    )
    if source_seq is not None:
        sources = sources.where(versions.c.seq == source_seq)
    source = conn.execute(sources.order_by(versions.c.seq.desc()).limit(1)).first()
    if source is None or source.redacted_at is not None:
        raise NotRestorable(
            f"the content of memory {memory_id!r} was redacted; it can't be restored"
        )
    if path is not None and path != row.path:
        rules.validate_path(path)
        # The tombstone takes the path it comes back at (its deleted version keeps the
        # path it was deleted at).
        set_memory_columns(conn, memory_id, {"path": path})
        row = conn.execute(MEMORY_BY_ID, {"memory_id": memory_id}).one()
    require_free(conn, store_id, row.path, memory_id)
    check_capacity(store, memory_limit)
    restored_at = now()
    version_id = insert_version(
        conn,
        store_id=store_id,
        memory_id=memory_id,
        operation=Operation.CREATED,
        path=row.path,
        blob_key=source.blob_key,
        sha=source.content_sha256,
        size=source.size_bytes,
        actor=actor,
        now=restored_at,
        reason=reason,
    )
    set_memory_columns(
        conn,
        memory_id,
        dict(
            blob_key=source.blob_key,
            content_sha256=source.content_sha256,
            size_bytes=source.size_bytes,
            deleted_at=None,
            delete_mode=None,
            head_version_id=version_id,
            updated_at=restored_at,
        ),
    )
    restored_data = blob_data(conn, source.blob_key)
    if restored_data is not None:
        search.queue(conn, memory_id)
        header = _restored_header(restored_data)
        record_index.index_memory(conn, memory_id, store_id, header, restored_at)
    record_index.memories_arrived(conn, store_id, [(memory_id, row.path)])
    feed.audit(
        conn,
        store_id,
        "restore",
        memory_id=memory_id,
        actor=actor,
        reason=reason,
        metadata=audit_metadata,
    )
    feed.emit(
        conn,
        store_id,
        ChangeKind.MEMORY_WRITTEN,
        memory_id=memory_id,
        path=row.path,
        content_sha256=source.content_sha256,
        version_id=version_id,
        entries=1,
        size_bytes=source.size_bytes,
    )
    restored = conn.execute(MEMORY_BY_ID, {"memory_id": memory_id}).one()
    return memory_model(restored, blob_data(conn, restored.blob_key))


def _restored_header(data: bytes) -> RecordHeader | None:
    """The record header of restored content; None when it is no record, or when its
    header breaks a rule (content written before records existed: restoring it must not
    fail for that, and fsck names it)."""
    try:
        return parse_record(data.decode("utf-8"))
    except InvalidRecord:
        return None
