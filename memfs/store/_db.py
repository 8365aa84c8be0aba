"""Database plumbing: engine creation, dialect settings, schema set-up and migrations.

SQLite: WAL journal, ``secure_delete`` (freed pages are zeroed, so redacted bytes do not
linger in the file), foreign keys on, a busy timeout, and write transactions opened with
``BEGIN IMMEDIATE`` so that two writers never deadlock upgrading a read lock. The
pysqlite driver's own transaction handling is switched off (``isolation_level=None``)
and SQLAlchemy's ``begin`` event emits the BEGIN we want instead (the recipe in
SQLAlchemy's SQLite dialect documentation, "Serializable isolation / Savepoints").

PostgreSQL (psycopg 3): READ COMMITTED; writers serialize per store with
``SELECT … FOR UPDATE`` on the store row (see engine.py).
"""

from __future__ import annotations

import random
import re
import sqlite3
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy import Connection, create_engine, event, inspect, text
from sqlalchemy import Engine as SAEngine
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DBAPIError, OperationalError

if TYPE_CHECKING:
    from alembic.config import Config

from memfs.core.errors import (
    DatabaseNotFound,
    DatabaseReadOnly,
    DatabaseUnavailable,
    DatabaseUnreachable,
    ForeignDatabase,
    StorageFull,
    StoreBusy,
)
from memfs.home import create_private_file
from memfs.store._hot import refuse_nul
from memfs.store._light import SCHEMA_HEAD, SQLITE_BUSY_TIMEOUT_MS
from memfs.store.schema import metadata

__all__ = [
    "MEMFS_REVISIONS",
    "SCHEMA_HEAD",
    "SQLITE_BUSY_TIMEOUT_MS",
    "WRITE",
    "alembic_config",
    "driver_error",
    "check_sqlite_file",
    "make_sa_engine",
    "prepare_schema",
    "sqlite_path",
]

# Execution option that marks a connection's next transaction as a write transaction.
WRITE = "memfs_write"

# SQLite result codes (https://www.sqlite.org/rescode.html): the primary code is the
# low byte of an extended one (SQLITE_BUSY_SNAPSHOT = 517 is a SQLITE_BUSY).
_SQLITE_BUSY = 5
_SQLITE_LOCKED = 6
# PostgreSQL SQLSTATE lock_not_available (lock_timeout expired).
_PG_LOCK_NOT_AVAILABLE = "55P03"
_MIGRATIONS_DIR = Path(__file__).with_name("migrations")
# Every revision id memfs's migrations have had (the ``revision = "…"`` line of each
# ``versions/NNNN_….py``, read as text: importing them needs Alembic): an
# alembic_version holding anything else belongs to another application.
_REVISION_LINE = re.compile(r'^revision = "([^"]+)"$', re.MULTILINE)
MEMFS_REVISIONS = frozenset(
    match.group(1)
    for p in (_MIGRATIONS_DIR / "versions").glob("[0-9]*_*.py")
    if (match := _REVISION_LINE.search(p.read_text(encoding="utf-8"))) is not None
)
_SQLITE_READONLY = 8
_SQLITE_FULL = 13
_SQLITE_NOTADB = 26
# PostgreSQL SQLSTATEs (Appendix A of its manual): disk_full; the connection refused or
# dropped (class 08 connection_exception; admin_shutdown, crash_shutdown,
# cannot_connect_now; too_many_connections).
_PG_DISK_FULL = "53100"
_PG_CONNECTION_EXCEPTION_CLASS = "08"
_PG_UNREACHABLE = frozenset({"57P01", "57P02", "57P03", "53300"})


def sqlite_path(url: str) -> Path | None:
    """The file of a SQLite URL; None for another dialect or an in-memory database."""
    parsed = make_url(url)
    if parsed.get_backend_name() != "sqlite" or parsed.database in (None, "", ":memory:"):
        return None
    return Path(parsed.database)


