"""What every aggregate module of the store shares: timestamps, actors, row-to-model
conversions, the store-row lock, page limits and keyset cursors, path ranges.

Nothing here starts a transaction: every function takes the :class:`Connection` of the
caller's one transaction (see :mod:`memfs.store.engine`).
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, Row, bindparam, select

from memfs.core.config import MAX_PAGE_LIMIT
from memfs.core.errors import InvalidCursor, InvalidInput, NotFound, StoreArchived
from memfs.core.model import (
    Actor,
    ActorType,
    MemoryVersion,
    Operation,
    format_timestamp,
    utcnow,
)
from memfs.store import _hot
from memfs.store._light import memory_model, parse_ts, store_model
from memfs.store.schema import stores

__all__ = [
    "Cursor",
    "actor_columns",
    "actor_of",
    "ancestors",
    "check_limit",
    "execute_many",
    "descendant_upper_bound",
    "lock_store",
    "memory_model",
    "now",
    "parse_ts",
    "require_writable",
    "store_model",
    "store_row",
    "ts",
    "version_model",
    "insert_many",
]


def execute_many(conn: Connection, sql: str, rows: Sequence[tuple[Any, ...]]) -> None:
    """Runs ``sql`` (``?`` placeholders) once per row in one DBAPI executemany, skipping
    SQLAlchemy's per-row parameter processing: the bulk writes of a directory rename
    (10,000 rows), where that processing cost more than SQLite's own work."""
    if not rows:
        return
    if conn.dialect.paramstyle != "qmark":
        sql = sql.replace("?", "%s")
    conn.exec_driver_sql(sql, list(rows))


def insert_many(
    conn: Connection, table: str, columns: Sequence[str], rows: Sequence[tuple[Any, ...]]
) -> None:
    """Inserts ``rows`` (values in the order of ``columns``) into ``table``, in the
    caller's transaction: one DBAPI executemany on SQLite (as :func:`execute_many`),
    one ``COPY … FROM STDIN`` on PostgreSQL (psycopg's pipelined executemany was 1.5 s
    for the 10,000 versions of a fork, multi-row VALUES 3 s of query parsing; COPY
    0.1 s). For the bulk writes: a fork, a directory rename's versions and changes."""
    if not rows:
        return
    names = ", ".join(columns)
    if conn.dialect.name == "sqlite":
        marks = ", ".join("?" for _ in columns)
        conn.exec_driver_sql(f"INSERT INTO {table} ({names}) VALUES ({marks})", list(rows))
        return
    raw: Any = conn.connection.dbapi_connection  # a psycopg.Connection
    with raw.cursor() as cursor, cursor.copy(f"COPY {table} ({names}) FROM STDIN") as copy:
        for row in rows:
            copy.write_row(row)


def ts(value: datetime) -> str:
    """``value`` as stored: ISO-8601 UTC text with microseconds (see schema.py)."""
    return format_timestamp(value)


def now() -> str:
    """The current time as stored."""
    return format_timestamp(utcnow())


def actor_columns(actor: Actor | None) -> tuple[str | None, str | None]:
    """``(actor_type, actor_id)`` columns of ``actor`` (both None when unknown)."""
    return (None, None) if actor is None else (actor.type.value, actor.id)


def actor_of(actor_type: str | None, actor_id: str | None) -> Actor | None:
    if actor_type is None or actor_id is None:
        return None
    return Actor(type=ActorType(actor_type), id=actor_id)


def descendant_upper_bound(directory: str) -> str:
    """For a prefix ending in ``/``, the smallest string above every path under it.

    Paths compare byte-wise; ``'0'`` is the character after ``'/'``.
    """
    return directory[:-1] + "0"


def ancestors(path: str) -> list[str]:
    """``/a/b/c`` → ``['/a', '/a/b']``."""
    parts = path.split("/")[1:-1]
    return ["/" + "/".join(parts[: i + 1]) for i in range(len(parts))]


def check_limit(limit: int) -> int:
    """Raises InvalidInput unless ``limit`` is an int from 1 to MAX_PAGE_LIMIT."""
    if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= MAX_PAGE_LIMIT:
        raise InvalidInput(f"limit must be an integer from 1 to {MAX_PAGE_LIMIT}")
    return limit


class Cursor:
    """Opaque keyset cursors: base64url JSON ``{"q": query fingerprint, "k": key}``.

    The fingerprint binds a cursor to the endpoint and filters it was issued for
    (api-contract §3 recommendation); any mismatch raises InvalidCursor.
    """

    @staticmethod
    def fingerprint(*parts: object) -> str:
        return hashlib.sha256(json.dumps(parts, default=str).encode()).hexdigest()[:16]

    @staticmethod
    def encode(fingerprint: str, key: Any) -> str:
        raw = json.dumps({"q": fingerprint, "k": key}, separators=(",", ":")).encode()
        return base64.urlsafe_b64encode(raw).decode().rstrip("=")

    @staticmethod
    def decode(cursor: str, fingerprint: str) -> Any:
        try:
            padded = cursor + "=" * (-len(cursor) % 4)
            data = json.loads(base64.urlsafe_b64decode(padded.encode()))
            if not isinstance(data, dict) or data.get("q") != fingerprint or "k" not in data:
                raise ValueError
            return data["k"]
        except (ValueError, TypeError, UnicodeError) as exc:
            raise InvalidCursor(
                "page cursor is malformed or was issued for a different query"
            ) from exc


_STORE_ROW = select(stores).where(stores.c.id == bindparam("store_id"))
_LOCK_STORE = _STORE_ROW.with_for_update()


def lock_store(conn: Connection, store_id: str) -> Row[Any]:
    """The store row, locked until commit (``FOR UPDATE``; SQLite's ``BEGIN IMMEDIATE``
    already serializes writers). Every write locks it first. Raises NotFound."""
    row = _hot.first(conn, _LOCK_STORE, {"store_id": store_id})
    if row is None:
        raise NotFound(f"memory store {store_id!r} not found")
    return row  # type: ignore[no-any-return]


def store_row(conn: Connection, store_id: str) -> Row[Any]:
    """The store row, unlocked. Raises NotFound."""
    row = _hot.first(conn, _STORE_ROW, {"store_id": store_id})
    if row is None:
        raise NotFound(f"memory store {store_id!r} not found")
    return row  # type: ignore[no-any-return]


def require_writable(row: Row[Any]) -> None:
    """Raises StoreArchived when the store of ``row`` is archived (SPEC §2 archive)."""
    if row.archived_at is not None:
        raise StoreArchived(
            f"memory store {row.id!r} is archived: its memories can't be created or updated"
        )


# The models below are built from the store's own rows, whose columns already hold what
# the fields are (the schema's types and CHECKs, fsck): model_construct skips pydantic's
# validation, and with it building the models' validators in every process that only
# reads (README "Performance", CLI start).


def version_model(row: Row[Any], content: bytes | None = None) -> MemoryVersion:
    """A MemoryVersion from a versions row (not validated: see above)."""
    return MemoryVersion.model_construct(
        id=row.id,
        memory_id=row.memory_id,
        memory_store_id=row.store_id,
        operation=Operation(row.operation),
        created_at=datetime.fromisoformat(row.created_at),
        content=None if content is None else content.decode("utf-8"),
        content_sha256=row.content_sha256,
        content_size_bytes=row.size_bytes,
        path=row.path,
        created_by=actor_of(row.actor_type, row.actor_id),
        redacted_at=parse_ts(row.redacted_at),
        redacted_by=actor_of(row.redacted_by_type, row.redacted_by_id),
        reason=row.reason,
    )
