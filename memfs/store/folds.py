"""Folding a mount's own recent writes into the save they belong to (SPEC §4 "One save,
one version").

Tools save a file in several system calls: an exclusive create, then the content
(``cp``, ``mkstemp``); a temporary file written, closed and renamed over its target
(``perl -pi``, ``patch``, ``gawk -i inplace``, Node's ``write-file-atomic``); an unlink
and a create of the same name (``tar -x``, ``unzip -o``, ``git checkout``). A mount
commits each call as it comes (close-to-open needs it), then asks the engine to fold the
intermediate writes into the one change the tool meant:

* :meth:`Folds.fill_claim`: the first content of an ``O_EXCL`` claim replaces the
  claim's empty ``created`` version: a file written once has one ``created`` version
  holding its content.
* :meth:`Folds.revive`: a memory the caller soft-deleted moments ago, at a path still
  free, comes back (its ``deleted`` version taken back) with the new content as one
  ``modified`` version, none when unchanged: the same name keeps the same memory.
* :meth:`Folds.fold_temporary`: a temporary file renamed over a target (or to a new
  name): the target gets one version, and the temporary memory is erased: no memory,
  no version left for its name.

The engine takes back only what is the caller's own and recent: every version the fold
removes was written by the caller's actor within :data:`memfs.core.config.FOLD_WINDOW_S`
(a claim's empty version at any age: it never held content). Anything else is left
alone, and the caller falls back to ordinary writes (a soft delete, a new memory). The
audit log keeps a revival (``restore``); erasing a temporary is no audit event (nothing
of it outlives the save it belonged to).
"""

from __future__ import annotations

import json
from datetime import timedelta
from types import SimpleNamespace
from typing import Any

from sqlalchemy import Connection, bindparam, delete, select

from memfs.core import rules
from memfs.core.config import FOLD_WINDOW_S
from memfs.core.content import Content
from memfs.core.errors import InvalidRecord, PathConflict
from memfs.core.model import (
    Actor,
    ChangeKind,
    DeleteMode,
    Memory,
    Operation,
    format_timestamp,
    utcnow,
)
from memfs.core.records import parse_record
from memfs.store import _hot, feed, search
from memfs.store import records as record_index
from memfs.store._common import (
    actor_columns,
    lock_store,
    memory_model,
    now,
    require_writable,
)
from memfs.store._facade import Facade
from memfs.store.blobs import blob_data, gc_blobs, put_blob
from memfs.store.memories import update_memory
from memfs.store.memory_rows import (
    check_capacity,
    check_path_free,
    live_row,
    set_memory_columns,
    tombstone,
)
from memfs.store.schema import memories, snapshots, stores, versions
from memfs.store.versions import insert_version

__all__ = ["Folds"]


# Prebuilt for the hot path (memfs.store._hot): a claim's fill runs at every new file's
# first close (SPEC §4), so its reads skip building and caching statements per call.
_HISTORY = (
    select(versions).where(versions.c.memory_id == bindparam("memory_id")).order_by(versions.c.seq)
)
_SNAPSHOT_SINCE = (
    select(snapshots.c.id)
    .where(snapshots.c.store_id == bindparam("store_id"), snapshots.c.seq >= bindparam("seq"))
    .limit(1)
)
_FORK_POINT_SINCE = (
    select(stores.c.id)
    .where(
        ((stores.c.forked_from == bindparam("store_id"))
         & (stores.c.fork_base_seq >= bindparam("seq")))
        | ((stores.c.id == bindparam("store_id")) & (stores.c.fork_merged_seq >= bindparam("seq")))
    )
    .limit(1)
)
_DELETE_VERSION = delete(versions).where(versions.c.seq == bindparam("seq"))


def _history(conn: Connection, memory_id: str) -> list[Any]:
    """Every version row of ``memory_id``, oldest first."""
    return _hot.rows(conn, _HISTORY, {"memory_id": memory_id})


def _own(row: Any, actor: Actor) -> bool:
    return (row.actor_type, row.actor_id) == actor_columns(actor) and row.redacted_at is None


