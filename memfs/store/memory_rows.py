"""The rows of the ``memories`` table and the per-store rules that span them, shared by
the writes of :mod:`memfs.store.memories`, :mod:`memfs.store.tombstones` and
:mod:`memfs.store.renames`: one live memory per path, and never a memory both at a path
and above or below another live one (SPEC §1, :func:`check_path_free`, the one place
that builds :class:`PathConflict`); the memory limit (:func:`check_capacity`, the one
place that raises :class:`StoreFull`); the SPEC §2 precondition; and the tombstone a
delete leaves (:func:`tombstone`).
"""

from __future__ import annotations

import functools
from typing import Any

from sqlalchemy import (
    Connection,
    Row,
    and_,
    bindparam,
    insert,
    select,
    union_all,
    update,
)

from memfs.core import rules
from memfs.core.errors import (
    NotFound,
    PathConflict,
    PreconditionFailed,
    StoreFull,
)
from memfs.core.model import Actor, ChangeKind, DeleteMode, Operation
from memfs.store import _hot, feed, search
from memfs.store import records as record_index
from memfs.store._common import (
    ancestors,
    descendant_upper_bound,
)
from memfs.store.schema import memories
from memfs.store.versions import insert_version

# The path of a redacted tombstone: its own is erased (SPEC §2). Never a valid memory
# path, and only tombstones (outside the unique index of live paths) hold it.
REDACTED_PATH = "/.redacted"

_LIVE_MEMORY = select(memories).where(
    memories.c.id == bindparam("memory_id"),
    memories.c.store_id == bindparam("store_id"),
    memories.c.deleted_at.is_(None),
)
MEMORY_BY_ID = select(memories).where(memories.c.id == bindparam("memory_id"))
# No .values(): the SET clause is the executed parameters other than memory_id, and
# SQLAlchemy caches one compiled form per set of parameter names. It silently skips a
# name that is no column, so run it through set_memory_columns, which checks.
_UPDATE_MEMORY = update(memories).where(memories.c.id == bindparam("memory_id"))
_MEMORY_COLUMNS = frozenset(memories.c.keys())
INSERT_MEMORY = insert(memories)


