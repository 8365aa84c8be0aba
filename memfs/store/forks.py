"""Forks of a store (SPEC §10): a new store whose memories are another store's state at
a point, and merging one back into its origin. Called through
:class:`ForkingHistory` (``engine.for_caller(…).history.fork``, ``.merge``,
``.plan_merge``).

**What a fork is.** An ordinary store (mountable, searchable, its own retention) with
three more facts on its row: ``forked_from`` (the origin's id), ``fork_base_seq`` (the
origin's point, :mod:`memfs.store.history`) and ``fork_base_version_id`` (the origin's
version at that seq, shown as ``fork_base``: itself a point of the origin). Each of its
memories made by the fork carries ``origin_memory_id``, the origin memory it copies, by
which diff and merge match the two stores (a rename on either side keeps the match).

**Cost.** Content is shared, not copied: blobs are content-addressed, so a forked
memory's version references the origin version's blob and no byte is written. The
rows are written set-based (one executemany per table, one INSERT … SELECT for the
search documents and the embedding queue; ``COPY`` on PostgreSQL): 10,000 memories
fork in about 1 s on SQLite, 5 s on PostgreSQL (README, "Forking a store"). Only
memories that are records (SPEC §6) are indexed one by one, since their typed header
must be parsed.

**Rules.** Every forked memory gets one ``created`` version attributed to the caller
(the fork is a write of theirs, not a replay of the origin's authors; the origin's
history stays in the origin). Memory ``metadata`` is not versioned: a forked memory
takes its origin memory's metadata of today. A memory whose version at the point is
redacted is not forked (redaction wins, SPEC §2: there is nothing to copy), nor is
one hidden from the caller (SPEC §6 visibility: a restricted caller's fork holds only
what it may see, so a fork never widens what anyone reads). The fork is audited as
one ``store_fork`` event in the fork's log and in the origin's.

**Retention.** While the origin lives, its retention keeps every version the fork's
base needs, and the fork's own retention every version its last merge needs
(:func:`memfs.store.snapshots.needed_version_seqs`, read by
:mod:`memfs.store.retention`; ``memfs fsck`` checks both), so a merge can always read
its base.

**Merge** (:meth:`ForkingHistory.merge`): three-way against the base, per memory matched
by origin, in one transaction with the origin's and the fork's rows locked (in that
order), after an ``auto-merge-…`` snapshot of the origin. The base moves with each
merge: the first compares both sides with the fork's base in the origin; a merge
records the fork's own seq then (``stores.fork_merged_seq``), and the next compares
with the fork's state at it, keyed by origin (what the origin took in is what the two
agreed on; a memory the merge created is matched with the fork's from then on). So a
change merged once is never seen again as two-sided, while a memory changed on both
sides since still gets its conflict copy. A conflict copy whose content the origin
already holds is not written again. A restricted caller's merge moves the base only
when nothing of the fork or of the base was hidden from it (what it could not see
was not merged).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, LargeBinary, func, literal, select, update

from memfs.core.errors import Conflict, InvalidInput, PathConflict, StoreFull
from memfs.core.history import MergeAction, MergePlan, MergeStep, ResolvedPoint, StateEntry
from memfs.core.ids import new_id
from memfs.core.model import Actor, ChangeKind, DeleteMode, MemoryStore, Operation, utcnow
from memfs.core.naming import conflict_name
from memfs.core.points import NOW, Point
from memfs.core.records import parse_record
from memfs.core.visibility import Viewer
from memfs.store import feed, forkdiff, search
from memfs.store import records as record_index
from memfs.store._common import insert_many, lock_store, now, require_writable, store_row
from memfs.store.blobs import blob_data
from memfs.store.history import (
    History,
    keyed_state,
    origin_keys,
    resolve_point,
    state_at,
    store_seq,
)
from memfs.store.memories import create_memory, update_memory
from memfs.store.memory_rows import check_path_free
from memfs.store.schema import blobs, memories, stores, versions
from memfs.store.snapshots import auto_snapshot
from memfs.store.stores import create_store, get_store
from memfs.store.tombstones import delete_memory
from memfs.store.versions import insert_versions

__all__ = ["ForkingHistory", "fork_store", "merge_fork", "plan_merge", "taken"]


def fork_store(
    conn: Connection,
    origin_id: str,
    at: Point | str,
    *,
    name: str,
    description: str | None,
    actor: Actor | None,
    memory_limit: int,
    viewer: Viewer | None,
) -> MemoryStore:
    """See :meth:`memfs.store.history.History.fork`; in the caller's write transaction."""
    # The origin's row is locked so that ``now`` is after every write committed before
    # the fork and before every write that waits for it (as a snapshot is taken).
    lock_store(conn, origin_id)
    base = resolve_point(conn, origin_id, at)
    entries = sorted(
        (entry for entry in state_at(conn, base, viewer).values() if not entry.redacted),
        key=lambda entry: entry.path or "",
    )
    if len(entries) > memory_limit:
        raise StoreFull(
            f"memory store {origin_id!r} held {len(entries)} memories at {base.text}; "
            f"a store holds at most {memory_limit}"
        )
    if conn.execute(select(stores.c.id).where(stores.c.name == name).limit(1)).first():
        # Stores are found by name (the CLI, a mount's --store): a fork taking a name in
        # use would leave both reachable only by id. (Creating a store allows it, as the
        # API contract says; a fork is memfs's own.)
        raise Conflict(
            f"a memory store is already named {name!r}: give the fork another name",
            code="store_name_taken",
        )
    fork = create_store(conn, name, "" if description is None else description, None)
    base_version = (
        conn.execute(select(versions.c.id).where(versions.c.seq == base.seq)).scalar()
        if base.seq
        else None
    )
    conn.execute(
        update(stores)
        .where(stores.c.id == fork.id)
        .values(forked_from=origin_id, fork_base_seq=base.seq, fork_base_version_id=base_version)
    )
    written = now()
    memory_ids = [new_id("memory") for _ in entries]
    version_ids = insert_versions(
        conn,
        [
            (
                fork.id,
                memory_id,
                Operation.CREATED.value,
                entry.path,
                entry.blob_key,
                entry.content_sha256,
                entry.size_bytes,
            )
            for memory_id, entry in zip(memory_ids, entries, strict=True)
        ],
        actor=actor,
        now=written,
    )
    metadata = _metadata_of(conn, origin_id)
    insert_many(
        conn,
        "memories",
        (
            "id",
            "store_id",
            "path",
            "blob_key",
            "content_sha256",
            "size_bytes",
            "head_version_id",
            "metadata_json",
            "created_at",
            "updated_at",
            "origin_memory_id",
        ),
        [
            (
                memory_id,
                fork.id,
                entry.path,
                entry.blob_key,
                entry.content_sha256,
                entry.size_bytes,
                version_id,
                metadata.get(entry.memory_id, "{}"),
                written,
                written,
                entry.memory_id,
            )
            for memory_id, version_id, entry in zip(memory_ids, version_ids, entries, strict=True)
        ],
    )
    search.index_new_store(conn, fork.id)
    _index_records(conn, fork.id, memory_ids, entries, written)
    feed.emit_many(
        conn,
        fork.id,
        ChangeKind.MEMORY_WRITTEN,
        [
            (memory_id, entry.path, None, entry.content_sha256, version_id)
            for memory_id, version_id, entry in zip(memory_ids, version_ids, entries, strict=True)
        ],
    )
    conn.execute(
        update(stores)
        .where(stores.c.id == fork.id)
        .values(
            entry_count=len(entries),
            total_size_bytes=sum(entry.size_bytes or 0 for entry in entries),
            # Only an unrestricted caller's fork holds all of its base: what a diff or
            # merge may skip as unchanged since (memfs.store.forkdiff).
            fork_created_seq=store_seq(conn, fork.id) if viewer is None else None,
        )
    )
    facts = {
        "origin": origin_id,
        "fork": fork.id,
        "point": base.text,
        "base_seq": str(base.seq),
        "memories": str(len(entries)),
    }
    for store_id in (fork.id, origin_id):
        feed.audit(
            conn, store_id, "store_fork", memory_id=None, actor=actor, reason=None, metadata=facts
        )
    return get_store(conn, fork.id)


