"""A store as it was (SPEC §10): points resolved to a sequence number, as-of reads, and
the diff of two states; :class:`History` is their facade (``engine.history``,
``engine.for_caller(…).history``).

**The order of a store's history.** ``versions.seq`` is one write order for the whole
database; restricted to one store it is that store's history in commit order, because
every write locks the store row before it inserts a version (``lock_store``; SQLite's
``BEGIN IMMEDIATE``), so a version committed later always has a greater seq. A point
resolves to one such seq ``N`` (:func:`resolve_point`): the state at ``N`` is, per
memory, its newest version with ``seq <= N``, unless that version is a ``deleted`` one.
A reader that resolves ``now`` while a write is in flight gets the seq of the last
committed version: the write lands after the point, never inside it.

**Cost.** Nothing is replayed. A page of an as-of listing walks the store's versions in
path order from its cursor (index ``ix_versions_store_path_seq``) and keeps a version
when no newer one of its memory is at or before ``N`` (an index probe of
``ix_versions_memory_seq``), so it reads about as many index entries as a listing now
reads rows, times the versions per path. A read by id is one probe; a whole state (a
diff) one probe per memory row.

**Redaction and visibility.** A redacted version has no path (SPEC §2 erases it with the
content): a memory whose version at the point is redacted is listed under no path, is
not found by path, and read by id raises :class:`RedactedContent`; it never shows
content. What is hidden from the viewer (SPEC §6) is hidden in the past too: a memory
live today by today's record index, one that is not live by its content at the point
(as :func:`memfs.store.visibility.visible_versions` judges versions).

Limitations: memory ``metadata`` is not versioned, so as-of memories carry ``{}``;
versions pruned by retention (SPEC §2) are gone from every point they are not kept for
(snapshots keep theirs, :mod:`memfs.store.retention`).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Connection, Row, func, literal, select

from memfs.core import rules
from memfs.core.errors import (
    CorruptedStore,
    InvalidCursor,
    InvalidInput,
    InvalidPoint,
    NotFound,
    RedactedContent,
)
from memfs.core.history import (
    DiffEntry,
    DiffStatus,
    ResolvedPoint,
    StateEntry,
    StoreDiff,
    classify,
    unified_diff,
)
from memfs.core.model import (
    Memory,
    MemoryPrefix,
    Operation,
    Page,
    format_timestamp,
    utcnow,
)
from memfs.core.points import NOW, Point, PointKind, is_snapshot_id, parse_point
from memfs.core.visibility import Viewer
from memfs.store import forkdiff, visibility
from memfs.store._common import Cursor, check_limit, descendant_upper_bound, store_row, ts
from memfs.store._facade import Facade
from memfs.store.blobs import blob_data, read_blobs
from memfs.store.schema import memories, snapshots, versions

__all__ = [
    "History",
    "all_as_of",
    "get_as_of",
    "keyed_state",
    "origin_keys",
    "list_as_of",
    "resolve_point",
    "state_at",
    "store_seq",
]

_DELETED = Operation.DELETED.value
_Entries = list[StateEntry]
_Memories = list[Memory]
_ROLL_UP_BATCH = 8  # (the facade's own ``list`` hides the builtin in its body)
_BLOB_BATCH = 500  # blob keys per query of a diff's contents
_newer = versions.alias("newer")


def _newest_at(seq: Any) -> Any:
    """WHERE clause: the ``versions`` row is its memory's newest at or before ``seq``."""
    newer = (
        select(literal(1))
        .where(
            _newer.c.memory_id == versions.c.memory_id,
            _newer.c.seq > versions.c.seq,
            _newer.c.seq <= seq,
        )
        .exists()
    )
    return ~newer


# One memory as of a point: its version's columns, the memory's creation time and
# whether it is live today (visibility of the past judges the others by content).
_AS_OF_COLUMNS = (
    versions.c.memory_id,
    versions.c.id,
    versions.c.path,
    versions.c.blob_key,
    versions.c.content_sha256,
    versions.c.size_bytes,
    versions.c.created_at,
    versions.c.operation,
    memories.c.created_at.label("memory_created_at"),
    memories.c.deleted_at.label("memory_deleted_at"),
)
_AS_OF_FROM = versions.join(memories, memories.c.id == versions.c.memory_id)


