"""Memories: create, read, update (content, path, metadata), delete in the three SPEC §2
modes, restore. Directory renames are :mod:`memfs.store.renames`.

Owns the ``memories`` table and the per-store rules that span its rows: one live memory
per path, and never a memory both at a path and above or below another live one (SPEC §1,
:func:`check_path_free`, the one place that builds :class:`PathConflict`); the memory
limit (:func:`_check_capacity`, the one place that raises :class:`StoreFull`). Every
write locks the store row first and writes the memory's version
(:mod:`memfs.store.versions`) and change (:mod:`memfs.store.feed`) with it.
"""

from __future__ import annotations

import functools
import json
from types import SimpleNamespace
from typing import Any

from sqlalchemy import (
    Connection,
    Row,
    and_,
    bindparam,
    delete,
    insert,
    select,
    union_all,
    update,
)

from memfs.core import rules
from memfs.core.errors import (
    InvalidInput,
    InvalidRecord,
    NotFound,
    NotRestorable,
    PathConflict,
    PreconditionFailed,
    StoreFull,
)
from memfs.core.ids import new_id, sha256_of
from memfs.core.model import Actor, ChangeKind, DeleteMode, Memory, Operation
from memfs.core.records import RecordHeader, parse_record
from memfs.store import _hot, feed, search
from memfs.store import records as record_index
from memfs.store._common import (
    actor_columns,
    ancestors,
    descendant_upper_bound,
    lock_store,
    memory_model,
    now,
    require_writable,
    store_row,
)
from memfs.store.blobs import blob_data, gc_blobs, put_blob
from memfs.store.schema import memories, versions
from memfs.store.versions import insert_version, redact_version_row

__all__ = [
    "REDACTED_PATH",
    "check_path_free",
    "path_conflict",
    "create_memory",
    "delete_memory",
    "get_memory",
    "get_memory_by_path",
    "restore_memory",
    "update_memory",
]

# The path of a redacted tombstone: its own is erased (SPEC §2). Never a valid memory
# path, and only tombstones (outside the unique index of live paths) hold it.
REDACTED_PATH = "/.redacted"

_LIVE_MEMORY = select(memories).where(
    memories.c.id == bindparam("memory_id"),
    memories.c.store_id == bindparam("store_id"),
    memories.c.deleted_at.is_(None),
)
_MEMORY_BY_ID = select(memories).where(memories.c.id == bindparam("memory_id"))
# No .values(): the SET clause is the executed parameters other than memory_id, and
# SQLAlchemy caches one compiled form per set of parameter names. It silently skips a
# name that is no column, so run it through _set_memory_columns, which checks.
_UPDATE_MEMORY = update(memories).where(memories.c.id == bindparam("memory_id"))
_MEMORY_COLUMNS = frozenset(memories.c.keys())
_INSERT_MEMORY = insert(memories)


@functools.cache
def _path_check_statement(depth: int, *, ignoring: bool) -> Any:
    """The query of check_path_free for a path of ``depth`` segments, with ``:p0`` …
    (the path and its ancestors), ``:below``/``:below_end`` (the descendant range) and,
    if ``ignoring``, ``:ignore_id``. One prebuilt statement per depth (a path has at most
    512), so it runs on the hot path (:mod:`memfs.store._hot`: no expanding IN)."""
    live = and_(memories.c.store_id == bindparam("store_id"), memories.c.deleted_at.is_(None))
    if ignoring:
        live = and_(live, memories.c.id != bindparam("ignore_id"))
    # One round trip: the exact path and its ancestors by the unique index, plus the
    # first descendant by a range scan of the same index (each branch indexable).
    exact_or_above = select(memories).where(
        live, memories.c.path.in_([bindparam(f"p{index}") for index in range(depth)])
    )
    first_below = (
        select(memories)
        .where(
            live,
            memories.c.path >= bindparam("below"),
            memories.c.path < bindparam("below_end"),
        )
        .order_by(memories.c.path)
        .limit(1)
    )
    return union_all(exact_or_above, select(first_below.subquery()))


