"""Restoring a whole store to a point of its history (SPEC §10, point-in-time recovery),
and reverting one memory to a point (:func:`revert_memory`); :class:`Restores` is their
facade (``engine.restores``, ``engine.for_caller(…).restores``).

A restore writes new versions that make the heads equal to the state at the point, and
never removes or rewrites one, so a restore can itself be restored away:

- a memory live now and then, with another path or content, gets its path and content
  back (one ``modified`` version);
- a memory live now but not then (created since, or deleted then) is soft-deleted;
- a memory soft-deleted now but live then comes back under its id, at its path and
  with its content then (a ``created`` version);
- a memory whose version then is redacted, or that was redacted since, is kept as it
  is (redaction wins, SPEC §2): the plan says so.

All of it runs in one transaction with the store row locked, after an automatic
snapshot of the present (``auto-restore-<time>``), so a failure half-way changes
nothing and the restore is one ``memfs diff``/restore away from being undone. It is
audited as one ``store_restore`` event (with the point, the snapshot and the counts),
beside the per-memory deletion and restore events the soft deletes and comebacks write.

Moves are ordered so that each destination is free when it is taken; memories that
swap paths (a cycle) pass through a temporary path ``/.memfs-restore/<memory id>``,
one more version each (the only versions a restore writes beyond the heads it sets).
What is hidden from the caller's viewer (SPEC §6) is neither seen nor touched.
"""

from __future__ import annotations

from sqlalchemy import Connection, select

from memfs.core.errors import Conflict, NotFound, PathConflict, RedactedContent
from memfs.core.history import (
    ResolvedPoint,
    RestoreAction,
    RestorePlan,
    RestoreStep,
    StateEntry,
)
from memfs.core.model import Actor, DeleteMode, Memory, Operation
from memfs.core.points import Point
from memfs.core.visibility import Viewer
from memfs.store import feed, visibility
from memfs.store._common import lock_store, require_writable
from memfs.store._facade import Facade
from memfs.store.blobs import blob_data
from memfs.store.history import resolve_point, state_at, store_seq, written_between
from memfs.store.memories import update_memory
from memfs.store.memory_rows import check_path_free, check_precondition
from memfs.store.schema import memories, versions
from memfs.store.snapshots import auto_snapshot
from memfs.store.tombstones import delete_memory, restore_memory

__all__ = ["PARKING_PREFIX", "Restores", "plan_restore", "restore_store", "revert_memory"]

# Where a memory waits while another takes its path (a swap): never a user path memfs
# writes otherwise.
PARKING_PREFIX = "/.memfs-restore/"


def plan_restore(
    conn: Connection, at: ResolvedPoint, viewer: Viewer | None
) -> tuple[list[RestoreStep], dict[str, StateEntry]]:
    """What restoring ``at.store_id`` to ``at`` does: the steps by path, and the state
    then by memory id (what the steps restore), of the memories written since the point
    (the others are as they were: :func:`~memfs.store.history.written_between`)."""
    now_seq = store_seq(conn, at.store_id)
    among = written_between(at.store_id, min(at.seq, now_seq), max(at.seq, now_seq))
    then = state_at(conn, at, viewer, among=among)
    current = state_at(conn, ResolvedPoint(at.store_id, "now", now_seq), viewer, among=among)
    modes = {
        memory_id: mode
        for memory_id, mode in conn.execute(
            select(memories.c.id, memories.c.delete_mode).where(
                memories.c.store_id == at.store_id, memories.c.deleted_at.is_not(None)
            )
        ).tuples()
    }
    steps: list[RestoreStep] = []
    for memory_id, now_entry in current.items():
        was = then.get(memory_id)
        if was is None:
            steps.append(
                RestoreStep(
                    action=RestoreAction.DELETE,
                    memory_id=memory_id,
                    path_now=now_entry.path,
                    path_then=None,
                    content_changes=True,
                )
            )
        elif was.redacted:
            steps.append(
                RestoreStep(
                    action=RestoreAction.KEEP,
                    memory_id=memory_id,
                    path_now=now_entry.path,
                    path_then=None,
                    content_changes=False,
                )
            )
        elif was.path != now_entry.path or was.content_sha256 != now_entry.content_sha256:
            steps.append(
                RestoreStep(
                    action=RestoreAction.CHANGE,
                    memory_id=memory_id,
                    path_now=now_entry.path,
                    path_then=was.path,
                    content_changes=was.content_sha256 != now_entry.content_sha256,
                )
            )
    for memory_id, was in then.items():
        if memory_id in current:
            continue
        back = not was.redacted and modes.get(memory_id) == DeleteMode.SOFT_DELETE.value
        steps.append(
            RestoreStep(
                action=RestoreAction.BRING_BACK if back else RestoreAction.KEEP,
                memory_id=memory_id,
                path_now=None,
                path_then=was.path,
                content_changes=back,
            )
        )
    steps.sort(key=lambda s: (s.path_then or s.path_now or "", s.memory_id))
    return steps, then


