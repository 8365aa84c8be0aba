"""Snapshots (SPEC §10): named, read-only points of a store's history; :class:`Snapshots`
is their facade (``engine.snapshots``, ``engine.for_caller(…).snapshots``).

Owns the ``snapshots`` table. A snapshot is a name for one seq of the store's history
(:mod:`memfs.store.history`), like a ZFS snapshot: creating one inserts one row whatever
the store holds (copying nothing), and it is never rewritten, only deleted. What it
needs of the history stays: retention keeps, for every snapshot (and every fork's base,
:mod:`memfs.store.forks`), each memory's newest version at or before its seq
(:func:`needed_version_seqs`, read by
:mod:`memfs.store.retention`; ``memfs fsck`` checks it, :mod:`memfs.store.fsck`).
Creating and deleting one are audited (``snapshot_create``, ``snapshot_delete``).

Limitations: a hard delete or a store deletion still erases what a snapshot names (an
erasure wins over history, SPEC §2); a redaction makes it read as redacted.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Connection, Row, delete, func, insert, select

from memfs.core import rules
from memfs.core.errors import Conflict, InvalidCursor, NotFound
from memfs.core.history import Snapshot
from memfs.core.ids import new_id
from memfs.core.model import Actor, Page
from memfs.core.points import NOW, Point, validate_snapshot_name
from memfs.store import feed
from memfs.store._common import (
    Cursor,
    actor_columns,
    actor_of,
    check_limit,
    lock_store,
    now,
    store_row,
)
from memfs.store._facade import Facade
from memfs.store.history import resolve_point
from memfs.store.schema import memories, snapshots, stores, versions

__all__ = [
    "Snapshots",
    "auto_snapshot",
    "needed_version_seqs",
    "snapshot_model",
    "take_snapshot",
]


def snapshot_model(row: Row[Any]) -> Snapshot:
    """A :class:`Snapshot` from its row."""
    return Snapshot(
        id=row.id,
        memory_store_id=row.store_id,
        name=row.name,
        description=row.description,
        memory_version_id=row.memory_version_id,
        created_at=datetime.fromisoformat(row.created_at),
        created_by=actor_of(row.actor_type, row.actor_id),
        seq=int(row.seq),
    )


def needed_version_seqs(conn: Connection, store_id: str) -> set[int]:
    """The seqs of the versions the store's points need: for each of its snapshots,
    each base of a store forked from it, and (a fork) the state of its last merge, the
    next merge's base (SPEC §10), each memory's newest version at or before that seq
    (one index probe per memory and point). Retention (SPEC §2) never prunes these."""
    found: set[int] = set()
    forks = stores.alias("fork")
    merged = stores.alias("merged")
    for table, store_column, seq_column in (
        (snapshots, snapshots.c.store_id, snapshots.c.seq),
        (forks, forks.c.forked_from, forks.c.fork_base_seq),
        (merged, merged.c.id, merged.c.fork_merged_seq),
    ):
        newest = (
            select(func.max(versions.c.seq))
            .where(versions.c.memory_id == memories.c.id, versions.c.seq <= seq_column)
            .scalar_subquery()
        )
        rows = conn.execute(
            select(newest)
            .select_from(memories.join(table, store_column == memories.c.store_id))
            .where(memories.c.store_id == store_id)
        ).scalars()
        found.update(int(seq) for seq in rows if seq is not None)
    return found


def _row_by_name(conn: Connection, store_id: str, name: str) -> Row[Any]:
    row = conn.execute(
        select(snapshots).where(snapshots.c.store_id == store_id, snapshots.c.name == name)
    ).first()
    if row is None:
        raise NotFound(f"memory store {store_id!r} has no snapshot named {name!r}")
    return row


def _row_by_id(conn: Connection, store_id: str, snapshot_id: str) -> Row[Any]:
    row = conn.execute(
        select(snapshots).where(snapshots.c.store_id == store_id, snapshots.c.id == snapshot_id)
    ).first()
    if row is None:
        raise NotFound(f"snapshot {snapshot_id!r} not found in memory store {store_id!r}")
    return row


def take_snapshot(
    conn: Connection,
    store_id: str,
    name: str,
    *,
    description: str,
    at: Point | str,
    actor: Actor | None,
    automatic: bool = False,
) -> Snapshot:
    """Inserts a snapshot in the caller's write transaction (see :meth:`Snapshots.create`;
    a store restore takes its automatic one this way, so both commit or neither).
    ``automatic``: memfs's own (its ``auto-…`` name allowed)."""
    validate_snapshot_name(name, automatic=automatic)
    rules.validate_store_description(description)
    lock_store(conn, store_id)
    resolved = resolve_point(conn, store_id, at)
    version_id = conn.execute(select(versions.c.id).where(versions.c.seq == resolved.seq)).scalar()
    if conn.execute(
        select(snapshots.c.id).where(snapshots.c.store_id == store_id, snapshots.c.name == name)
    ).first():
        raise _taken(store_id, name)
    actor_type, actor_id = actor_columns(actor)
    snapshot_id = new_id("snapshot")
    # The store row is locked: a caller racing for the same name waits, then finds this
    # row (the unique constraint is the backstop).
    conn.execute(
        insert(snapshots).values(
            id=snapshot_id,
            store_id=store_id,
            name=name,
            seq=resolved.seq,
            memory_version_id=version_id,
            description=description,
            created_at=now(),
            actor_type=actor_type,
            actor_id=actor_id,
        )
    )
    feed.audit(
        conn,
        store_id,
        "snapshot_create",
        memory_id=None,
        actor=actor,
        reason=None,
        metadata={"snapshot_id": snapshot_id, "name": name},
    )
    return snapshot_model(_row_by_id(conn, store_id, snapshot_id))


