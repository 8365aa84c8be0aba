"""The connections of one store database: opening it (or refusing to), one transaction
per call, the in-process write lock, typed lock contention, and the WAL checkpoint that
takes erased bytes out of the SQLite files.

:class:`Database` is what :class:`memfs.store.Engine` holds; the aggregate modules see
only the :class:`~sqlalchemy.Connection` of the transaction it opens for them.
"""

from __future__ import annotations

import errno
import logging
import os
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import Any

from sqlalchemy import Connection
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, DBAPIError, OperationalError

from memfs.core.errors import (
    DatabaseReadOnly,
    DatabaseUnavailable,
    DatabaseUnreachable,
    MemfsError,
    StorageFull,
    StoreBusy,
)
from memfs.core.model import Change, format_timestamp, utcnow
from memfs.store import notify
from memfs.store._db import (
    WRITE,
    check_sqlite_file,
    driver_error,
    make_sa_engine,
    prepare_schema,
    sqlite_path,
)
from memfs.store._light import erase_marker

__all__ = ["ERASE_WAIT_S", "Database", "WouldWait"]

log = logging.getLogger(__name__)

# OSError numbers that mean "no space": the filesystem is full, or the user's quota is.
_NO_SPACE = frozenset({errno.ENOSPC, errno.EDQUOT})

# How long an erasing call (redaction, hard delete, store deletion, retention) waits for
# readers of older snapshots before it leaves the erasure pending (erasure_pending)
# rather than stall every writer behind them.
ERASE_WAIT_S = 1.0

# Inline writes (Database.inline) leave SQLite's automatic checkpoint off on their
# connection: after this many of them, a checkpoint runs on a thread of its own.
INLINE_CHECKPOINT_EVERY = 64


class WouldWait(Exception):
    """An inline write (:meth:`Database.inline`) could not go on without waiting: another
    writer of this process has its turn, or another connection holds SQLite's write
    lock. Nothing was written; the caller runs the call on a worker thread instead,
    where it waits as every write does. Never leaves the store's caller (the embedded
    backend), so it is no :class:`memfs.core.errors.MemfsError`."""


def _where(url: str) -> str:
    """``url`` as shown in messages: a SQLite file's path, else the URL without password."""
    path = sqlite_path(url)
    if path is not None:
        return str(path)
    try:
        return make_url(url).render_as_string(hide_password=True)
    except (ArgumentError, ValueError):
        return repr(url)


def _reason(exc: BaseException) -> str:
    """The first line of what the driver (or the OS) said, without SQLAlchemy's dressing."""
    if isinstance(exc, DBAPIError) and exc.orig is not None:
        exc = exc.orig
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__


def _no_space(exc: OSError, url: str) -> StorageFull:
    """The StorageFull of an ``ENOSPC``/``EDQUOT`` on a file of the database ``url``."""
    path = exc.filename if isinstance(exc.filename, str) else _where(url)
    return StorageFull(
        f"disk full: {exc.strerror} under {path}; nothing was changed, try again once "
        "space is freed",
        path=path,
    )