def path_conflict(path: str, blocker_id: str, blocker_path: str) -> PathConflict:
    """The PathConflict for writing ``path`` while the live memory ``blocker_id`` is at
    ``blocker_path``: the same path, an ancestor (a file where a directory is needed) or
    a descendant (a directory where a file is wanted), SPEC §1."""
    if blocker_path == path:
        message = f"a memory already exists at {path!r}"
    elif path.startswith(blocker_path + "/"):
        message = f"path {path!r} is below the memory {blocker_path!r}, which is a file"
    else:
        message = f"path {path!r} is a directory holding the memory {blocker_path!r}"
    return PathConflict(message, conflicting_memory_id=blocker_id, conflicting_path=blocker_path)


def check_path_free(
    conn: Connection, store_id: str, path: str, *, ignore_id: str | None = None
) -> Row[Any] | None:
    """Raises PathConflict when an ancestor or descendant of ``path`` is a live memory
    (SPEC §1: ``/a`` and ``/a/b`` can't coexist). Returns the live memory at exactly
    ``path`` (other than ``ignore_id``), or None; the caller decides."""
    below = path + "/"
    paths = [path, *ancestors(path)]
    params = {
        "store_id": store_id,
        "below": below,
        "below_end": descendant_upper_bound(below),
        **{f"p{index}": each for index, each in enumerate(paths)},
    }
    if ignore_id is not None:
        params["ignore_id"] = ignore_id
    statement = _path_check_statement(len(paths), ignoring=ignore_id is not None)
    rows = _hot.rows(conn, statement, params)
    exact = None
    for row in sorted(rows, key=lambda r: len(r.path)):
        if row.path != path:
            raise path_conflict(path, row.id, row.path)
        exact = row
    return exact


def _require_free(conn: Connection, store_id: str, path: str, ignore_id: str | None) -> None:
    """Raises PathConflict unless ``path`` is free (SPEC §1)."""
    occupant = check_path_free(conn, store_id, path, ignore_id=ignore_id)
    if occupant is not None:
        raise path_conflict(path, occupant.id, occupant.path)


def _check_capacity(store: Row[Any], memory_limit: int) -> None:
    """Raises StoreFull when the store already holds ``memory_limit`` live memories
    (SPEC §1 limits)."""
    if store.entry_count >= memory_limit:
        raise StoreFull(
            f"memory store {store.id!r} holds {store.entry_count} memories; "
            f"the limit is {memory_limit}"
        )


def _check_precondition(row: Row[Any], expected_sha256: str | None) -> None:
    """SPEC §2 optimistic concurrency: raises PreconditionFailed unless the memory's
    head digest is ``expected_sha256`` (None: no precondition)."""
    if expected_sha256 is not None and expected_sha256 != row.content_sha256:
        raise PreconditionFailed(
            f"memory {row.id!r} has content_sha256 {row.content_sha256}, "
            f"not the expected {expected_sha256}",
            actual_sha256=row.content_sha256,
        )


def _live_row(conn: Connection, store_id: str, memory_id: str) -> Row[Any]:
    row = _hot.first(conn, _LIVE_MEMORY, {"memory_id": memory_id, "store_id": store_id})
    if row is None:
        raise NotFound(f"memory {memory_id!r} not found in memory store {store_id!r}")
    return row  # type: ignore[no-any-return]


def _audit_metadata(metadata: dict[str, str] | None) -> dict[str, str] | None:
    """The metadata of a forget or restore request, checked by the SPEC §1 rules
    (seed 004: kept with the audit event). Raises InvalidMetadata."""
    if metadata is None:
        return None
    return {key: str(value) for key, value in rules.validate_metadata(metadata).items()}


def memory_store_id(conn: Connection, memory_id: str) -> str:
    """See :meth:`memfs.store.Engine.memory_store_id`."""
    store_id = conn.execute(
        select(memories.c.store_id).where(memories.c.id == memory_id)
    ).scalar()
    if store_id is None:
        raise NotFound(f"memory {memory_id!r} not found")
    return str(store_id)


