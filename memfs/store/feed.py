"""The change feed and the audit log: what mounts follow and who did what; :class:`Feed`
reads them (``engine.feed``, ``engine.for_caller(viewer=…).feed``).

Owns the ``changes`` table (one gap-free ``seq`` per store, bumped together with the
store's counters by :func:`emit`; every entry also notifies the feed's followers,
:func:`memfs.store.notify.feed_changed`) and the ``audit_log`` table (deletions, redactions,
restores and store events, SPEC §2 "audited"). Both outlive the store they describe.
"""

from __future__ import annotations

import json
import mmap
import os
import sqlite3
from datetime import datetime
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, bindparam, insert, select, update

from memfs.core.errors import NotFound
from memfs.core.model import Actor, Change, ChangeKind
from memfs.store import _hot, visibility
from memfs.store._common import actor_columns, insert_many, now, store_row, ts
from memfs.store._facade import Facade
from memfs.store.notify import feed_changed, record_emitted
from memfs.store.schema import audit_log, changes, stores

__all__ = [
    "FeedProbe",
    "audit",
    "audit_events",
    "changes_since",
    "emit",
    "emit_store_deleted",
    "forget_paths",
    "paths_of",
    "last_change_seq",
]

# Hot-path statements built once with bind parameters: SQLAlchemy then skips building a
# statement and its cache key per call, which profiling showed to be most of a write.
_BUMP_STORE = (
    update(stores)
    .where(stores.c.id == bindparam("store_id"))
    .values(
        last_change_seq=stores.c.last_change_seq + 1,
        entry_count=stores.c.entry_count + bindparam("entries"),
        total_size_bytes=stores.c.total_size_bytes + bindparam("size_bytes"),
    )
    .returning(stores.c.last_change_seq)
)
_INSERT_CHANGE = insert(changes)
_INSERT_AUDIT = insert(audit_log)


def emit(
    conn: Connection,
    store_id: str,
    kind: ChangeKind,
    *,
    memory_id: str | None = None,
    path: str | None = None,
    old_path: str | None = None,
    blob_key: str | None = None,
    content_sha256: str | None = None,
    version_id: str | None = None,
    entries: int = 0,
    size_bytes: int = 0,
) -> int:
    """Appends one change-feed entry and applies counter deltas in the same statement
    that bumps the store's seq; the store row must be locked. Returns the seq.

    A ``memory_written`` entry records the memory's new head version and digest,
    which the caller passes as ``version_id`` and ``content_sha256``;
    ``blob_purged`` entries carry the purged blob's key and SHA-256.

    Args:
        entries, size_bytes: deltas of the store's entry_count and total_size_bytes.
    """
    assert kind is not ChangeKind.MEMORY_WRITTEN or (
        version_id is not None and content_sha256 is not None
    ), "a memory_written change needs the new head version and digest"
    seq = _hot.scalar(
        conn, _BUMP_STORE, {"store_id": store_id, "entries": entries, "size_bytes": size_bytes}
    )
    if seq is None:
        raise NotFound(f"memory store {store_id!r} not found")
    created = now()
    _hot.run(
        conn,
        _INSERT_CHANGE,
        dict(
            store_id=store_id,
            seq=seq,
            kind=kind.value,
            memory_id=memory_id,
            path=path,
            old_path=old_path,
            blob_key=blob_key,
            content_sha256=content_sha256,
            memory_version_id=version_id,
            created_at=created,
        ),
    )
    feed_changed(conn, store_id)
    record_emitted(
        conn,
        Change.model_construct(
            seq=int(seq),
            memory_store_id=store_id,
            kind=kind,
            memory_id=memory_id,
            path=path,
            old_path=old_path,
            blob_key=blob_key,
            created_at=datetime.fromisoformat(created),
            content_sha256=content_sha256,
            memory_version_id=version_id,
        ),
    )
    return int(seq)


