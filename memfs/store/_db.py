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
from typing import Any

from alembic.config import Config
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Connection, create_engine, event, inspect, text
from sqlalchemy import Engine as SAEngine

from memfs.store.schema import metadata

__all__ = ["WRITE", "alembic_config", "make_sa_engine", "prepare_schema"]

# Execution option that marks a connection's next transaction as a write transaction.
WRITE = "memfs_write"

SQLITE_BUSY_TIMEOUT_MS = 30_000
_MIGRATIONS_DIR = Path(__file__).with_name("migrations")


def make_sa_engine(url: str, *, synchronous_full: bool = True) -> SAEngine:
    """A SQLAlchemy engine for ``url`` with memfs's per-dialect settings applied.

    Creates the directory of a SQLite file if needed.
    """
    if url.startswith("sqlite"):
        db_path = url.split("///", 1)[1] if "///" in url else ""
        if db_path and db_path != ":memory:":
            Path(db_path).parent.mkdir(parents=True, exist_ok=True)
        sa_engine = create_engine(
            url,
            connect_args={"check_same_thread": False, "timeout": SQLITE_BUSY_TIMEOUT_MS / 1000},
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
            cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
            cursor.close()

        @event.listens_for(sa_engine, "begin")
        def _on_begin(connection: Connection) -> None:
            if connection.get_execution_options().get(WRITE):
                connection.exec_driver_sql("BEGIN IMMEDIATE")
            else:
                connection.exec_driver_sql("BEGIN")

        return sa_engine
    return create_engine(url, pool_size=8, max_overflow=8, pool_pre_ping=True)


def alembic_config() -> Config:
    """The Alembic configuration of the packaged migrations (no alembic.ini needed)."""
    config = Config()
    config.set_main_option("script_location", str(_MIGRATIONS_DIR))
    return config


def prepare_schema(sa_engine: SAEngine) -> None:
    """Creates the schema on an empty database (stamped at the Alembic head), or upgrades
    an existing one to the head. Safe when several processes start at once: the check and
    the creation run in one write transaction (SQLite) or under an advisory lock
    (PostgreSQL).
    """
    with sa_engine.connect() as conn:
        conn.execution_options(**{WRITE: True})
        with conn.begin():
            if conn.dialect.name == "postgresql":
                conn.execute(text("SELECT pg_advisory_xact_lock(7413001)"))
            script = ScriptDirectory.from_config(alembic_config())
            context = MigrationContext.configure(conn)
            if not inspect(conn).has_table("stores"):
                metadata.create_all(conn)
                context.stamp(script, "head")
                return
            current = context.get_current_revision()
            if current == script.get_current_head():
                return
            config = alembic_config()
            config.attributes["connection"] = conn
            from alembic import command

            command.upgrade(config, "head")
