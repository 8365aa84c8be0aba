"""Version retention (SPEC §2): a store's retention period, and pruning the versions
older than it.

A store's ``version_retention_s`` is NULL by default: every version is kept forever.
With a period set, a prune drops the versions of that store written more than that
many seconds before the prune's clock, except those memfs still needs:

- the head version of every memory (a live memory's current content; a tombstone's
  ``deleted`` version, which the memory row names as its head);
- the content version a soft-deleted memory would be restored from (its newest version
  that is not ``deleted``): a restore needs it;
- every version a snapshot or the base of a live fork needs (SPEC §10): each memory's
  newest version at or before that point (:func:`memfs.store.snapshots.needed_version_seqs`).

Pruned content leaves every place memfs keeps data, as a redaction's does: the blobs
nothing references any more are deleted in the same transaction (and announced as
``blob_purged`` in the change feed, so mounts drop them from their caches), a path no
remaining version or memory holds is nulled out of the change feed, the SQLite FTS
segments are rewritten without stale tokens, and the engine checkpoints the WAL
afterwards (:meth:`Retention.prune`, ``engine.retention.prune``). Each store's prune is audited
(``prune_versions``, with the count and the cut-off as metadata).

Limitations: a prune takes each store's write lock in turn, one transaction for all
stores; a store with millions of prunable versions is pruned in one statement per
version (fine for the 10,000-memory stores memfs targets).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Connection, Row, delete, func, select, update

from memfs.core import rules
from memfs.core.model import ChangeKind, DeleteMode, Operation, utcnow
from memfs.store import feed, search
from memfs.store._common import lock_store, now, store_row, ts
from memfs.store._facade import Facade
from memfs.store.blobs import gc_blobs
from memfs.store.schema import memories, stores, versions
from memfs.store.snapshots import needed_version_seqs
from memfs.store.versions import scrub_path

__all__ = ["PruneResult", "init_version_retention", "prune_versions", "set_version_retention"]


@dataclass(frozen=True)
class PruneResult:
    """What a prune did (or, dry, would do) to one store.

    Attributes:
        store_id: the store.
        retention_s: its retention period in seconds.
        cutoff: versions written before this time were candidates.
        versions: versions dropped (or that would be).
        kept: candidates kept because memfs needs them (heads, restore sources,
            what snapshots need).
        blobs_purged: content blobs erased with them (0 on a dry run).
    """

    store_id: str
    retention_s: int
    cutoff: datetime
    versions: int
    kept: int
    blobs_purged: int


def set_version_retention(conn: Connection, store_id: str, retention_s: int | None) -> bool:
    """Sets a store's retention period (None: keep forever), in the caller's write
    transaction with the store row locked; bumps ``updated_at`` and announces a
    ``store_updated`` change when it changed. Returns whether it changed.

    Raises:
        InvalidInput: a period ``rules.validate_retention_s`` refuses.
        NotFound: no such store.
    """
    retention_s = rules.validate_retention_s(retention_s)
    row = lock_store(conn, store_id)
    if row.version_retention_s == retention_s:
        return False
    conn.execute(
        update(stores)
        .where(stores.c.id == store_id)
        .values(version_retention_s=retention_s, updated_at=now())
    )
    feed.emit(conn, store_id, ChangeKind.STORE_UPDATED)
    return True


def init_version_retention(conn: Connection, store_id: str, retention_s: int | None) -> None:
    """Sets the retention period of a store created in this transaction (no change is
    announced: the store is new). Raises InvalidInput as :func:`set_version_retention`."""
    retention_s = rules.validate_retention_s(retention_s)
    if retention_s is not None:
        conn.execute(
            update(stores).where(stores.c.id == store_id).values(version_retention_s=retention_s)
        )


def _restore_sources(conn: Connection, store_id: str) -> set[int]:
    """The seq of each soft-deleted memory's newest content version (what restore reads)."""
    newest = (
        select(func.max(versions.c.seq))
        .where(
            versions.c.memory_id == memories.c.id,
            versions.c.operation != Operation.DELETED.value,
        )
        .scalar_subquery()
    )
    rows = conn.execute(
        select(newest).where(
            memories.c.store_id == store_id,
            memories.c.delete_mode == DeleteMode.SOFT_DELETE.value,
        )
    ).scalars()
    return {int(seq) for seq in rows if seq is not None}