def _metadata_of(conn: Connection, origin_id: str) -> dict[str, str]:
    """Today's ``metadata_json`` of the origin's memories that have some (not versioned:
    see the module docstring)."""
    rows = conn.execute(
        select(memories.c.id, memories.c.metadata_json).where(
            memories.c.store_id == origin_id, memories.c.metadata_json != "{}"
        )
    )
    return {memory_id: raw for memory_id, raw in rows}


def _index_records(
    conn: Connection,
    store_id: str,
    memory_ids: list[str],
    entries: list[StateEntry],
    written: str,
) -> None:
    """Indexes the forked memories that are records (SPEC §6). A record's header is
    front matter (its first line ``---``), so only the contents that start so are read,
    in one query over the fork's memories."""
    by_key: dict[str, list[str]] = {}
    for memory_id, entry in zip(memory_ids, entries, strict=True):
        by_key.setdefault(entry.blob_key or "", []).append(memory_id)
    fenced = conn.execute(
        select(blobs.c.key, blobs.c.data).where(
            blobs.c.key.in_(
                select(memories.c.blob_key).where(memories.c.store_id == store_id)
            ),
            func.substr(blobs.c.data, 1, 3) == literal(b"---", LargeBinary),
        )
    ).all()
    for key, data in fenced:
        try:
            header = parse_record(bytes(data).decode("utf-8"))
        except InvalidInput:
            continue  # written before records existed: left out, as a rebuild does
        if header is None:
            continue
        for memory_id in by_key.get(key, []):
            record_index.index_memory(conn, memory_id, store_id, header, written, new=True)
    record_index.memories_arrived(
        conn, store_id, [(m, e.path) for m, e in zip(memory_ids, entries, strict=True) if e.path]
    )


