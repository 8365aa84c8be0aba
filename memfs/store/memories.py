"""Memories: create, read, update (content, path, metadata), delete in the three SPEC §2
modes, restore, and directory renames.

Owns the ``memories`` table and the per-store rules that span its rows: one live memory
per path, and never a memory both at a path and above or below another live one (SPEC §1,
:func:`check_path_free`, the one place that builds :class:`PathConflict`); the memory
limit (:func:`_check_capacity`, the one place that raises :class:`StoreFull`). Every
write locks the store row first and writes the memory's version
(:mod:`memfs.store.versions`) and change (:mod:`memfs.store.feed`) with it.
"""

from __future__ import annotations

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
    literal,
    select,
    union_all,
    update,
)

from memfs import rules
from memfs.errors import (
    InvalidInput,
    NotFound,
    NotRestorable,
    PathConflict,
    PreconditionFailed,
    StoreFull,
)
from memfs.ids import new_id, sha256_of
from memfs.model import Actor, ChangeKind, DeleteMode, Memory, Operation
from memfs.store import feed, search
from memfs.store._common import (
    ancestors,
    descendant_upper_bound,
    execute_many,
    lock_store,
    memory_model,
    now,
    require_writable,
    store_row,
)
from memfs.store.blobs import blob_data, gc_blobs, put_blob
from memfs.store.schema import memories, versions
from memfs.store.versions import insert_version, insert_versions, redact_version_row

__all__ = [
    "as_memories",
    "check_path_free",
    "create_memory",
    "delete_memory",
    "get_memory",
    "get_memory_by_path",
    "rename_prefix",
    "restore_memory",
    "update_memory",
]

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


def _path_check_statement(*, ignoring: bool) -> Any:
    """The query of check_path_free, with ``:paths`` (the path and its ancestors,
    expanding), ``:below``/``:below_end`` (the descendant range) and, if ``ignoring``,
    ``:ignore_id``."""
    live = and_(memories.c.store_id == bindparam("store_id"), memories.c.deleted_at.is_(None))
    if ignoring:
        live = and_(live, memories.c.id != bindparam("ignore_id"))
    # One round trip: the exact path and its ancestors by the unique index, plus the
    # first descendant by a range scan of the same index (each branch indexable).
    exact_or_above = select(memories).where(
        live, memories.c.path.in_(bindparam("paths", expanding=True))
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


_PATH_CHECK = _path_check_statement(ignoring=False)
_PATH_CHECK_IGNORING = _path_check_statement(ignoring=True)


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
    params = {
        "store_id": store_id,
        "paths": [path, *ancestors(path)],
        "below": below,
        "below_end": descendant_upper_bound(below),
    }
    if ignore_id is None:
        rows = conn.execute(_PATH_CHECK, params).all()
    else:
        rows = conn.execute(_PATH_CHECK_IGNORING, {**params, "ignore_id": ignore_id}).all()
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
    row = conn.execute(_LIVE_MEMORY, {"memory_id": memory_id, "store_id": store_id}).first()
    if row is None:
        raise NotFound(f"memory {memory_id!r} not found in memory store {store_id!r}")
    return row


def _set_memory_columns(conn: Connection, memory_id: str, values: dict[str, Any]) -> None:
    """UPDATE memories SET ``values`` for one memory (a prebuilt statement)."""
    if not values.keys() <= _MEMORY_COLUMNS:
        raise ValueError(f"not columns of memories: {sorted(values.keys() - _MEMORY_COLUMNS)}")
    conn.execute(_UPDATE_MEMORY, {"memory_id": memory_id, **values})


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
    conn.execute(_INSERT_MEMORY, columns)
    search.index_memory(conn, memory_id, store_id, path, data)
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
        occupant = check_path_free(conn, store_id, path, ignore_id=memory_id)
        if occupant is not None:
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
        if body is None:
            search.move_documents(conn, [(memory_id, new_path)])
        else:
            search.index_memory(conn, memory_id, store_id, new_path, body)
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
) -> None:
    """Turns a live memory into a tombstone: a ``deleted`` version (keeping the path),
    the row marked with ``mode``, the audit entry and the change, in one go.

    Args:
        content: the row's content columns after the change (``blob_key`` None for a
            soft delete; the replacement's key, digest, size and cleared metadata for
            a redaction).
    """
    version_id = insert_version(
        conn,
        store_id=store_id,
        memory_id=row.id,
        operation=Operation.DELETED,
        path=row.path,
        blob_key=None,
        sha=None,
        size=None,
        actor=actor,
        now=now,
        reason=reason,
    )
    _set_memory_columns(
        conn,
        row.id,
        {
            "deleted_at": now,
            "delete_mode": mode.value,
            "head_version_id": version_id,
            "updated_at": now,
            **content,
        },
    )
    search.unindex_memory(conn, row.id)
    feed.audit(conn, store_id, mode.value, memory_id=row.id, actor=actor, reason=reason)
    feed.emit(
        conn,
        store_id,
        ChangeKind.MEMORY_DELETED,
        memory_id=row.id,
        path=row.path,
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
) -> None:
    """See :meth:`memfs.store.Engine.delete_memory`."""
    try:
        mode = DeleteMode(mode)
    except ValueError as exc:
        raise InvalidInput("mode must be soft_delete, redact or hard_delete") from exc
    replacement_data = rules.validate_content(replacement).encode("utf-8")
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
        )
        return
    old_versions = conn.execute(select(versions).where(versions.c.memory_id == memory_id)).all()
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
        )
    else:
        conn.execute(delete(versions).where(versions.c.memory_id == memory_id))
        conn.execute(delete(memories).where(memories.c.id == memory_id))
        search.unindex_memory(conn, memory_id)
        feed.audit(conn, store_id, mode.value, memory_id=memory_id, actor=actor, reason=reason)
        feed.emit(
            conn,
            store_id,
            ChangeKind.MEMORY_DELETED,
            memory_id=memory_id,
            path=row.path,
            entries=-1,
            size_bytes=-row.size_bytes,
        )
    gc_blobs(conn, store_id, purged_keys)
    search.scrub(conn)


