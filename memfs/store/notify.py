"""Change notification: the followers of a database's change feeds learn that it moved
without reading it many times a second (SPEC §4 Sandboxes: an
idle mount costs close to nothing, and changes still arrive within about a second).

Writers (every feed entry goes through :mod:`memfs.store.feed`, which calls
:func:`feed_changed` in the write transaction):

* **PostgreSQL**: ``pg_notify('memfs_changes', store_id)`` in the transaction; the
  server delivers it at commit (once per store and transaction) to every connection
  listening on :data:`CHANNEL`, in any process on any host.
* **SQLite**: the transaction is marked, and once it has committed the writer touches
  the database file (:meth:`ChangeWatch.committed`, an ``os.utime``): an inotify event for
  every process watching it, strictly after the commit is visible, and exactly one per
  commit (the writes of the WAL are not watched: a commit makes several, and they come
  before it shows). Writers that are not memfs (the ``sqlite3`` shell) are seen by the
  safety check.

Readers: :class:`ChangeWatch`, one per engine (so one per database and process, never
one per store), a daemon thread that sleeps in ``poll()`` on an inotify descriptor
(SQLite: the file's attribute changes, and a new file put in its place) or on its
``LISTEN`` connection's socket (PostgreSQL) and calls its
subscribers, from that thread, with the ids of the stores that changed, or None
("any store may have"). Every :data:`SAFETY_POLL_S` it checks for what a lost event
would hide: the SQLite file's ``PRAGMA data_version`` (one read of its shared-memory
header); on PostgreSQL the ``LISTEN`` connection (``SELECT 1``; when it was lost it is
made again and every store counts as changed). Without inotify (the per-user limit of
instances reached, ``fs.inotify.max_user_instances``) the SQLite check runs every
:data:`FALLBACK_POLL_S` instead: still one cheap read per database, logged once.
"""

from __future__ import annotations

import contextlib
import errno
import itertools
import logging
import os
import select
import sqlite3
import struct
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from sqlalchemy import Connection, text
from sqlalchemy.engine import make_url

from memfs.store import _hot

if TYPE_CHECKING:
    import ctypes

    import psycopg

    from memfs.core.model import Change

__all__ = [
    "CHANNEL",
    "CLOSE_WAIT_S",
    "FALLBACK_POLL_S",
    "MIN_DELIVERY_INTERVAL_S",
    "SAFETY_POLL_S",
    "ChangeCallback",
    "ChangeWatch",
    "feed_changed",
    "take_feed_changed",
]

log = logging.getLogger(__name__)

# The PostgreSQL notification channel; the payload is the store id.
CHANNEL = "memfs_changes"
# Seconds between two safety checks of a watched database (see the module docstring).
SAFETY_POLL_S = 2.0
# Seconds between two checks of a SQLite database when inotify is not available.
FALLBACK_POLL_S = 0.25
# The least time between two deliveries of a watch (see ChangeWatch._pause).
MIN_DELIVERY_INTERVAL_S = 0.05
# How long closing a watch waits for its thread.
CLOSE_WAIT_S = 1.0

# Called from the watch's thread: the stores that changed, or None for "any may have".
ChangeCallback = Callable[[frozenset[str] | None], None]

_NOTIFY = text("SELECT pg_notify(:channel, :store_id)")
# libpq options of the LISTEN connection: an unreachable server fails its connect and
# its safety check within seconds (never holds the watch's thread, or a close, for the
# minutes of TCP's own timeouts).
_LISTEN_OPTIONS = {
    "connect_timeout": 5,
    "tcp_user_timeout": 5000,
    "keepalives": 1,
    "keepalives_idle": 10,
    "keepalives_interval": 5,
    "keepalives_count": 2,
}
# Connection.info key: the stores whose change feed this transaction appended to.
_FEED_CHANGED = "memfs_feed_changed"
# Connection.info key: the change-feed entries this transaction appended (a receipt).
_EMITTED = "memfs_feed_emitted"
_NOTHING: frozenset[str] = frozenset()