def _base_point(conn: Connection, fork_id: str, into: str | None) -> ResolvedPoint:
    """The fork's base as a point of its origin (what a merge compares both sides with).

    Raises:
        NotFound: no such fork; its origin is gone.
        Conflict: the store is no fork.
        InvalidInput: it is not a fork of ``into``.
    """
    row = store_row(conn, fork_id)
    if row.forked_from is None:  # the store's state, not the request, is at odds: 409
        raise Conflict(f"memory store {fork_id!r} is not a fork: there is nothing to merge")
    if into is not None and into != row.forked_from:
        raise InvalidInput(
            f"memory store {fork_id!r} is a fork of {row.forked_from!r}, not of {into!r}"
        )
    store_row(conn, row.forked_from)
    return ResolvedPoint(
        store_id=row.forked_from,
        text=row.fork_base_version_id or "empty",
        seq=int(row.fork_base_seq),
    )


def _merge_base(
    conn: Connection,
    fork_id: str,
    into: str | None,
    viewer: Viewer | None,
    among: Any = None,
    keys: Any = None,
) -> tuple[ResolvedPoint, dict[str, StateEntry]]:
    """The base a merge compares both sides with, and its state keyed by the origin's
    memory ids: the fork's base in its origin until the fork is first merged; after
    that, the fork's own state when it was last merged (``fork_merged_seq``): what the
    origin took in then is what the two agree on. ``among`` (SELECTs of the fork's
    memory ids) and ``keys`` (of their keys): only those.

    Raises:
        as :func:`_base_point`.
    """
    origin_at = _base_point(conn, fork_id, into)
    merged = store_row(conn, fork_id).fork_merged_seq
    if merged is None:
        return origin_at, state_at(conn, origin_at, viewer, among=keys)
    version_id = conn.execute(select(versions.c.id).where(versions.c.seq == merged)).scalar()
    at = ResolvedPoint(store_id=fork_id, text=version_id or "empty", seq=int(merged))
    return at, keyed_state(conn, at, origin_at.store_id, viewer, among=among)