def _set_memory_columns(conn: Connection, memory_id: str, values: dict[str, Any]) -> None:
    """UPDATE memories SET ``values`` for one memory (a prebuilt statement)."""
    if not values.keys() <= _MEMORY_COLUMNS:
        raise ValueError(f"not columns of memories: {sorted(values.keys() - _MEMORY_COLUMNS)}")
    _hot.run(conn, _UPDATE_MEMORY, {"memory_id": memory_id, **values})


def create_memory(
    conn: Connection,
    store_id: str,
    path: str,
    content: str,
    *,
    actor: Actor | None,
    metadata: dict[str, str] | None,
    memory_limit: int,
) -> Memory:
    """See :meth:`memfs.store.Engine.create_memory`."""
    rules.validate_path(path)
    rules.validate_content(content)
    header = parse_record(content)
    clean = rules.validate_metadata(metadata or {})
    data = content.encode("utf-8")
    store = lock_store(conn, store_id)
    require_writable(store)
    _require_free(conn, store_id, path, None)
    _check_capacity(store, memory_limit)
    key, digest = put_blob(conn, data)
    created = now()
    memory_id = new_id("memory")
    version_id = insert_version(
        conn,
        store_id=store_id,
        memory_id=memory_id,
        operation=Operation.CREATED,
        path=path,
        blob_key=key,
        sha=digest,
        size=len(data),
        actor=actor,
        now=created,
    )
    columns = dict(
        id=memory_id,
        store_id=store_id,
        path=path,
        blob_key=key,
        content_sha256=digest,
        size_bytes=len(data),
        head_version_id=version_id,
        metadata_json=json.dumps(clean, sort_keys=True),
        created_at=created,
        updated_at=created,
    )
    _hot.run(conn, _INSERT_MEMORY, columns)
    search.index_memory(conn, memory_id, store_id, path, data, content_sha256=digest, new=True)
    record_index.index_memory(conn, memory_id, store_id, header, created, new=True)
    record_index.memories_arrived(conn, store_id, [(memory_id, path)])
    feed.emit(
        conn,
        store_id,
        ChangeKind.MEMORY_WRITTEN,
        memory_id=memory_id,
        path=path,
        content_sha256=digest,
        version_id=version_id,
        entries=1,
        size_bytes=len(data),
    )
    return memory_model(SimpleNamespace(**columns, deleted_at=None), data)


def get_memory(conn: Connection, store_id: str, memory_id: str, *, with_content: bool) -> Memory:
    """See :meth:`memfs.store.Engine.get_memory`."""
    store_row(conn, store_id)
    row = _live_row(conn, store_id, memory_id)
    return memory_model(row, blob_data(conn, row.blob_key) if with_content else None)


def get_memory_by_path(conn: Connection, store_id: str, path: str, *, with_content: bool) -> Memory:
    """See :meth:`memfs.store.Engine.get_memory_by_path`."""
    store_row(conn, store_id)
    row = conn.execute(
        select(memories).where(
            memories.c.store_id == store_id,
            memories.c.path == path,
            memories.c.deleted_at.is_(None),
        )
    ).first()
    if row is None:
        raise NotFound(f"no memory at {path!r} in memory store {store_id!r}")
    return memory_model(row, blob_data(conn, row.blob_key) if with_content else None)