def store_seq(conn: Connection, store_id: str) -> int:
    """The seq of the store's newest version (0: it has none): the point ``now``."""
    seq = conn.execute(
        select(func.max(versions.c.seq)).where(versions.c.store_id == store_id)
    ).scalar()
    return 0 if seq is None else int(seq)


def resolve_point(conn: Connection, store_id: str, point: Point | str) -> ResolvedPoint:
    """The seq a point names in one store (SPEC §10).

    Args:
        store_id: the store.
        point: a parsed point, or its text (parsed by :func:`memfs.core.points.parse_point`).

    Returns:
        The :class:`ResolvedPoint`. A time before the store existed (or before its
        first version) resolves to seq 0, the empty store.

    Raises:
        NotFound: no such store.
        InvalidPoint: unparsable text; a time in the future; a version id, a
            snapshot name or a ``snap_`` id the store does not have (each named).
    """
    if isinstance(point, str):
        point = parse_point(point)
    store_row(conn, store_id)
    if point.kind is PointKind.NOW:
        seq = store_seq(conn, store_id)
    elif point.kind is PointKind.TIME:
        assert point.time is not None
        current = utcnow()
        if point.time > current:
            raise InvalidPoint(
                f"point {point.text!r} is in the future (it is now {format_timestamp(current)})"
            )
        found = conn.execute(
            select(versions.c.seq)
            .where(versions.c.store_id == store_id, versions.c.created_at <= ts(point.time))
            .order_by(versions.c.seq.desc())
            .limit(1)
        ).scalar()
        seq = 0 if found is None else int(found)
    elif point.kind is PointKind.VERSION:
        found = conn.execute(
            select(versions.c.seq).where(
                versions.c.id == point.name, versions.c.store_id == store_id
            )
        ).scalar()
        if found is None:
            raise InvalidPoint(
                f"point {point.text!r}: memory store {store_id!r} has no such version"
            )
        seq = int(found)
    else:
        by_id = is_snapshot_id(str(point.name))
        snapshot = conn.execute(
            select(snapshots.c.seq, snapshots.c.name).where(
                snapshots.c.store_id == store_id,
                (snapshots.c.id if by_id else snapshots.c.name) == point.name,
            )
        ).first()
        if snapshot is None:
            raise InvalidPoint(
                f"point {point.text!r}: memory store {store_id!r} has no snapshot "
                f"{'of that id' if by_id else 'of that name'}"
            )
        return ResolvedPoint(
            store_id=store_id, text=point.text, seq=int(snapshot.seq),
            snapshot_name=snapshot.name,
        )
    return ResolvedPoint(store_id=store_id, text=point.text, seq=seq)


def _memory(store_id: str, row: Row[Any], content: bytes | None) -> Memory:
    """The Memory of an as-of row. Built without validation, as
    :func:`memfs.store.listing.all_memories` builds a mount's tree: every field comes
    from a row the store wrote, with its type (validation was a third of a listing)."""
    memory_id, version_id, path, blob_key, sha, size, written, _, created, _ = row
    return Memory.model_construct(
        id=memory_id,
        memory_store_id=store_id,
        path=path,
        content=None if content is None else content.decode("utf-8"),
        content_sha256=sha,
        content_size_bytes=size,
        memory_version_id=version_id,
        metadata={},
        created_at=datetime.fromisoformat(created),
        updated_at=datetime.fromisoformat(written),
        blob_key=blob_key or "",
        deleted_at=None,
    )


def _visible(conn: Connection, viewer: Viewer | None, row: Row[Any]) -> bool:
    """A memory not live today is judged by its content at the point (SPEC §6); a live
    one was judged in the query, by today's record index."""
    if viewer is None or row.memory_deleted_at is None:
        return True
    data = blob_data(conn, row.blob_key)
    return visibility.content_visible(viewer, None if data is None else data.decode("utf-8"))