def check_sqlite_file(path: Path, *, create: bool) -> None:
    """Refuses, before anything opens it for writing, a SQLite file memfs must not use.

    Looks at the file through a read-only connection, so a foreign database is never
    modified (not even its journal mode).

    Raises:
        DatabaseNotFound: no file at ``path`` and ``create`` is False.
        ForeignDatabase: the file is not a SQLite database, or holds tables but no
            memfs revision in ``alembic_version`` (another application's database).
        DatabaseUnavailable: the file can't be read.
    """
    if not path.exists():
        if not create:
            raise DatabaseNotFound(
                f"no memfs database at {path} (create one with a command that makes it, "
                "e.g. `memfs store create`)"
            )
        return
    if path.is_dir():
        raise DatabaseUnavailable(f"{path} is a directory, not a memfs database")
    if path.stat().st_size == 0:
        return
    try:
        probe = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    except sqlite3.Error as exc:
        raise DatabaseUnavailable(f"cannot open the store database {path}: {exc}") from exc
    try:
        tables = {row[0] for row in probe.execute("SELECT name FROM sqlite_master")}
        revision = None
        if "alembic_version" in tables:
            revision = probe.execute("SELECT version_num FROM alembic_version").fetchone()
    except sqlite3.DatabaseError as exc:
        if exc.sqlite_errorcode == _SQLITE_NOTADB:
            raise ForeignDatabase(f"{path} is not a SQLite database; memfs left it alone") from exc
        raise DatabaseUnavailable(f"cannot read the store database {path}: {exc}") from exc
    finally:
        probe.close()
    _refuse_foreign(str(path), tables, None if revision is None else revision[0])


def _refuse_foreign(where: str, tables: set[str], revision: str | None) -> None:
    """Raises ForeignDatabase unless ``tables`` are empty or memfs's (a memfs revision)."""
    ours = {name for name in tables if not name.startswith("sqlite_")}
    if not ours:
        return
    if revision is None:
        raise ForeignDatabase(
            f"{where} holds tables ({', '.join(sorted(ours)[:5])}) but is not a memfs "
            "database (no memfs schema revision); memfs left it alone"
        )
    if revision not in MEMFS_REVISIONS:
        raise ForeignDatabase(
            f"{where} is at schema revision {revision!r}, which is not one of memfs's; "
            "memfs left it alone"
        )


def driver_error(
    exc: OperationalError, waited_s: float, *, where: str | None = None
) -> StoreBusy | StorageFull | DatabaseReadOnly | DatabaseUnreachable | None:
    """The typed error that ``exc`` stands for, read from the driver's error code (never
    from message text), or None for anything else:

    - StoreBusy: SQLite's SQLITE_BUSY/SQLITE_LOCKED ("database is locked"), PostgreSQL's
      lock_timeout (``55P03``).
    - StorageFull: SQLite's SQLITE_FULL (its unix VFS answers that for ``ENOSPC``),
      PostgreSQL's disk_full (``53100``).
    - DatabaseReadOnly: SQLITE_READONLY.
    - DatabaseUnreachable: PostgreSQL refused or dropped the connection: SQLSTATE class
      ``08`` (connection exception), ``57P01``–``57P03`` (shutting down, crashed,
      starting up), ``53300`` (no connection slot), or a psycopg OperationalError with
      no SQLSTATE at all, which libpq raises only for the connection itself ("connection
      refused", "server closed the connection unexpectedly", "the connection is
      closed"), as SQLAlchemy's ``connection_invalidated`` also says.

    Args:
        waited_s: how long a lock was waited for (named in StoreBusy's message).
        where: the database as shown in messages (a SQLite file's path); StorageFull's
            ``path``.
    """
    orig = exc.orig
    code = getattr(orig, "sqlite_errorcode", None)
    if isinstance(code, int):
        primary = code & 0xFF
        if primary == _SQLITE_READONLY:
            return DatabaseReadOnly(
                f"the store database can't be written ({orig}); nothing was changed"
            )
        if primary == _SQLITE_FULL:
            return _storage_full(where)
        if primary in (_SQLITE_BUSY, _SQLITE_LOCKED):
            return _busy(waited_s)
        return None
    sqlstate = getattr(orig, "sqlstate", "not a PostgreSQL error")
    if sqlstate == _PG_LOCK_NOT_AVAILABLE:
        return _busy(waited_s)
    if sqlstate == _PG_DISK_FULL:
        return _storage_full(where)
    if (
        sqlstate is None
        or sqlstate in _PG_UNREACHABLE
        or (isinstance(sqlstate, str) and sqlstate.startswith(_PG_CONNECTION_EXCEPTION_CLASS))
        or exc.connection_invalidated
    ):
        return DatabaseUnreachable(
            f"the database server can't be reached now ({_first_line(orig)}); nothing was "
            "changed unless the connection was lost during the commit, try again"
        )
    return None