def update_memory(
    conn: Connection,
    store_id: str,
    memory_id: str,
    *,
    actor: Actor | None,
    content: str | None,
    path: str | None,
    expected_sha256: str | None,
    metadata: dict[str, str] | None,
    replace: bool,
) -> Memory:
    """See :meth:`memfs.store.Engine.update_memory`."""
    if path is not None:
        rules.validate_path(path)
    if content is not None:
        rules.validate_content(content)
    header = parse_record(content) if content is not None else None
    clean = rules.validate_metadata(metadata) if metadata is not None else None
    data = content.encode("utf-8") if content is not None else None
    store = lock_store(conn, store_id)
    row = _live_row(conn, store_id, memory_id)
    require_writable(store)
    _check_precondition(row, expected_sha256)
    new_sha = sha256_of(data) if data is not None else row.content_sha256
    content_changed = data is not None and new_sha != row.content_sha256
    path_changed = path is not None and path != row.path
    metadata_changed = clean is not None and clean != json.loads(row.metadata_json)
    # Unchanged content given again is the stored bytes (same SHA-256): no read.
    current = data if data is not None and not content_changed else None
    if not (content_changed or path_changed or metadata_changed):
        if current is None:
            current = blob_data(conn, row.blob_key)
        return memory_model(row, current)
    written_at = now()
    values: dict[str, Any] = {"updated_at": written_at}
    if metadata_changed:
        values["metadata_json"] = json.dumps(clean, sort_keys=True)
    new_path = row.path
    if path is not None and path_changed:
        _clear_destination(conn, store_id, memory_id, path, replace, actor, written_at)
        new_path = path
        values["path"] = path
    if content_changed or path_changed:
        key, digest, size = row.blob_key, row.content_sha256, row.size_bytes
        if data is not None and content_changed:
            key, digest = put_blob(conn, data)
            size = len(data)
        version_id = insert_version(
            conn,
            store_id=store_id,
            memory_id=memory_id,
            operation=Operation.MODIFIED,
            path=new_path,
            blob_key=key,
            sha=digest,
            size=size,
            actor=actor,
            now=written_at,
        )
        values.update(
            blob_key=key, content_sha256=digest, size_bytes=size, head_version_id=version_id
        )
    _set_memory_columns(conn, memory_id, values)
    after = SimpleNamespace(**{**row._mapping, **values})
    if content_changed or path_changed:
        body = data if content_changed and data is not None else None
        _reindex(conn, store_id, memory_id, new_path, body, header, written_at)
    feed.emit(
        conn,
        store_id,
        ChangeKind.MEMORY_WRITTEN,
        memory_id=memory_id,
        path=new_path,
        old_path=row.path if path_changed else None,
        content_sha256=after.content_sha256,
        version_id=after.head_version_id,
        size_bytes=after.size_bytes - row.size_bytes,
    )
    # The row as just written, without reading it (or its blob) back.
    written = data if content_changed else current
    if written is None:
        written = blob_data(conn, after.blob_key)
    return memory_model(after, written)


def _reindex(
    conn: Connection,
    store_id: str,
    memory_id: str,
    path: str,
    body: bytes | None,
    header: RecordHeader | None,
    written_at: str,
) -> None:
    """Brings the search and record indexes to a memory's new head: ``body`` (and its
    parsed ``header``) when the content changed, else only the new ``path``."""
    if body is None:
        search.move_documents(conn, [(memory_id, path)])
    else:
        search.index_memory(conn, memory_id, store_id, path, body)
        record_index.index_memory(conn, memory_id, store_id, header, written_at)
    record_index.memories_arrived(conn, store_id, [(memory_id, path)])


def _clear_destination(
    conn: Connection,
    store_id: str,
    memory_id: str,
    path: str,
    replace: bool,
    actor: Actor | None,
    written_at: str,
) -> None:
    """Makes ``path`` free for ``memory_id`` to move to: a memory already there is
    soft-deleted when ``replace`` (rename(2) over a file; the API's ``replace``).

    Raises:
        PathConflict: a memory holds ``path`` and ``replace`` is False (or
            :func:`check_path_free` refuses it: an ancestor or a descendant is taken).
    """
    occupant = check_path_free(conn, store_id, path, ignore_id=memory_id)
    if occupant is None:
        return
    if not replace:
        raise path_conflict(path, occupant.id, occupant.path)
    _tombstone(
        conn,
        store_id,
        occupant,
        mode=DeleteMode.SOFT_DELETE,
        actor=actor,
        reason="replaced by rename",
        now=written_at,
        content={"blob_key": None},
    )


def retract_create(conn: Connection, store_id: str, memory_id: str, *, actor: Actor) -> bool:
    """See :meth:`memfs.store.Engine.retract_create`."""
    lock_store(conn, store_id)
    row = _live_row(conn, store_id, memory_id)
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


