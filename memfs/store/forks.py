"""Forks of a store (SPEC §10): a new store whose memories are another store's state at
a point, and what a fork needs of its origin's history. Called through
:meth:`ForkingHistory.fork` (``engine.for_caller(…).history.fork``).

**What a fork is.** An ordinary store (mountable, searchable, its own retention) with
three more facts on its row: ``forked_from`` (the origin's id), ``fork_base_seq`` (the
origin's point, :mod:`memfs.store.history`) and ``fork_base_version_id`` (the origin's
version at that seq, shown as ``fork_base``: itself a point of the origin). Each of its
memories made by the fork carries ``origin_memory_id``, the origin memory it copies, by
which diff and merge match the two stores (a rename on either side keeps the match).

**Cost.** Content is shared, not copied: blobs are content-addressed, so a forked
memory's version references the origin version's blob and no byte is written. The
rows are written set-based (one executemany per table, one INSERT … SELECT for the
search documents and the embedding queue): 10,000 memories fork in about a second
(``tests/store/test_engine_fork.py`` measures it). Only memories that are records
(SPEC §6) are indexed one by one, since their typed header must be parsed.

**Rules.** Every forked memory gets one ``created`` version attributed to the caller
(the fork is a write of theirs, not a replay of the origin's authors; the origin's
history stays in the origin). Memory ``metadata`` is not versioned: a forked memory
takes its origin memory's metadata of today. A memory whose version at the point is
redacted is not forked (redaction wins, SPEC §2: there is nothing to copy), nor is
one hidden from the caller (SPEC §6 visibility: a restricted caller's fork holds only
what it may see, so a fork never widens what anyone reads). The fork is audited as
one ``store_fork`` event in the fork's log and in the origin's.

**Retention.** While the origin lives, its retention keeps every version the fork's
base needs (:func:`memfs.store.snapshots.needed_version_seqs`, read by
:mod:`memfs.store.retention`; ``memfs
fsck`` checks it), so a merge can always read the base.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from sqlalchemy import Connection, bindparam, select, update

from memfs.core.errors import InvalidInput, StoreFull
from memfs.core.history import ResolvedPoint, StateEntry
from memfs.core.ids import new_id
from memfs.core.model import Actor, ChangeKind, MemoryStore, Operation
from memfs.core.points import NOW, Point
from memfs.core.records import parse_record
from memfs.core.visibility import Viewer
from memfs.store import feed, search
from memfs.store import records as record_index
from memfs.store._common import execute_many, lock_store, now, store_row
from memfs.store.history import History, resolve_point, state_at
from memfs.store.schema import blobs, memories, stores, versions
from memfs.store.stores import create_store, get_store
from memfs.store.versions import insert_versions

__all__ = ["ForkingHistory", "base_point", "fork_store"]

_CHUNK = 500  # ids per IN list when reading blobs (well under every driver's limit)


def _blob_texts(conn: Connection, keys: Iterable[str]) -> dict[str, str]:
    wanted = sorted(set(keys))
    found: dict[str, str] = {}
    statement = select(blobs.c.key, blobs.c.data).where(
        blobs.c.key.in_(bindparam("keys", expanding=True))
    )
    for start in range(0, len(wanted), _CHUNK):
        for key, data in conn.execute(statement, {"keys": wanted[start : start + _CHUNK]}):
            found[key] = bytes(data).decode("utf-8")
    return found


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
    metadata = _metadata_of(conn, [entry.memory_id for entry in entries])
    execute_many(
        conn,
        "INSERT INTO memories (id, store_id, path, blob_key, content_sha256, size_bytes,"
        " head_version_id, metadata_json, created_at, updated_at, origin_memory_id)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
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


def _metadata_of(conn: Connection, memory_ids: list[str]) -> dict[str, str]:
    """Today's ``metadata_json`` of the origin memories (not versioned: see the module
    docstring)."""
    found: dict[str, str] = {}
    statement = select(memories.c.id, memories.c.metadata_json).where(
        memories.c.id.in_(bindparam("ids", expanding=True))
    )
    for start in range(0, len(memory_ids), _CHUNK):
        for memory_id, raw in conn.execute(statement, {"ids": memory_ids[start : start + _CHUNK]}):
            found[memory_id] = raw
    return found


def _index_records(
    conn: Connection,
    store_id: str,
    memory_ids: list[str],
    entries: list[StateEntry],
    written: str,
) -> None:
    """Indexes the forked memories that are records (SPEC §6). A record's header starts
    the content (front matter), so only contents that start with one are read whole."""
    texts = _blob_texts(conn, (e.blob_key for e in entries if e.blob_key is not None))
    for memory_id, entry in zip(memory_ids, entries, strict=True):
        text = texts.get(entry.blob_key or "")
        if text is None or not text.startswith("---"):
            continue
        try:
            header = parse_record(text)
        except InvalidInput:
            continue  # written before records existed: left out, as a rebuild does
        if header is not None:
            record_index.index_memory(conn, memory_id, store_id, header, written, new=True)
    record_index.memories_arrived(
        conn, store_id, [(m, e.path) for m, e in zip(memory_ids, entries, strict=True) if e.path]
    )


def base_point(conn: Connection, fork_id: str) -> ResolvedPoint:
    """The fork's base as a point of its origin (what a merge diffs against).

    Raises:
        InvalidInput: the store is no fork.
        NotFound: its origin is gone.
    """
    row: Any = store_row(conn, fork_id)
    if row.forked_from is None:
        raise InvalidInput(f"memory store {fork_id!r} is not a fork")
    store_row(conn, row.forked_from)
    text = row.fork_base_version_id or "the empty store"
    return ResolvedPoint(store_id=row.forked_from, text=text, seq=int(row.fork_base_seq))


class ForkingHistory(History):
    """:class:`memfs.store.history.History` with the writes built on its reads: forking
    a store (and merging a fork back). ``engine.for_caller(…).history`` is one."""

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