def _recent(created_at: str, window_s: float) -> bool:
    """Whether a timestamp as stored is within ``window_s`` seconds of now (stored
    timestamps are RFC 3339 UTC of one width: they compare as strings)."""
    return created_at >= format_timestamp(utcnow() - timedelta(seconds=window_s))


def _pinned(conn: Connection, store_id: str, seq: int) -> bool:
    """Whether a point of the store's history was taken at or after version ``seq``: a
    snapshot, a fork's base, or (the store a fork) its last merge (SPEC §10). Versions it
    may need are history now and are never folded away."""
    params = {"store_id": store_id, "seq": seq}
    if _hot.first(conn, _SNAPSHOT_SINCE, params) is not None:
        return True
    return _hot.first(conn, _FORK_POINT_SINCE, params) is not None


def own_recent(conn: Connection, memory_id: str, actor: Actor, window_s: float) -> list[Any] | None:
    """The versions of ``memory_id`` when the caller may fold them away: all written by
    ``actor``, none redacted, the first within ``window_s`` seconds, none needed by a
    snapshot or a fork's base taken since (:func:`_pinned`); None otherwise."""
    rows = _history(conn, memory_id)
    if not rows or not all(_own(row, actor) for row in rows):
        return None
    if not _recent(rows[0].created_at, window_s):
        return None
    return None if _pinned(conn, rows[0].store_id, rows[0].seq) else rows


def _index_head(conn: Connection, store_id: str, memory_id: str, path: str, data: bytes,
                written_at: str) -> None:
    """Brings the record index to a live memory's head ``data`` at ``path`` and queues it
    for the search index."""
    search.queue(conn, memory_id)
    try:
        header = parse_record(data.decode("utf-8"))
    except InvalidRecord:  # written before a rule it breaks existed: fsck names it
        header = None
    record_index.index_memory(conn, memory_id, store_id, header, written_at)
    record_index.memories_arrived(conn, store_id, [(memory_id, path)])


def fill_claim(
    conn: Connection,
    store_id: str,
    memory_id: str,
    checked: Content,
    *,
    actor: Actor,
    metadata: dict[str, str] | None,
) -> Memory | None:
    """See :meth:`Folds.fill_claim`."""
    clean = rules.validate_metadata(metadata) if metadata is not None else None
    header = parse_record(checked.text)
    store = lock_store(conn, store_id)
    row = live_row(conn, store_id, memory_id)
    require_writable(store)
    history = _history(conn, memory_id)
    if (
        row.size_bytes != 0
        or len(history) != 1
        or history[0].operation != Operation.CREATED.value
        or history[0].size_bytes != 0
        or not _own(history[0], actor)
        or _pinned(conn, store_id, history[0].seq)
    ):
        return None
    written_at = now()
    _hot.run(conn, _DELETE_VERSION, {"seq": history[0].seq})
    key, digest = put_blob(conn, checked.data, checked.sha256)
    version_id = insert_version(
        conn,
        store_id=store_id,
        memory_id=memory_id,
        operation=Operation.CREATED,
        path=row.path,
        blob_key=key,
        sha=digest,
        size=len(checked.data),
        actor=actor,
        now=written_at,
    )
    values: dict[str, Any] = dict(
        blob_key=key,
        content_sha256=digest,
        size_bytes=len(checked.data),
        head_version_id=version_id,
        created_at=written_at,
        updated_at=written_at,
    )
    if clean is not None:
        values["metadata_json"] = json.dumps(clean, sort_keys=True)
    set_memory_columns(conn, memory_id, values)
    search.queue(conn, memory_id)
    record_index.index_memory(conn, memory_id, store_id, header, written_at)
    feed.emit(
        conn,
        store_id,
        ChangeKind.MEMORY_WRITTEN,
        memory_id=memory_id,
        path=row.path,
        content_sha256=digest,
        version_id=version_id,
        size_bytes=len(checked.data),
    )
    # The claim's empty blob stays for the next claim (memfs/store/blobs.py: the one
    # blob that may be unreferenced; it holds nothing to erase), so a claim and its
    # fill do not insert and delete it each time.
    return memory_model(SimpleNamespace(**{**row._mapping, **values}), checked.data)