def _free_for(conn: Connection, store_id: str, path: str, memory_id: str) -> bool:
    """Whether ``memory_id`` may take ``path`` now (SPEC §1: no other live memory at it,
    above or below it)."""
    try:
        return check_path_free(conn, store_id, path, ignore_id=memory_id) is None
    except PathConflict:
        return False


def _version_seq(conn: Connection, version_id: str) -> int:
    return int(conn.execute(select(versions.c.seq).where(versions.c.id == version_id)).scalar_one())


def restore_store(
    conn: Connection,
    store_id: str,
    point: Point | str,
    *,
    actor: Actor | None,
    reason: str | None,
    memory_limit: int,
    viewer: Viewer | None,
) -> RestorePlan:
    """See :meth:`Restores.restore`; in the caller's write transaction."""
    require_writable(lock_store(conn, store_id))
    at = resolve_point(conn, store_id, point)
    steps, then = plan_restore(conn, at, viewer)
    acting = [s for s in steps if s.action is not RestoreAction.KEEP]
    if not acting:
        return RestorePlan(
            memory_store_id=store_id, point=at.text, steps=steps, snapshot=None, applied=True
        )
    snapshot = auto_snapshot(conn, store_id, "restore", f"before restoring to {at.text}", actor)
    for step in acting:
        if step.action is RestoreAction.DELETE:
            delete_memory(
                conn,
                store_id,
                step.memory_id,
                actor=actor,
                expected_sha256=None,
                mode=DeleteMode.SOFT_DELETE,
                reason=reason,
                replacement="",
            )
    pending = [s for s in acting if s.action is not RestoreAction.DELETE]
    while pending:
        progressed = False
        for step in list(pending):
            was = then[step.memory_id]
            assert was.path is not None
            if not _free_for(conn, store_id, was.path, step.memory_id):
                continue
            if step.action is RestoreAction.BRING_BACK:
                restore_memory(
                    conn,
                    store_id,
                    step.memory_id,
                    actor=actor,
                    reason=reason,
                    memory_limit=memory_limit,
                    path=was.path,
                    source_seq=_version_seq(conn, was.version_id),
                )
            else:
                data = blob_data(conn, was.blob_key) if step.content_changes else None
                update_memory(
                    conn,
                    store_id,
                    step.memory_id,
                    actor=actor,
                    content=None if data is None else data.decode("utf-8"),
                    path=was.path,
                    expected_sha256=None,
                    metadata=None,
                    replace=False,
                )
            pending.remove(step)
            progressed = True
        if progressed:
            continue
        # Every pending destination is held by another pending memory (a swap): park
        # one that is live where nothing can be in its way, and go round again.
        parked = next((s for s in pending if s.action is RestoreAction.CHANGE), None)
        if parked is None:
            raise Conflict(
                f"memory store {store_id!r} can't be restored to {at.text}: "
                "a memory to bring back has its path taken"
            )
        update_memory(
            conn,
            store_id,
            parked.memory_id,
            actor=actor,
            content=None,
            path=PARKING_PREFIX + parked.memory_id,
            expected_sha256=None,
            metadata=None,
            replace=False,
        )
    plan = RestorePlan(
        memory_store_id=store_id, point=at.text, steps=steps, snapshot=snapshot, applied=True
    )
    feed.audit(
        conn,
        store_id,
        "store_restore",
        memory_id=None,
        actor=actor,
        reason=reason,
        metadata={
            "point": at.text,
            "snapshot": snapshot.name,
            "changed": str(plan.count(RestoreAction.CHANGE)),
            "deleted": str(plan.count(RestoreAction.DELETE)),
            "brought_back": str(plan.count(RestoreAction.BRING_BACK)),
            "kept": str(plan.count(RestoreAction.KEEP)),
        },
    )
    return plan