def feed_changed(conn: Connection, store_id: str) -> None:
    """Records, in the write transaction ``conn``, that ``store_id``'s change feed grew
    (called by every writer of the feed; once per store and transaction counts):
    PostgreSQL notifies :data:`CHANNEL` at commit; on SQLite
    :meth:`memfs.store._connections.Database.write` calls
    :meth:`ChangeWatch.committed` once the transaction has committed."""
    grown: set[str] = conn.info.setdefault(_FEED_CHANGED, set())
    if store_id in grown:
        return
    grown.add(store_id)
    if conn.dialect.name == "postgresql":
        _hot.run(conn, _NOTIFY, {"channel": CHANNEL, "store_id": store_id})


def record_emitted(conn: Connection, change: Change) -> None:
    """Records, in the write transaction ``conn``, one change-feed entry it appended
    (called by :mod:`memfs.store.feed` for each); :func:`take_emitted` hands them out."""
    conn.info.setdefault(_EMITTED, []).append(change)


def take_emitted(conn: Connection) -> list[Change]:
    """The change-feed entries ``conn``'s transaction appended (:func:`record_emitted`),
    oldest first; the record is cleared (call it when the transaction ends)."""
    return conn.info.pop(_EMITTED, None) or []


def take_feed_changed(conn: Connection) -> bool:
    """Whether :func:`feed_changed` was called in ``conn``'s transaction; the record is
    cleared (call it when the transaction ends, committed or not)."""
    return bool(conn.info.pop(_FEED_CHANGED, None))


def _signal_commit(path: Path) -> None:
    """Touches the SQLite file ``path`` after a commit that grew a change feed: an
    inotify event for every :class:`ChangeWatch` of the file. A failure (a file this
    process may not touch) only leaves the change to the watchers' safety check."""
    with contextlib.suppress(OSError):
        os.utime(path)


class _Source(Protocol):
    """What a :class:`ChangeWatch` waits on."""

    interval_s: float

    def fileno(self) -> int | None: ...

    def readable(self) -> frozenset[str] | None: ...

    def timed_out(self) -> frozenset[str] | None: ...

    def close(self) -> None: ...


class ChangeWatch:
    """Tells subscribers when stores of one database may have changed (module
    docstring), from a daemon thread started by the first :meth:`subscribe`.

    Args:
        url: the engine's SQLAlchemy URL.
        sqlite_file: the SQLite file; None for PostgreSQL, or for an in-memory SQLite
            database (only this process writes it: :meth:`committed` tells).

    Thread-safe. Subscribers must be quick and must not raise (what they raise is
    logged); they are called from the watch's thread.
    """

    def __init__(self, url: str, sqlite_file: Path | None) -> None:
        self._url = url
        self._sqlite_file = None if sqlite_file is None else sqlite_file.absolute()
        self._in_memory = sqlite_file is None and make_url(url).get_backend_name() == "sqlite"
        self._lock = threading.Lock()
        self._subscribers: dict[int, ChangeCallback] = {}
        self._ids = itertools.count()
        self._thread: threading.Thread | None = None
        self._stop_read, self._stop_write = -1, -1
        self._closed = False

    def subscribe(self, callback: ChangeCallback) -> Callable[[], None]:
        """Calls ``callback`` for every change committed after this returns (the watch
        is in place by then: a caller that reads the feed afterwards misses nothing).
        Blocking (opens the watch the first time): call it from a worker thread.

        Returns:
            The function that unsubscribes ``callback``.
        """
        with self._lock:
            if self._closed:
                raise RuntimeError("the change watch is closed")
            if self._thread is None:
                self._start()
            key = next(self._ids)
            self._subscribers[key] = callback

        def unsubscribe() -> None:
            with self._lock:
                self._subscribers.pop(key, None)

        return unsubscribe

    def committed(self) -> None:
        """A transaction of this process that grew a change feed has committed
        (:meth:`memfs.store._connections.Database.write`): other processes are told
        through the file (an ``os.utime``: an inotify event); an in-memory database's
        subscribers directly. PostgreSQL has notified at commit already."""
        if self._sqlite_file is not None:
            _signal_commit(self._sqlite_file)
        elif self._in_memory:
            self._deliver(None)

    def _start(self) -> None:
        source: _Source
        if self._sqlite_file is not None:
            source = _SqliteSource(self._sqlite_file)
        elif self._in_memory:
            source = _InProcessSource()
        else:
            source = _PostgresSource(self._url)
        self._stop_read, self._stop_write = os.pipe()
        self._thread = threading.Thread(
            target=self._run, args=(source,), name="memfs-change-watch", daemon=True
        )
        self._thread.start()

    def close(self) -> None:
        """Stops the thread (a few ms; it is left to end on its own, a daemon, when a
        check of an unreachable server holds it past :data:`CLOSE_WAIT_S`); later
        subscriptions are refused."""
        with self._lock:
            self._closed = True
            self._subscribers.clear()
            thread, self._thread = self._thread, None
        if thread is None:
            return
        os.write(self._stop_write, b"x")
        thread.join(CLOSE_WAIT_S)
        if not thread.is_alive():  # else it still polls the pipe: leave it open
            os.close(self._stop_read)
            os.close(self._stop_write)

    def _run(self, source: _Source) -> None:
        delivered = False
        try:
            while not delivered or self._pause(MIN_DELIVERY_INTERVAL_S):
                poller = select.poll()
                poller.register(self._stop_read, select.POLLIN)
                fd = source.fileno()
                if fd is not None:
                    poller.register(fd, select.POLLIN)
                ready = {f for f, _ in poller.poll(source.interval_s * 1000)}
                if self._stop_read in ready:
                    return
                try:
                    changed = source.readable() if ready else source.timed_out()
                except Exception:
                    log.exception("watching the database for changes failed")
                    changed = None
                delivered = changed is None or bool(changed)
                if delivered:
                    self._deliver(changed)
        finally:
            source.close()

    def _pause(self, seconds: float) -> bool:
        """Waits ``seconds`` (events meanwhile are told together afterwards: a burst of
        commits wakes subscribers at most once per :data:`MIN_DELIVERY_INTERVAL_S`, no
        more often than a poll at that rate); False when the watch is closing."""
        poller = select.poll()
        poller.register(self._stop_read, select.POLLIN)
        return not poller.poll(seconds * 1000)

    def _deliver(self, changed: frozenset[str] | None) -> None:
        with self._lock:
            subscribers = list(self._subscribers.values())
        for callback in subscribers:
            try:
                callback(changed)
            except Exception:
                log.exception("a change subscriber failed")