def revive(
    conn: Connection,
    store_id: str,
    memory_id: str,
    checked: Content | None,
    *,
    actor: Actor,
    window_s: float,
    memory_limit: int,
) -> Memory | None:
    """See :meth:`Folds.revive`."""
    store = lock_store(conn, store_id)
    require_writable(store)
    row = conn.execute(
        select(memories).where(memories.c.id == memory_id, memories.c.store_id == store_id)
    ).first()
    if row is None or row.deleted_at is None or row.delete_mode != DeleteMode.SOFT_DELETE.value:
        return None
    head = conn.execute(select(versions).where(versions.c.id == row.head_version_id)).first()
    if (
        head is None
        or head.operation != Operation.DELETED.value
        or not _own(head, actor)
        or not _recent(head.created_at, window_s)
        or _pinned(conn, store_id, head.seq)
    ):
        return None
    source = conn.execute(
        select(versions)
        .where(versions.c.memory_id == memory_id, versions.c.seq < head.seq)
        .order_by(versions.c.seq.desc())
        .limit(1)
    ).first()
    if source is None or source.redacted_at is not None or source.blob_key is None:
        return None
    try:
        if check_path_free(conn, store_id, row.path, ignore_id=memory_id) is not None:
            return None
    except PathConflict:
        return None
    check_capacity(store, memory_limit)
    revived_at = now()
    conn.execute(delete(versions).where(versions.c.seq == head.seq))
    set_memory_columns(
        conn,
        memory_id,
        dict(
            blob_key=source.blob_key,
            content_sha256=source.content_sha256,
            size_bytes=source.size_bytes,
            deleted_at=None,
            delete_mode=None,
            head_version_id=source.id,
            updated_at=revived_at,
        ),
    )
    data = blob_data(conn, source.blob_key)
    assert data is not None
    _index_head(conn, store_id, memory_id, row.path, data, revived_at)
    feed.audit(
        conn,
        store_id,
        "restore",
        memory_id=memory_id,
        actor=actor,
        reason="created again at its path by the session that deleted it (SPEC §4: same "
        "name, same memory)",
    )
    feed.emit(
        conn,
        store_id,
        ChangeKind.MEMORY_WRITTEN,
        memory_id=memory_id,
        path=row.path,
        content_sha256=source.content_sha256,
        version_id=source.id,
        entries=1,
        size_bytes=source.size_bytes,
    )
    if checked is None:
        revived = conn.execute(select(memories).where(memories.c.id == memory_id)).one()
        return memory_model(revived, data)
    return update_memory(
        conn, store_id, memory_id, actor=actor, content=checked, path=None,
        expected_sha256=None, metadata=None, replace=False,
    )


def erase_temporary(conn: Connection, store_id: str, memory_id: str, *, actor: Actor,
                    window_s: float) -> bool:
    """Erases live memory ``memory_id`` when every version of it is the caller's own and
    recent (a temporary file folded into its target); otherwise soft-deletes it, as
    ``rm`` would. A memory already gone is left alone. Returns True when erased."""
    row = conn.execute(
        select(memories).where(
            memories.c.id == memory_id,
            memories.c.store_id == store_id,
            memories.c.deleted_at.is_(None),
        )
    ).first()
    if row is None:
        return False
    history = own_recent(conn, memory_id, actor, window_s)
    if history is None:
        tombstone(conn, store_id, row, mode=DeleteMode.SOFT_DELETE, actor=actor,
                  reason="temporary file saved over its target", now=now(),
                  content={"blob_key": None})
        return False
    conn.execute(delete(versions).where(versions.c.memory_id == memory_id))
    conn.execute(delete(memories).where(memories.c.id == memory_id))
    search.unindex_memory(conn, memory_id)
    record_index.unindex_memory(conn, memory_id)
    feed.emit(
        conn,
        store_id,
        ChangeKind.MEMORY_DELETED,
        memory_id=memory_id,
        path=row.path,
        entries=-1,
        size_bytes=-row.size_bytes,
    )
    # Quietly, as in fill_claim: the bytes were not secret and usually live on in
    # the target's new version.
    gc_blobs(conn, None, {r.blob_key for r in history} | {row.blob_key})
    return True