def _tombstone(
    conn: Connection,
    store_id: str,
    row: Row[Any],
    *,
    mode: DeleteMode,
    actor: Actor | None,
    reason: str | None,
    now: str,
    content: dict[str, Any],
    audit_metadata: dict[str, str] | None = None,
) -> None:
    """Turns a live memory into a tombstone: a ``deleted`` version, the row marked with
    ``mode``, the audit entry and the change, in one go.

    A soft delete keeps the path (in the version, the row and the change: it is
    restorable). A redaction erases it (SPEC §2: content *and* path, everywhere): the
    ``deleted`` version is written redacted (path null, ``redacted_at`` set,
    api-contract §4.6), the row's path becomes :data:`REDACTED_PATH` and the change
    carries no path.

    Args:
        content: the row's content columns after the change (``blob_key`` None for a
            soft delete; the replacement's key, digest, size and cleared metadata for
            a redaction).
    """
    redacting = mode is DeleteMode.REDACT
    version_id = insert_version(
        conn,
        store_id=store_id,
        memory_id=row.id,
        operation=Operation.DELETED,
        path=None if redacting else row.path,
        blob_key=None,
        sha=None,
        size=None,
        actor=actor,
        now=now,
        reason=reason,
        redacted=redacting,
    )
    _set_memory_columns(
        conn,
        row.id,
        {
            "deleted_at": now,
            "delete_mode": mode.value,
            "head_version_id": version_id,
            "updated_at": now,
            **({"path": REDACTED_PATH} if redacting else {}),
            **content,
        },
    )
    search.unindex_memory(conn, row.id)
    record_index.unindex_memory(conn, row.id)
    feed.audit(
        conn,
        store_id,
        mode.value,
        memory_id=row.id,
        actor=actor,
        reason=reason,
        metadata=audit_metadata,
    )
    feed.emit(
        conn,
        store_id,
        ChangeKind.MEMORY_DELETED,
        memory_id=row.id,
        path=None if redacting else row.path,
        entries=-1,
        size_bytes=-row.size_bytes,
    )


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
    """See :meth:`memfs.store.Engine.delete_memory`."""
    try:
        mode = DeleteMode(mode)
    except ValueError as exc:
        raise InvalidInput("mode must be soft_delete, redact or hard_delete") from exc
    replacement_data = rules.validate_content(replacement).encode("utf-8")
    audit_metadata = _audit_metadata(audit_metadata)
    lock_store(conn, store_id)
    row = _live_row(conn, store_id, memory_id)
    _check_precondition(row, expected_sha256)
    deleted_at = now()
    if mode is DeleteMode.SOFT_DELETE:
        _tombstone(
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
    erased_paths = frozenset({v.path for v in old_versions if v.path} | {row.path})
    purged_keys = {v.blob_key for v in old_versions} | {row.blob_key}
    if mode is DeleteMode.REDACT:
        key, digest = put_blob(conn, replacement_data)
        for version_row in old_versions:
            if version_row.redacted_at is None:
                redact_version_row(conn, version_row, actor, deleted_at)
        _tombstone(
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
) -> Memory:
    """See :meth:`memfs.store.Engine.restore_memory`."""
    audit_metadata = _audit_metadata(audit_metadata)
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
    source = conn.execute(
        select(versions)
        .where(versions.c.memory_id == memory_id, versions.c.operation != Operation.DELETED.value)
        .order_by(versions.c.seq.desc())
        .limit(1)
    ).first()
    if source is None or source.redacted_at is not None:
        raise NotRestorable(
            f"the content of memory {memory_id!r} was redacted; it can't be restored"
        )
    _require_free(conn, store_id, row.path, memory_id)
    _check_capacity(store, memory_limit)
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
    _set_memory_columns(
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
        search.index_memory(conn, memory_id, store_id, row.path, restored_data)
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
    restored = conn.execute(_MEMORY_BY_ID, {"memory_id": memory_id}).one()
    return memory_model(restored, blob_data(conn, restored.blob_key))


def _restored_header(data: bytes) -> RecordHeader | None:
    """The record header of restored content; None when it is no record, or when its
    header breaks a rule (content written before records existed: restoring it must not
    fail for that, and fsck names it)."""
    try:
        return parse_record(data.decode("utf-8"))
    except InvalidRecord:
        return None