def _as_of_query(store_id: str, seq: int, viewer: Viewer | None) -> Any:
    return (
        select(*_AS_OF_COLUMNS)
        .select_from(_AS_OF_FROM)
        .where(
            versions.c.store_id == store_id,
            versions.c.seq <= seq,
            versions.c.operation != _DELETED,
            _newest_at(seq),
            visibility.visible_clause(viewer, versions.c.memory_id),  # SPEC §6
        )
    )


def _page_rows(
    conn: Connection,
    at: ResolvedPoint,
    path_prefix: str,
    depth: int,
    limit: int,
    position: tuple[str, str],
    viewer: Viewer | None,
) -> list[Row[Any] | MemoryPrefix]:
    """Up to ``limit + 1`` items from ``position`` (as
    :func:`memfs.store.listing._page_rows` walks the memories now)."""
    op, key = position
    upper = descendant_upper_bound(path_prefix) if path_prefix != "/" else None
    base = _as_of_query(at.store_id, at.seq, viewer)
    items: list[Row[Any] | MemoryPrefix] = []
    while len(items) <= limit:
        batch = limit + 1 - len(items)
        if depth:
            # A rolled-up directory ends the batch at its first memory: read a few rows
            # at a time, not a page's worth of rows each as-of test costs.
            batch = min(batch, _ROLL_UP_BATCH)
        query = base.where(versions.c.path > key if op == ">" else versions.c.path >= key)
        if upper is not None:
            query = query.where(versions.c.path < upper)
        rows = conn.execute(query.order_by(versions.c.path).limit(batch)).all()
        if not rows:
            break
        rolled_up = False
        for row in rows:
            op, key = ">", row.path
            if not _visible(conn, viewer, row):
                continue
            rel = row.path[len(path_prefix) :].split("/")
            if depth == 0 or len(rel) <= depth:
                items.append(row)
            else:
                prefix = path_prefix + "/".join(rel[:depth]) + "/"
                items.append(MemoryPrefix(path=prefix))
                op, key = ">=", descendant_upper_bound(prefix)
                rolled_up = True
                break
            if len(items) > limit:
                break
        if not rolled_up and len(rows) < batch:
            break
    return items


def list_as_of(
    conn: Connection,
    at: ResolvedPoint,
    *,
    path_prefix: str,
    depth: int,
    limit: int,
    cursor: str | None,
    with_content: bool,
    viewer: Viewer | None,
) -> Page[Memory | MemoryPrefix]:
    """See :meth:`History.list`."""
    rules.validate_path_prefix(path_prefix)
    if not isinstance(depth, int) or isinstance(depth, bool) or depth < 0:
        raise InvalidInput("depth must be an integer ≥ 0")
    check_limit(limit)
    # The point as written, not its seq: pages of a listing at ``now`` continue by path
    # across writes made between them, as the pages of a listing now do.
    fingerprint = Cursor.fingerprint("memories@", at.store_id, at.text, path_prefix, depth)
    position = (">=", path_prefix)
    if cursor is not None:
        decoded = Cursor.decode(cursor, fingerprint)
        if not (isinstance(decoded, list) and len(decoded) == 2 and decoded[0] in (">", ">=")):
            raise InvalidCursor("page cursor is malformed")
        position = (decoded[0], str(decoded[1]))
    items = _page_rows(conn, at, path_prefix, depth, limit, position, viewer)
    result: list[Memory | MemoryPrefix] = [
        item
        if isinstance(item, MemoryPrefix)
        else _memory(at.store_id, item, blob_data(conn, item.blob_key) if with_content else None)
        for item in items[:limit]
    ]
    next_cursor = None
    if len(items) > limit and result:
        last = result[-1]
        after = (
            [">=", descendant_upper_bound(last.path)]
            if isinstance(last, MemoryPrefix)
            else [">", last.path]
        )
        next_cursor = Cursor.encode(fingerprint, after)
    return Page[Memory | MemoryPrefix](items=result, next_cursor=next_cursor)