def revert_memory(
    conn: Connection,
    store_id: str,
    memory_id: str,
    to: Point | str,
    *,
    actor: Actor | None,
    expected_sha256: str | None,
    reason: str | None,
    memory_limit: int,
    viewer: Viewer | None,
) -> Memory:
    """See :meth:`Restores.revert`; in the caller's write transaction."""
    require_writable(lock_store(conn, store_id))
    at = resolve_point(conn, store_id, to)
    then = conn.execute(
        select(
            versions.c.id,
            versions.c.seq,
            versions.c.path,
            versions.c.blob_key,
            versions.c.operation,
        )
        .where(
            versions.c.memory_id == memory_id,
            versions.c.store_id == store_id,
            versions.c.seq <= at.seq,
        )
        .order_by(versions.c.seq.desc())
        .limit(1)
    ).first()
    row = conn.execute(
        select(memories).where(memories.c.id == memory_id, memories.c.store_id == store_id)
    ).first()
    if row is None or then is None or then.operation == Operation.DELETED.value:
        raise NotFound(
            f"memory {memory_id!r} of memory store {store_id!r} was not live at {at.text}"
        )
    if then.path is None:
        raise RedactedContent(
            f"memory {memory_id!r} at {at.text} is the redacted version {then.id!r}: "
            "its content and path are erased and can't come back"
        )
    check_precondition(row, expected_sha256)
    if row.deleted_at is not None:
        memory = restore_memory(
            conn,
            store_id,
            memory_id,
            actor=actor,
            reason=reason,
            memory_limit=memory_limit,
            path=then.path,
            source_seq=int(then.seq),
        )
    else:
        data = blob_data(conn, then.blob_key)
        assert data is not None
        memory = update_memory(
            conn,
            store_id,
            memory_id,
            actor=actor,
            content=data.decode("utf-8"),
            path=then.path,
            expected_sha256=expected_sha256,
            metadata=None,
            replace=False,
        )
    visibility.check_written(conn, viewer, memory_id, then.path)
    feed.audit(
        conn,
        store_id,
        "memory_revert",
        memory_id=memory_id,
        actor=actor,
        reason=reason,
        metadata={"point": at.text, "memory_version_id": then.id},
    )
    return memory


class Restores(Facade):
    """Point-in-time recovery of whole stores (SPEC §10), and of one memory, for one
    caller."""

    def revert(
        self,
        store_id: str,
        memory_id: str,
        to: Point | str,
        *,
        expected_sha256: str | None = None,
        reason: str | None = None,
    ) -> Memory:
        """Gives one memory back its content and path of a point (SPEC §10 revert): one
        new version (none when it has them already), a soft-deleted memory brought back
        under its id. ``to`` is any point; a ``memver_`` id of this memory is that
        version (the moment right after it). Audited (``memory_revert``).

        Args:
            expected_sha256: a precondition on today's head, as any update (SPEC §2).
            reason: recorded with the audit event (and the restore of a deleted memory).

        Returns:
            The memory as it is now, with content.

        Raises:
            NotFound: no such store or memory, or the memory was not live at the point
                (or is hidden from the viewer).
            InvalidPoint: a bad point.
            RedactedContent: its version at the point is redacted (can't come back).
            NotRestorable: it was redacted since (a redacted tombstone).
            PreconditionFailed, PathConflict (its path then is taken), StoreArchived,
            StoreFull.
        """
        with self._write() as conn:
            self._require_visible(conn, memory_id)
            return revert_memory(
                conn,
                store_id,
                memory_id,
                to,
                actor=self.actor,
                expected_sha256=expected_sha256,
                reason=reason,
                memory_limit=self._parts.memory_limit,
                viewer=self.viewer,
            )

    def plan(self, store_id: str, to: Point | str) -> RestorePlan:
        """What :meth:`restore` would do (``--dry-run``), changing nothing.

        Raises:
            NotFound (store), InvalidPoint.
        """
        with self._read() as conn:
            at = resolve_point(conn, store_id, to)
            steps, _ = plan_restore(conn, at, self.viewer)
        return RestorePlan(
            memory_store_id=store_id, point=at.text, steps=steps, snapshot=None, applied=False
        )

    def restore(self, store_id: str, to: Point | str, *, reason: str | None = None) -> RestorePlan:
        """Makes the store's memories what they were at ``to``, with new versions only,
        all or nothing, after an automatic snapshot of the present (module docstring).
        Restoring to the point just before a restore (its snapshot) undoes it.

        Args:
            to: the point (``now``, a time, a snapshot name, a ``memver_`` id).
            reason: recorded with the audit event and the deletions.

        Returns:
            The :class:`RestorePlan` carried out, with its snapshot (None when nothing
            changed: no snapshot is taken then).

        Raises:
            NotFound (store), InvalidPoint, StoreArchived, StoreFull (more memories come
            back than the limit allows), Conflict (a memory to bring back can't get its
            path). Nothing is changed then.
        """
        with self._write() as conn:
            return restore_store(
                conn,
                store_id,
                to,
                actor=self.actor,
                reason=reason,
                memory_limit=self._parts.memory_limit,
                viewer=self.viewer,
            )