def collapse_to(conn: Connection, store_id: str, memory_id: str, path: str,
                checked: Content | None, *, actor: Actor, window_s: float) -> Memory | None:
    """A temporary file (every version the caller's own and recent) renamed to a new
    name: its history becomes one ``created`` version at ``path`` holding its head
    (``checked`` when given). Returns None, changing nothing, when it is not eligible
    or ``path`` is taken (the caller renames it the ordinary way).

    Raises:
        PathConflict: an ancestor or descendant of ``path`` is a live memory.
    """
    store = lock_store(conn, store_id)
    require_writable(store)
    row = live_row(conn, store_id, memory_id)
    history = own_recent(conn, memory_id, actor, window_s)
    if history is None or check_path_free(conn, store_id, path, ignore_id=memory_id) is not None:
        return None
    rules.validate_path(path)
    if checked is not None:
        data = checked.data
        key, digest = put_blob(conn, data, checked.sha256)
    else:
        key, digest = row.blob_key, row.content_sha256
        stored = blob_data(conn, key)
        assert stored is not None
        data = stored
    written_at = now()
    conn.execute(delete(versions).where(versions.c.memory_id == memory_id))
    version_id = insert_version(
        conn, store_id=store_id, memory_id=memory_id, operation=Operation.CREATED, path=path,
        blob_key=key, sha=digest, size=len(data), actor=actor, now=written_at,
    )
    values: dict[str, Any] = dict(
        path=path, blob_key=key, content_sha256=digest, size_bytes=len(data),
        head_version_id=version_id, created_at=written_at, updated_at=written_at,
    )
    set_memory_columns(conn, memory_id, values)
    _index_head(conn, store_id, memory_id, path, data, written_at)
    feed.emit(
        conn,
        store_id,
        ChangeKind.MEMORY_WRITTEN,
        memory_id=memory_id,
        path=path,
        old_path=row.path,
        content_sha256=digest,
        version_id=version_id,
        size_bytes=len(data) - row.size_bytes,
    )
    gc_blobs(conn, None, {r.blob_key for r in history} - {key})
    return memory_model(SimpleNamespace(**{**row._mapping, **values}), data)