class Database:
    """Connections to one database, opened as :class:`memfs.store.Engine` documents
    (its ``create``, ``read_only`` and ``busy_timeout_s`` arguments, and what it raises).

    Attributes:
        url: the SQLAlchemy URL. sa: the SQLAlchemy engine. dialect: ``sqlite`` or
        ``postgresql``. sqlite_file: the SQLite file (None: PostgreSQL, or SQLite in
        memory). read_only: whether nothing may be written. watch: tells
        followers of its change feeds that they moved (:mod:`memfs.store.notify`).
    """

    def __init__(
        self,
        url: str,
        *,
        synchronous_full: bool,
        busy_timeout_s: float,
        create: bool,
        read_only: bool | None,
    ) -> None:
        self.url = url
        self._busy_timeout_s = busy_timeout_s
        # Told of every write transaction (see Engine.observe_writes); None: nobody.
        self.write_observer: Callable[[bool, float], None] | None = None
        self._receipt = threading.local()  # see receipt()
        # Inline writes (see inline): per thread, whether it is in an inline block and
        # its own connection; every such connection (closed at close); commits since
        # the last checkpoint; the checkpoint thread running, if any.
        self._inline = threading.local()
        self._inline_connections: list[Connection] = []
        self._inline_lock = threading.Lock()
        self._inline_commits = 0
        self._checkpointer: threading.Thread | None = None
        self._checkpoint_wanted = threading.Event()
        self._closing = False
        self._wrote = False  # whether a write of this process committed (see close)
        try:
            self._open(url, synchronous_full, create=create, read_only=read_only)
        except DatabaseUnreachable as exc:  # at open, said as every failure to open
            cause = exc.__cause__ if exc.__cause__ is not None else exc
            raise DatabaseUnreachable(
                f"cannot open the store database: {_reason(cause)} ({_where(url)})"
            ) from cause
        except MemfsError:
            raise
        except (ArgumentError, ImportError, ValueError) as exc:  # a URL we can't use
            raise DatabaseUnavailable(
                f"cannot open the store database: {_reason(exc)} (use a SQLite file path, "
                "sqlite:///PATH or postgresql://USER@HOST/DB)"
            ) from exc
        except OSError as exc:
            if exc.errno in _NO_SPACE:
                raise _no_space(exc, url) from exc
            raise DatabaseUnavailable(
                f"cannot open the store database: {_reason(exc)} ({_where(url)})"
            ) from exc
        except DBAPIError as exc:
            raise DatabaseUnavailable(
                f"cannot open the store database: {_reason(exc)} ({_where(url)})"
            ) from exc

    def _open(
        self, url: str, synchronous_full: bool, *, create: bool, read_only: bool | None
    ) -> None:
        path = sqlite_path(url)
        if path is not None:
            check_sqlite_file(path, create=create and not read_only)
            if read_only is None:
                read_only = path.exists() and not os.access(path, os.W_OK)
        self.read_only = bool(read_only)
        self.sqlite_file = path  # None: PostgreSQL, or SQLite in memory
        self._erase_marker = None if path is None else erase_marker(path)
        self._erase_marker_name = None if self._erase_marker is None else str(self._erase_marker)
        self.sa = make_sa_engine(
            url,
            synchronous_full=synchronous_full,
            busy_timeout_ms=int(self._busy_timeout_s * 1000),
            read_only=self.read_only,
        )
        self.dialect = self.sa.dialect.name
        self.watch = notify.ChangeWatch(url, path)
        # SQLite admits one writer; in-process writers take turns on this lock (see
        # _write). PostgreSQL writers serialize on store rows instead.
        self._write_lock: threading.Lock | None = (
            threading.Lock() if self.dialect == "sqlite" else None
        )
        with self._driver_errors_are_typed():
            prepare_schema(self.sa, read_only=self.read_only)

    def close(self) -> None:
        """Releases every pooled connection (checkpointing the SQLite WAL, waiting at most
        :data:`ERASE_WAIT_S` for readers, when this process wrote or an erasure is
        pending: a command that only read leaves the WAL to its writers, rather than make
        them wait behind its checkpoint) and stops the change watch."""
        self.watch.close()
        with self._inline_lock:
            self._closing = True
            checkpointer, self._checkpointer = self._checkpointer, None
            connections, self._inline_connections = self._inline_connections, []
        self._checkpoint_wanted.set()
        if checkpointer is not None:
            checkpointer.join()
        for conn in connections:  # closed, not pooled: their settings are inline's own
            conn.invalidate()
            conn.close()
        if self.dialect == "sqlite" and not self.read_only and (
            self._wrote or self.erasure_pending() is not None
        ):
            self.checkpoint(erasing=False)
        self.sa.dispose()

    def erasure_pending(self) -> datetime | None:
        """Since when bytes erased by a redaction, hard delete, store deletion or
        retention may still be in the SQLite file or its WAL (None: they are gone).

        An erasing call checkpoints and truncates the WAL before it returns; a reader
        holding an old snapshot longer than :data:`ERASE_WAIT_S` makes that wait give up
        (so writers never stall behind it), and the erasure stays pending — recorded in
        the file ``<database>-erase-pending`` for every process (``memfs fsck`` and
        ``memfs status`` report it) — until a later write or close of any engine on this
        database completes the checkpoint. Always None on PostgreSQL (see README,
        "Redaction on PostgreSQL").
        """
        marker = self._erase_marker
        if marker is None:
            return None
        try:
            return datetime.fromisoformat(marker.read_text().strip())
        except FileNotFoundError:
            return None
        except ValueError:  # a marker we did not write whole: pending since we don't know
            return datetime.fromtimestamp(marker.stat().st_mtime, tz=utcnow().tzinfo)

    @property
    def inline_capable(self) -> bool:
        """Whether :meth:`inline` can run writes here: a writable SQLite file."""
        return self.dialect == "sqlite" and self.sqlite_file is not None and not self.read_only

    @contextmanager
    def inline(self) -> Iterator[None]:
        """Within the block, the calling thread's transactions never wait (house rule:
        a trio loop may run a bounded write itself; SPEC §4 commits at close). A
        write takes this process's turn only if it is free and begins with SQLite's
        busy timeout at 0 on a connection of the thread's own, so it either starts at
        once or raises :class:`WouldWait` having written nothing (another writer of
        this process or another process has the database). Its commit never runs
        SQLite's automatic checkpoint (which copies the WAL into the file and syncs
        it): every :data:`INLINE_CHECKPOINT_EVERY` inline commits a passive checkpoint
        runs on a thread of its own, holding this process's turn meanwhile (inline
        writes then go to their worker thread). Reads use the same connection and never
        wait either (WAL readers take no lock).

        Raises:
            WouldWait: at once, when the database is no writable SQLite file.
        """
        if not self.inline_capable:
            raise WouldWait("inline writes need a writable SQLite file")
        state = self._inline
        if getattr(state, "on", False):
            yield
            return
        state.on = True
        try:
            yield
        finally:
            state.on = False

    def _inline_connection(self) -> Connection:
        """The calling thread's connection for inline transactions: checked out of the
        pool once and kept (busy timeout 0, no automatic checkpoint)."""
        conn: Connection | None = getattr(self._inline, "conn", None)
        if conn is None or conn.closed or conn.invalidated:
            conn = self.sa.connect()
            with self._inline_lock:
                self._inline_connections.append(conn)
            self._inline.conn = conn
            self._inline.dbapi = None
            self._inline.write = None
        dbapi = conn.connection.dbapi_connection
        if dbapi is not self._inline.dbapi:  # new, or reconnected by the pool
            cursor = dbapi.cursor()  # type: ignore[union-attr]
            cursor.execute("PRAGMA busy_timeout=0")
            cursor.execute("PRAGMA wal_autocheckpoint=0")
            cursor.close()
            self._inline.dbapi = dbapi
        return conn

    def _inline_mode(self, conn: Connection, *, write: bool) -> None:
        """Sets whether the inline connection's next transaction begins as a write
        (``BEGIN IMMEDIATE``), only when that changes."""
        if getattr(self._inline, "write", None) is not write:
            conn.execution_options(**{WRITE: write})
            self._inline.write = write

    def _inline_committed(self) -> None:
        """Counts an inline commit; every :data:`INLINE_CHECKPOINT_EVERY`, or when an
        erasure is pending, wakes the checkpoint thread (started at the first)."""
        self._inline_commits += 1  # a count of loop threads' commits: races only blur it
        if self._inline_commits < INLINE_CHECKPOINT_EVERY and not (
            self._erase_marker_name is not None and os.path.exists(self._erase_marker_name)
        ):
            return
        self._inline_commits = 0
        if self._checkpointer is None:
            with self._inline_lock:
                if self._closing:
                    return
                if self._checkpointer is None:
                    self._checkpointer = threading.Thread(
                        target=self._checkpoint_when_wanted, name="memfs-checkpoint",
                        daemon=True,
                    )
                    self._checkpointer.start()
        self._checkpoint_wanted.set()

    def _checkpoint_when_wanted(self) -> None:
        """The checkpoint thread: each time it is woken, a pending erasure's checkpoint
        (never waiting, as after any write) or else a passive one (SQLite's automatic
        checkpoint), until the database closes. A failure is logged: the WAL only
        stays longer."""
        while True:
            self._checkpoint_wanted.wait()
            self._checkpoint_wanted.clear()
            if self._closing:
                return
            try:
                if self._erase_marker_name is not None and os.path.exists(
                    self._erase_marker_name
                ):
                    self.checkpoint(wait_s=0)
                    continue
                # This process's writers wait meanwhile (an inline one goes to a worker
                # thread): with no commit in between, the WAL is copied whole and the
                # next writer starts it again from the top, as after SQLite's own
                # checkpoint; a checkpoint racing the writes would leave it growing.
                with (
                    self._driver_errors_are_typed(),
                    self._turn_to_write(),
                    self.sa.connect() as conn,
                ):
                    conn.exec_driver_sql("PRAGMA wal_checkpoint(PASSIVE)").all()
            except (MemfsError, DBAPIError, OSError) as exc:
                log.info("a background WAL checkpoint did not run: %s", _reason(exc))

    @contextmanager
    def read(self) -> Iterator[Connection]:
        if getattr(self._inline, "on", False):
            try:
                with self._driver_errors_are_typed():
                    conn = self._inline_connection()
                    if not conn.in_transaction():  # else: a read inside a write, pooled
                        self._inline_mode(conn, write=False)
                        with conn.begin():
                            yield conn
                        return
            except StoreBusy as exc:  # a WAL being recovered: never wait here
                raise WouldWait(str(exc)) from exc
        with self._driver_errors_are_typed(), self.sa.connect() as conn, conn.begin():
            yield conn

    @contextmanager
    def _write_inline(self) -> Iterator[Connection]:
        """:meth:`write` inside :meth:`inline` (see there)."""
        assert self._write_lock is not None  # SQLite
        if not self._write_lock.acquire(blocking=False):
            raise WouldWait("another writer of this process has its turn")
        self._receipt.changes = []
        started = time.perf_counter()
        committed = False
        outcome: dict[str, Any] = {}
        try:
            try:
                with self._driver_errors_are_typed():
                    conn = self._inline_connection()
                    self._inline_mode(conn, write=True)
                    with self._transaction(conn, outcome):
                        yield conn
            except StoreBusy as exc:  # BEGIN IMMEDIATE met another connection's lock
                raise WouldWait(str(exc)) from exc
            committed = True
        finally:
            self._write_lock.release()
            if self.write_observer is not None:
                self.write_observer(committed, time.perf_counter() - started)
        self._committed(outcome)
        self._inline_committed()

    @staticmethod
    @contextmanager
    def _transaction(conn: Connection, outcome: dict[str, Any]) -> Iterator[Connection]:
        """One write transaction on ``conn`` (committed when the block ends, rolled back
        on an error); ``outcome`` gets what it appended to the change feed, either way."""
        try:
            with conn.begin():
                yield conn
        finally:
            outcome["feed_grew"] = notify.take_feed_changed(conn)
            outcome["emitted"] = notify.take_emitted(conn)

    def _committed(self, outcome: dict[str, Any]) -> None:
        """After a write's commit: its receipt kept for the thread, and the change watch
        told when the feed grew (visible now: followers may read it)."""
        self._receipt.changes = outcome["emitted"]
        self._wrote = True
        if outcome["feed_grew"]:
            self.watch.committed()

    @contextmanager
    def write(self) -> Iterator[Connection]:
        if getattr(self._inline, "on", False):
            with self._write_inline() as conn:
                yield conn
            return
        if self.read_only:
            raise DatabaseReadOnly(
                f"the store database {_where(self.url)} is open read-only; nothing was changed"
            )
        # SQLite admits one writer; waiting writers of other connections poll with a
        # sleeping busy handler, so 16 threads see multi-second tails. In-process writers
        # take turns on a lock instead; busy_timeout still arbitrates between processes.
        self._receipt.changes = []
        started = time.perf_counter()
        committed = False
        outcome: dict[str, Any] = {}
        try:
            with (
                self._driver_errors_are_typed(),
                self._turn_to_write(),
                self.sa.connect() as conn,
            ):
                conn.execution_options(**{WRITE: True})
                with self._transaction(conn, outcome):
                    yield conn
            committed = True
        finally:
            if self.write_observer is not None:
                self.write_observer(committed, time.perf_counter() - started)
        self._committed(outcome)
        if self._erase_marker_name is not None and os.path.exists(self._erase_marker_name):
            self.checkpoint(wait_s=0)  # a pending erasure: try again, never wait

    def receipt(self) -> list[Change]:
        """The change-feed entries the calling thread's last :meth:`write` appended and
        committed, oldest first (empty when it appended none, or failed)."""
        return list(getattr(self._receipt, "changes", ()))

    @contextmanager
    def _turn_to_write(self) -> Iterator[None]:
        """Holds the in-process write lock (SQLite), waiting at most the busy timeout."""
        if self._write_lock is None:
            yield
            return
        if not self._write_lock.acquire(timeout=self._busy_timeout_s):
            raise StoreBusy(
                f"another writer of this process held the database for {self._busy_timeout_s:g}"
                " s; nothing was changed, try again"
            )
        try:
            yield
        finally:
            self._write_lock.release()

    @contextmanager
    def _driver_errors_are_typed(self) -> Iterator[None]:
        """Turns what the driver (or the OS) says into the typed errors of
        :func:`memfs.store._db.driver_error`: a lock timeout into StoreBusy, a full disk
        (SQLITE_FULL, PostgreSQL disk_full, ``ENOSPC``/``EDQUOT`` on a file of ours) into
        StorageFull, a database server away into DatabaseUnreachable."""
        try:
            yield
        except OperationalError as exc:
            typed = driver_error(exc, self._busy_timeout_s, where=_where(self.url))
            if typed is None:
                raise
            raise typed from exc
        except OSError as exc:
            if exc.errno not in _NO_SPACE:
                raise
            raise _no_space(exc, self.url) from exc

    def vacuum_full(self, tables: Sequence[str]) -> None:
        """PostgreSQL: ``VACUUM FULL`` of ``tables``, which rewrites each table, its
        TOAST table and its indexes into new files without dead row versions (it holds
        an ACCESS EXCLUSIVE lock on each while it runs). Outside any transaction, as
        VACUUM must be. Nothing on SQLite (see :meth:`checkpoint`).

        Raises:
            StoreBusy, StorageFull, DatabaseUnreachable: as any call.
        """
        if self.dialect != "postgresql":
            return
        quoted = ", ".join(self.sa.dialect.identifier_preparer.quote(t) for t in tables)
        with (
            self._driver_errors_are_typed(),
            self.sa.connect().execution_options(isolation_level="AUTOCOMMIT") as conn,
        ):
            conn.exec_driver_sql(f"VACUUM FULL {quoted}")

    def checkpoint(self, wait_s: float = ERASE_WAIT_S, *, erasing: bool = True) -> bool:
        """Moves the WAL into the main file and truncates it, so bytes erased by a
        redaction leave the WAL and the file's old pages too (SPEC §2 redaction;
        ``secure_delete`` zeroes freed space). Waits at most ``wait_s`` for readers of
        older snapshots — while it waits, writers wait too, so never the busy timeout
        (a redaction under a long reader once took 60 s and stalled every writer).

        Args:
            erasing: the caller just committed an erasure. False for a checkpoint that
                erases nothing itself (a close, ``memfs vacuum``): its failure (a
                reader, a full disk) leaves a pending erasure pending and records none.

        Returns True when the WAL is empty; otherwise records the erasure as pending
        (see :meth:`erasure_pending`; only when ``erasing``) and returns False.
        """
        if self.dialect != "sqlite" or self.read_only or self._erase_marker is None:
            return True
        try:
            with self.sa.connect() as conn:
                conn.exec_driver_sql(f"PRAGMA busy_timeout={int(wait_s * 1000)}")
                try:
                    busy = conn.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)").one()[0]
                finally:
                    conn.exec_driver_sql(f"PRAGMA busy_timeout={int(self._busy_timeout_s * 1000)}")
        except OperationalError as exc:
            # Busy, or a full disk (the main file could not grow to take the WAL's
            # pages): the erasure stays pending. It runs after a commit, so it must not
            # report that commit as failed.
            if not isinstance(driver_error(exc, wait_s), StoreBusy | StorageFull):
                raise
            busy = 1
        if busy:
            if erasing and not self._erase_marker.exists():
                try:
                    # Private like the database beside it (SPEC §3: 0600 whatever the umask).
                    descriptor = os.open(self._erase_marker, os.O_WRONLY | os.O_CREAT, 0o600)
                    with os.fdopen(descriptor, "w") as marker:
                        marker.write(format_timestamp(utcnow()) + "\n")
                except OSError as exc:
                    if exc.errno not in _NO_SPACE:
                        raise
                    # A marker created but left empty still says "pending" (since its
                    # mtime, erasure_pending); none at all can only be logged.
                    if not self._erase_marker.exists():
                        log.warning(
                            "an erasure may be pending in %s (the WAL could not be "
                            "checkpointed) and the disk is full, so %s could not record "
                            "it: %s",
                            self.sqlite_file, self._erase_marker, exc.strerror,
                        )
            return False
        self._erase_marker.unlink(missing_ok=True)
        return True