def emit_many(
    conn: Connection, store_id: str, kind: ChangeKind, entries: list[tuple[Any, ...]]
) -> None:
    """Appends one change-feed entry per item of ``entries`` — ``(memory_id, path,
    old_path, content_sha256, memory_version_id)`` — with consecutive seqs, in one
    executemany and one bump of the store's seq; the store row must be locked. The
    counters don't move (a directory rename)."""
    if not entries:
        return
    last = conn.execute(
        update(stores)
        .where(stores.c.id == store_id)
        .values(last_change_seq=stores.c.last_change_seq + len(entries))
        .returning(stores.c.last_change_seq)
    ).scalar_one()
    first = int(last) - len(entries) + 1
    created = now()
    insert_many(
        conn,
        "changes",
        (
            "memory_id",
            "path",
            "old_path",
            "content_sha256",
            "memory_version_id",
            "store_id",
            "seq",
            "kind",
            "created_at",
        ),
        [
            (*entry, store_id, first + offset, kind.value, created)
            for offset, entry in enumerate(entries)
        ],
    )
    feed_changed(conn, store_id)
    created_at = datetime.fromisoformat(created)
    for offset, (memory_id, path, old_path, content_sha256, version_id) in enumerate(entries):
        record_emitted(
            conn,
            Change.model_construct(
                seq=first + offset,
                memory_store_id=store_id,
                kind=kind,
                memory_id=memory_id,
                path=path,
                old_path=old_path,
                blob_key=None,
                created_at=created_at,
                content_sha256=content_sha256,
                memory_version_id=version_id,
            ),
        )


def paths_of(conn: Connection, memory_id: str) -> set[str]:
    """Every path the change feed holds for ``memory_id`` (new and old paths of its
    entries): the names it had, including ones its versions no longer show (a
    temporary file's name folded away, SPEC §4 one save, one version)."""
    rows = conn.execute(
        select(changes.c.path, changes.c.old_path).where(changes.c.memory_id == memory_id)
    ).all()
    return {p for row in rows for p in (row.path, row.old_path) if p}


def forget_paths(conn: Connection, memory_id: str) -> None:
    """Erases every path of ``memory_id`` from the change feed (its entries, seqs and ids
    stay): a redaction or hard delete erases the path too (SPEC §2)."""
    conn.execute(
        update(changes).where(changes.c.memory_id == memory_id).values(path=None, old_path=None)
    )


def emit_store_deleted(conn: Connection, store_id: str, last_seq: int) -> None:
    """The final ``store_deleted`` entry (seq ``last_seq + 1``), written after the store
    row is gone, so mounts learn of the deletion."""
    conn.execute(
        _INSERT_CHANGE,
        dict(
            store_id=store_id,
            seq=last_seq + 1,
            kind=ChangeKind.STORE_DELETED.value,
            created_at=now(),
        ),
    )
    feed_changed(conn, store_id)


def audit(
    conn: Connection,
    store_id: str,
    action: str,
    *,
    memory_id: str | None,
    actor: Actor | None,
    reason: str | None,
    metadata: dict[str, str] | None = None,
) -> None:
    """Appends one audit-log entry (ids only, never a path or content).

    Args:
        metadata: kept with the entry (seed 004: the ``metadata`` of a forget or
            restore request, already validated by :func:`memfs.core.rules.validate_metadata`);
            None or empty stores NULL.
    """
    actor_type, actor_id = actor_columns(actor)
    conn.execute(
        _INSERT_AUDIT,
        dict(
            store_id=store_id,
            memory_id=memory_id,
            action=action,
            reason=reason,
            actor_type=actor_type,
            actor_id=actor_id,
            created_at=now(),
            metadata_json=json.dumps(metadata, sort_keys=True) if metadata else None,
        ),
    )


def audit_events(
    conn: Connection,
    store_id: str | None,
    *,
    memory_id: str | None = None,
    since: datetime | None = None,
    limit: int | None = None,
) -> list[dict[str, Any]]:
    """See :meth:`memfs.store.feed.Feed.audit_events`."""
    query = select(audit_log)
    if store_id is not None:
        query = query.where(audit_log.c.store_id == store_id)
    if memory_id is not None:
        query = query.where(audit_log.c.memory_id == memory_id)
    if since is not None:
        query = query.where(audit_log.c.created_at >= ts(since))
    query = query.order_by(audit_log.c.seq.desc())
    if limit is not None:
        query = query.limit(limit)
    return [
        {
            "action": r.action,
            "memory_store_id": r.store_id,
            "memory_id": r.memory_id,
            "reason": r.reason,
            "metadata": json.loads(r.metadata_json) if r.metadata_json else {},
            "actor_type": r.actor_type,
            "actor_id": r.actor_id,
            "created_at": r.created_at,
        }
        for r in conn.execute(query).all()
    ]


