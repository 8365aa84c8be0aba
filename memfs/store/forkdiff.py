"""What can differ between a fork and its origin (SPEC §10 diff and merge across a
fork), so that comparing the two reads what changed, not both stores whole.

**Why the rest is equal.** A fork made by an unrestricted caller copies every
unredacted memory of its origin's state at the base ``B`` (``fork_base_seq``), each as
one ``created`` version of the fork with the origin memory's path and digest, and
records its own seq when that committed (``stores.fork_created_seq``, ``C``). Take an
origin memory ``m`` with no version between ``B`` and the origin's point (either way
round, nor after it), and the fork memory ``f`` copying it (``origin_memory_id``) with no version
after ``C`` up to the fork's point: ``m`` then is ``m`` at ``B``, ``f`` then is its
copy, so the two are the same path and digest, no difference (:func:`classify`). So
only these are read:

* on the origin, the memories with a version after ``B`` or after its point, whichever
  is earlier (a memory made after ``B``, by a merge say, may be matched with a fork
  memory made before it); those with a redacted version (redaction erases a version in
  place, no new seq); those no fork memory copies (made after the fork, or redacted at
  ``B``, or whose copy was hard-deleted: erased with its versions);
* on the fork, the memories with a version after ``C`` up to its point (made, changed,
  renamed, deleted there); those with a redacted version; those that are no copy of
  the origin at ``B``: copying nothing, or an origin memory with no version at or
  before ``B`` (hard-deleted with its versions, or made by a merge after it);
* and on each side the counterparts of the other side's.

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

__all__ = ["changed", "fork_of", "fork_side_changed"]

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


def fork_side_changed(fork_id: str, low: int, high: int, *, base: int | None) -> Any:
    """A SELECT of the ids of the fork's memories with a version in ``(low, high]`` and,
    given the origin's ``base`` seq, of those that are no copy of the origin's state
    then: copying nothing, or an origin memory with no version at or before ``base``
    (hard-deleted since, or made after it by a merge that then matched it with this
    one)."""
    parts = [_versions_in(fork_id, low, high)]
    if base is not None:
        then = exists(
            select(literal(1)).where(
                _then.c.memory_id == memories.c.origin_memory_id, _then.c.seq <= base
            )
        )
        parts.append(
            select(memories.c.id).where(
                memories.c.store_id == fork_id,
                memories.c.origin_memory_id.is_(None) | ~then,
            )
        )
    return union(*parts)


def changed(
    conn: Connection, a: ResolvedPoint, b: ResolvedPoint, viewer: Viewer | None
) -> dict[str, Any] | None:
    """Per store id of the two points, a SELECT of the ids of its memories that may
    differ from the other side (see the module docstring); None when the two must be
    read whole."""
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
    on_origin = union(
        _versions_in(origin.id, min(base, origin_at.seq), _NO_END),
        _redacted(origin.id),
        select(memories.c.id).where(memories.c.store_id == origin.id, ~copied),
    ).subquery()
    on_fork = union(
        fork_side_changed(fork.id, made, fork_at.seq, base=base).subquery().select(),
        _redacted(fork.id),
    ).subquery()
    origin_ids = union(
        select(on_origin.c[0]),
        select(_copy.c.origin_memory_id).where(
            _copy.c.store_id == fork.id,
            _copy.c.id.in_(select(on_fork.c[0])),
            _copy.c.origin_memory_id.is_not(None),
        ),
    )
    fork_ids = union(
        select(on_fork.c[0]),
        select(_copy.c.id).where(
            _copy.c.store_id == fork.id, _copy.c.origin_memory_id.in_(select(on_origin.c[0]))
        ),
    )
    return {origin.id: origin_ids, fork.id: fork_ids}