def auto_snapshot(
    conn: Connection, store_id: str, operation: str, description: str, actor: Actor | None
) -> Snapshot:
    """The snapshot memfs takes itself before a bulk change (SPEC §10), in its
    transaction: ``auto-<operation>-<UTC time>`` (``-2``, ``-3``… when taken twice in
    one microsecond), of ``now``, so the change is one restore away from being undone."""
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
    name = f"auto-{operation}-{stamp}"
    taken = set(
        conn.execute(
            select(snapshots.c.name).where(
                snapshots.c.store_id == store_id, snapshots.c.name.like(f"{name}%")
            )
        ).scalars()
    )
    suffix = 2
    while name in taken:
        name, suffix = f"auto-{operation}-{stamp}-{suffix}", suffix + 1
    return take_snapshot(
        conn, store_id, name, description=description, at=NOW, actor=actor, automatic=True
    )


def _taken(store_id: str, name: str) -> Conflict:
    return Conflict(
        f"memory store {store_id!r} already has a snapshot named {name!r}",
        code="snapshot_name_taken",
    )


class Snapshots(Facade):
    """The snapshots of the stores (SPEC §10); creating and deleting them name the
    caller's actor."""

    def create(
        self,
        store_id: str,
        name: str,
        *,
        description: str = "",
        at: Point | str = NOW,
        automatic: bool = False,
    ) -> Snapshot:
        """Names a point of the store's history: one row, whatever the store holds.

        Taken with the store row locked, so ``now`` is after every write committed
        before it and before every write that waits for it.

        Args:
            name: unique in the store (:func:`memfs.core.points.validate_snapshot_name`;
                ``now`` and ``auto-…`` are reserved).
            description: ≤1,024 characters.
            at: the point it names (default ``now``; any point, SPEC §10).
            automatic: memfs's own snapshot before a bulk change (the dream runner's
                ``auto-dream-…``): its ``auto-`` name is allowed. Never a user's.

        Raises:
            NotFound: no such store.
            InvalidInput: a bad name (``invalid_snapshot_name``, the rule named) or
                description.
            InvalidPoint: a bad ``at``.
            Conflict: ``snapshot_name_taken``, the store has a snapshot of that name.
        """
        with self._write() as conn:
            return take_snapshot(
                conn,
                store_id,
                name,
                description=description,
                at=at,
                actor=self.actor,
                automatic=automatic,
            )

    def get(self, store_id: str, snapshot_id: str) -> Snapshot:
        """A snapshot by ``snap_…`` id. Raises NotFound (store or snapshot)."""
        with self._read() as conn:
            store_row(conn, store_id)
            return snapshot_model(_row_by_id(conn, store_id, snapshot_id))

    def get_by_name(self, store_id: str, name: str) -> Snapshot:
        """A snapshot by name. Raises NotFound (store or snapshot)."""
        with self._read() as conn:
            store_row(conn, store_id)
            return snapshot_model(_row_by_name(conn, store_id, name))

    def list(self, store_id: str, *, limit: int = 20, cursor: str | None = None) -> Page[Snapshot]:
        """The store's snapshots, newest first (by id: ids sort by creation time), in
        keyset pages.

        Raises:
            NotFound (store), InvalidInput (limit), InvalidCursor.
        """
        check_limit(limit)
        fingerprint = Cursor.fingerprint("snapshots", store_id)
        query = select(snapshots).where(snapshots.c.store_id == store_id)
        if cursor is not None:
            after = Cursor.decode(cursor, fingerprint)
            if not isinstance(after, str):
                raise InvalidCursor("page cursor is malformed")
            query = query.where(snapshots.c.id < after)
        with self._read() as conn:
            store_row(conn, store_id)
            rows = conn.execute(query.order_by(snapshots.c.id.desc()).limit(limit + 1)).all()
        items = [snapshot_model(row) for row in rows[:limit]]
        next_cursor = Cursor.encode(fingerprint, items[-1].id) if len(rows) > limit else None
        return Page[Snapshot](items=items, next_cursor=next_cursor)

    def delete(self, store_id: str, snapshot_id: str) -> Snapshot:
        """Deletes a snapshot (its versions become prunable again once nothing else
        needs them); audited. Returns what was deleted.

        Raises:
            NotFound (store or snapshot).
        """
        with self._write() as conn:
            lock_store(conn, store_id)
            snapshot = snapshot_model(_row_by_id(conn, store_id, snapshot_id))
            conn.execute(delete(snapshots).where(snapshots.c.id == snapshot_id))
            feed.audit(
                conn,
                store_id,
                "snapshot_delete",
                memory_id=None,
                actor=self.actor,
                reason=None,
                metadata={"snapshot_id": snapshot_id, "name": snapshot.name},
            )
            return snapshot