def restore_memory(
    conn: Connection,
    store_id: str,
    memory_id: str,
    *,
    actor: Actor | None,
    reason: str | None,
    memory_limit: int,
) -> Memory:
    """See :meth:`memfs.store.Engine.restore_memory`."""
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
    feed.audit(conn, store_id, "restore", memory_id=memory_id, actor=actor, reason=reason)
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


def rename_prefix(
    conn: Connection, store_id: str, old_prefix: str, new_prefix: str, *, actor: Actor | None
) -> list[SimpleNamespace]:
    """See :meth:`memfs.store.Engine.rename_prefix`; returns the moved memories' columns
    as written, in their new path order (:func:`as_memories` makes the values).

    Linear in the number of memories moved (issue 10 item 6; it was quadratic): one range
    scan reads the moving memories, one range scan and one ``IN`` query find every
    memory in the way (:func:`_rename_blocker`, set lookups), and the writes are
    set-based: one UPDATE parks the moving paths, then one executemany each for the
    versions, the memories' new paths and the change-feed entries.
    """
    rules.validate_path_prefix(old_prefix)
    rules.validate_path_prefix(new_prefix)
    if old_prefix == "/" or new_prefix == "/":
        raise InvalidInput("the root can't be renamed")
    if new_prefix.startswith(old_prefix):
        raise InvalidInput(f"can't move {old_prefix!r} into itself ({new_prefix!r})")
    store = lock_store(conn, store_id)
    require_writable(store)
    rows = conn.execute(
        select(memories).where(*_live_under(store_id, old_prefix)).order_by(memories.c.path)
    ).all()
    if not rows:
        return []
    targets = {row.id: new_prefix + row.path[len(old_prefix) :] for row in rows}
    # Every segment of a target is one of new_prefix's or of a stored (valid) path, so
    # only the rules over a whole path can break: its size and its number of segments.
    # The deepest and the longest target are the ones to check (SPEC §1 path rules).
    rules.validate_path(max(targets.values(), key=lambda target: target.count("/")))
    rules.validate_path(max(targets.values(), key=lambda target: len(target.encode())))
    blocker = _rename_blocker(conn, store_id, old_prefix, new_prefix, set(targets.values()))
    if blocker is not None:
        target, blocker_id, blocker_path = blocker
        raise path_conflict(target, blocker_id, blocker_path)
    moved_at = now()
    # Park the moving paths first, so the new paths never meet an old one in the unique
    # index of live paths mid-statement (moving /a/b/ to /a/ turns /a/b/b/x into /a/b/x).
    conn.execute(
        update(memories)
        .where(*_live_under(store_id, old_prefix))
        .values(path=literal("\x01moving/") + memories.c.id)
    )
    version_ids = insert_versions(
        conn,
        [
            (
                store_id,
                row.id,
                Operation.MODIFIED.value,
                targets[row.id],
                row.blob_key,
                row.content_sha256,
                row.size_bytes,
            )
            for row in rows
        ],
        actor=actor,
        now=moved_at,
    )
    execute_many(
        conn,
        "UPDATE memories SET path = ?, head_version_id = ?, updated_at = ? WHERE id = ?",
        [
            (targets[row.id], head, moved_at, row.id)
            for row, head in zip(rows, version_ids, strict=True)
        ],
    )
    search.move_documents(conn, [(row.id, targets[row.id]) for row in rows])
    feed.emit_many(
        conn,
        store_id,
        ChangeKind.MEMORY_WRITTEN,
        [
            (row.id, targets[row.id], row.path, row.content_sha256, head)
            for row, head in zip(rows, version_ids, strict=True)
        ],
    )
    moved = [
        SimpleNamespace(
            **{
                **row._mapping,
                "path": targets[row.id],
                "head_version_id": head,
                "updated_at": moved_at,
            }
        )
        for row, head in zip(rows, version_ids, strict=True)
    ]
    return sorted(moved, key=lambda memory: memory.path)