class Folds(Facade):
    """Folding a caller's own intermediate writes into the save they belong to (SPEC §4
    "One save, one version"; see the module docstring). Every method needs a caller
    with an actor (a mount's session), and takes back only that actor's writes."""

    def fill_claim(
        self,
        store_id: str,
        memory_id: str,
        content: str | Content,
        *,
        metadata: dict[str, str] | None = None,
    ) -> Memory | None:
        """The first content of the caller's ``O_EXCL`` claim (SPEC §4: an exclusive
        create is a claim, not a version): when the memory's whole history is the one
        empty ``created`` version the actor wrote, that version is replaced by a
        ``created`` version holding ``content`` (and ``metadata``, when given).

        Returns:
            The memory with content, or None (nothing changed) when it is no such claim:
            the caller writes an ordinary update.

        Raises:
            NotFound (no live memory), StoreArchived, the content and metadata
            validation errors, ValueError (a caller without an actor).
        """
        actor = self._require_actor()
        checked = content if isinstance(content, Content) else rules.content_from_text(content)
        with self._write() as conn:
            self._require_visible(conn, memory_id)
            memory = fill_claim(conn, store_id, memory_id, checked, actor=actor, metadata=metadata)
            if memory is not None:
                self._check_written(conn, memory.id, memory.path)
            return memory

    def revive(
        self,
        store_id: str,
        memory_id: str,
        content: str | Content | None = None,
        *,
        window_s: float = FOLD_WINDOW_S,
    ) -> Memory | None:
        """Same name, same memory (SPEC §4): a memory the caller soft-deleted within
        ``window_s`` seconds (its ``deleted`` version is the head, the actor's own),
        whose path is still free, is live again with the head it had, and ``content``
        (when given) is written as one ``modified`` version (none when unchanged). The
        ``deleted`` version is taken back; the audit log records a ``restore``.

        Returns:
            The memory with content, or None (nothing changed) when it can't be revived
            (not deleted by the caller, too old, redacted, its path taken): the caller
            creates a new memory.

        Raises:
            NotFound (the store), StoreArchived, StoreFull, the content validation
            errors, ValueError (a caller without an actor).
        """
        actor = self._require_actor()
        checked = (
            None if content is None
            else content if isinstance(content, Content) else rules.content_from_text(content)
        )
        with self._write() as conn:
            memory = revive(
                conn, store_id, memory_id, checked, actor=actor, window_s=window_s,
                memory_limit=self._parts.memory_limit,
            )
            if memory is not None:
                self._check_written(conn, memory.id, memory.path)
            return memory

    def fold_temporary(
        self,
        store_id: str,
        temporary_id: str,
        *,
        target_id: str | None,
        path: str,
        content: str | Content | None,
        expected_sha256: str | None = None,
        window_s: float = FOLD_WINDOW_S,
    ) -> Memory:
        """The atomic save (SPEC §4 "One save, one version"), in one transaction: the
        caller's temporary memory ``temporary_id`` renamed over ``target_id`` (or to the
        free ``path`` when ``target_id`` is None).

        Over a target: the target gets ``content`` as one version (none when unchanged;
        ``expected_sha256`` its precondition), keeping its id and metadata; the
        temporary memory is erased when every version of it is the caller's own and
        recent (``window_s``), else soft-deleted. To a new name: the temporary memory
        moves to ``path`` with one ``created`` version holding its content when it is
        the caller's own and recent, else it is renamed the ordinary way (rename(2):
        a memory at ``path`` is replaced).

        Returns:
            The memory now at ``path``, with content.

        Raises:
            PreconditionFailed (the target changed: nothing was changed), NotFound,
            PathConflict, StoreArchived, the validation errors, ValueError (no actor).
        """
        actor = self._require_actor()
        checked = (
            None if content is None
            else content if isinstance(content, Content) else rules.content_from_text(content)
        )
        with self._write() as conn:
            self._require_visible(conn, temporary_id)
            if target_id is not None:
                self._require_visible(conn, target_id)
                memory = update_memory(
                    conn, store_id, target_id, actor=actor, content=checked, path=None,
                    expected_sha256=expected_sha256, metadata=None, replace=False,
                )
                erase_temporary(conn, store_id, temporary_id, actor=actor, window_s=window_s)
            else:
                collapsed = collapse_to(
                    conn, store_id, temporary_id, path, checked, actor=actor, window_s=window_s
                )
                memory = collapsed if collapsed is not None else update_memory(
                    conn, store_id, temporary_id, actor=actor, content=checked, path=path,
                    expected_sha256=None, metadata=None, replace=True,
                )
            self._check_written(conn, memory.id, memory.path)
            return memory

    def erase_temporary(
        self, store_id: str, memory_id: str, *, window_s: float = FOLD_WINDOW_S
    ) -> bool:
        """Removes the caller's temporary memory whose content now lives elsewhere (the
        ``unlink`` of a no-clobber rename, ``link(temp, new)`` + ``unlink(temp)``, SPEC
        §4): erased when every version is the actor's own and recent, else soft-deleted
        as ``rm`` would. Returns True when erased.

        Raises:
            NotFound (the store), StoreArchived, ValueError (no actor).
        """
        actor = self._require_actor()
        with self._write() as conn:
            store = lock_store(conn, store_id)
            require_writable(store)
            self._require_visible(conn, memory_id)
            return erase_temporary(conn, store_id, memory_id, actor=actor, window_s=window_s)