class _InProcessSource:
    """An in-memory SQLite database: nothing to wait on (:meth:`ChangeWatch.committed`
    delivers)."""

    interval_s = SAFETY_POLL_S

    def fileno(self) -> None:
        return None

    def readable(self) -> frozenset[str]:
        return _NOTHING

    def timed_out(self) -> frozenset[str]:
        return _NOTHING

    def close(self) -> None:
        pass


class _SqliteSource:
    """inotify on the database's directory (events of its file only), and ``PRAGMA
    data_version`` on a read-only connection of its own as the safety check."""

    def __init__(self, path: Path) -> None:
        self._path = path
        self._inotify: _Inotify | None = None
        try:
            self._inotify = _Inotify(path.parent)
        except OSError as exc:
            log.warning(
                "no inotify watch of %s (%s): changes made elsewhere are looked for every "
                "%g s instead (raise fs.inotify.max_user_instances?)",
                path, exc.strerror or exc, FALLBACK_POLL_S,
            )
        self.interval_s = SAFETY_POLL_S if self._inotify is not None else FALLBACK_POLL_S
        self._conn: sqlite3.Connection | None = None
        self._version = self._data_version()

    def fileno(self) -> int | None:
        return None if self._inotify is None else self._inotify.fd

    def readable(self) -> frozenset[str] | None:
        assert self._inotify is not None
        names = self._inotify.read_names()
        if names is not None and self._path.name not in names:
            return _NOTHING
        self._version = self._data_version()
        return None

    def timed_out(self) -> frozenset[str] | None:
        version = self._data_version()
        if version is not None and version == self._version:
            return _NOTHING
        self._version = version
        return None

    def _data_version(self) -> int | None:
        """The file's change counter as this connection sees it (it moves when another
        connection commits); None when it can't be read (then every check says
        "changed": the followers read their feeds each time)."""
        try:
            if self._conn is None:
                self._conn = sqlite3.connect(
                    f"{self._path.absolute().as_uri()}?mode=ro", uri=True, check_same_thread=False
                )
            return int(self._conn.execute("PRAGMA data_version").fetchone()[0])
        except sqlite3.Error as exc:
            log.debug("PRAGMA data_version of %s failed: %s", self._path, exc)
            self.close_connection()
            return None

    def close_connection(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def close(self) -> None:
        self.close_connection()
        if self._inotify is not None:
            self._inotify.close()


class _PostgresSource:
    """A ``LISTEN`` connection of its own (psycopg), made again when it is lost."""

    interval_s = SAFETY_POLL_S

    def __init__(self, url: str) -> None:
        from psycopg.conninfo import make_conninfo

        self._conninfo = make_conninfo(
            make_url(url).set(drivername="postgresql").render_as_string(hide_password=False),
            **_LISTEN_OPTIONS,
        )
        self._conn: psycopg.Connection[Any] | None = None
        self._connect()

    def _connect(self) -> None:
        import psycopg

        try:
            conn = psycopg.connect(self._conninfo, autocommit=True)
            conn.execute(f"LISTEN {CHANNEL}")
        except psycopg.Error as exc:
            log.warning("cannot listen for changes (every store is read again in %g s): %s",
                        SAFETY_POLL_S, _first_line(exc))
            return
        self._conn = conn

    def fileno(self) -> int | None:
        return None if self._conn is None else self._conn.fileno()

    def readable(self) -> frozenset[str] | None:
        import psycopg

        assert self._conn is not None
        try:
            return frozenset(n.payload for n in self._conn.notifies(timeout=0))
        except psycopg.Error as exc:
            return self._lost(exc)

    def timed_out(self) -> frozenset[str] | None:
        import psycopg

        if self._conn is None:
            self._connect()
            return None  # it was lost for a while: anything may have changed
        try:
            self._conn.execute("SELECT 1")
        except psycopg.Error as exc:
            return self._lost(exc)
        return _NOTHING

    def _lost(self, exc: Exception) -> frozenset[str] | None:
        """The connection failed: closed (the next safety check makes a new one); what
        was notified meanwhile is unknown (None: every store may have changed)."""
        log.info("the connection listening for changes was lost: %s", _first_line(exc))
        self.close()
        return None

    def close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()


def _first_line(exc: Exception) -> str:
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__


# inotify(7), through libc (the standard library has no binding).
_IN_ATTRIB = 0x004
_IN_MOVED_TO = 0x080
_IN_CREATE = 0x100
_IN_Q_OVERFLOW = 0x4000
_IN_NONBLOCK = os.O_NONBLOCK
_IN_CLOEXEC = os.O_CLOEXEC
_EVENT = struct.Struct("iIII")  # wd, mask, cookie, len; then len bytes of name
_libc: ctypes.CDLL | None = None


def _c_library() -> ctypes.CDLL:
    """The C library, for ``inotify_init1``/``inotify_add_watch`` (loaded at the first
    watch: ``ctypes`` is imported only then, as a CLI command never watches)."""
    global _libc
    if _libc is None:
        import ctypes.util

        _libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    return _libc


def _errno() -> int:
    import ctypes

    return ctypes.get_errno()


class _Inotify:
    """A non-blocking inotify descriptor watching one directory: attribute changes of
    its entries (a touch) and entries put in it (created, renamed to)."""

    def __init__(self, directory: Path) -> None:
        try:
            libc = _c_library()
        except OSError as exc:
            raise OSError(errno.ENOSYS, "inotify is not available") from exc
        fd = libc.inotify_init1(_IN_NONBLOCK | _IN_CLOEXEC)
        if fd < 0:
            code = _errno()
            raise OSError(code, os.strerror(code))
        mask = _IN_ATTRIB | _IN_MOVED_TO | _IN_CREATE
        if libc.inotify_add_watch(fd, os.fsencode(directory), mask) < 0:
            code = _errno()
            os.close(fd)
            raise OSError(code, os.strerror(code))
        self.fd = fd

    def read_names(self) -> set[str] | None:
        """The names of the directory's entries that events were queued for since the
        last call; None when the queue overflowed (any entry may have been written)."""
        names: set[str] | None = set()
        while True:
            try:
                data = os.read(self.fd, 65536)
            except BlockingIOError:
                return names
            offset = 0
            while offset + _EVENT.size <= len(data):
                _wd, mask, _cookie, length = _EVENT.unpack_from(data, offset)
                start = offset + _EVENT.size
                name = data[start : start + length].rstrip(b"\0")
                if mask & _IN_Q_OVERFLOW:
                    names = None
                elif name and names is not None:
                    names.add(os.fsdecode(name))
                offset = start + length

    def close(self) -> None:
        os.close(self.fd)