def as_memories(rows: list[SimpleNamespace]) -> list[Memory]:
    """The Memory values (without content) of rows :func:`rename_prefix` returned; built
    by the caller after commit, so the write lock is not held for it."""
    return [memory_model(row) for row in rows]


def _live_under(store_id: str, prefix: str) -> tuple[Any, ...]:
    """WHERE terms: the live memories of ``store_id`` below the directory ``prefix``."""
    return (
        memories.c.store_id == store_id,
        memories.c.deleted_at.is_(None),
        memories.c.path >= prefix,
        memories.c.path < descendant_upper_bound(prefix),
    )


def _rename_blocker(
    conn: Connection, store_id: str, old_prefix: str, new_prefix: str, targets: set[str]
) -> tuple[str, str, str] | None:
    """The first memory outside the move that is in the way of a target path, as
    ``(target, blocker id, blocker path)``, or None (SPEC §1 path rules).

    A memory blocks when it is at a target, at a directory of a target (a file where a
    directory is needed: ``new_prefix`` or below, or one of its ancestors) or below a
    target (a directory where a file is wanted). Everything in the way lies under
    ``new_prefix`` or is one of its ancestors, so two indexed queries and set lookups
    find it, whatever the number of memories moved.
    """
    directories: dict[str, str] = {}  # a directory of some target -> that target
    for target in sorted(targets):
        for directory in ancestors(target):
            if len(directory) < len(new_prefix) - 1:
                continue  # above new_prefix: checked by the IN query below
            directories.setdefault(directory, target)
    above = [new_prefix[:-1], *ancestors(new_prefix[:-1])]
    for memory_id, path in conn.execute(
        select(memories.c.id, memories.c.path)
        .where(
            memories.c.store_id == store_id,
            memories.c.deleted_at.is_(None),
            memories.c.path.in_(above),
        )
        .order_by(memories.c.path)
    ):
        return min(targets), memory_id, path
    for memory_id, path in conn.execute(
        select(memories.c.id, memories.c.path)
        .where(*_live_under(store_id, new_prefix))
        .order_by(memories.c.path)
    ):
        if path.startswith(old_prefix):
            continue  # moving itself (old_prefix below new_prefix)
        if path in targets:
            return path, memory_id, path
        if path in directories:
            return directories[path], memory_id, path
        for directory in ancestors(path):
            if directory in targets:
                return directory, memory_id, path
    return None