@functools.cache
def _path_check_statement(depth: int, *, ignoring: bool) -> Any:
    """The query of check_path_free for a path of ``depth`` segments, with ``:p0`` …
    (the path and its ancestors), ``:below``/``:below_end`` (the descendant range) and,
    if ``ignoring``, ``:ignore_id``. One prebuilt statement per depth (a path has at most
    512), so it runs on the hot path (:mod:`memfs.store._hot`: no expanding IN)."""
    live = and_(memories.c.store_id == bindparam("store_id"), memories.c.deleted_at.is_(None))
    if ignoring:
        live = and_(live, memories.c.id != bindparam("ignore_id"))
    # One round trip: the exact path and its ancestors by the unique index, plus the
    # first descendant by a range scan of the same index (each branch indexable).
    exact_or_above = select(memories).where(
        live, memories.c.path.in_([bindparam(f"p{index}") for index in range(depth)])
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
    paths = [path, *ancestors(path)]
    params = {
        "store_id": store_id,
        "below": below,
        "below_end": descendant_upper_bound(below),
        **{f"p{index}": each for index, each in enumerate(paths)},
    }
    if ignore_id is not None:
        params["ignore_id"] = ignore_id
    statement = _path_check_statement(len(paths), ignoring=ignore_id is not None)
    rows = _hot.rows(conn, statement, params)
    exact = None
    for row in sorted(rows, key=lambda r: len(r.path)):
        if row.path != path:
            raise path_conflict(path, row.id, row.path)
        exact = row
    return exact


def require_free(conn: Connection, store_id: str, path: str, ignore_id: str | None) -> None:
    """Raises PathConflict unless ``path`` is free (SPEC §1)."""
    occupant = check_path_free(conn, store_id, path, ignore_id=ignore_id)
    if occupant is not None:
        raise path_conflict(path, occupant.id, occupant.path)


def check_capacity(store: Row[Any], memory_limit: int) -> None:
    """Raises StoreFull when the store already holds ``memory_limit`` live memories
    (SPEC §1 limits)."""
    if store.entry_count >= memory_limit:
        raise StoreFull(
            f"memory store {store.id!r} holds {store.entry_count} memories; "
            f"the limit is {memory_limit}"
        )


def check_precondition(row: Row[Any], expected_sha256: str | None) -> None:
    """SPEC §2 optimistic concurrency: raises PreconditionFailed unless the memory's
    head digest is ``expected_sha256`` (None: no precondition)."""
    if expected_sha256 is not None and expected_sha256 != row.content_sha256:
        raise PreconditionFailed(
            f"memory {row.id!r} has content_sha256 {row.content_sha256}, "
            f"not the expected {expected_sha256}",
            actual_sha256=row.content_sha256,
        )


def live_row(conn: Connection, store_id: str, memory_id: str) -> Row[Any]:
    row = _hot.first(conn, _LIVE_MEMORY, {"memory_id": memory_id, "store_id": store_id})
    if row is None:
        raise NotFound(f"memory {memory_id!r} not found in memory store {store_id!r}")
    return row  # type: ignore[no-any-return]


def checked_audit_metadata(metadata: dict[str, str] | None) -> dict[str, str] | None:
    """The metadata of a forget or restore request, checked by the SPEC §1 rules
    (seed 004: kept with the audit event). Raises InvalidMetadata."""
    if metadata is None:
        return None
    return {key: str(value) for key, value in rules.validate_metadata(metadata).items()}


def memory_store_id(conn: Connection, memory_id: str) -> str:
    """See :meth:`memfs.store.memories.Memories.store_id_of`."""
    store_id = conn.execute(
        select(memories.c.store_id).where(memories.c.id == memory_id)
    ).scalar()
    if store_id is None:
        raise NotFound(f"memory {memory_id!r} not found")
    return str(store_id)


def set_memory_columns(conn: Connection, memory_id: str, values: dict[str, Any]) -> None:
    """UPDATE memories SET ``values`` for one memory (a prebuilt statement)."""
    if not values.keys() <= _MEMORY_COLUMNS:
        raise ValueError(f"not columns of memories: {sorted(values.keys() - _MEMORY_COLUMNS)}")
    _hot.run(conn, _UPDATE_MEMORY, {"memory_id": memory_id, **values})



def tombstone(
    conn: Connection,
    store_id: str,
    row: Row[Any],
    *,
    mode: DeleteMode,
    actor: Actor | None,
    reason: str | None,
    now: str,
    content: dict[str, Any],
    audit_metadata: dict[str, str] | None = None,
) -> None:
    """Turns a live memory into a tombstone: a ``deleted`` version, the row marked with
    ``mode``, the audit entry and the change, in one go.

    A soft delete keeps the path (in the version, the row and the change: it is
    restorable). A redaction erases it (SPEC §2: content *and* path, everywhere): the
    ``deleted`` version is written redacted (path null, ``redacted_at`` set,
    api-contract §4.6), the row's path becomes :data:`REDACTED_PATH` and the change
    carries no path.

    Args:
        content: the row's content columns after the change (``blob_key`` None for a
            soft delete; the replacement's key, digest, size and cleared metadata for
            a redaction).
    """
    redacting = mode is DeleteMode.REDACT
    version_id = insert_version(
        conn,
        store_id=store_id,
        memory_id=row.id,
        operation=Operation.DELETED,
        path=None if redacting else row.path,
        blob_key=None,
        sha=None,
        size=None,
        actor=actor,
        now=now,
        reason=reason,
        redacted=redacting,
    )
    set_memory_columns(
        conn,
        row.id,
        {
            "deleted_at": now,
            "delete_mode": mode.value,
            "head_version_id": version_id,
            "updated_at": now,
            **({"path": REDACTED_PATH} if redacting else {}),
            **content,
        },
    )
    if redacting:  # erased from the index before this returns (SPEC §7)
        search.unindex_memory(conn, row.id)
    else:
        search.queue(conn, row.id)
    record_index.unindex_memory(conn, row.id)
    feed.audit(
        conn,
        store_id,
        mode.value,
        memory_id=row.id,
        actor=actor,
        reason=reason,
        metadata=audit_metadata,
    )
    feed.emit(
        conn,
        store_id,
        ChangeKind.MEMORY_DELETED,
        memory_id=row.id,
        path=None if redacting else row.path,
        entries=-1,
        size_bytes=-row.size_bytes,
    )
