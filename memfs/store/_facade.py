"""What every per-aggregate facade shares: the engine's parts it runs on, the caller it
acts for, the transaction, and the visibility hooks bound to that caller.

An aggregate module (``stores``, ``memories``, ``versions``, …) defines its facade as a
subclass of :class:`Facade`; :meth:`memfs.store.Engine.for_caller` hands them out, bound
to one ``actor`` (who writes: the versions, changes and audit entries name it) and one
``viewer`` (what the caller may see, SPEC §6; None is an unrestricted caller). A facade
method runs one transaction (:meth:`Facade._read` or :meth:`Facade._write`) and applies
the hooks of :mod:`memfs.store.visibility` in it: what is hidden from the viewer is
absent from listings, counts, search, versions and the change feed, a NotFound by id,
and a write whose result the viewer could not see is refused and rolled back.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Protocol

from sqlalchemy import Connection

from memfs.core.errors import PathConflict
from memfs.core.model import Actor
from memfs.core.visibility import Viewer
from memfs.store import visibility

if TYPE_CHECKING:
    from memfs.store import semantic

__all__ = ["Facade", "Parts", "Transactions"]


class Transactions(Protocol):
    """What a facade needs of :class:`memfs.store._connections.Database` (named by its
    shape, so the aggregate modules never import the connections, which import them)."""

    def read(self) -> AbstractContextManager[Connection]: ...

    def write(self) -> AbstractContextManager[Connection]: ...

    def checkpoint(self) -> bool: ...


@dataclass(frozen=True)
class Parts:
    """The parts of an open engine a facade runs on.

    Attributes:
        db: the connections (one transaction per call).
        memory_limit: live memories allowed per store (SPEC §1 limits).
        clock: the time of record reads and decay scores (SPEC §6).
        read_only: the database is opened for reading only.
        vectors: the cache of embedding vectors semantic search reads (SPEC §7).
        note_access: gathers record reads, written in batches (SPEC §6 ``last_accessed``).
        flush_access: writes the gathered reads now.
    """

    db: Transactions
    memory_limit: int
    clock: Callable[[], datetime]
    read_only: bool
    vectors: semantic.VectorCache
    note_access: Callable[[Sequence[str]], None]
    flush_access: Callable[[], None]


class Facade:
    """One aggregate's calls on behalf of one caller (``actor``, ``viewer``)."""

    def __init__(self, parts: Parts, actor: Actor | None, viewer: Viewer | None) -> None:
        self._parts = parts
        self._db = parts.db
        self.actor = actor
        self.viewer = viewer

    @contextmanager
    def _read(self) -> Iterator[Connection]:
        """A read transaction (one consistent snapshot)."""
        with self._db.read() as conn:
            yield conn

    @contextmanager
    def _write(self) -> Iterator[Connection]:
        """A write transaction: committed when the block ends, rolled back on an error."""
        with self._db.write() as conn:
            yield conn

    def _require_actor(self) -> Actor:
        """The caller's actor, for the writes that must name one."""
        if self.actor is None:
            raise ValueError("this write needs a caller with an actor (engine.for_caller(actor=…))")
        return self.actor

    # The visibility hooks, bound to the caller's viewer (no-ops for an unrestricted one).

    def _require_visible(self, conn: Connection, memory_id: str) -> None:
        """NotFound for a memory hidden from the viewer."""
        visibility.require_visible(conn, self.viewer, memory_id)

    def _check_written(self, conn: Connection, memory_id: str, path: str) -> None:
        """PermissionDenied ``record_not_visible`` for a write the viewer could not see."""
        visibility.check_written(conn, self.viewer, memory_id, path)

    def _masked(self, conn: Connection, conflict: PathConflict, path: str | None) -> PathConflict:
        """The conflict as the viewer may learn of it (a hidden blocker is not named)."""
        return visibility.masked_conflict(conn, self.viewer, conflict, path)