def _record_merged(
    conn: Connection, fork_id: str, base_at: ResolvedPoint, viewer: Viewer | None
) -> None:
    """Moves the fork's merge base to its state now (it is locked: nothing lands in
    between). A restricted caller's merge moves it only when it saw all of the fork and
    of the base: what was hidden from it was not merged, and a later merge by someone
    who sees it must still find it changed."""
    fork_now = _now(conn, fork_id)
    if viewer is not None:
        for at in (fork_now, base_at):
            if len(state_at(conn, at, None)) != len(state_at(conn, at, viewer)):
                return
    conn.execute(
        update(stores).where(stores.c.id == fork_id).values(fork_merged_seq=fork_now.seq)
    )


def _now(conn: Connection, store_id: str) -> ResolvedPoint:
    return ResolvedPoint(store_id, "now", store_seq(conn, store_id))


def _beside(path: str, fork_id: str) -> str:
    """Where the fork's content goes when the origin keeps its own: beside ``path``,
    named as a mount names a conflict copy (SPEC §4; the fork's id in place of the
    session's)."""
    directory, _, name = path.rpartition("/")
    return f"{directory}/{conflict_name(name, utcnow(), fork_id)}"


_Change = tuple[MergeAction, dict[str, Any]]  # an action and its MergeStep fields


def _fork_only_gone(was: StateEntry, now_entry: StateEntry | None) -> list[_Change]:
    """A memory of the base deleted on the fork."""
    if now_entry is None:
        return []
    if (now_entry.path, now_entry.content_sha256) == (was.path, was.content_sha256):
        return [(MergeAction.DELETE, {"path": None, "content_changes": False})]
    note = "deleted on the fork, changed in the origin: the origin's is kept"
    return [(MergeAction.KEEP, {"path": now_entry.path, "content_changes": False, "note": note})]


def _both_live(
    was: StateEntry, fork_entry: StateEntry, now_entry: StateEntry, fork_id: str
) -> list[_Change]:
    """A memory of the base live on both sides: path and content merged apart."""
    assert fork_entry.path is not None
    assert now_entry.path is not None
    fork_content = fork_entry.content_sha256 != was.content_sha256
    origin_content = now_entry.content_sha256 != was.content_sha256
    path, notes = now_entry.path, []
    if fork_entry.path != was.path:
        if now_entry.path == was.path:
            path = fork_entry.path
        elif now_entry.path != fork_entry.path:
            notes.append(f"renamed on both sides: the origin's path is kept ({fork_entry.path})")
    same_content = now_entry.content_sha256 == fork_entry.content_sha256
    take_content = fork_content and not origin_content and not same_content
    found: list[_Change] = []
    if take_content or path != now_entry.path:
        action = MergeAction.UPDATE
    elif notes:
        action = MergeAction.KEEP
    else:
        action = None
    if action is not None:
        fields = {"path": path, "content_changes": take_content, "note": "; ".join(notes)}
        found.append((action, fields))
    if fork_content and origin_content and not same_content:
        note = "changed on both sides: the origin's is kept, the fork's written beside it"
        found.append(
            (
                MergeAction.CONFLICT_COPY,
                {"path": _beside(path, fork_id), "content_changes": True, "note": note},
            )
        )
    return found