def last_change_seq(conn: Connection, store_id: str) -> int:
    """The newest change seq of a store (0 when none). Raises NotFound."""
    return int(store_row(conn, store_id).last_change_seq)


_CHANGES_SINCE = (
    select(changes)
    .where(changes.c.store_id == bindparam("store_id"), changes.c.seq > bindparam("after_seq"))
    .order_by(changes.c.seq)
    .limit(bindparam("limit"))
)


def changes_since(conn: Connection, store_id: str, after_seq: int, limit: int) -> list[Change]:
    """Changes with seq > ``after_seq``, oldest first, at most ``limit``."""
    rows = _hot.rows(
        conn, _CHANGES_SINCE, {"store_id": store_id, "after_seq": after_seq, "limit": limit}
    )
    return [
        Change(
            seq=r.seq,
            memory_store_id=r.store_id,
            kind=ChangeKind(r.kind),
            memory_id=r.memory_id,
            path=r.path,
            old_path=r.old_path,
            blob_key=r.blob_key,
            content_sha256=r.content_sha256,
            memory_version_id=r.memory_version_id,
            created_at=datetime.fromisoformat(r.created_at),
        )
        for r in rows
    ]


class FeedProbe:
    """The newest change seq of a store, read on the calling thread in microseconds
    (SPEC §4: an open checks the database's change counter, "a shared-memory
    read", before it returns), so an open of an unchanged store needs no worker thread.

    Its own read-only SQLite connection to ``path`` (a WAL database) runs one primary-key
    read per call in autocommit, so it never holds a snapshot (a checkpoint that
    truncates the WAL after a redaction never waits for it). It never waits: a lock
    (the rare WAL-index recovery) or any other error answers None at once, and the
    caller reads the counter the usual way. Bounded, hence safe on an event loop's
    thread; use it from one thread only.

    Most calls run no query at all: every commit to a WAL database rewrites the
    WAL-index header at the start of the ``-shm`` file (both copies, 96 bytes: the
    frame count, the salts and the checksums of the WAL, sqlite's ``wal.c``) before
    the commit returns, so when those bytes are what they were just before the last
    query for a store, nothing has been committed since and that query's answer still
    holds (0.3 µs against 4–11 µs for the query with its locks). The header is mapped
    only while the connection is open: that connection's hold on the ``-shm`` keeps
    another process from re-initialising (truncating) the file under the mapping.

    Args:
        path: the SQLite file.
    """

    _QUERY = "SELECT last_change_seq FROM stores WHERE id = ?"
    # Both copies of the WAL-index header (2 × 48 bytes) at the start of the -shm file.
    _HEADER_BYTES = 96

    def __init__(self, path: Path) -> None:
        self._uri = f"{path.absolute().as_uri()}?mode=ro"
        self._shm_path = path.with_name(path.name + "-shm")
        self._conn: sqlite3.Connection | None = None
        self._shm: mmap.mmap | None = None
        # store id → (WAL-index header read just before the query, the seq it answered)
        self._answered: dict[str, tuple[bytes, int]] = {}

    def last_seq(self, store_id: str) -> int | None:
        """The store's newest change seq as committed now (0 when none); None when the
        store does not exist (deleted) or the file could not be read without waiting."""
        header = self._shm[: self._HEADER_BYTES] if self._shm is not None else None
        if header is not None:
            answered = self._answered.get(store_id)
            if answered is not None and answered[0] == header:
                return answered[1]
        try:
            if self._conn is None:
                self._conn = sqlite3.connect(
                    self._uri, uri=True, timeout=0, isolation_level=None,
                    check_same_thread=False,
                )
            rows = self._conn.execute(self._QUERY, (store_id,)).fetchall()
        except sqlite3.Error:
            self.close()
            return None
        if not rows:
            return None
        seq = int(rows[0][0])
        if header is not None:
            self._answered[store_id] = (header, seq)
        elif self._shm is None:
            self._map_header()  # the next call compares with it
        return seq

    def _map_header(self) -> None:
        """Maps the WAL-index header, now that the connection holds the ``-shm`` open
        (it has read through it); stays unmapped when the file is not there or too
        small (then every call queries). See :data:`_SHM_HEADERS`: never closed."""
        try:
            info = os.stat(self._shm_path)
            if info.st_size < self._HEADER_BYTES:
                return
            mapping = _SHM_HEADERS.get((info.st_dev, info.st_ino))
            if mapping is None:
                fd = os.open(self._shm_path, os.O_RDONLY)  # kept open: see _SHM_HEADERS
                opened = os.fstat(fd)
                mapping = mmap.mmap(fd, self._HEADER_BYTES, access=mmap.ACCESS_READ)
                _SHM_HEADERS[(opened.st_dev, opened.st_ino)] = mapping
                _SHM_DESCRIPTORS.append(fd)
                if (opened.st_dev, opened.st_ino) != (info.st_dev, info.st_ino):
                    return  # replaced meanwhile: map it at the next call
            self._shm = mapping
        except (OSError, ValueError):
            self._shm = None

    def close(self) -> None:
        """Closes the connection and forgets the header (the next call opens it again;
        the mapping itself stays: :data:`_SHM_HEADERS`)."""
        self._answered.clear()
        self._shm = None
        if self._conn is not None:
            self._conn.close()
            self._conn = None


