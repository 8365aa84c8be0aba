"""A read-only peek at an embedded (SQLite) store database through the standard
library's ``sqlite3``, for the CLI commands that read one thing and exit (``memfs store
list``, ``store show``, ``memory cat``): they answer without importing SQLAlchemy, whose
import alone was half of such a command's time (README "Performance", CLI start).

A peek answers exactly as the engine would, or not at all. :func:`open_peek` returns
None, and the command opens the :class:`~memfs.store.Engine` instead (whose answers and
errors are the reference), unless the database is

- a SQLite file given as a plain ``sqlite:///`` URL (not PostgreSQL, not in memory, no
  URL query),
- at the schema head (:data:`memfs.store._light.SCHEMA_HEAD`: an older file needs the
  engine's upgrade, a foreign one its refusal),
- readable by this user, and
- without a pending erasure (SPEC §2: the close of an engine completes it; a peek must not
  leave it for later).

The queries are the engine's own (``memfs/store/stores.py`` ``find_store``,
``list_stores``; ``memories.py`` ``get_memory``, ``get_memory_by_path``), written out in
SQL over the same columns and built into the same models by the same functions
(:mod:`memfs.store._light`); ``tests/store/test_peek.py`` holds the two to the same
answers. Nothing is written: the connection is ``query_only``; like the engine's, it is
opened read-only only when this user may not write the file, so that its close removes
the WAL and shared-memory files its open made.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from memfs.core import rules
from memfs.core.errors import CorruptedStore, DatabaseUnavailable, NotFound
from memfs.core.model import Memory, MemoryStore
from memfs.store._light import (
    SCHEMA_HEAD,
    SQLITE_BUSY_TIMEOUT_MS,
    erase_marker,
    memory_model,
    only_store,
    store_model,
)

__all__ = ["OPEN_TIMEOUT_S", "Peek", "open_peek", "peek_file"]

_SQLITE_URL = "sqlite:///"
# How long the first read waits for a lock: the engine's first look at a file waits as
# long (Python's sqlite3 default, memfs/store/_db.py check_sqlite_file), and then says
# the file is locked; statements after it wait the busy timeout, as the engine's do.
OPEN_TIMEOUT_S = 5.0
# SQLite primary result codes (https://www.sqlite.org/rescode.html).
_SQLITE_BUSY = 5
_SQLITE_LOCKED = 6


def peek_file(url: str) -> Path | None:
    """The SQLite file a peek may read for the SQLAlchemy URL ``url``, or None when the
    engine must answer: another dialect or driver, an in-memory database, a URL with a
    query or an escape, a missing, empty or non-regular file, or a pending erasure (its
    marker file, :func:`memfs.store._light.erase_marker`), or one that can't be looked
    for (the engine reports what is wrong).
    """
    if not url.startswith(_SQLITE_URL):
        return None
    name = url[len(_SQLITE_URL) :]
    if not name or name == ":memory:" or any(c in name for c in "?%#"):
        return None
    path = Path(name)
    try:
        if not path.is_file() or path.stat().st_size == 0:
            return None
        os.stat(erase_marker(path))
    except FileNotFoundError:
        return path  # no marker: no erasure pending
    except OSError:
        return None
    return None  # the marker exists: an erasure is pending


def open_peek(url: str) -> Peek | None:
    """A peek at the database of ``url`` (see the module docstring for when there is
    one), or None: then open the engine, which answers the same.

    Raises:
        DatabaseUnavailable: the file stayed locked for :data:`OPEN_TIMEOUT_S`, with the
            engine's message (``memfs/store/_db.py`` ``check_sqlite_file`` waits as
            long for its first read). Any other failure to read the file is left to the
            engine to report (None).
    """
    path = peek_file(url)
    if path is None:
        return None
    # The engine's rule for commands that only read: read-only exactly when this user
    # may not write the file. A writable file is opened read-write (still query_only),
    # so that its close, as the engine's, removes the WAL and shared-memory files the
    # open made; a read-only connection would leave them behind.
    mode = "rw" if os.access(path, os.W_OK) else "ro"
    try:
        conn = sqlite3.connect(
            f"{path.resolve().as_uri()}?mode={mode}",
            uri=True,
            timeout=OPEN_TIMEOUT_S,
            isolation_level=None,  # autocommit: each method opens its own read transaction
        )
    except sqlite3.Error:
        return None
    try:
        conn.execute("PRAGMA query_only=ON")
        revision = conn.execute("SELECT version_num FROM alembic_version").fetchone()
        conn.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
    except sqlite3.Error as exc:
        conn.close()
        if exc.sqlite_errorcode & 0xFF in (_SQLITE_BUSY, _SQLITE_LOCKED):
            raise DatabaseUnavailable(f"cannot read the store database {path}: {exc}") from exc
        return None
    if revision is None or revision[0] != SCHEMA_HEAD:
        conn.close()
        return None
    conn.row_factory = _namespace
    return Peek(conn, path)


def _namespace(cursor: sqlite3.Cursor, row: tuple[Any, ...]) -> SimpleNamespace:
    """A row with its columns as attributes (the shape the model builders read)."""
    names = (column[0] for column in cursor.description)
    return SimpleNamespace(**dict(zip(names, row, strict=True)))


class Peek:
    """A read-only connection to one SQLite store database; each call reads one
    consistent snapshot (one read transaction), as an engine call does.

    Use as a context manager, or call :meth:`close`. Errors are the engine's: NotFound,
    InvalidInput (an ambiguous store name), InvalidPath, CorruptedStore (a referenced blob
    missing); a failure of SQLite itself (a lock held past the busy timeout, an I/O
    error) is DatabaseUnavailable naming the file.
    """

    def __init__(self, conn: sqlite3.Connection, path: Path) -> None:
        self._conn = conn
        self.path = path

    def __enter__(self) -> Peek:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Closes the connection (idempotent)."""
        self._conn.close()

    @contextmanager
    def _snapshot(self) -> Iterator[sqlite3.Connection]:
        try:
            self._conn.execute("BEGIN")
            try:
                yield self._conn
            finally:
                self._conn.execute("COMMIT")
        except sqlite3.Error as exc:
            raise DatabaseUnavailable(f"cannot read the store database {self.path}: {exc}") from exc

    def list_stores(self, *, include_archived: bool = False) -> list[MemoryStore]:
        """Every store, newest first (by id), archived ones only with
        ``include_archived``: the pages of ``engine.stores.list`` for an unrestricted
        caller, joined."""
        query = "SELECT * FROM stores"
        if not include_archived:
            query += " WHERE archived_at IS NULL"
        with self._snapshot() as conn:
            rows = conn.execute(query + " ORDER BY id DESC").fetchall()
        return [store_model(row) for row in rows]

    def find_store(self, name_or_id: str) -> MemoryStore:
        """A store by id, else by exact name, else by slug: ``engine.stores.find``.

        Raises:
            NotFound: nothing matches.
            InvalidInput: several stores share that name or slug (the message lists ids).
        """
        with self._snapshot() as conn:
            return store_model(_find_store_row(conn, name_or_id))

    def get_memory(self, store_id: str, reference: str) -> Memory:
        """A live memory with its content, by ``mem_…`` id (``engine.memories.get``) or by
        path (``engine.memories.get_by_path``) for an unrestricted caller.

        Raises:
            NotFound: no such store, or no live memory there; InvalidPath: ``reference``
                is neither an id nor a valid path; CorruptedStore: its blob is missing.
        """
        if not reference.startswith("mem_"):
            rules.validate_path(reference)
        with self._snapshot() as conn:
            if conn.execute("SELECT 1 FROM stores WHERE id = ?", (store_id,)).fetchone() is None:
                raise NotFound(f"memory store {store_id!r} not found")
            if reference.startswith("mem_"):
                row = conn.execute(
                    "SELECT * FROM memories WHERE id = ? AND store_id = ? AND deleted_at IS NULL",
                    (reference, store_id),
                ).fetchone()
                if row is None:
                    raise NotFound(f"memory {reference!r} not found in memory store {store_id!r}")
            else:
                row = conn.execute(
                    "SELECT * FROM memories WHERE store_id = ? AND path = ? AND deleted_at IS NULL",
                    (store_id, reference),
                ).fetchone()
                if row is None:
                    raise NotFound(f"no memory at {reference!r} in memory store {store_id!r}")
            data = conn.execute("SELECT data FROM blobs WHERE key = ?", (row.blob_key,)).fetchone()
        if data is None:
            raise CorruptedStore(f"blob {row.blob_key} is referenced but missing")
        return memory_model(row, bytes(data.data))


def _find_store_row(conn: sqlite3.Connection, name_or_id: str) -> SimpleNamespace:
    """memfs/store/stores.py ``find_store``, over the same columns."""
    row = conn.execute("SELECT * FROM stores WHERE id = ?", (name_or_id,)).fetchone()
    if row is not None:
        return row  # type: ignore[no-any-return]
    rows = conn.execute("SELECT * FROM stores WHERE name = ? ORDER BY id", (name_or_id,)).fetchall()
    if not rows:
        rows = [
            r
            for r in conn.execute("SELECT * FROM stores ORDER BY id").fetchall()
            if rules.slugify(r.name) == name_or_id
        ]
    return only_store(rows, name_or_id)  # type: ignore[no-any-return]