def _merge_one(
    was: StateEntry | None,
    fork_entry: StateEntry | None,
    now_entry: StateEntry | None,
    fork_id: str,
) -> list[_Change]:
    """The three-way decision for one memory (see :meth:`ForkingHistory.merge`)."""
    if (fork_entry is not None and fork_entry.redacted) or (was is not None and was.redacted):
        return []  # nothing to carry over (redaction wins, SPEC §2)
    if was is None:  # added on the fork
        assert fork_entry is not None
        assert fork_entry.path is not None
        if now_entry is None:
            return [(MergeAction.CREATE, {"path": fork_entry.path, "content_changes": True})]
        if now_entry.content_sha256 == fork_entry.content_sha256:
            return []  # merged before, the same since (the origin's path is kept)
        # Merged before and changed since, on either side: no base to tell which.
        note = "added on the fork and merged before; changed since: the fork's is a copy"
        path = _beside(now_entry.path or fork_entry.path, fork_id)
        return [(MergeAction.CONFLICT_COPY, {"path": path, "content_changes": True, "note": note})]
    if fork_entry is None:
        return _fork_only_gone(was, now_entry)
    if (fork_entry.path, fork_entry.content_sha256) == (was.path, was.content_sha256):
        return []
    if now_entry is None or now_entry.redacted:
        if fork_entry.content_sha256 == was.content_sha256:
            return []  # only renamed on the fork: the origin's delete stands
        assert fork_entry.path is not None
        note = "changed on the fork, deleted in the origin: the fork's is a conflict copy"
        return [
            (
                MergeAction.CONFLICT_COPY,
                {"path": _beside(fork_entry.path, fork_id), "content_changes": True, "note": note},
            )
        ]
    return _both_live(was, fork_entry, now_entry, fork_id)


def plan_merge(
    conn: Connection, fork_id: str, into: str | None, viewer: Viewer | None
) -> tuple[ResolvedPoint, list[MergeStep], dict[str, StateEntry]]:
    """The three-way merge of the fork into its origin (:meth:`ForkingHistory.merge`):
    the base, the steps by path, and the fork's state by matching key (whose content
    the steps write)."""
    origin_id = _base_point(conn, fork_id, into).store_id
    fork_now = _now(conn, fork_id)
    # A memory the fork has not changed since its base (no version after it) is the
    # base's: it makes no step, whatever the origin did. So only the fork's changed
    # memories are read, on every side, when that can be told (memfs.store.forkdiff).
    among = _changed_on_fork(conn, fork_id, fork_now, viewer)
    keys = (
        None
        if among is None
        else sorted(conn.execute(select(_key).where(memories.c.id.in_(among))).scalars())
    )
    base_at, base = _merge_base(conn, fork_id, into, viewer, among, keys)
    ours = state_at(conn, _now(conn, origin_id), viewer, among=keys)
    theirs = keyed_state(conn, fork_now, origin_id, viewer, among=among)
    # A conflict copy whose content the origin holds already (a merge made it before)
    # loses nothing by being left out: merging twice is merging once.
    held = _held(conn, origin_id, viewer, ours, theirs, among is not None)
    # Gone from the fork means deleted on it only if the fork ever had it: a first merge
    # (its base is the origin's) leaves alone what was never forked (hidden from the
    # forking caller, SPEC §6, or redacted at the point).
    forked = (
        None
        if base_at.store_id == fork_id
        else set((origin_keys(conn, fork_id, origin_id, among) or {}).values())
    )
    steps: list[MergeStep] = []
    for key in set(base) | set(theirs):
        fork_entry, now_entry = theirs.get(key), ours.get(key)
        if fork_entry is None and forked is not None and key not in forked:
            continue
        for action, fields in _merge_one(base.get(key), fork_entry, now_entry, fork_id):
            copied = action is MergeAction.CONFLICT_COPY and fork_entry is not None
            if copied and fork_entry.content_sha256 in held:  # type: ignore[union-attr]
                continue
            steps.append(
                MergeStep(
                    action=action,
                    fork_memory_id=None if fork_entry is None else fork_entry.memory_id,
                    origin_memory_id=None if now_entry is None else now_entry.memory_id,
                    path_before=None if now_entry is None else now_entry.path,
                    **fields,
                )
            )
    steps.sort(key=_step_order)
    return base_at, steps, theirs