def all_as_of(conn: Connection, at: ResolvedPoint, viewer: Viewer | None) -> list[Memory]:
    """See :meth:`History.all`: one query in path order, no pages."""
    rows = conn.execute(_as_of_query(at.store_id, at.seq, viewer).order_by(versions.c.path))
    return [
        _memory(at.store_id, row, None)
        for row in rows
        if row.path is not None and _visible(conn, viewer, row)
    ]


def get_as_of(
    conn: Connection,
    at: ResolvedPoint,
    *,
    memory_id: str | None = None,
    path: str | None = None,
    with_content: bool,
    viewer: Viewer | None,
) -> Memory:
    """See :meth:`History.get` (by ``memory_id``) and :meth:`History.get_by_path`."""
    store_id = at.store_id
    if path is not None:
        rules.validate_path(path)
        row = conn.execute(
            _as_of_query(store_id, at.seq, viewer).where(versions.c.path == path).limit(1)
        ).first()
        if row is None or not _visible(conn, viewer, row):
            raise NotFound(f"no memory at {path!r} in memory store {store_id!r} at {at.text}")
    else:
        visibility.require_visible(conn, viewer, str(memory_id))
        row = conn.execute(
            select(*_AS_OF_COLUMNS)
            .select_from(_AS_OF_FROM)
            .where(
                versions.c.memory_id == memory_id,
                versions.c.store_id == store_id,
                versions.c.seq <= at.seq,
            )
            .order_by(versions.c.seq.desc())
            .limit(1)
        ).first()
        if row is None or row.operation == _DELETED or not _visible(conn, viewer, row):
            raise NotFound(
                f"memory {memory_id!r} not found in memory store {store_id!r} at {at.text}"
            )
        if row.path is None:
            raise RedactedContent(
                f"memory {memory_id!r} at {at.text} is the redacted version {row.id!r}: "
                "its content and path are erased"
            )
    return _memory(store_id, row, blob_data(conn, row.blob_key) if with_content else None)


def state_at(
    conn: Connection,
    at: ResolvedPoint,
    viewer: Viewer | None,
    changed_in: tuple[int, int] | None = None,
    among: Any = None,
) -> dict[str, StateEntry]:
    """Every memory of the store at the point, by id, without content (redacted ones
    with path None): one index probe per memory row of the store.

    ``changed_in`` ``(low, high)``: only the memories with a version of seq in
    ``(low, high]`` (what can differ between two points of one store: one probe per
    version in the range, not per memory). ``among``: only the memories of these ids (a
    list, or a SELECT of one column): what can differ from a fork's origin
    (:mod:`memfs.store.forkdiff`)."""
    newest = (
        select(func.max(versions.c.seq))
        .where(versions.c.memory_id == memories.c.id, versions.c.seq <= at.seq)
        .scalar_subquery()
    )
    seqs = select(newest).where(
        memories.c.store_id == at.store_id, visibility.visible_clause(viewer, memories.c.id)
    )
    if changed_in is not None:
        low, high = changed_in
        seqs = seqs.where(
            memories.c.id.in_(
                select(versions.c.memory_id).where(
                    versions.c.store_id == at.store_id,
                    versions.c.seq > low,
                    versions.c.seq <= high,
                )
            )
        )
    if among is not None:
        seqs = seqs.where(memories.c.id.in_(among))
    rows = conn.execute(
        select(*_AS_OF_COLUMNS)
        .select_from(_AS_OF_FROM)
        .where(versions.c.seq.in_(seqs), versions.c.operation != _DELETED)
    ).all()
    return {
        row.memory_id: StateEntry(
            memory_id=row.memory_id,
            version_id=row.id,
            path=row.path,
            content_sha256=row.content_sha256,
            size_bytes=row.size_bytes,
            blob_key=row.blob_key,
        )
        for row in rows
        if _visible(conn, viewer, row)
    }


