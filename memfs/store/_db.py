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

from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy import Connection, create_engine, event, inspect, text
from sqlalchemy import Engine as SAEngine
from sqlalchemy.exc import OperationalError

if TYPE_CHECKING:
    from alembic.config import Config

from memfs.errors import InvalidInput, StoreBusy
from memfs.store import search
from memfs.store.schema import metadata

__all__ = [
    "SCHEMA_HEAD",
    "SQLITE_BUSY_TIMEOUT_MS",
    "WRITE",
    "alembic_config",
    "busy_error",
    "make_sa_engine",
    "prepare_schema",
]

# The newest migration's revision id; a test checks it against the migration scripts.
# Opening an up-to-date database compares against it without loading Alembic.
SCHEMA_HEAD = "0003"

# Execution option that marks a connection's next transaction as a write transaction.
WRITE = "memfs_write"

# How long a statement waits for another connection's lock before StoreBusy: SQLite's
# busy timeout, PostgreSQL's lock_timeout, and the in-process write lock's wait.
SQLITE_BUSY_TIMEOUT_MS = 30_000
# SQLite result codes (https://www.sqlite.org/rescode.html): the primary code is the
# low byte of an extended one (SQLITE_BUSY_SNAPSHOT = 517 is a SQLITE_BUSY).
_SQLITE_BUSY = 5
_SQLITE_LOCKED = 6
# PostgreSQL SQLSTATE lock_not_available (lock_timeout expired).
_PG_LOCK_NOT_AVAILABLE = "55P03"
_MIGRATIONS_DIR = Path(__file__).with_name("migrations")


def busy_error(exc: OperationalError, waited_s: float) -> StoreBusy | None:
    """The StoreBusy that ``exc`` stands for — SQLite's SQLITE_BUSY/SQLITE_LOCKED
    ("database is locked") or PostgreSQL's lock_timeout — or None for anything else.
    Read from the driver's error code, never from message text."""
    orig = exc.orig
    code = getattr(orig, "sqlite_errorcode", None)
    if isinstance(code, int) and code & 0xFF in (_SQLITE_BUSY, _SQLITE_LOCKED):
        pass
    elif getattr(orig, "sqlstate", None) != _PG_LOCK_NOT_AVAILABLE:
        return None
    return StoreBusy(
        f"the database stayed locked by another writer for {waited_s:g} s; nothing was "
        "changed, try again"
    )


def make_sa_engine(
    url: str, *, synchronous_full: bool = True, busy_timeout_ms: int = SQLITE_BUSY_TIMEOUT_MS
) -> SAEngine:
    """A SQLAlchemy engine for ``url`` with memfs's per-dialect settings applied.

    Creates the directory of a SQLite file if needed.

    Args:
        busy_timeout_ms: how long a statement waits for another connection's lock
            (SQLite ``busy_timeout``, PostgreSQL ``lock_timeout``).
    """
    if url.startswith("sqlite"):
        db_path = url.split("///", 1)[1] if "///" in url else ""
        if db_path and db_path != ":memory:":
            Path(db_path).parent.mkdir(parents=True, exist_ok=True)
        sa_engine = create_engine(
            url,
            connect_args={"check_same_thread": False, "timeout": busy_timeout_ms / 1000},
            pool_size=8,
            max_overflow=8,
        )
        synchronous = "FULL" if synchronous_full else "NORMAL"

        @event.listens_for(sa_engine, "connect")
        def _on_connect(dbapi_connection: Any, _record: Any) -> None:
            dbapi_connection.isolation_level = None  # we emit BEGIN ourselves
            cursor = dbapi_connection.cursor()
            cursor.execute("PRAGMA journal_mode=WAL")
            cursor.execute(f"PRAGMA synchronous={synchronous}")
            cursor.execute("PRAGMA foreign_keys=ON")
            cursor.execute("PRAGMA secure_delete=ON")
            cursor.execute(f"PRAGMA busy_timeout={int(busy_timeout_ms)}")
            cursor.close()

        @event.listens_for(sa_engine, "begin")
        def _on_begin(connection: Connection) -> None:
            if connection.get_execution_options().get(WRITE):
                connection.exec_driver_sql("BEGIN IMMEDIATE")
            else:
                connection.exec_driver_sql("BEGIN")

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
            values = row.values() if isinstance(row, dict) else (row or ())
            for value in values:
                if isinstance(value, str) and "\x00" in value:
                    raise InvalidInput("text must not contain the NUL character (U+0000)")


def alembic_config() -> Config:
    """The Alembic configuration of the packaged migrations (no alembic.ini needed)."""
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(_MIGRATIONS_DIR))
    return config


def prepare_schema(sa_engine: SAEngine) -> None:
    """Creates the schema on an empty database (stamped at the Alembic head), or upgrades
    an existing one to the head. Safe when several processes start at once: the check and
    the creation run in one write transaction (SQLite) or under an advisory lock
    (PostgreSQL).
    """
    with sa_engine.connect() as conn, conn.begin():
        if inspect(conn).has_table("alembic_version"):
            current = conn.execute(text("SELECT version_num FROM alembic_version")).scalar()
            if current == SCHEMA_HEAD:
                return
    # Alembic is imported only here, not at module load: it costs every CLI call ~65 ms.
    from alembic.migration import MigrationContext
    from alembic.script import ScriptDirectory

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