_key = func.coalesce(memories.c.origin_memory_id, memories.c.id)


def _changed_on_fork(
    conn: Connection, fork_id: str, fork_now: ResolvedPoint, viewer: Viewer | None
) -> list[str] | None:
    """The ids of the fork's memories that may differ from the merge base: those with a
    version after it (the fork's ``fork_merged_seq``, or its ``fork_created_seq``
    before a first merge, when its base is its copy of the origin's, plus those that may
    be no copy of it); None when every memory must be read (a restricted caller, a fork
    that does not hold all of its base, too many changes: :mod:`memfs.store.forkdiff`)."""
    row = store_row(conn, fork_id)
    if viewer is not None or row.fork_created_seq is None:
        return None
    if row.fork_merged_seq is not None:
        found = forkdiff.fork_side_changed(
            conn, row.forked_from, fork_id, int(row.fork_merged_seq), fork_now.seq, None
        )
    else:
        found = forkdiff.fork_side_changed(
            conn,
            row.forked_from,
            fork_id,
            int(row.fork_created_seq),
            fork_now.seq,
            int(row.fork_base_seq),
        )
    return None if found is None else sorted(found)


def _held(
    conn: Connection,
    origin_id: str,
    viewer: Viewer | None,
    ours: dict[str, StateEntry],
    theirs: dict[str, StateEntry],
    partial: bool,
) -> set[str | None]:
    """The digests of the origin's unredacted memories now; when ``ours`` is only part
    of them, those of the fork's contents (the digests a conflict copy may have), found
    by blob key (content-addressed: the same content, the same key; ``ix_memories_blob``)."""
    if partial:
        wanted = sorted({e.blob_key for e in theirs.values() if e.blob_key})
        ours = state_at(
            conn,
            _now(conn, origin_id),
            viewer,
            among=select(memories.c.id).where(
                memories.c.store_id == origin_id, memories.c.blob_key.in_(wanted)
            ),
        )
    return {entry.content_sha256 for entry in ours.values() if not entry.redacted}


def _step_order(step: MergeStep) -> tuple[str, ...]:
    """By path, then action; then by the memories, so that two steps at one path (two
    memories renamed to it) come in one order however the states were read."""
    return (
        step.path or step.path_before or "",
        step.action.value,
        step.fork_memory_id or "",
        step.origin_memory_id or "",
    )


def merge_fork(
    conn: Connection,
    fork_id: str,
    into: str | None,
    *,
    actor: Actor | None,
    reason: str | None,
    memory_limit: int,
    viewer: Viewer | None,
) -> MergePlan:
    """See :meth:`ForkingHistory.merge`; in the caller's write transaction."""
    origin_id = _base_point(conn, fork_id, into).store_id
    # The origin first, then the fork (every merge locks in this order).
    require_writable(lock_store(conn, origin_id))
    lock_store(conn, fork_id)
    base_at, steps, theirs = plan_merge(conn, fork_id, into, viewer)
    plan = MergePlan(
        fork_store_id=fork_id,
        origin_store_id=origin_id,
        base=base_at.text,
        steps=steps,
        snapshot=None,
        applied=True,
    )
    _record_merged(conn, fork_id, base_at, viewer)
    if all(step.action is MergeAction.KEEP for step in steps):
        return plan
    snapshot = auto_snapshot(conn, origin_id, "merge", f"before merging {fork_id}", actor)
    writer = _MergeWriter(conn, origin_id, fork_id, theirs, actor, memory_limit)
    done = [writer.delete(s, reason) for s in steps if s.action is MergeAction.DELETE]
    done += writer.updates([s for s in steps if s.action is MergeAction.UPDATE])
    done += [
        writer.create(s)
        for s in steps
        if s.action in (MergeAction.CREATE, MergeAction.CONFLICT_COPY)
    ]
    done += [s for s in steps if s.action is MergeAction.KEEP]
    plan = plan.model_copy(update={"steps": sorted(done, key=_step_order), "snapshot": snapshot})
    feed.audit(
        conn,
        origin_id,
        "store_merge",
        memory_id=None,
        actor=actor,
        reason=reason,
        metadata={
            "fork": fork_id,
            "base": base_at.text,
            "snapshot": snapshot.name,
            **{action.value: str(plan.count(action)) for action in MergeAction},
        },
    )
    return plan