def _busy(waited_s: float) -> StoreBusy:
    return StoreBusy(
        f"the database stayed locked by another writer for {waited_s:g} s; nothing was "
        "changed, try again"
    )


def _storage_full(where: str | None) -> StorageFull:
    on = f" under {where}" if where else ""
    return StorageFull(
        f"disk full: no space left{on}; nothing was changed, try again once space is freed",
        path=where,
    )


def _first_line(orig: object) -> str:
    lines = str(orig).strip().splitlines()
    return lines[0] if lines else type(orig).__name__


def make_sa_engine(
    url: str,
    *,
    synchronous_full: bool = True,
    busy_timeout_ms: int = SQLITE_BUSY_TIMEOUT_MS,
    read_only: bool = False,
) -> SAEngine:
    """A SQLAlchemy engine for ``url`` with memfs's per-dialect settings applied.

    Creates the directory of a SQLite file if needed (unless ``read_only``).

    Args:
        busy_timeout_ms: how long a statement waits for another connection's lock
            (SQLite ``busy_timeout``, PostgreSQL ``lock_timeout``).
        read_only: SQLite only: open the file with ``mode=ro`` (nothing is ever written,
            not even the journal mode or a checkpoint).
    """
    path = sqlite_path(url)
    if url.startswith("sqlite"):
        connect_args: dict[str, Any] = {
            "check_same_thread": False,
            "timeout": busy_timeout_ms / 1000,
        }
        if read_only and path is not None:
            url = f"sqlite:///{path.resolve().as_uri()}?mode=ro&uri=true"
        elif path is not None:
            create_private_file(path)  # 0600: SQLite gives -wal/-shm its mode
        sa_engine = create_engine(url, connect_args=connect_args, pool_size=8, max_overflow=8)
        synchronous = "FULL" if synchronous_full else "NORMAL"

        @event.listens_for(sa_engine, "connect")
        def _on_connect(dbapi_connection: Any, _record: Any) -> None:
            dbapi_connection.isolation_level = None  # we emit BEGIN ourselves
            cursor = dbapi_connection.cursor()
            cursor.execute(f"PRAGMA busy_timeout={int(busy_timeout_ms)}")
            if not read_only:
                _use_wal(cursor, busy_timeout_ms / 1000)
            cursor.execute(f"PRAGMA synchronous={synchronous}")
            cursor.execute("PRAGMA foreign_keys=ON")
            cursor.execute("PRAGMA secure_delete=ON")
            cursor.close()

        @event.listens_for(sa_engine, "begin")
        def _on_begin(connection: Connection) -> None:
            # On the DB-API connection itself: SQLAlchemy's execution of a statement
            # (cache key, context, result) cost more than SQLite's BEGIN on every
            # transaction. Errors come out as SQLAlchemy's, as from exec_driver_sql.
            sql = "BEGIN IMMEDIATE" if connection.get_execution_options().get(WRITE) else "BEGIN"
            try:
                connection.connection.dbapi_connection.execute(sql)  # type: ignore[union-attr]
            except sqlite3.Error as exc:
                raise DBAPIError.instance(sql, None, exc, sqlite3.Error) from exc

        _refuse_nul_parameters(sa_engine)
        return sa_engine
    sa_engine = create_engine(
        url,
        pool_size=8,
        max_overflow=8,
        pool_pre_ping=True,
        connect_args={"options": f"-c lock_timeout={int(busy_timeout_ms)}"},
    )
    _refuse_nul_parameters(sa_engine)
    return sa_engine