# The WAL-index headers FeedProbe maps, by the -shm file's (device, inode), and the
# descriptors they were mapped from: never closed, for the life of the process. Closing
# any descriptor of a file drops every POSIX lock the process holds on it (fcntl(2)),
# and SQLite's connections hold theirs on the -shm (the read marks, the writer's lock,
# the one that tells a newcomer the file is in use) for as long as they are open: a
# close would let another process recover or reset the WAL under them (a corrupt
# database). A mapping (which holds a descriptor of its own) is only read while its
# probe's connection is open, which keeps the file from being truncated or replaced.
# Two descriptors per -shm file the process ever probes: a mount has one database.
_SHM_HEADERS: dict[tuple[int, int], mmap.mmap] = {}
_SHM_DESCRIPTORS: list[int] = []


class Feed(Facade):
    """The change feed and the audit log, as one caller sees them."""

    def audit_events(
        self,
        store_id: str | None,
        *,
        memory_id: str | None = None,
        since: datetime | None = None,
        limit: int | None = None,
    ) -> list[dict[str, Any]]:
        """Audit trail of deletions, redactions, restores, prunes and store events,
        newest first (SPEC §2 "audited").

        Args:
            store_id: one store's events (they outlive the store); None: every store's.
            memory_id: only the events of this memory.
            since: only events at or after this time.
            limit: at most this many (the newest); None: all.

        Returns:
            dicts with keys ``action``, ``memory_store_id``, ``memory_id``, ``reason``,
            ``metadata`` (a dict, ``{}`` when none), ``actor_type``, ``actor_id``,
            ``created_at`` (RFC 3339 text).
        """
        with self._read() as conn:
            return audit_events(conn, store_id, memory_id=memory_id, since=since, limit=limit)

    def last_seq(self, store_id: str) -> int:
        """The newest change seq of a store (0 when none). Raises NotFound."""
        with self._read() as conn:
            return last_change_seq(conn, store_id)

    def changes_since(self, store_id: str, after_seq: int, *, limit: int = 1000) -> list[Change]:
        """Changes with seq > ``after_seq``, oldest first, at most ``limit``; an entry
        about a memory hidden from the viewer keeps only its seq, kind and memory id
        (:func:`memfs.store.visibility.visible_changes`).

        Works after the store is deleted (the final entry is ``store_deleted``).
        """
        with self._read() as conn:
            changes = changes_since(conn, store_id, after_seq, limit)
            return visibility.visible_changes(conn, self.viewer, changes)