class _MergeWriter:
    """The writes of one merge into the origin, in its transaction."""

    def __init__(
        self,
        conn: Connection,
        origin_id: str,
        fork_id: str,
        theirs: dict[str, StateEntry],
        actor: Actor | None,
        memory_limit: int,
    ) -> None:
        self.conn = conn
        self.origin_id = origin_id
        self.fork_id = fork_id
        self.by_fork_id = {entry.memory_id: entry for entry in theirs.values()}
        self.actor = actor
        self.memory_limit = memory_limit

    def _fork_text(self, step: MergeStep) -> str:
        assert step.fork_memory_id is not None
        data = blob_data(self.conn, self.by_fork_id[step.fork_memory_id].blob_key)
        assert data is not None
        return data.decode("utf-8")

    def delete(self, step: MergeStep, reason: str | None) -> MergeStep:
        assert step.origin_memory_id is not None
        delete_memory(
            self.conn,
            self.origin_id,
            step.origin_memory_id,
            actor=self.actor,
            expected_sha256=None,
            mode=DeleteMode.SOFT_DELETE,
            reason=reason,
            replacement="",
        )
        return step

    def updates(self, pending: list[MergeStep]) -> list[MergeStep]:
        """Moves in an order that frees each destination before it is taken; one still
        held by another memory at the end keeps its path (its content still moves)."""
        done: list[MergeStep] = []
        while pending:
            ready = [
                s
                for s in pending
                if s.path == s.path_before
                or not taken(self.conn, self.origin_id, str(s.path), s.origin_memory_id)
            ]
            if not ready:
                for step in pending:
                    kept = step.model_copy(
                        update={
                            "path": step.path_before,
                            "note": f"{step.path} is taken in the origin: its path is kept",
                        }
                    )
                    done.append(self._update(kept) if kept.content_changes else kept)
                break
            for step in ready:
                done.append(self._update(step))
                pending.remove(step)
        return done

    def _update(self, step: MergeStep) -> MergeStep:
        assert step.origin_memory_id is not None
        update_memory(
            self.conn,
            self.origin_id,
            step.origin_memory_id,
            actor=self.actor,
            content=self._fork_text(step) if step.content_changes else None,
            path=step.path,
            expected_sha256=None,
            metadata=None,
            replace=False,
        )
        return step

    def create(self, step: MergeStep) -> MergeStep:
        """A memory added on the fork, or a conflict copy: a new memory of the origin
        (beside its path, as a conflict copy, when that is taken)."""
        path = str(step.path)
        if taken(self.conn, self.origin_id, path, None):
            path = _beside(path, self.fork_id)
        created, _ = create_memory(
            self.conn,
            self.origin_id,
            path,
            self._fork_text(step),
            actor=self.actor,
            metadata=None,
            memory_limit=self.memory_limit,
        )
        if step.action is MergeAction.CREATE:
            # The fork's memory now has an origin: a later merge matches the two.
            self.conn.execute(
                update(memories)
                .where(memories.c.id == step.fork_memory_id)
                .values(origin_memory_id=created.id)
            )
        return step.model_copy(update={"origin_memory_id": created.id, "path": path})


def taken(conn: Connection, store_id: str, path: str, memory_id: str | None) -> bool:
    """Whether ``path`` is taken in the store for ``memory_id`` (SPEC §1: another live
    memory at it, above or below it)."""
    try:
        return check_path_free(conn, store_id, path, ignore_id=memory_id) is not None
    except PathConflict:
        return True