def _texts(conn: Connection, keys: list[str]) -> dict[str, str]:
    """The content of many blobs by key, in queries of ``_BLOB_BATCH`` keys.

    Raises:
        CorruptedStore: a referenced blob is missing.
    """
    found: dict[str, str] = {}
    for start in range(0, len(keys), _BLOB_BATCH):
        chunk = keys[start : start + _BLOB_BATCH]
        found.update(
            (key, data.decode("utf-8")) for key, data in read_blobs(conn, chunk).items()
        )
    missing = set(keys) - set(found)
    if missing:
        raise CorruptedStore(f"blob {min(missing)} is referenced but missing")
    return found


def origin_keys(
    conn: Connection, store_id: str, other_store_id: str, among: Any = None
) -> dict[str, str] | None:
    """How to match ``store_id``'s memories with ``other_store_id``'s (SPEC §10 diff
    across a fork): memory id → the key it is matched by (its ``origin_memory_id``),
    when ``store_id`` is a fork of ``other_store_id`` or both are forks of one origin;
    None when its memories match by their own ids (the same store, the origin side, or
    unrelated stores). A memory made in the fork keeps its own id as its key.
    ``among``: only the memories of these ids (a list, or a SELECT of one column)."""
    if store_id == other_store_id:
        return None
    row = store_row(conn, store_id)
    other = store_row(conn, other_store_id)
    if row.forked_from is None or row.forked_from not in (other_store_id, other.forked_from):
        return None
    query = select(memories.c.id, memories.c.origin_memory_id).where(
        memories.c.store_id == store_id
    )
    if among is not None:
        query = query.where(memories.c.id.in_(among))
    return {
        memory_id: origin or memory_id for memory_id, origin in conn.execute(query).tuples()
    }


def keyed_state(
    conn: Connection,
    at: ResolvedPoint,
    other_store_id: str,
    viewer: Viewer | None,
    changed_in: tuple[int, int] | None = None,
    among: Any = None,
) -> dict[str, StateEntry]:
    """:func:`state_at`, keyed as :func:`origin_keys` matches it with the other side."""
    state = state_at(conn, at, viewer, changed_in, among)
    keys = origin_keys(conn, at.store_id, other_store_id, among)
    if keys is None:
        return state
    return {keys.get(memory_id, memory_id): entry for memory_id, entry in state.items()}


def _side(among: dict[str, Any] | None, store_id: str) -> Any:
    return None if among is None else among[store_id]


