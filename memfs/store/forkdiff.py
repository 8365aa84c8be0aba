"""What can differ between a fork and its origin (SPEC §10 diff and merge across a
fork), so that comparing the two reads what changed, not both stores whole.

**Why the rest is equal.** A fork made by an unrestricted caller copies every
unredacted memory of its origin's state at the base ``B`` (``fork_base_seq``), each as
one ``created`` version of the fork with the origin memory's path and digest, and
records its own seq when that committed (``stores.fork_created_seq``, ``C``). Take an
origin memory ``m`` with no version after ``B`` or after the origin's point (whichever
is earlier), and the fork memory ``f`` matched with it (``origin_memory_id``) with no
version after ``C`` up to the fork's point: ``m`` existed at ``B``, so ``f`` is the
copy the fork made of it (a merge matches a fork memory only with a memory it makes,
after ``B``); ``m`` then is ``m`` at ``B``, ``f`` then is that copy: the same path and
digest, no difference (:func:`memfs.core.history.classify`). So only these are read
(:func:`changed`; per side at most :data:`MOST`, or both are read whole):

* on the origin, the memories with a version after ``B`` or after its point, whichever
  is earlier (a memory made after ``B``, by a merge say, may be matched with a fork
  memory made before it); those with a redacted version (redaction erases a version in
  place, no new seq); those no fork memory copies (made after the fork, or redacted at
  ``B``, or whose copy was hard-deleted: erased with its versions);
* on the fork, the memories with a version after ``C`` up to its point (made, changed,
  renamed, deleted there); those with a redacted version; those matched with an origin
  memory that is gone (hard-deleted with its versions);
* and on each side the counterparts of the other side's.

A merge plan needs less (:func:`fork_side_changed`): a memory the fork has not changed
since the merge base makes no step, so only the fork's changed memories are read, on
all three sides.

Anything else is read whole, as before: a restricted reader (visibility is judged by
today's record index, SPEC §6, which no version records), a fork made by a restricted
caller or before ``fork_created_seq`` existed (NULL), a point of the fork before it
was made, two forks of one origin, and a fork of a fork compared with its grandparent.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, exists, literal, select, union

from memfs.core.history import ResolvedPoint
from memfs.core.visibility import Viewer
from memfs.store._common import store_row
from memfs.store.schema import memories, versions

__all__ = ["MOST", "changed", "fork_of", "fork_side_changed"]

# Above this many memories that may differ, both sides are read whole: the ids travel
# as bound parameters (SQLite takes 32,766 to a statement), and reading whole costs
# about the same by then.
MOST = 5_000
_NO_END = 2**62  # above every seq (a BIGINT)
_copy = memories.alias("copy")
_then = versions.alias("then")


def fork_of(conn: Connection, a_id: str, b_id: str) -> tuple[Any, Any] | None:
    """``(origin row, fork row)`` when one of the two stores is a fork of the other that
    holds all of its base (``fork_created_seq`` set), else None."""
    if a_id == b_id:
        return None
    a, b = store_row(conn, a_id), store_row(conn, b_id)
    for origin, fork in ((a, b), (b, a)):
        if fork.forked_from == origin.id and fork.fork_created_seq is not None:
            return origin, fork
    return None


def _versions_in(store_id: str, low: int, high: int) -> Any:
    return select(versions.c.memory_id).where(
        versions.c.store_id == store_id, versions.c.seq > low, versions.c.seq <= high
    )


def _redacted(store_id: str) -> Any:
    return select(versions.c.memory_id).where(
        versions.c.store_id == store_id, versions.c.path.is_(None)
    )


def _ids(conn: Connection, query: Any) -> set[str] | None:
    """The ids a SELECT yields; None when there are more than :data:`MOST`."""
    found = set(conn.execute(query.limit(MOST + 1)).scalars())
    return None if len(found) > MOST else found


def _copies_of(conn: Connection, fork_id: str, origin_ids: set[str]) -> set[str] | None:
    """The fork's memories matched with any of ``origin_ids``."""
    return _ids(
        conn,
        select(memories.c.id).where(
            memories.c.store_id == fork_id, memories.c.origin_memory_id.in_(sorted(origin_ids))
        ),
    )


def fork_side_changed(
    conn: Connection, origin_id: str, fork_id: str, low: int, high: int, base: int | None
) -> set[str] | None:
    """The ids of the fork's memories with a version in ``(low, high]`` and, given the
    origin's ``base`` seq, of those that may be no copy of the origin's state then: whose
    origin memory is gone (hard-deleted with its versions), or has a version after
    ``base`` (it may have been made then, by a merge that matched it with this one).
    None: more than :data:`MOST`."""
    found = _ids(conn, _versions_in(fork_id, low, high))
    if found is None or base is None:
        return found
    # A memory made after the base has a version after it: the few changed since.
    since = _ids(conn, _versions_in(origin_id, base, _NO_END))
    orphans = _ids(conn, _orphans(fork_id))
    if since is None or orphans is None:
        return None
    rematched = _copies_of(conn, fork_id, since)
    if rematched is None:
        return None
    return found | orphans | rematched


def _orphans(fork_id: str) -> Any:
    """The fork's memories matched with an origin memory that is gone."""
    gone = ~exists(select(literal(1)).where(_copy.c.id == memories.c.origin_memory_id))
    return select(memories.c.id).where(
        memories.c.store_id == fork_id, memories.c.origin_memory_id.is_not(None), gone
    )


def changed(
    conn: Connection, a: ResolvedPoint, b: ResolvedPoint, viewer: Viewer | None
) -> dict[str, list[str]] | None:
    """Per store id of the two points, the ids of its memories that may differ from the
    other side (see the module docstring); None when the two must be read whole."""
    if viewer is not None:
        return None
    pair = fork_of(conn, a.store_id, b.store_id)
    if pair is None:
        return None
    origin, fork = pair
    origin_at, fork_at = (a, b) if a.store_id == origin.id else (b, a)
    base, made = int(fork.fork_base_seq), int(fork.fork_created_seq)
    if fork_at.seq < made:
        return None
    copied = exists(
        select(literal(1)).where(
            _copy.c.store_id == fork.id, _copy.c.origin_memory_id == memories.c.id
        )
    )
    on_origin = _ids(
        conn,
        union(
            _versions_in(origin.id, min(base, origin_at.seq), _NO_END),
            _redacted(origin.id),
            select(memories.c.id).where(memories.c.store_id == origin.id, ~copied),
        ),
    )
    on_fork = _ids(
        conn, union(_versions_in(fork.id, made, fork_at.seq), _redacted(fork.id), _orphans(fork.id))
    )
    if on_origin is None or on_fork is None:
        return None
    copies = _copies_of(conn, fork.id, on_origin)
    originals = _ids(
        conn,
        select(memories.c.origin_memory_id).where(
            memories.c.id.in_(sorted(on_fork)), memories.c.origin_memory_id.is_not(None)
        ),
    )
    if copies is None or originals is None:
        return None
    return {origin.id: sorted(on_origin | originals), fork.id: sorted(on_fork | copies)}