def _prune_store(
    conn: Connection, store: Row[Any], clock: datetime, *, dry_run: bool
) -> PruneResult:
    retention_s = int(store.version_retention_s)
    cutoff = clock - timedelta(seconds=retention_s)
    if not dry_run:
        lock_store(conn, store.id)
    heads = select(memories.c.head_version_id).where(memories.c.store_id == store.id)
    candidates = conn.execute(
        select(versions.c.seq, versions.c.memory_id, versions.c.path, versions.c.blob_key).where(
            versions.c.store_id == store.id,
            versions.c.created_at < ts(cutoff),
            versions.c.id.not_in(heads),
        )
    ).all()
    keep = _restore_sources(conn, store.id) | needed_version_seqs(conn, store.id)
    doomed = [v for v in candidates if v.seq not in keep]
    purged = 0
    if doomed and not dry_run:
        for version in doomed:
            conn.execute(delete(versions).where(versions.c.seq == version.seq))
        for version in doomed:
            scrub_path(conn, version.memory_id, version.path)
        purged = gc_blobs(conn, store.id, [v.blob_key for v in doomed])
        # Pruned content may have been a head once: its tokens can linger in FTS
        # segments (SPEC §7: the indexes are data too), as after a redaction, or still
        # be a queued memory's document.
        search.settle(conn, [version.memory_id for version in doomed])
        search.scrub(conn)
        feed.audit(
            conn,
            store.id,
            "prune_versions",
            memory_id=None,
            actor=None,
            reason=None,
            metadata={"versions": str(len(doomed)), "written_before": ts(cutoff)},
        )
    return PruneResult(
        store_id=store.id,
        retention_s=retention_s,
        cutoff=cutoff,
        versions=len(doomed),
        kept=len(candidates) - len(doomed),
        blobs_purged=purged,
    )


def prune_versions(
    conn: Connection, *, clock: datetime, store_id: str | None, dry_run: bool
) -> list[PruneResult]:
    """See :meth:`memfs.store.retention.Retention.prune`."""
    query = select(stores.c.id, stores.c.version_retention_s).where(
        stores.c.version_retention_s.is_not(None)
    )
    if store_id is not None:
        store_row(conn, store_id)  # NotFound for an unknown store
        query = query.where(stores.c.id == store_id)
    return [
        _prune_store(conn, store, clock, dry_run=dry_run)
        for store in conn.execute(query.order_by(stores.c.id)).all()
    ]


class Retention(Facade):
    """Pruning versions past their store's retention period (SPEC §2 retention)."""

    def prune(
        self,
        *,
        store_id: str | None = None,
        dry_run: bool = False,
        now: datetime | None = None,
    ) -> list[PruneResult]:
        """Drops the versions older than their store's retention period: never the head
        version of a memory, nor the content version a soft-deleted memory would be
        restored from, nor a version a snapshot or a live fork's base needs (SPEC §10).
        Pruned content leaves the database as a redaction's does (blobs, change-feed
        paths, FTS segments, then a WAL checkpoint). Stores without a period keep everything.

        Args:
            store_id: prune this store only (None: every store with a period).
            dry_run: count what would be dropped, change nothing.
            now: the clock the periods count back from (None: the current time); tests
                pass a fake one.

        Returns:
            One :class:`PruneResult` per store with a retention period, by store id.

        Raises:
            NotFound: ``store_id`` names no store.
        """
        clock = utcnow() if now is None else now
        if dry_run:
            with self._read() as conn:
                return prune_versions(conn, clock=clock, store_id=store_id, dry_run=True)
        with self._write() as conn:
            results = prune_versions(conn, clock=clock, store_id=store_id, dry_run=False)
        if any(result.versions for result in results):
            self._db.checkpoint()
        return results