def diff_states(
    conn: Connection,
    old: ResolvedPoint,
    new: ResolvedPoint,
    viewer: Viewer | None,
    *,
    forked_only: bool = False,
) -> StoreDiff:
    """See :meth:`History.diff`. Two points of one store differ only in the memories
    with a version between them, so only those are read (a diff of 1,000 changes costs
    about 1,000 probes, whatever the store holds); a fork and its origin only in the
    memories changed on either side since the fork (:func:`memfs.store.forkdiff.changed`);
    all contents in a few queries."""
    entries: list[DiffEntry] = []
    changed_in = (
        (min(old.seq, new.seq), max(old.seq, new.seq)) if old.store_id == new.store_id else None
    )
    # A fork and its origin differ only in what changed on either side since the fork
    # (memfs.store.forkdiff); None when that can't be told, and both are read whole.
    among = None if changed_in is not None else forkdiff.changed(conn, old, new, viewer)
    found = classify(
        keyed_state(conn, old, new.store_id, viewer, changed_in, _side(among, old.store_id)),
        keyed_state(conn, new, old.store_id, viewer, changed_in, _side(among, new.store_id)),
    )
    if forked_only and store_row(conn, new.store_id).forked_from == old.store_id:
        # Absent from the fork because it never had it: not something the fork did.
        forked = set((origin_keys(conn, new.store_id, old.store_id) or {}).values())
        found = [
            (status, before, after)
            for status, before, after in found
            if after is not None or before is None or before.memory_id in forked
        ]
    texts = _texts(
        conn,
        sorted(
            {
                str(entry.blob_key)
                for _, before, after in found
                for entry in (before, after)
                if entry is not None and entry.blob_key is not None
            }
        ),
    )

    def text_of(entry: StateEntry | None) -> str | None:
        return None if entry is None or entry.blob_key is None else texts[entry.blob_key]

    for status, before, after in found:
        redacted = (before is not None and before.redacted) or (
            after is not None and after.redacted
        )
        changed = (
            status is not DiffStatus.RENAMED
            or redacted
            or (
                before is not None
                and after is not None
                and before.content_sha256 != after.content_sha256
            )
        )
        text, insertions, deletions = None, 0, 0
        if changed and not redacted:
            old_path = before.path if before is not None else None
            new_path = after.path if after is not None else None
            text, insertions, deletions = unified_diff(
                text_of(before),
                text_of(after),
                f"a{old_path or new_path}",
                f"b{new_path or old_path}",
            )
        memory_id = (after or before).memory_id  # type: ignore[union-attr]
        old_memory_id = None if before is None else before.memory_id
        entries.append(
            DiffEntry(
                status=status,
                memory_id=memory_id,
                old_memory_id=None if old_memory_id == memory_id else old_memory_id,
                old_path=None if before is None else before.path,
                new_path=None if after is None else after.path,
                old_version_id=None if before is None else before.version_id,
                new_version_id=None if after is None else after.version_id,
                old_content_sha256=None if before is None else before.content_sha256,
                new_content_sha256=None if after is None else after.content_sha256,
                content_changed=changed,
                redacted=redacted,
                diff=text or None,
                insertions=insertions,
                deletions=deletions,
            )
        )
    entries.sort(key=lambda entry: (entry.path, entry.memory_id))
    return StoreDiff(
        from_store_id=old.store_id,
        from_point=old.text,
        to_store_id=new.store_id,
        to_point=new.text,
        entries=entries,
    )