class ForkingHistory(History):
    """:class:`memfs.store.history.History` with the writes built on its reads: forking
    a store and merging a fork back. ``engine.for_caller(…).history`` is one."""

    def plan_merge(self, fork_id: str, *, into: str | None = None) -> MergePlan:
        """What :meth:`merge` would do (``--dry-run``), changing nothing.

        Raises:
            NotFound (a store), InvalidInput (no fork, or not of ``into``).
        """
        with self._read() as conn:
            base_at, steps, _ = plan_merge(conn, fork_id, into, self.viewer)
        return MergePlan(
            fork_store_id=fork_id,
            origin_store_id=base_at.store_id,
            base=base_at.text,
            steps=steps,
            snapshot=None,
            applied=False,
        )

    def merge(
        self, fork_id: str, *, into: str | None = None, reason: str | None = None
    ) -> MergePlan:
        """Merges a fork back into its origin (SPEC §10): three-way against the fork's
        base, memories matched by origin. Per memory: changed on the fork only (path,
        content or both) → the origin takes it; added on the fork → added (beside, as a
        conflict copy, when its path is taken); deleted on the fork and unchanged in the
        origin → soft-deleted; content changed on both sides to different texts → the
        origin keeps its own and the fork's is written beside it as a conflict copy
        (``name.conflict-<time>-<fork id>.ext``, SPEC §4), never dropped; renamed on
        both sides, or deleted on the fork but changed in the origin → the origin's is
        kept (a ``keep`` step says so). A memory created by the fork is then matched
        with the one it created, so merging again changes nothing.

        All of it in one transaction with both stores locked, after an automatic
        snapshot of the origin (``auto-merge-<time>``: restore to it to undo); every
        write attributed to the caller; one ``store_merge`` audit event.

        Args:
            fork_id: the fork.
            into: its origin (checked when given).
            reason: recorded with the audit event and the deletions.

        Raises:
            NotFound (a store), InvalidInput (no fork, or not a fork of ``into``),
            StoreArchived (the origin), StoreFull. Nothing is changed then.
        """
        with self._write() as conn:
            return merge_fork(
                conn,
                fork_id,
                into,
                actor=self.actor,
                reason=reason,
                memory_limit=self._parts.memory_limit,
                viewer=self.viewer,
            )

    def fork(
        self,
        store_id: str,
        *,
        at: Point | str = NOW,
        name: str,
        description: str | None = None,
    ) -> MemoryStore:
        """A new store whose memories are ``store_id``'s state at ``at`` (SPEC §10 fork),
        sharing their content (no byte copied), remembering its origin and base point
        (``forked_from``, ``fork_base``) and, per memory, its origin memory (diff and
        merge match by it). Each memory gets one ``created`` version attributed to the
        caller. Set-based: 10,000 memories fork in about a second. What the caller may
        not see (SPEC §6) and what is redacted at the point is not forked; see
        :mod:`memfs.store.forks`.

        Args:
            store_id: the origin (archived or not: a fork only reads it).
            at: the point (``now``, a time, a snapshot name, a ``memver_`` id).
            name, description: the new store's (SPEC §1 store rules).

        Returns:
            The new store, with ``forked_from`` and ``fork_base`` (the origin's version
            id at the point; None when the point is before its first version).

        Raises:
            NotFound: no such store.
            InvalidPoint: a bad point (named).
            InvalidStoreField: a bad name or description.
            Conflict: ``store_name_taken``, a store already has that name.
            StoreFull: the state holds more memories than a store may.
        """
        with self._write() as conn:
            return fork_store(
                conn,
                store_id,
                at,
                name=name,
                description=description,
                actor=self.actor,
                memory_limit=self._parts.memory_limit,
                viewer=self.viewer,
            )
