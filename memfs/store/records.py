"""The record index (SPEC §6): the only SQL of records; :class:`Records` reads it
(``engine.records``, ``engine.for_caller(viewer=…).records``).

``records``, ``record_tags``, ``record_relations`` and ``record_grants`` (schema.py) hold
the typed fields of every live memory whose head content is a record
(:func:`memfs.core.records.parse_record`). :func:`index_memory` and :func:`unindex_memory`
run inside the transaction of the write that changes the head (memfs/store/memories.py,
stores.py), so the index never lags the head; the parse itself happens before the
write starts, so a bad header changes nothing.

Relations are kept by memory id: a ``mem_…`` target is taken as written; a path target
is resolved to the live memory at that path when the record is indexed, and a
dangling path target is resolved when a memory later arrives at that path
(:func:`memories_arrived`). Re-indexing a record keeps a relation's earlier resolution
when its path no longer resolves, so renaming the target never loses it.

``last_accessed`` is written by :func:`touch` without a version (the engine batches
reads into it with an :class:`AccessLog`, memfs/store/engine.py). The time of a read
and the time decay is scored at come from the engine's clock (a fake one in tests);
a record never read has the time it was first indexed.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Connection,
    and_,
    bindparam,
    delete,
    func,
    insert,
    select,
    update,
)

from memfs.core.errors import InvalidInput, MemfsError
from memfs.core.records import (
    Record,
    RecordFilter,
    RecordHeader,
    RecordRelation,
    RecordScope,
    RecordSource,
    RecordType,
    RelationType,
    decay_score,
    half_life_days,
    parse_record,
)
from memfs.store import _hot, visibility
from memfs.store._common import ts
from memfs.store._facade import Facade
from memfs.store.schema import (
    blobs,
    memories,
    record_grants,
    record_relations,
    record_tags,
    records,
    stores,
    versions,
)

__all__ = [
    "ACCESS_FLUSH_INTERVAL_S",
    "AccessLog",
    "check_index",
    "check_relations",
    "filter_clause",
    "get_records",
    "index_memory",
    "list_records",
    "memories_arrived",
    "rebuild",
    "relations_to",
    "stores_with_records",
    "touch",
    "unindex_memory",
    "unindex_store",
]

log = logging.getLogger(__name__)

_SIDE_TABLES = (record_tags, record_relations, record_grants)


def _live_ids_at(conn: Connection, store_id: str, paths: Iterable[str]) -> dict[str, str]:
    wanted = sorted(set(paths))
    if not wanted:
        return {}
    rows = conn.execute(
        select(memories.c.path, memories.c.id).where(
            memories.c.store_id == store_id,
            memories.c.deleted_at.is_(None),
            memories.c.path.in_(wanted),
        )
    )
    return {row.path: row.id for row in rows}


def index_memory(
    conn: Connection,
    memory_id: str,
    store_id: str,
    header: RecordHeader | None,
    written_at: str,
    *,
    new: bool = False,
) -> None:
    """Makes the index hold ``header`` for the live memory ``memory_id`` (insert or
    replace; None: the memory is no record, and leaves the index), in the caller's
    write transaction. ``last_accessed`` of an indexed record is kept; a new one gets
    ``written_at`` (the write's timestamp as stored). ``new``: the memory was created
    in this transaction, so the index can't hold it yet (nothing is looked up)."""
    if header is None:
        if not new:
            unindex_memory(conn, memory_id)
        return
    kept = None if new else _hot.scalar(conn, _LAST_ACCESSED, {"memory_id": memory_id})
    earlier: dict[str, str] = {}
    if kept is not None:  # side rows exist only beside a records row (fsck checks it)
        earlier = {
            row.target_text: row.target_memory_id
            for row in conn.execute(
                select(record_relations.c.target_text, record_relations.c.target_memory_id).where(
                    record_relations.c.memory_id == memory_id,
                    record_relations.c.target_memory_id.is_not(None),
                )
            )
        }
        unindex_memory(conn, memory_id)
    conn.execute(
        insert(records).values(
            memory_id=memory_id,
            store_id=store_id,
            type=header.type.value,
            scope=header.scope.value,
            importance=header.importance,
            confidence=header.confidence,
            source=None if header.source is None else header.source.value,
            summary=header.summary,
            structured_json=None
            if header.structured is None
            else json.dumps(header.structured, ensure_ascii=False, sort_keys=True),
            user_id=header.user_id,
            agent_id=header.agent_id,
            tenant_id=header.tenant_id,
            last_accessed=kept or written_at,
        )
    )
    tags = list(dict.fromkeys(header.tags))
    if tags:
        conn.execute(
            insert(record_tags),
            [{"memory_id": memory_id, "tag": tag, "store_id": store_id} for tag in tags],
        )
    grants = list(
        dict.fromkeys(
            [("user", name) for name in header.allowed_users]
            + [("role", name) for name in header.allowed_roles]
        )
    )
    if grants:
        conn.execute(
            insert(record_grants),
            [
                {"memory_id": memory_id, "kind": kind, "principal": name, "store_id": store_id}
                for kind, name in grants
            ],
        )
    if header.relations:
        at_paths = _live_ids_at(
            conn, store_id, (r.target for r in header.relations if not r.target_is_id)
        )
        rows = []
        for position, relation in enumerate(header.relations):
            if relation.target_is_id:
                target_id: str | None = relation.target
            else:
                target_id = at_paths.get(relation.target, earlier.get(relation.target))
            rows.append(
                {
                    "memory_id": memory_id,
                    "position": position,
                    "store_id": store_id,
                    "type": relation.type.value,
                    "target_text": relation.target,
                    "target_memory_id": target_id,
                }
            )
        conn.execute(insert(record_relations), rows)


_WAITING = select(
    record_relations.c.memory_id,
    record_relations.c.position,
    record_relations.c.target_text,
).where(
    record_relations.c.store_id == bindparam("store_id"),
    record_relations.c.target_memory_id.is_(None),
)
_WAITING_FOR_PATH = _WAITING.where(record_relations.c.target_text == bindparam("path"))


def memories_arrived(conn: Connection, store_id: str, arrivals: Sequence[tuple[str, str]]) -> None:
    """Resolves the dangling path targets that name where memories just arrived
    (``arrivals``: ``(memory id, path)`` of a create, restore or move), so a relation
    written before its target existed points at it by id from now on."""
    if not arrivals:
        return
    paths = {path: memory_id for memory_id, path in arrivals}
    waiting: Sequence[Any]
    if len(paths) == 1:  # every single write: the hot path (memfs/store/_hot.py)
        (path,) = paths
        waiting = _hot.rows(conn, _WAITING_FOR_PATH, {"store_id": store_id, "path": path})
    else:
        waiting = conn.execute(
            _WAITING.where(record_relations.c.target_text.in_(sorted(paths))),
            {"store_id": store_id},
        ).all()
    for row in waiting:
        conn.execute(
            update(record_relations)
            .where(
                record_relations.c.memory_id == row.memory_id,
                record_relations.c.position == row.position,
            )
            .values(target_memory_id=paths[row.target_text])
        )


# Prebuilt (memfs.store._hot): every write of a memory that is no record runs the first.
_DELETE_RECORD = delete(records).where(records.c.memory_id == bindparam("memory_id"))
_DELETE_SIDE_ROWS = tuple(
    delete(table).where(table.c.memory_id == bindparam("memory_id")) for table in _SIDE_TABLES
)
_LAST_ACCESSED = select(records.c.last_accessed).where(
    records.c.memory_id == bindparam("memory_id")
)


def unindex_memory(conn: Connection, memory_id: str) -> None:
    """Removes a memory from the index (it stopped being live, or a record); no-op when
    it is not there. One statement when it is no record: side rows exist only beside a
    records row (fsck checks it), so none are looked for without one."""
    params = {"memory_id": memory_id}
    if _hot.run(conn, _DELETE_RECORD, params) == 0:
        return
    for statement in _DELETE_SIDE_ROWS:
        _hot.run(conn, statement, params)


def unindex_store(conn: Connection, store_id: str) -> None:
    """Removes every record of a store (its deletion)."""
    for table in (records, *_SIDE_TABLES):
        conn.execute(delete(table).where(table.c.store_id == store_id))


def rebuild(conn: Connection, written_at: str) -> list[str]:
    """Rebuilds the index from the live memories (a migration, a repair). A memory whose
    header breaks a rule (written before records existed) is left out.

    Returns:
        The ids of the memories left out for a broken header.
    """
    for table in (records, *_SIDE_TABLES):
        conn.execute(delete(table))
    broken = []
    rows = conn.execute(
        select(memories.c.id, memories.c.store_id, blobs.c.data)
        .join(blobs, blobs.c.key == memories.c.blob_key)
        .where(memories.c.deleted_at.is_(None))
        .order_by(memories.c.store_id, memories.c.path)
    ).all()
    for row in rows:
        try:
            header = parse_record(bytes(row.data).decode("utf-8"))
        except InvalidInput:
            broken.append(row.id)
            continue
        if header is not None:
            index_memory(conn, row.id, row.store_id, header, written_at)
    return broken


def touch(conn: Connection, accessed: Mapping[str, str]) -> int:
    """Sets ``last_accessed`` of records that were read (``accessed``: memory id →
    timestamp as stored), never moving it back; writes no version (SPEC §6). Ids that
    are not records are ignored. Returns how many rows moved."""
    if not accessed:
        return 0
    statement = (
        update(records)
        .where(
            records.c.memory_id == bindparam("memory_id_"),
            records.c.last_accessed < bindparam("at"),
        )
        .values(last_accessed=bindparam("at"))
    )
    result = conn.execute(
        statement, [{"memory_id_": mid, "at": at} for mid, at in sorted(accessed.items())]
    )
    return int(result.rowcount or 0)


# ------------------------------------------------------------------ queries


def filter_clause(record_filter: RecordFilter) -> ColumnElement[bool]:
    """A condition on ``records`` (joined or in a subquery) keeping what ``record_filter``
    keeps: the one translation of a filter to SQL, for listings and searches."""
    conditions: list[ColumnElement[bool]] = []
    if record_filter.record_type is not None:
        conditions.append(records.c.type == record_filter.record_type.value)
    if record_filter.scope is not None:
        conditions.append(records.c.scope == record_filter.scope.value)
    if record_filter.min_importance is not None:
        conditions.append(records.c.importance >= record_filter.min_importance)
    if record_filter.user_id is not None:
        conditions.append(records.c.user_id == record_filter.user_id)
    if record_filter.tag is not None:
        conditions.append(
            records.c.memory_id.in_(
                select(record_tags.c.memory_id).where(record_tags.c.tag == record_filter.tag)
            )
        )
    return and_(True, *conditions)


def records_matching(record_filter: RecordFilter) -> Any:
    """``SELECT memory_id FROM records WHERE <filter>``: for ``memories.c.id.in_(…)``."""
    return select(records.c.memory_id).where(filter_clause(record_filter))


def _half_lives(conn: Connection, store_ids: Iterable[str]) -> dict[str, float]:
    wanted = sorted(set(store_ids))
    if not wanted:
        return {}
    rows = conn.execute(
        select(stores.c.id, stores.c.metadata_json).where(stores.c.id.in_(wanted))
    ).all()
    return {row.id: half_life_days(json.loads(row.metadata_json)) for row in rows}


def _relations_by_source(
    conn: Connection, memory_ids: Sequence[str], paths: Mapping[str, str]
) -> dict[str, list[RecordRelation]]:
    rows = conn.execute(
        select(
            record_relations,
            memories.c.path.label("live_target_path"),
        )
        .outerjoin(
            memories,
            and_(
                memories.c.id == record_relations.c.target_memory_id,
                memories.c.deleted_at.is_(None),
            ),
        )
        .where(record_relations.c.memory_id.in_(list(memory_ids)))
        .order_by(record_relations.c.memory_id, record_relations.c.position)
    ).all()
    found: dict[str, list[RecordRelation]] = {}
    for row in rows:
        found.setdefault(row.memory_id, []).append(
            RecordRelation(
                type=RelationType(row.type),
                target=row.target_text,
                target_memory_id=row.target_memory_id,
                target_path=row.live_target_path,
                memory_id=row.memory_id,
                memory_path=paths.get(row.memory_id, ""),
            )
        )
    return found


def _record_rows(conn: Connection, where: ColumnElement[bool]) -> list[Any]:
    version_count = (
        select(func.count())
        .select_from(versions)
        .where(versions.c.memory_id == records.c.memory_id)
        .scalar_subquery()
    )
    return list(
        conn.execute(
            select(
                records,
                memories.c.path,
                memories.c.created_at,
                memories.c.updated_at,
                version_count.label("version"),
            )
            .join(memories, memories.c.id == records.c.memory_id)
            .where(where)
            .order_by(records.c.store_id, memories.c.path)
        ).all()
    )


def _records_of(conn: Connection, rows: Sequence[Any], at: datetime) -> list[Record]:
    if not rows:
        return []
    ids = [row.memory_id for row in rows]
    paths = {row.memory_id: row.path for row in rows}
    tags: dict[str, list[str]] = {}
    for memory_id, tag in conn.execute(
        select(record_tags.c.memory_id, record_tags.c.tag).where(record_tags.c.memory_id.in_(ids))
    ):
        tags.setdefault(memory_id, []).append(tag)
    grants: dict[tuple[str, str], list[str]] = {}
    for memory_id, kind, name in conn.execute(
        select(record_grants.c.memory_id, record_grants.c.kind, record_grants.c.principal).where(
            record_grants.c.memory_id.in_(ids)
        )
    ):
        grants.setdefault((memory_id, kind), []).append(name)
    relations = _relations_by_source(conn, ids, paths)
    half_lives = _half_lives(conn, (row.store_id for row in rows))
    result = []
    for row in rows:
        last_accessed = datetime.fromisoformat(row.last_accessed)
        result.append(
            Record(
                memory_id=row.memory_id,
                store_id=row.store_id,
                path=row.path,
                type=RecordType(row.type),
                scope=RecordScope(row.scope),
                importance=row.importance,
                confidence=row.confidence,
                source=None if row.source is None else RecordSource(row.source),
                summary=row.summary,
                structured=None if row.structured_json is None else json.loads(row.structured_json),
                user_id=row.user_id,
                agent_id=row.agent_id,
                tenant_id=row.tenant_id,
                tags=tuple(sorted(tags.get(row.memory_id, ()))),
                allowed_users=tuple(sorted(grants.get((row.memory_id, "user"), ()))),
                allowed_roles=tuple(sorted(grants.get((row.memory_id, "role"), ()))),
                relations=tuple(relations.get(row.memory_id, ())),
                version=int(row.version),
                created_at=datetime.fromisoformat(row.created_at),
                updated_at=datetime.fromisoformat(row.updated_at),
                last_accessed=last_accessed,
                decay_score=decay_score(
                    row.importance, last_accessed, at, half_lives.get(row.store_id, 30.0)
                ),
            )
        )
    return result


def get_records(conn: Connection, memory_ids: Sequence[str], at: datetime) -> dict[str, Record]:
    """See :meth:`memfs.store.records.Records.get`."""
    if not memory_ids:
        return {}
    rows = _record_rows(conn, records.c.memory_id.in_(sorted(set(memory_ids))))
    return {record.memory_id: record for record in _records_of(conn, rows, at)}


def list_records(
    conn: Connection, store_ids: Sequence[str] | None, record_filter: RecordFilter, at: datetime
) -> list[Record]:
    """See :meth:`memfs.store.records.Records.list`."""
    where = filter_clause(record_filter)
    if store_ids is not None:
        where = and_(where, records.c.store_id.in_(list(store_ids)))
    return _records_of(conn, _record_rows(conn, where), at)


def stores_with_records(conn: Connection, store_ids: Sequence[str]) -> set[str]:
    """See :meth:`memfs.store.records.Records.stores_with_records`."""
    found: set[str] = set()
    for store_id in sorted(set(store_ids)):
        one = select(records.c.memory_id).where(records.c.store_id == store_id).limit(1)
        if conn.execute(one).first() is not None:
            found.add(store_id)
    return found


def relations_to(conn: Connection, memory_id: str) -> list[RecordRelation]:
    """See :meth:`memfs.store.records.Records.relations_to`."""
    rows = conn.execute(
        select(record_relations, memories.c.path.label("source_path"))
        .join(memories, memories.c.id == record_relations.c.memory_id)
        .where(record_relations.c.target_memory_id == memory_id)
        .order_by(memories.c.path, record_relations.c.position)
    ).all()
    target_path = conn.execute(
        select(memories.c.path).where(memories.c.id == memory_id, memories.c.deleted_at.is_(None))
    ).scalar()
    return [
        RecordRelation(
            type=RelationType(row.type),
            target=row.target_text,
            target_memory_id=memory_id,
            target_path=target_path,
            memory_id=row.memory_id,
            memory_path=row.source_path,
        )
        for row in rows
    ]


# -------------------------------------------------------------------- fsck


def check_index(conn: Connection) -> Iterator[str]:
    """fsck: the index holds exactly the live memories whose head content is a valid
    record, with the fields of that header; side rows belong to indexed records."""
    indexed = {row.memory_id: row for row in conn.execute(select(records))}
    tags: dict[str, set[str]] = {}
    for memory_id, tag in conn.execute(select(record_tags.c.memory_id, record_tags.c.tag)):
        tags.setdefault(memory_id, set()).add(tag)
    live = conn.execute(
        select(memories.c.id, memories.c.store_id, blobs.c.data)
        .join(blobs, blobs.c.key == memories.c.blob_key)
        .where(memories.c.deleted_at.is_(None))
    )
    seen: set[str] = set()
    for memory in live:
        seen.add(memory.id)
        try:
            header = parse_record(bytes(memory.data).decode("utf-8"))
        except InvalidInput as exc:
            yield f"memory {memory.id}: its record header is invalid ({exc.message})"
            continue
        row = indexed.get(memory.id)
        if header is None:
            if row is not None:
                yield f"memory {memory.id}: in the record index but its content is no record"
            continue
        if row is None:
            yield f"memory {memory.id}: a record missing from the record index"
        elif (row.store_id, row.type, row.scope, row.importance, row.user_id) != (
            memory.store_id,
            header.type.value,
            header.scope.value,
            header.importance,
            header.user_id,
        ) or tags.get(memory.id, set()) != set(header.tags):
            yield f"memory {memory.id}: its record index row disagrees with its header"
    for memory_id in indexed.keys() - seen:
        yield f"record index row {memory_id}: not a live memory's record"
    for table in _SIDE_TABLES:
        for memory_id in set(conn.execute(select(table.c.memory_id)).scalars()) - indexed.keys():
            yield f"{table.name} row of {memory_id}: no such record in the index"


def check_relations(conn: Connection) -> Iterator[str]:
    """``fsck --records``: every relation whose target is not a live memory (dangling:
    reported, never refused, SPEC §6)."""
    source = memories.alias("source")
    target = memories.alias("target")
    rows = conn.execute(
        select(
            record_relations.c.memory_id,
            record_relations.c.type,
            record_relations.c.target_text,
            source.c.path,
            source.c.store_id,
        )
        .join(source, source.c.id == record_relations.c.memory_id)
        .outerjoin(
            target,
            and_(target.c.id == record_relations.c.target_memory_id, target.c.deleted_at.is_(None)),
        )
        .where(target.c.id.is_(None))
        .order_by(source.c.store_id, source.c.path, record_relations.c.position)
    )
    for row in rows:
        yield (
            f"record {row.path} ({row.memory_id}, store {row.store_id}): relation "
            f"{row.type} → {row.target_text} is dangling (no live memory there)"
        )


# ---------------------------------------------------------------- access log

# How long reads gather before their last_accessed is written (one UPDATE per batch).
ACCESS_FLUSH_INTERVAL_S = 2.0


class AccessLog:
    """Batches the reads of records into ``last_accessed`` (SPEC §6: set on a read,
    without a version), so a read costs a dict update, not a write transaction.

    :meth:`note` records the time of a read (``clock``) in memory; a timer thread
    (``memfs-access-log``) hands the batch to ``flush`` :data:`ACCESS_FLUSH_INTERVAL_S`
    after the first unflushed read; :meth:`close` flushes what is left. A batch whose
    write fails (the database is busy or read-only) is dropped and logged: a lost
    access time only makes a record look older, it loses nothing a user wrote.

    Args:
        flush: writes one batch (memory id → timestamp as stored), in its own
            transaction; called from the timer thread or the closing thread.
        clock: the time of a read.
        interval_s: the batching delay.
    """

    def __init__(
        self,
        flush: Callable[[dict[str, str]], None],
        *,
        clock: Callable[[], datetime],
        interval_s: float = ACCESS_FLUSH_INTERVAL_S,
    ) -> None:
        self._flush = flush
        self._clock = clock
        self._interval_s = interval_s
        self._lock = threading.Lock()  # guards _pending, _timer, _closed
        self._writing = threading.Lock()  # one batch written at a time
        self._pending: dict[str, str] = {}
        self._timer: threading.Timer | None = None
        self._closed = False

    def note(self, memory_ids: Iterable[str]) -> None:
        """Records that ``memory_ids`` were read now (non-records are ignored later)."""
        at = ts(self._clock())
        with self._lock:
            if self._closed:
                return
            for memory_id in memory_ids:
                self._pending[memory_id] = at
            if self._pending and self._timer is None:
                self._timer = threading.Timer(self._interval_s, self._tick)
                self._timer.name = "memfs-access-log"
                self._timer.daemon = True
                self._timer.start()

    def pending(self) -> dict[str, str]:
        """A copy of the reads not written yet (memory id → timestamp)."""
        with self._lock:
            return dict(self._pending)

    def flush(self) -> None:
        """Writes the pending reads now (the caller's thread); returns after any write
        already under way in another thread (so :meth:`close` leaves none running)."""
        with self._writing:
            with self._lock:
                batch, self._pending = self._pending, {}
                timer, self._timer = self._timer, None
            if timer is not None:
                timer.cancel()
            if not batch:
                return
            try:
                self._flush(batch)
            except MemfsError as exc:
                log.warning("last_accessed of %d record(s) not written: %s", len(batch), exc)

    def _tick(self) -> None:
        with self._lock:
            self._timer = None
        self.flush()

    def close(self) -> None:
        """Flushes and stops: later reads are not recorded."""
        self.flush()
        with self._lock:
            self._closed = True


class Records(Facade):
    """The record index as one caller sees it: records hidden from its viewer are
    absent, and a relation's target hidden from it has no ``target_path`` (SPEC §6)."""

    def get(self, memory_ids: Sequence[str]) -> dict[str, Record]:
        """The index entries of those of ``memory_ids`` that are live records (SPEC §6),
        by memory id; ids that are no record (or unknown, or hidden from the viewer) are
        absent, and a relation's target hidden from the viewer has no ``target_path``
        (it shows as written, never where it is). One transaction whatever the number
        of ids (the API's ``record`` objects of a page)."""
        with self._read() as conn:
            found = get_records(conn, list(memory_ids), self._parts.clock())
            if self.viewer is None:
                return found
            return visibility.visible_records(conn, self.viewer, found)

    def stores_with_records(self, store_ids: Sequence[str]) -> set[str]:
        """Those of ``store_ids`` that hold at least one live record (``memfs prompt``
        explains the record header only then). One indexed probe per store."""
        with self._read() as conn:
            return stores_with_records(conn, list(store_ids))

    def relations_to(self, memory_id: str) -> list[RecordRelation]:
        """The relations of live records whose target resolved to ``memory_id`` (what
        points to it), by source path; ``memfs record show`` lists them beside the
        record's own :attr:`Record.relations`. Those of records hidden from the viewer
        are left out."""
        with self._read() as conn:
            found = relations_to(conn, memory_id)
            if self.viewer is None:
                return found
            hidden = visibility.hidden_among(conn, self.viewer, [r.memory_id for r in found])
            return [r for r in found if r.memory_id not in hidden]

    def note_access(self, memory_ids: Sequence[str]) -> None:
        """Records that ``memory_ids`` were read (SPEC §6 ``last_accessed``: an open for
        reading through a mount, a full retrieve, a memory-tool or MCP view, a fetched
        search hit). Costs no transaction: the reads are written in batches, without a
        version, within :data:`ACCESS_FLUSH_INTERVAL_S` and when the engine closes (see
        :meth:`flush_access`). A read-only engine records nothing."""
        self._parts.note_access(memory_ids)

    def flush_access(self) -> None:
        """Writes the reads :meth:`note_access` gathered now (tests, ``memfs record``)."""
        self._parts.flush_access()

    def findings(self) -> list[str]:
        """``memfs fsck --records``: one line per dangling relation (a target that is no
        live memory; SPEC §6 reports them, never refuses them)."""
        with self._read() as conn:
            return list(check_relations(conn))

    def list(
        self, store_ids: Sequence[str] | None, record_filter: RecordFilter | None = None
    ) -> list[Record]:
        """The live records of ``store_ids`` (None: every store) that ``record_filter``
        keeps and the viewer sees, by store then path (SPEC §6 curation; ``memfs record
        ls``)."""
        with self._read() as conn:
            found = list_records(
                conn,
                None if store_ids is None else list(store_ids),
                record_filter or RecordFilter(),
                self._parts.clock(),
            )
            if self.viewer is None:
                return found
            hidden = visibility.hidden_among(conn, self.viewer, [r.memory_id for r in found])
            return [r for r in found if r.memory_id not in hidden]