class History(Facade):
    """Reading a store as it was (SPEC §10), as one caller sees it (SPEC §6). The
    facade handed out (``engine.for_caller(…).history``) is its subclass
    :class:`memfs.store.forks.ForkingHistory`, which adds forking (a write built on
    these reads)."""

    def resolve(self, store_id: str, point: Point | str = NOW) -> ResolvedPoint:
        """The seq a point names in a store (:func:`resolve_point`).

        Raises:
            NotFound (store), InvalidPoint (the point named, and what is wrong).
        """
        with self._read() as conn:
            return resolve_point(conn, store_id, point)

    def list(
        self,
        store_id: str,
        at: Point | str | ResolvedPoint,
        *,
        path_prefix: str = "/",
        depth: int = 0,
        limit: int = 20,
        cursor: str | None = None,
        with_content: bool = False,
    ) -> Page[Memory | MemoryPrefix]:
        """The memories of the store as they were at ``at``, as
        :meth:`memfs.store.memories.Memories.list` lists them now: path order, depth
        roll-up, keyset pages (a cursor is good for the same point as written: at
        ``now``, later pages see the writes made meanwhile, as pages of a listing now do). A memory
        deleted at that point is absent; one whose version then is redacted too (its
        path is erased). Each memory has its version then: ``memory_version_id``,
        ``path``, content, digest, size, ``updated_at`` = that version's time;
        ``metadata`` is ``{}`` (not versioned).

        Args:
            at: a point (text or parsed), or one already resolved for this store.

        Raises:
            NotFound (store), InvalidPoint, InvalidPath (prefix), InvalidInput
            (depth, limit), InvalidCursor.
        """
        with self._read() as conn:
            resolved = self._resolved(conn, store_id, at)
            return list_as_of(
                conn,
                resolved,
                path_prefix=path_prefix,
                depth=depth,
                limit=limit,
                cursor=cursor,
                with_content=with_content,
                viewer=self.viewer,
            )

    def all(self, store_id: str, at: Point | str | ResolvedPoint) -> _Memories:
        """Every memory of the store as it was at ``at``, without content, in path
        order, read in one query (an as-of mount's tree, as
        :meth:`memfs.store.memories.Memories.all` gives a mount's tree now). The same
        memories as every page of :meth:`list`: a memory deleted then is absent, and so
        is one whose version then is redacted (no path, never content); ``metadata``
        is ``{}``.

        Raises:
            NotFound (store), InvalidPoint.
        """
        with self._read() as conn:
            resolved = self._resolved(conn, store_id, at)
            return all_as_of(conn, resolved, self.viewer)

    def get(
        self,
        store_id: str,
        memory_id: str,
        at: Point | str | ResolvedPoint,
        *,
        with_content: bool = True,
    ) -> Memory:
        """One memory as it was at ``at`` (its version then).

        Raises:
            NotFound: no such store; the memory did not exist then, or was deleted
                (or is hidden from the viewer).
            RedactedContent: its version then is redacted (never shown, SPEC §10).
            InvalidPoint: see :meth:`resolve`.
        """
        with self._read() as conn:
            resolved = self._resolved(conn, store_id, at)
            return get_as_of(
                conn, resolved, memory_id=memory_id, with_content=with_content, viewer=self.viewer
            )

    def get_by_path(
        self,
        store_id: str,
        path: str,
        at: Point | str | ResolvedPoint,
        *,
        with_content: bool = True,
    ) -> Memory:
        """The memory that was at ``path`` at ``at``.

        Raises:
            NotFound: no store; no memory there then (a redacted one has no path).
            InvalidPath, InvalidPoint.
        """
        with self._read() as conn:
            resolved = self._resolved(conn, store_id, at)
            return get_as_of(
                conn, resolved, path=path, with_content=with_content, viewer=self.viewer
            )

    def state(self, store_id: str, at: Point | str | ResolvedPoint) -> _Entries:
        """Every memory of the store at ``at`` (redacted ones with path None), by path
        (redacted ones last), without content.

        Raises:
            NotFound (store), InvalidPoint.
        """
        with self._read() as conn:
            resolved = self._resolved(conn, store_id, at)
            found = state_at(conn, resolved, self.viewer)
        return sorted(found.values(), key=lambda e: (e.path is None, e.path or "", e.memory_id))

    def diff(
        self,
        old_store_id: str,
        old_at: Point | str | ResolvedPoint,
        new_store_id: str,
        new_at: Point | str | ResolvedPoint,
        *,
        forked_only: bool = False,
    ) -> StoreDiff:
        """What changed from one state to another (SPEC §10 diff): memories added,
        removed, modified and renamed, matched by memory id, each changed text as a
        unified diff (``difflib``), read in one consistent snapshot. A side whose
        version is redacted shows no content (``redacted``, no text diff).

        Args:
            old_store_id, old_at: side A (``memfs diff A B``).
            new_store_id, new_at: side B; the same store, or another: a fork and its
                origin, or two forks of one origin, match by origin
                (``memories.origin_memory_id``: a forked memory and the memory it was
                forked from are one entry, ``old_memory_id`` naming A's); unrelated
                stores match by id only, so they differ in everything.
            forked_only: when B is a fork of A, leave out A's memories the fork never
                had (hidden from its forking caller, SPEC §6; redacted at its point; made
                in A after it): what the fork did, not what it was not given (a dream's
                diff; its merge leaves them alone too).

        Raises:
            NotFound (a store), InvalidPoint (either side's point).
        """
        with self._read() as conn:
            old = self._resolved(conn, old_store_id, old_at)
            new = self._resolved(conn, new_store_id, new_at)
            return diff_states(conn, old, new, self.viewer, forked_only=forked_only)

    @staticmethod
    def _resolved(
        conn: Connection, store_id: str, at: Point | str | ResolvedPoint
    ) -> ResolvedPoint:
        if isinstance(at, ResolvedPoint):
            if at.store_id != store_id:
                raise InvalidPoint(f"point {at.text!r} was resolved for another store")
            store_row(conn, store_id)
            return at
        return resolve_point(conn, store_id, at)