def _use_wal(cursor: sqlite3.Cursor, timeout_s: float) -> None:
    """Puts the database in WAL mode (once per database file; later connections find it
    so and skip the switch), waiting at most ``timeout_s`` for other connections.

    Switching a fresh file into WAL takes an exclusive lock. When several connections
    open a fresh database at once (four servers starting), two of them can both hold the
    shared lock and both want the exclusive one; SQLite then answers SQLITE_BUSY at once,
    without calling the busy handler (its deadlock rule), and the open failed with
    "database is locked" (two servers starting at once). The switch is retried here, with a short
    randomized backoff, until the busy timeout: the one that wins finishes in
    microseconds, and the others then find WAL mode already set.
    """
    deadline = time.monotonic() + timeout_s
    backoff_s = 0.001
    while True:
        try:
            if cursor.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
                cursor.execute("PRAGMA journal_mode=WAL").fetchone()
            return
        except sqlite3.OperationalError as exc:
            if exc.sqlite_errorcode & 0xFF != _SQLITE_BUSY or time.monotonic() >= deadline:
                raise
        time.sleep(backoff_s * (1 + random.random()))
        backoff_s = min(backoff_s * 2, 0.05)


def _refuse_nul_parameters(sa_engine: SAEngine) -> None:
    """PostgreSQL text can't hold U+0000 and psycopg raises a bare ValueError on one.
    Refuse it before the statement runs, as the typed error every edge translates (the
    rules refuse NUL in every field they check; this catches ids and anything else)."""

    @event.listens_for(sa_engine, "before_cursor_execute")
    def _check(
        _conn: Any, _cursor: Any, _statement: str, parameters: Any, _context: Any, _many: bool
    ) -> None:
        rows = parameters if isinstance(parameters, list) else [parameters]
        for row in rows:
            refuse_nul(row.values() if isinstance(row, dict) else (row or ()))


def alembic_config() -> Config:
    """The Alembic configuration of the packaged migrations (no alembic.ini needed)."""
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(_MIGRATIONS_DIR))
    return config


def prepare_schema(sa_engine: SAEngine, *, read_only: bool = False) -> None:
    """Creates the schema on an empty database (stamped at the Alembic head), or upgrades
    an existing one to the head. Safe when several processes start at once: the check and
    the creation run in one write transaction (SQLite) or under an advisory lock
    (PostgreSQL).

    Raises:
        ForeignDatabase: the database holds tables but not memfs's schema; nothing is
            written to it.
        DatabaseReadOnly: ``read_only`` and the database is not at the head revision.
    """
    with sa_engine.connect() as conn, conn.begin():
        current = None
        if inspect(conn).has_table("alembic_version"):
            current = conn.execute(text("SELECT version_num FROM alembic_version")).scalar()
            if current == SCHEMA_HEAD:
                return
        _refuse_foreign(
            f"the database {sa_engine.url.render_as_string(hide_password=True)}",
            set(inspect(conn).get_table_names()),
            current,
        )
    if read_only:
        raise DatabaseReadOnly(
            f"the store database is at schema revision {current!r} and needs an upgrade to "
            f"{SCHEMA_HEAD!r}, which a read-only open can't do; open it once for writing"
        )
    # Alembic is imported only here, not at module load: it costs every CLI call ~65 ms.
    from alembic.migration import MigrationContext
    from alembic.script import ScriptDirectory

    from memfs.store import search  # as alembic: only when the schema is created

    with sa_engine.connect() as conn:
        conn.execution_options(**{WRITE: True})
        with conn.begin():
            if conn.dialect.name == "postgresql":
                conn.execute(text("SELECT pg_advisory_xact_lock(7413001)"))
            script = ScriptDirectory.from_config(alembic_config())
            context = MigrationContext.configure(conn)
            if not inspect(conn).has_table("stores"):
                metadata.create_all(conn)
                search.create_index_objects(conn)
                context.stamp(script, "head")
                return
            current = context.get_current_revision()
            if current == script.get_current_head():
                return
            config = alembic_config()
            config.attributes["connection"] = conn
            from alembic import command

            command.upgrade(config, "head")
