"""The store engine: the only module family that speaks SQL.

One engine runs on embedded SQLite (WAL) and on PostgreSQL, through SQLAlchemy Core.
Every public method is synchronous, thread-safe and runs one transaction; callers on
the trio loop (the FUSE layer, the API) call it through ``trio.to_thread.run_sync``.

Write transactions lock the store row first (``SELECT … FOR UPDATE`` on PostgreSQL,
``BEGIN IMMEDIATE`` on SQLite), so the per-store invariants that span rows (path
uniqueness against ancestors and descendants, the memory limit, the gap-free change
sequence, the counters) hold across threads, processes and API servers sharing one
database.

Content is content-addressed: the ``blobs`` table holds each distinct content once, keyed
by its xxh3-128 digest, with its SHA-256 recorded. A blob is written in the same
transaction as the first row that references it and deleted in the same transaction as
the last reference goes (redaction, hard delete, store deletion, retention), so a crash
at any point leaves neither an orphan nor a dangling reference.
"""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import threading
from collections.abc import Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from datetime import datetime
from types import SimpleNamespace
from typing import Any

import xxhash
from sqlalchemy import (
    Connection,
    LargeBinary,
    Row,
    and_,
    bindparam,
    delete,
    func,
    insert,
    or_,
    select,
    text,
    union_all,
    update,
)

from memfs import config, rules
from memfs.config import MAX_PAGE_LIMIT, MAX_STORES_PER_SESSION
from memfs.errors import (
    AuthenticationFailed,
    CorruptedStore,
    HeadVersionRedaction,
    InvalidCursor,
    InvalidInput,
    NotFound,
    NotRestorable,
    PathConflict,
    PreconditionFailed,
    StoreArchived,
    StoreFull,
)
from memfs.ids import new_id
from memfs.model import (
    Access,
    Actor,
    ActorType,
    ApiKey,
    Change,
    ChangeKind,
    DeleteMode,
    Memory,
    MemoryPrefix,
    MemoryStore,
    MemoryVersion,
    Operation,
    Page,
    Scope,
    Session,
    SessionResource,
    format_timestamp,
    utcnow,
)
from memfs.store import fsck as _fsck
from memfs.store._db import WRITE, make_sa_engine, prepare_schema
from memfs.store.schema import (
    api_keys,
    audit_log,
    blobs,
    changes,
    memories,
    session_resources,
    sessions,
    stores,
    versions,
)

__all__ = ["Engine", "ResourceSpec", "blob_key_of", "sha256_of"]

SESSION_TOKEN_PREFIX = "memfs_st_"
API_KEY_SECRET_PREFIX = "memfs_sk_"


def blob_key_of(data: bytes) -> str:
    """The content address of ``data``: xxh3-128, 32 lowercase hex digits."""
    return xxhash.xxh3_128_hexdigest(data)


def sha256_of(data: bytes) -> str:
    """Lowercase hex SHA-256 of ``data`` (the wire's ``content_sha256``)."""
    return hashlib.sha256(data).hexdigest()


def _token_hash(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def _ts(value: datetime) -> str:
    return format_timestamp(value)


def _parse_ts(value: str | None) -> datetime | None:
    return None if value is None else datetime.fromisoformat(value)


def _now() -> str:
    return format_timestamp(utcnow())


def _actor_columns(actor: Actor | None) -> tuple[str | None, str | None]:
    return (None, None) if actor is None else (actor.type.value, actor.id)


def _actor(actor_type: str | None, actor_id: str | None) -> Actor | None:
    if actor_type is None or actor_id is None:
        return None
    return Actor(type=ActorType(actor_type), id=actor_id)


def _descendant_upper_bound(directory: str) -> str:
    """For a prefix ending in ``/``, the smallest string above every path under it.

    Paths compare byte-wise; ``'0'`` is the character after ``'/'``.
    """
    return directory[:-1] + "0"


def _ancestors(path: str) -> list[str]:
    """``/a/b/c`` → ``['/a', '/a/b']``."""
    parts = path.split("/")[1:-1]
    return ["/" + "/".join(parts[: i + 1]) for i in range(len(parts))]


class _Cursor:
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


# Hot-path statements built once with bind parameters: SQLAlchemy then skips building a
# statement and its cache key per call, which profiling showed to be most of a write.
_BUMP_STORE = (
    update(stores)
    .where(stores.c.id == bindparam("store_id"))
    .values(
        last_change_seq=stores.c.last_change_seq + 1,
        entry_count=stores.c.entry_count + bindparam("entries"),
        total_size_bytes=stores.c.total_size_bytes + bindparam("size_bytes"),
    )
    .returning(stores.c.last_change_seq)
)
_LOCK_STORE = select(stores).where(stores.c.id == bindparam("store_id")).with_for_update()
_LIVE_MEMORY = select(memories).where(
    memories.c.id == bindparam("memory_id"),
    memories.c.store_id == bindparam("store_id"),
    memories.c.deleted_at.is_(None),
)
_MEMORY_BY_ID = select(memories).where(memories.c.id == bindparam("memory_id"))
# No .values(): the SET clause is the executed parameters other than memory_id, and
# SQLAlchemy caches one compiled form per set of parameter names. It silently skips a
# name that is no column, so run it through _set_memory_columns, which checks.
_UPDATE_MEMORY = update(memories).where(memories.c.id == bindparam("memory_id"))
_MEMORY_COLUMNS = frozenset(memories.c.keys())
_INSERT_MEMORY = insert(memories)
_INSERT_VERSION = insert(versions)
_INSERT_CHANGE = insert(changes)
_INSERT_AUDIT = insert(audit_log)
_BLOB_DATA = select(blobs.c.data).where(blobs.c.key == bindparam("key"))
_BLOBS_DATA = select(blobs.c.key, blobs.c.data).where(
    blobs.c.key.in_(bindparam("keys", expanding=True))
)
_BLOB_SHA256 = select(blobs.c.sha256).where(blobs.c.key == bindparam("key"))
# A mount's whole tree (all_memories): the columns of a live memory without content, as
# plain tuples, in path order (index ix_memories_live_path). store_id and deleted_at are
# known (the argument; NULL), delete_mode is not part of a Memory.
_LIVE_MEMORY_TREE = (
    select(
        memories.c.id,
        memories.c.path,
        memories.c.blob_key,
        memories.c.content_sha256,
        memories.c.size_bytes,
        memories.c.head_version_id,
        memories.c.metadata_json,
        memories.c.created_at,
        memories.c.updated_at,
    )
    .where(memories.c.store_id == bindparam("store_id"), memories.c.deleted_at.is_(None))
    .order_by(memories.c.path)
)
# The blob upserts are text because SQLAlchemy 2.0 never caches the dialect-specific
# insert() with ON CONFLICT (inherit_cache=False), so it would be compiled on every
# write. The SQL is what sqlite.insert(...).on_conflict_do_nothing() and
# postgresql.insert(...).on_conflict_do_update(...) render.
_INSERT_BLOB_SQLITE = text(
    'INSERT INTO blobs ("key", sha256, size_bytes, data) '
    "VALUES (:key, :sha256, :size_bytes, :data) ON CONFLICT DO NOTHING"
).bindparams(bindparam("data", type_=LargeBinary))
# Blobs are shared across stores, whose writers lock different store rows. The upsert
# row-locks the blob until commit, so a concurrent purge in another store (which locks
# the row before checking references, see _gc_blobs) either waits and then sees our
# reference, or commits first and we insert anew.
_UPSERT_BLOB_POSTGRESQL = (
    text(
        "INSERT INTO blobs (key, sha256, size_bytes, data) "
        "VALUES (:key, :sha256, :size_bytes, :data) "
        "ON CONFLICT (key) DO UPDATE SET key = excluded.key RETURNING blobs.sha256"
    )
    .bindparams(bindparam("data", type_=LargeBinary))
    .columns(blobs.c.sha256)
)


def _path_check_statement(*, ignoring: bool) -> Any:
    """The query of Engine._check_path_free, with ``:paths`` (the path and its ancestors,
    expanding), ``:below``/``:below_end`` (the descendant range) and, if ``ignoring``,
    ``:ignore_id``."""
    live = and_(memories.c.store_id == bindparam("store_id"), memories.c.deleted_at.is_(None))
    if ignoring:
        live = and_(live, memories.c.id != bindparam("ignore_id"))
    # One round trip: the exact path and its ancestors by the unique index, plus the
    # first descendant by a range scan of the same index (each branch indexable).
    exact_or_above = select(memories).where(
        live, memories.c.path.in_(bindparam("paths", expanding=True))
    )
    first_below = (
        select(memories)
        .where(
            live,
            memories.c.path >= bindparam("below"),
            memories.c.path < bindparam("below_end"),
        )
        .order_by(memories.c.path)
        .limit(1)
    )
    return union_all(exact_or_above, select(first_below.subquery()))


_PATH_CHECK = _path_check_statement(ignoring=False)
_PATH_CHECK_IGNORING = _path_check_statement(ignoring=True)


def _check_limit(limit: int) -> int:
    if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= MAX_PAGE_LIMIT:
        raise InvalidInput(f"limit must be an integer from 1 to {MAX_PAGE_LIMIT}")
    return limit


def _check_precondition(row: Row[Any], expected_sha256: str | None) -> None:
    """SPEC §2 optimistic concurrency: raises PreconditionFailed unless the memory's
    head digest is ``expected_sha256`` (None: no precondition)."""
    if expected_sha256 is not None and expected_sha256 != row.content_sha256:
        raise PreconditionFailed(
            f"memory {row.id!r} has content_sha256 {row.content_sha256}, "
            f"not the expected {expected_sha256}",
            actual_sha256=row.content_sha256,
        )


class ResourceSpec:
    """A store to attach to a new session: id, access mode and optional instructions."""

    def __init__(
        self,
        memory_store_id: str,
        access: Access = Access.READ_WRITE,
        instructions: str | None = None,
    ) -> None:
        self.memory_store_id = memory_store_id
        self.access = access
        self.instructions = instructions


class Engine:
    """A handle on one store database.

    Args:
        url: a SQLAlchemy URL (see :func:`memfs.config.database_url`); SQLite files and
            their directory are created on first use, schema included.
        memory_limit: live memories allowed per store (SPEC §1 limits); None reads
            ``$MEMFS_MEMORY_LIMIT``, else 10,000.
        synchronous_full: SQLite only. True (``PRAGMA synchronous=FULL``) fsyncs the WAL
            at every commit, so a committed version survives power loss too. False
            (``NORMAL``, the WAL's usual setting) makes a commit durable against any
            process crash — the WAL is written before commit returns — and fsyncs at
            checkpoints; a power loss may roll back the newest commits, never corrupt.
            None reads ``$MEMFS_SQLITE_SYNC`` (``full`` or ``normal``), else ``normal``.
    """

    def __init__(
        self, url: str, *, memory_limit: int | None = None, synchronous_full: bool | None = None
    ) -> None:
        if memory_limit is None:
            memory_limit = config.memory_limit()
        self.url = url
        self.memory_limit = memory_limit
        if synchronous_full is None:
            synchronous_full = config.sqlite_synchronous_full()
        self._sa = make_sa_engine(url, synchronous_full=synchronous_full)
        self.dialect = self._sa.dialect.name
        self._write_lock: AbstractContextManager[Any] = (
            threading.Lock() if self.dialect == "sqlite" else nullcontext()
        )
        prepare_schema(self._sa)

    def close(self) -> None:
        """Releases every pooled connection (checkpointing the SQLite WAL)."""
        if self.dialect == "sqlite":
            self._checkpoint()
        self._sa.dispose()

    def __enter__(self) -> Engine:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # ------------------------------------------------------------ plumbing

    @contextmanager
    def _read(self) -> Iterator[Connection]:
        with self._sa.connect() as conn, conn.begin():
            yield conn

    @contextmanager
    def _write(self) -> Iterator[Connection]:
        # SQLite admits one writer; waiting writers of other connections poll with a
        # sleeping busy handler, so 16 threads see multi-second tails. In-process writers
        # take turns on a lock instead; busy_timeout still arbitrates between processes.
        with self._write_lock, self._sa.connect() as conn:
            conn.execution_options(**{WRITE: True})
            with conn.begin():
                yield conn

    def _checkpoint(self) -> None:
        """Moves the WAL into the main file and truncates it, so bytes erased by
        redaction leave the WAL too (SPEC §2 redaction). Best effort: a reader holding an
        old snapshot makes SQLite skip frames; the next checkpoint gets them."""
        if self.dialect != "sqlite":
            return
        with self._sa.connect() as conn:
            conn.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")

    def _lock_store(self, conn: Connection, store_id: str) -> Row[Any]:
        row = conn.execute(_LOCK_STORE, {"store_id": store_id}).first()
        if row is None:
            raise NotFound(f"memory store {store_id!r} not found")
        return row

    def _store_row(self, conn: Connection, store_id: str) -> Row[Any]:
        row = conn.execute(select(stores).where(stores.c.id == store_id)).first()
        if row is None:
            raise NotFound(f"memory store {store_id!r} not found")
        return row

    @staticmethod
    def _require_writable(store_row: Row[Any]) -> None:
        if store_row.archived_at is not None:
            raise StoreArchived(
                f"memory store {store_row.id!r} is archived: its memories can't be "
                "created or updated"
            )

    def _emit(
        self,
        conn: Connection,
        store_id: str,
        kind: ChangeKind,
        *,
        memory_id: str | None = None,
        path: str | None = None,
        old_path: str | None = None,
        blob_key: str | None = None,
        content_sha256: str | None = None,
        version_id: str | None = None,
        entries: int = 0,
        size_bytes: int = 0,
    ) -> int:
        """Appends one change-feed entry and applies counter deltas in the same statement
        that bumps the store's seq; the store row must be locked. Returns the seq.

        A ``memory_written`` entry records the memory's new head version and digest,
        which the caller passes as ``version_id`` and ``content_sha256``;
        ``blob_purged`` entries carry the purged blob's key and SHA-256.

        Args:
            entries, size_bytes: deltas of the store's entry_count and total_size_bytes.
        """
        assert kind is not ChangeKind.MEMORY_WRITTEN or (
            version_id is not None and content_sha256 is not None
        ), "a memory_written change needs the new head version and digest"
        seq = conn.execute(
            _BUMP_STORE, {"store_id": store_id, "entries": entries, "size_bytes": size_bytes}
        ).scalar_one()
        conn.execute(
            _INSERT_CHANGE,
            dict(
                store_id=store_id,
                seq=seq,
                kind=kind.value,
                memory_id=memory_id,
                path=path,
                old_path=old_path,
                blob_key=blob_key,
                content_sha256=content_sha256,
                memory_version_id=version_id,
                created_at=_now(),
            ),
        )
        return int(seq)

    def _audit(
        self,
        conn: Connection,
        store_id: str,
        action: str,
        *,
        memory_id: str | None,
        actor: Actor | None,
        reason: str | None,
    ) -> None:
        actor_type, actor_id = _actor_columns(actor)
        conn.execute(
            _INSERT_AUDIT,
            dict(
                store_id=store_id,
                memory_id=memory_id,
                action=action,
                reason=reason,
                actor_type=actor_type,
                actor_id=actor_id,
                created_at=_now(),
            ),
        )

    def _put_blob(self, conn: Connection, data: bytes) -> tuple[str, str]:
        """Stores ``data`` once; returns ``(blob_key, sha256)``.

        Raises:
            CorruptedStore: an existing blob with this key holds other bytes (an xxh3
                collision or a damaged row); nothing is overwritten.
        """
        key = blob_key_of(data)
        digest = sha256_of(data)
        params = {"key": key, "sha256": digest, "size_bytes": len(data), "data": data}
        if self.dialect == "postgresql":
            # Row-locks the blob until commit (see _UPSERT_BLOB_POSTGRESQL).
            existing = conn.execute(_UPSERT_BLOB_POSTGRESQL, params).scalar()
        else:
            # SQLite has one writer at a time, so this is race-free; new content costs
            # one statement, known content a second one to verify the digest.
            inserted = conn.execute(_INSERT_BLOB_SQLITE, params).rowcount
            existing = digest if inserted else conn.execute(_BLOB_SHA256, {"key": key}).scalar()
        if existing != digest:
            raise CorruptedStore(f"blob {key} holds different bytes than its key promises")
        return key, digest

    def _gc_blobs(self, conn: Connection, store_id: str | None, keys: Iterable[str | None]) -> int:
        """Deletes the given blobs that nothing references any more, and announces each in
        the change feed of ``store_id`` (``blob_purged``) so mounts drop them from caches.
        Returns how many were deleted."""
        purged = 0
        for key in sorted({k for k in keys if k is not None}):
            # Lock the blob first (PostgreSQL), so a writer of another store taking a new
            # reference to it either finished before we look or waits for our decision.
            digest = conn.execute(
                select(blobs.c.sha256).where(blobs.c.key == key).with_for_update()
            ).scalar()
            if digest is None:
                continue
            referenced = conn.execute(
                select(
                    or_(
                        select(memories.c.id).where(memories.c.blob_key == key).exists(),
                        select(versions.c.seq).where(versions.c.blob_key == key).exists(),
                    )
                )
            ).scalar()
            if referenced:
                continue
            conn.execute(delete(blobs).where(blobs.c.key == key))
            purged += 1
            if store_id is not None:
                self._emit(
                    conn, store_id, ChangeKind.BLOB_PURGED, blob_key=key, content_sha256=digest
                )
        return purged

    # ----------------------------------------------------- row conversions

    @staticmethod
    def _store_model(row: Row[Any]) -> MemoryStore:
        return MemoryStore(
            id=row.id,
            name=row.name,
            description=row.description,
            metadata=json.loads(row.metadata_json),
            created_at=datetime.fromisoformat(row.created_at),
            updated_at=datetime.fromisoformat(row.updated_at),
            archived_at=_parse_ts(row.archived_at),
            entry_count=row.entry_count,
            total_size_bytes=row.total_size_bytes,
        )

    @staticmethod
    def _memory_model(row: Row[Any] | SimpleNamespace, content: bytes | None = None) -> Memory:
        # row: a memories row, or a namespace of its columns as just written.
        return Memory(
            id=row.id,
            memory_store_id=row.store_id,
            path=row.path,
            content=None if content is None else content.decode("utf-8"),
            content_sha256=row.content_sha256,
            content_size_bytes=row.size_bytes,
            memory_version_id=row.head_version_id,
            metadata=json.loads(row.metadata_json),
            created_at=datetime.fromisoformat(row.created_at),
            updated_at=datetime.fromisoformat(row.updated_at),
            blob_key=row.blob_key or "",
            deleted_at=_parse_ts(row.deleted_at),
        )

    @staticmethod
    def _version_model(row: Row[Any], content: bytes | None = None) -> MemoryVersion:
        return MemoryVersion(
            id=row.id,
            memory_id=row.memory_id,
            memory_store_id=row.store_id,
            operation=Operation(row.operation),
            created_at=datetime.fromisoformat(row.created_at),
            content=None if content is None else content.decode("utf-8"),
            content_sha256=row.content_sha256,
            content_size_bytes=row.size_bytes,
            path=row.path,
            created_by=_actor(row.actor_type, row.actor_id),
            redacted_at=_parse_ts(row.redacted_at),
            redacted_by=_actor(row.redacted_by_type, row.redacted_by_id),
            reason=row.reason,
        )

    def _blob_data(self, conn: Connection, key: str | None) -> bytes | None:
        if key is None:
            return None
        data = conn.execute(_BLOB_DATA, {"key": key}).scalar()
        if data is None:
            raise CorruptedStore(f"blob {key} is referenced but missing")
        return bytes(data)

    # ------------------------------------------------------------- stores

    def create_store(
        self, name: str, description: str = "", metadata: dict[str, str] | None = None
    ) -> MemoryStore:
        """Creates a store (api-contract §5.1).

        Raises:
            InvalidStoreField: name or description breaks SPEC §1.
            InvalidMetadata: metadata breaks SPEC §1 (every problem named).
        """
        rules.validate_store_name(name)
        rules.validate_store_description(description)
        clean = rules.validate_metadata(metadata or {})
        now = _now()
        store_id = new_id("store")
        with self._write() as conn:
            conn.execute(
                insert(stores).values(
                    id=store_id,
                    name=name,
                    description=description,
                    metadata_json=json.dumps(clean, sort_keys=True),
                    created_at=now,
                    updated_at=now,
                    archived_at=None,
                    entry_count=0,
                    total_size_bytes=0,
                    last_change_seq=0,
                )
            )
            return self._store_model(self._store_row(conn, store_id))

    def get_store(self, store_id: str) -> MemoryStore:
        """A store, archived or not. Raises NotFound."""
        with self._read() as conn:
            return self._store_model(self._store_row(conn, store_id))

    def find_store(self, name_or_id: str) -> MemoryStore:
        """A store by id, else by exact name, else by slug (CLI convenience).

        Raises:
            NotFound: nothing matches.
            InvalidInput: several stores share that name or slug (the message lists ids).
        """
        with self._read() as conn:
            row = conn.execute(select(stores).where(stores.c.id == name_or_id)).first()
            if row is not None:
                return self._store_model(row)
            rows = conn.execute(
                select(stores).where(stores.c.name == name_or_id).order_by(stores.c.id)
            ).all()
            if not rows:
                rows = [
                    r
                    for r in conn.execute(select(stores).order_by(stores.c.id)).all()
                    if rules.slugify(r.name) == name_or_id
                ]
        if not rows:
            raise NotFound(f"no memory store is named or has the id {name_or_id!r}")
        if len(rows) > 1:
            ids = ", ".join(r.id for r in rows)
            raise InvalidInput(f"several memory stores are named {name_or_id!r} ({ids}); use an id")
        return self._store_model(rows[0])

    def update_store(
        self,
        store_id: str,
        *,
        name: str | None = None,
        description: str | None = None,
        metadata_patch: dict[str, str | None] | None = None,
    ) -> MemoryStore:
        """Patches a store; None means "no change"; a metadata value None removes the key.

        ``updated_at`` moves only when something changed (api-contract §5.3).

        Raises:
            NotFound, StoreArchived (updating an archived store), InvalidStoreField,
            InvalidMetadata (also when the patched result has more than 16 keys).
        """
        if name is not None:
            rules.validate_store_name(name)
        if description is not None:
            rules.validate_store_description(description)
        if metadata_patch is not None:
            rules.validate_metadata(metadata_patch, allow_null_values=True)
        with self._write() as conn:
            row = self._lock_store(conn, store_id)
            if row.archived_at is not None:
                raise StoreArchived(f"memory store {store_id!r} is archived and can't be updated")
            values: dict[str, Any] = {}
            if name is not None and name != row.name:
                values["name"] = name
            if description is not None and description != row.description:
                values["description"] = description
            if metadata_patch is not None:
                current: dict[str, str | None] = json.loads(row.metadata_json)
                merged = dict(current)
                for key, value in metadata_patch.items():
                    if value is None:
                        merged.pop(key, None)
                    else:
                        merged[key] = value
                rules.validate_metadata(merged)
                if merged != current:
                    values["metadata_json"] = json.dumps(merged, sort_keys=True)
            if values:
                values["updated_at"] = _now()
                conn.execute(update(stores).where(stores.c.id == store_id).values(**values))
                self._emit(conn, store_id, ChangeKind.STORE_UPDATED)
            return self._store_model(self._store_row(conn, store_id))

    def list_stores(
        self,
        *,
        include_archived: bool = False,
        created_gte: datetime | None = None,
        created_lte: datetime | None = None,
        limit: int = 20,
        cursor: str | None = None,
    ) -> Page[MemoryStore]:
        """Stores newest first (by id, which sorts by creation time).

        Raises:
            InvalidInput: limit outside 1–100.
            InvalidCursor: a cursor from another query.
        """
        _check_limit(limit)
        fingerprint = _Cursor.fingerprint("stores", include_archived, created_gte, created_lte)
        query = select(stores)
        if not include_archived:
            query = query.where(stores.c.archived_at.is_(None))
        if created_gte is not None:
            query = query.where(stores.c.created_at >= _ts(created_gte))
        if created_lte is not None:
            query = query.where(stores.c.created_at <= _ts(created_lte))
        if cursor is not None:
            query = query.where(stores.c.id < str(_Cursor.decode(cursor, fingerprint)))
        query = query.order_by(stores.c.id.desc()).limit(limit + 1)
        with self._read() as conn:
            rows = conn.execute(query).all()
        items = [self._store_model(r) for r in rows[:limit]]
        next_cursor = (
            _Cursor.encode(fingerprint, items[-1].id) if len(rows) > limit and items else None
        )
        return Page[MemoryStore](items=items, next_cursor=next_cursor)

    def archive_store(self, store_id: str, *, actor: Actor | None = None) -> MemoryStore:
        """Archives a store (one-way; an archived store comes back unchanged). Raises NotFound."""
        with self._write() as conn:
            row = self._lock_store(conn, store_id)
            if row.archived_at is None:
                now = _now()
                conn.execute(
                    update(stores)
                    .where(stores.c.id == store_id)
                    .values(archived_at=now, updated_at=now)
                )
                self._audit(
                    conn, store_id, "store_archive", memory_id=None, actor=actor, reason=None
                )
                self._emit(conn, store_id, ChangeKind.STORE_ARCHIVED)
            return self._store_model(self._store_row(conn, store_id))

    def delete_store(self, store_id: str, *, actor: Actor | None = None) -> None:
        """Deletes a store with its memories, versions and now-unreferenced blobs.

        A final ``store_deleted`` entry stays in the change feed so mounts learn of it.

        Raises:
            NotFound.
        """
        with self._write() as conn:
            self._lock_store(conn, store_id)
            keys = set(
                conn.execute(
                    select(memories.c.blob_key).where(memories.c.store_id == store_id)
                ).scalars()
            ) | set(
                conn.execute(
                    select(versions.c.blob_key).where(versions.c.store_id == store_id)
                ).scalars()
            )
            conn.execute(delete(versions).where(versions.c.store_id == store_id))
            conn.execute(delete(memories).where(memories.c.store_id == store_id))
            for key in keys:
                if key is not None:
                    self._gc_blobs(conn, store_id, [key])
            last = conn.execute(
                select(stores.c.last_change_seq).where(stores.c.id == store_id)
            ).scalar_one()
            conn.execute(delete(stores).where(stores.c.id == store_id))
            conn.execute(
                insert(changes),
                dict(
                    store_id=store_id,
                    seq=last + 1,
                    kind=ChangeKind.STORE_DELETED.value,
                    created_at=_now(),
                ),
            )
            self._audit(conn, store_id, "store_delete", memory_id=None, actor=actor, reason=None)
        self._checkpoint()

    # ----------------------------------------------------------- memories

    def _live_row(self, conn: Connection, store_id: str, memory_id: str) -> Row[Any]:
        row = conn.execute(_LIVE_MEMORY, {"memory_id": memory_id, "store_id": store_id}).first()
        if row is None:
            raise NotFound(f"memory {memory_id!r} not found in memory store {store_id!r}")
        return row

    def _check_path_free(
        self, conn: Connection, store_id: str, path: str, *, ignore_id: str | None = None
    ) -> Row[Any] | None:
        """Raises PathConflict when an ancestor or descendant of ``path`` is a live
        memory (SPEC §1: ``/a`` and ``/a/b`` can't coexist). Returns the live memory at
        exactly ``path`` (other than ``ignore_id``), or None; the caller decides."""
        below = path + "/"
        params = {
            "store_id": store_id,
            "paths": [path, *_ancestors(path)],
            "below": below,
            "below_end": _descendant_upper_bound(below),
        }
        if ignore_id is None:
            rows = conn.execute(_PATH_CHECK, params).all()
        else:
            rows = conn.execute(_PATH_CHECK_IGNORING, {**params, "ignore_id": ignore_id}).all()
        exact = None
        for row in sorted(rows, key=lambda r: len(r.path)):
            if row.path == path:
                exact = row
            elif len(row.path) < len(path):
                raise PathConflict(
                    f"path {path!r} is below the memory {row.path!r}, which is a file",
                    conflicting_memory_id=row.id,
                    conflicting_path=row.path,
                )
            else:
                raise PathConflict(
                    f"path {path!r} is a directory holding the memory {row.path!r}",
                    conflicting_memory_id=row.id,
                    conflicting_path=row.path,
                )
        return exact

    def _insert_version(
        self,
        conn: Connection,
        *,
        store_id: str,
        memory_id: str,
        operation: Operation,
        path: str,
        blob_key: str | None,
        sha: str | None,
        size: int | None,
        actor: Actor | None,
        now: str,
        reason: str | None = None,
    ) -> str:
        version_id = new_id("version")
        actor_type, actor_id = _actor_columns(actor)
        conn.execute(
            _INSERT_VERSION,
            dict(
                id=version_id,
                store_id=store_id,
                memory_id=memory_id,
                operation=operation.value,
                path=path,
                blob_key=blob_key,
                content_sha256=sha,
                size_bytes=size,
                created_at=now,
                actor_type=actor_type,
                actor_id=actor_id,
                reason=reason,
            ),
        )
        return version_id

    @staticmethod
    def _set_memory_columns(conn: Connection, memory_id: str, values: dict[str, Any]) -> None:
        """UPDATE memories SET ``values`` for one memory (a prebuilt statement)."""
        if not values.keys() <= _MEMORY_COLUMNS:
            raise ValueError(f"not columns of memories: {sorted(values.keys() - _MEMORY_COLUMNS)}")
        conn.execute(_UPDATE_MEMORY, {"memory_id": memory_id, **values})

    def _memory_after(self, conn: Connection, memory_id: str, with_content: bool) -> Memory:
        row = conn.execute(_MEMORY_BY_ID, {"memory_id": memory_id}).one()
        return self._memory_model(
            row, self._blob_data(conn, row.blob_key) if with_content else None
        )

    def create_memory(
        self,
        store_id: str,
        path: str,
        content: str,
        *,
        actor: Actor | None,
        metadata: dict[str, str] | None = None,
    ) -> Memory:
        """Creates a memory and its ``created`` version; returns it with content.

        Raises:
            NotFound, StoreArchived, InvalidPath, PathTooLong, InvalidContent,
            ContentTooLarge, InvalidMetadata, StoreFull, PathConflict (path, ancestor or
            descendant occupied; names the blocker).
        """
        rules.validate_path(path)
        rules.validate_content(content)
        clean = rules.validate_metadata(metadata or {})
        data = content.encode("utf-8")
        with self._write() as conn:
            store_row = self._lock_store(conn, store_id)
            self._require_writable(store_row)
            occupant = self._check_path_free(conn, store_id, path)
            if occupant is not None:
                raise PathConflict(
                    f"a memory already exists at {path!r}",
                    conflicting_memory_id=occupant.id,
                    conflicting_path=occupant.path,
                )
            if store_row.entry_count >= self.memory_limit:
                raise StoreFull(
                    f"memory store {store_id!r} holds {store_row.entry_count} memories; "
                    f"the limit is {self.memory_limit}"
                )
            key, digest = self._put_blob(conn, data)
            now = _now()
            memory_id = new_id("memory")
            version_id = self._insert_version(
                conn,
                store_id=store_id,
                memory_id=memory_id,
                operation=Operation.CREATED,
                path=path,
                blob_key=key,
                sha=digest,
                size=len(data),
                actor=actor,
                now=now,
            )
            columns = dict(
                id=memory_id,
                store_id=store_id,
                path=path,
                blob_key=key,
                content_sha256=digest,
                size_bytes=len(data),
                head_version_id=version_id,
                metadata_json=json.dumps(clean, sort_keys=True),
                created_at=now,
                updated_at=now,
            )
            conn.execute(_INSERT_MEMORY, columns)
            self._emit(
                conn,
                store_id,
                ChangeKind.MEMORY_WRITTEN,
                memory_id=memory_id,
                path=path,
                content_sha256=digest,
                version_id=version_id,
                entries=1,
                size_bytes=len(data),
            )
            return self._memory_model(SimpleNamespace(**columns, deleted_at=None), data)

    def get_memory(self, store_id: str, memory_id: str, *, with_content: bool = True) -> Memory:
        """A live memory by id. Raises NotFound (unknown, deleted, other store)."""
        with self._read() as conn:
            self._store_row(conn, store_id)
            row = self._live_row(conn, store_id, memory_id)
            return self._memory_model(
                row, self._blob_data(conn, row.blob_key) if with_content else None
            )

    def get_memory_by_path(self, store_id: str, path: str, *, with_content: bool = True) -> Memory:
        """A live memory by path. Raises NotFound."""
        with self._read() as conn:
            self._store_row(conn, store_id)
            row = conn.execute(
                select(memories).where(
                    memories.c.store_id == store_id,
                    memories.c.path == path,
                    memories.c.deleted_at.is_(None),
                )
            ).first()
            if row is None:
                raise NotFound(f"no memory at {path!r} in memory store {store_id!r}")
            return self._memory_model(
                row, self._blob_data(conn, row.blob_key) if with_content else None
            )

    def update_memory(
        self,
        store_id: str,
        memory_id: str,
        *,
        actor: Actor | None,
        content: str | None = None,
        path: str | None = None,
        expected_sha256: str | None = None,
        metadata: dict[str, str] | None = None,
        replace: bool = False,
    ) -> Memory:
        """Changes content and/or path (rename keeps the id); returns it with content.

        The precondition is checked first; an update that changes nothing writes no
        version and returns the memory unchanged (SPEC §2). ``metadata`` replaces the
        memory's metadata wholesale (no version: metadata is not versioned). With
        ``replace=True`` a live memory already at the new path is soft-deleted in the same
        transaction (rename(2) semantics, used by the FUSE layer); otherwise an occupied
        destination raises PathConflict.

        Raises:
            NotFound, StoreArchived, PreconditionFailed, PathConflict, and the
            validation errors of create.
        """
        if path is not None:
            rules.validate_path(path)
        if content is not None:
            rules.validate_content(content)
        clean = rules.validate_metadata(metadata) if metadata is not None else None
        data = content.encode("utf-8") if content is not None else None
        with self._write() as conn:
            store_row = self._lock_store(conn, store_id)
            row = self._live_row(conn, store_id, memory_id)
            self._require_writable(store_row)
            _check_precondition(row, expected_sha256)
            new_sha = sha256_of(data) if data is not None else row.content_sha256
            content_changed = data is not None and new_sha != row.content_sha256
            path_changed = path is not None and path != row.path
            metadata_changed = clean is not None and clean != json.loads(row.metadata_json)
            # Unchanged content given again is the stored bytes (same SHA-256): no read.
            current = data if data is not None and not content_changed else None
            if not (content_changed or path_changed or metadata_changed):
                if current is None:
                    current = self._blob_data(conn, row.blob_key)
                return self._memory_model(row, current)
            now = _now()
            values: dict[str, Any] = {"updated_at": now}
            if metadata_changed:
                values["metadata_json"] = json.dumps(clean, sort_keys=True)
            new_path = row.path
            if path_changed:
                assert path is not None
                occupant = self._check_path_free(conn, store_id, path, ignore_id=memory_id)
                if occupant is not None:
                    if not replace:
                        raise PathConflict(
                            f"a memory already exists at {path!r}",
                            conflicting_memory_id=occupant.id,
                            conflicting_path=occupant.path,
                        )
                    self._soft_delete(
                        conn, store_id, occupant, actor=actor, reason="replaced by rename", now=now
                    )
                new_path = path
                values["path"] = path
            if content_changed or path_changed:
                key, digest, size = row.blob_key, row.content_sha256, row.size_bytes
                if content_changed:
                    assert data is not None
                    key, digest = self._put_blob(conn, data)
                    size = len(data)
                version_id = self._insert_version(
                    conn,
                    store_id=store_id,
                    memory_id=memory_id,
                    operation=Operation.MODIFIED,
                    path=new_path,
                    blob_key=key,
                    sha=digest,
                    size=size,
                    actor=actor,
                    now=now,
                )
                values.update(
                    blob_key=key, content_sha256=digest, size_bytes=size, head_version_id=version_id
                )
            self._set_memory_columns(conn, memory_id, values)
            after = SimpleNamespace(**{**row._mapping, **values})
            self._emit(
                conn,
                store_id,
                ChangeKind.MEMORY_WRITTEN,
                memory_id=memory_id,
                path=new_path,
                old_path=row.path if path_changed else None,
                content_sha256=after.content_sha256,
                version_id=after.head_version_id,
                size_bytes=after.size_bytes - row.size_bytes,
            )
            # The row as just written, without reading it (or its blob) back.
            written = data if content_changed else current
            if written is None:
                written = self._blob_data(conn, after.blob_key)
            return self._memory_model(after, written)

    def _tombstone(
        self,
        conn: Connection,
        store_id: str,
        row: Row[Any],
        *,
        mode: DeleteMode,
        actor: Actor | None,
        reason: str | None,
        now: str,
        content: dict[str, Any],
    ) -> None:
        """Turns a live memory into a tombstone: a ``deleted`` version (keeping the path),
        the row marked with ``mode``, the audit entry and the change, in one go.

        Args:
            content: the row's content columns after the change (``blob_key`` None for a
                soft delete; the replacement's key, digest, size and cleared metadata for
                a redaction).
        """
        version_id = self._insert_version(
            conn,
            store_id=store_id,
            memory_id=row.id,
            operation=Operation.DELETED,
            path=row.path,
            blob_key=None,
            sha=None,
            size=None,
            actor=actor,
            now=now,
            reason=reason,
        )
        self._set_memory_columns(
            conn,
            row.id,
            {
                "deleted_at": now,
                "delete_mode": mode.value,
                "head_version_id": version_id,
                "updated_at": now,
                **content,
            },
        )
        self._audit(conn, store_id, mode.value, memory_id=row.id, actor=actor, reason=reason)
        self._emit(
            conn,
            store_id,
            ChangeKind.MEMORY_DELETED,
            memory_id=row.id,
            path=row.path,
            entries=-1,
            size_bytes=-row.size_bytes,
        )

    def _soft_delete(
        self,
        conn: Connection,
        store_id: str,
        row: Row[Any],
        *,
        actor: Actor | None,
        reason: str | None,
        now: str,
    ) -> None:
        self._tombstone(
            conn,
            store_id,
            row,
            mode=DeleteMode.SOFT_DELETE,
            actor=actor,
            reason=reason,
            now=now,
            content={"blob_key": None},
        )

    def _redact_version_row(
        self, conn: Connection, version_row: Row[Any], actor: Actor | None, now: str
    ) -> None:
        actor_type, actor_id = _actor_columns(actor)
        conn.execute(
            update(versions)
            .where(versions.c.seq == version_row.seq)
            .values(
                path=None,
                blob_key=None,
                content_sha256=None,
                size_bytes=None,
                redacted_at=now,
                redacted_by_type=actor_type,
                redacted_by_id=actor_id,
            )
        )
        self._scrub_path(conn, version_row.memory_id, version_row.path)

    def _scrub_path(self, conn: Connection, memory_id: str, path: str | None) -> None:
        """Nulls ``path`` out of the change feed of ``memory_id`` once no unredacted
        version and no memory row holds it any more: redaction scrubs the path too
        (SPEC §2), and the feed is a place memfs keeps data."""
        if path is None:
            return
        still_held = conn.execute(
            select(
                or_(
                    select(versions.c.seq)
                    .where(
                        versions.c.memory_id == memory_id,
                        versions.c.path == path,
                        versions.c.redacted_at.is_(None),
                    )
                    .exists(),
                    select(memories.c.id)
                    .where(memories.c.id == memory_id, memories.c.path == path)
                    .exists(),
                )
            )
        ).scalar()
        if still_held:
            return
        for column in (changes.c.path, changes.c.old_path):
            conn.execute(
                update(changes)
                .where(changes.c.memory_id == memory_id, column == path)
                .values({column.name: None})
            )

    def delete_memory(
        self,
        store_id: str,
        memory_id: str,
        *,
        actor: Actor | None,
        expected_sha256: str | None = None,
        mode: DeleteMode = DeleteMode.SOFT_DELETE,
        reason: str | None = None,
        replacement: str = "[REDACTED]",
    ) -> None:
        """Deletes a live memory in one of the SPEC §2 modes; audited with ``reason``.

        soft_delete: tombstone + ``deleted`` version, restorable. redact: tombstone whose
        content is ``replacement``, metadata cleared, every earlier version redacted, not
        restorable. hard_delete: the memory and all its versions erased (the audit log
        keeps the fact, the reason and the actor). Allowed on archived stores.

        Raises:
            NotFound, PreconditionFailed, InvalidContent (bad replacement).
        """
        try:
            mode = DeleteMode(mode)
        except ValueError as exc:
            raise InvalidInput("mode must be soft_delete, redact or hard_delete") from exc
        replacement_data = rules.validate_content(replacement).encode("utf-8")
        purged_keys: set[str | None] = set()
        with self._write() as conn:
            self._lock_store(conn, store_id)
            row = self._live_row(conn, store_id, memory_id)
            _check_precondition(row, expected_sha256)
            now = _now()
            if mode is DeleteMode.SOFT_DELETE:
                self._soft_delete(conn, store_id, row, actor=actor, reason=reason, now=now)
                return
            old_versions = conn.execute(
                select(versions).where(versions.c.memory_id == memory_id)
            ).all()
            purged_keys = {v.blob_key for v in old_versions} | {row.blob_key}
            if mode is DeleteMode.REDACT:
                key, digest = self._put_blob(conn, replacement_data)
                for version_row in old_versions:
                    if version_row.redacted_at is None:
                        self._redact_version_row(conn, version_row, actor, now)
                self._tombstone(
                    conn,
                    store_id,
                    row,
                    mode=DeleteMode.REDACT,
                    actor=actor,
                    reason=reason,
                    now=now,
                    content={
                        "blob_key": key,
                        "content_sha256": digest,
                        "size_bytes": len(replacement_data),
                        "metadata_json": "{}",
                    },
                )
            else:
                conn.execute(delete(versions).where(versions.c.memory_id == memory_id))
                conn.execute(delete(memories).where(memories.c.id == memory_id))
                self._audit(
                    conn, store_id, mode.value, memory_id=memory_id, actor=actor, reason=reason
                )
                self._emit(
                    conn,
                    store_id,
                    ChangeKind.MEMORY_DELETED,
                    memory_id=memory_id,
                    path=row.path,
                    entries=-1,
                    size_bytes=-row.size_bytes,
                )
            self._gc_blobs(conn, store_id, purged_keys)
        self._checkpoint()

    def restore_memory(
        self, store_id: str, memory_id: str, *, actor: Actor | None, reason: str | None = None
    ) -> Memory:
        """Brings a soft-deleted memory back with its id, path and content.

        Writes a ``created`` version (the memory comes back into existence) carrying the
        content of its newest content version.

        Raises:
            NotFound: no such memory in the store.
            StoreArchived, StoreFull.
            NotRestorable: the memory is live, was redacted, or its content was redacted.
            PathConflict: its path (or an ancestor/descendant) is now taken.
        """
        with self._write() as conn:
            store_row = self._lock_store(conn, store_id)
            row = conn.execute(
                select(memories).where(memories.c.id == memory_id, memories.c.store_id == store_id)
            ).first()
            if row is None:
                raise NotFound(f"memory {memory_id!r} not found in memory store {store_id!r}")
            if row.deleted_at is None:
                raise NotRestorable(f"memory {memory_id!r} is not deleted")
            if row.delete_mode != DeleteMode.SOFT_DELETE.value:
                raise NotRestorable(f"memory {memory_id!r} was redacted and can't be restored")
            self._require_writable(store_row)
            source = conn.execute(
                select(versions)
                .where(versions.c.memory_id == memory_id, versions.c.operation != "deleted")
                .order_by(versions.c.seq.desc())
                .limit(1)
            ).first()
            if source is None or source.redacted_at is not None:
                raise NotRestorable(
                    f"the content of memory {memory_id!r} was redacted; it can't be restored"
                )
            occupant = self._check_path_free(conn, store_id, row.path, ignore_id=memory_id)
            if occupant is not None:
                raise PathConflict(
                    f"can't restore {row.path!r}: another memory now has that path",
                    conflicting_memory_id=occupant.id,
                    conflicting_path=occupant.path,
                )
            if store_row.entry_count >= self.memory_limit:
                raise StoreFull(f"memory store {store_id!r} is full ({self.memory_limit} memories)")
            now = _now()
            version_id = self._insert_version(
                conn,
                store_id=store_id,
                memory_id=memory_id,
                operation=Operation.CREATED,
                path=row.path,
                blob_key=source.blob_key,
                sha=source.content_sha256,
                size=source.size_bytes,
                actor=actor,
                now=now,
                reason=reason,
            )
            conn.execute(
                update(memories)
                .where(memories.c.id == memory_id)
                .values(
                    blob_key=source.blob_key,
                    content_sha256=source.content_sha256,
                    size_bytes=source.size_bytes,
                    deleted_at=None,
                    delete_mode=None,
                    head_version_id=version_id,
                    updated_at=now,
                )
            )
            self._audit(conn, store_id, "restore", memory_id=memory_id, actor=actor, reason=reason)
            self._emit(
                conn,
                store_id,
                ChangeKind.MEMORY_WRITTEN,
                memory_id=memory_id,
                path=row.path,
                content_sha256=source.content_sha256,
                version_id=version_id,
                entries=1,
                size_bytes=source.size_bytes,
            )
            return self._memory_after(conn, memory_id, True)

    def list_memories(
        self,
        store_id: str,
        *,
        path_prefix: str = "/",
        depth: int = 0,
        limit: int = 20,
        cursor: str | None = None,
        with_content: bool = False,
    ) -> Page[Memory | MemoryPrefix]:
        """Live memories under ``path_prefix`` in byte order of path, rolled up by depth.

        With ``depth`` > 0, a memory more than ``depth`` segments below the prefix is
        replaced by one ``MemoryPrefix`` of its first ``depth`` segments (deduplicated;
        api-contract §5.10). Prefixes and memories both count toward ``limit``.

        Raises:
            NotFound, InvalidPath (prefix), InvalidInput (depth/limit), InvalidCursor.
        """
        rules.validate_path_prefix(path_prefix)
        if not isinstance(depth, int) or isinstance(depth, bool) or depth < 0:
            raise InvalidInput("depth must be an integer ≥ 0")
        _check_limit(limit)
        fingerprint = _Cursor.fingerprint("memories", store_id, path_prefix, depth)
        # Position: (">", path) after a memory, (">=", bound) after a rolled-up prefix.
        op, key = ">=", path_prefix
        if cursor is not None:
            decoded = _Cursor.decode(cursor, fingerprint)
            if not (isinstance(decoded, list) and len(decoded) == 2 and decoded[0] in (">", ">=")):
                raise InvalidCursor("page cursor is malformed")
            op, key = decoded[0], str(decoded[1])
        upper = _descendant_upper_bound(path_prefix) if path_prefix != "/" else None
        items: list[Row[Any] | MemoryPrefix] = []
        more = False
        with self._read() as conn:
            self._store_row(conn, store_id)
            while len(items) <= limit:
                batch = limit + 1 - len(items)
                query = select(memories).where(
                    memories.c.store_id == store_id,
                    memories.c.deleted_at.is_(None),
                    memories.c.path > key if op == ">" else memories.c.path >= key,
                )
                if upper is not None:
                    query = query.where(memories.c.path < upper)
                rows = conn.execute(query.order_by(memories.c.path).limit(batch)).all()
                if not rows:
                    break
                rolled_up = False
                for row in rows:
                    rel = row.path[len(path_prefix) :].split("/")
                    if depth == 0 or len(rel) <= depth:
                        items.append(row)
                        op, key = ">", row.path
                    else:
                        prefix = path_prefix + "/".join(rel[:depth]) + "/"
                        items.append(MemoryPrefix(path=prefix))
                        op, key = ">=", _descendant_upper_bound(prefix)
                        rolled_up = True
                        break
                    if len(items) > limit:
                        break
                if not rolled_up and len(rows) < batch:
                    break
            if len(items) > limit:
                more = True
                items = items[:limit]
            result: list[Memory | MemoryPrefix] = []
            for item in items:
                if isinstance(item, MemoryPrefix):
                    result.append(item)
                else:
                    content = self._blob_data(conn, item.blob_key) if with_content else None
                    result.append(self._memory_model(item, content))
        next_cursor = None
        if more and result:
            last = result[-1]
            position = (
                [">=", _descendant_upper_bound(last.path)]
                if isinstance(last, MemoryPrefix)
                else [">", last.path]
            )
            next_cursor = _Cursor.encode(fingerprint, position)
        return Page[Memory | MemoryPrefix](items=result, next_cursor=next_cursor)

    def all_memories(self, store_id: str) -> list[Memory]:
        """Every live memory of a store without content, in path order (mount start-up).

        The same memories :meth:`_memory_model` gives, built from plain tuples of the
        columns they need: a mount waits for this call, and that takes half the time of
        whole rows (55 ms instead of 115 ms for 10,000 memories).

        Raises:
            NotFound.
        """
        with self._read() as conn:
            self._store_row(conn, store_id)
            rows = conn.execute(_LIVE_MEMORY_TREE, {"store_id": store_id}).tuples().all()
        parse_ts = datetime.fromisoformat
        return [
            Memory(
                id=memory_id,
                memory_store_id=store_id,
                path=path,
                content=None,
                content_sha256=content_sha256,
                content_size_bytes=size_bytes,
                memory_version_id=head_version_id,
                # json.dumps of no metadata (nearly every memory) is "{}".
                metadata={} if metadata_json == "{}" else json.loads(metadata_json),
                created_at=parse_ts(created_at),
                updated_at=parse_ts(updated_at),
                blob_key=blob_key or "",
            )
            for (
                memory_id, path, blob_key, content_sha256, size_bytes, head_version_id,
                metadata_json, created_at, updated_at,
            ) in rows
        ]

    def deleted_memories(self, store_id: str) -> list[Memory]:
        """Soft-deleted (restorable) memories, newest deletion first, without content."""
        with self._read() as conn:
            self._store_row(conn, store_id)
            rows = conn.execute(
                select(memories)
                .where(
                    memories.c.store_id == store_id,
                    memories.c.delete_mode == DeleteMode.SOFT_DELETE.value,
                )
                .order_by(memories.c.deleted_at.desc(), memories.c.id.desc())
            ).all()
        return [self._memory_model(r) for r in rows]

    def rename_prefix(
        self, store_id: str, old_prefix: str, new_prefix: str, *, actor: Actor | None
    ) -> list[Memory]:
        """Moves every live memory under ``old_prefix`` below ``new_prefix`` in one
        transaction (directory rename, SPEC §4); one ``modified`` version each.

        Args:
            old_prefix, new_prefix: directory prefixes ending with ``/``.

        Returns:
            The moved memories (without content), in their new path order.

        Raises:
            NotFound, StoreArchived, InvalidPath (prefixes, or a resulting path),
            PathConflict (a destination or its ancestor is a memory outside the move),
            InvalidInput (moving a directory into itself).
        """
        rules.validate_path_prefix(old_prefix)
        rules.validate_path_prefix(new_prefix)
        if old_prefix == "/" or new_prefix == "/":
            raise InvalidInput("the root can't be renamed")
        if new_prefix.startswith(old_prefix):
            raise InvalidInput(f"can't move {old_prefix!r} into itself ({new_prefix!r})")
        with self._write() as conn:
            store_row = self._lock_store(conn, store_id)
            self._require_writable(store_row)
            rows = conn.execute(
                select(memories)
                .where(
                    memories.c.store_id == store_id,
                    memories.c.deleted_at.is_(None),
                    memories.c.path >= old_prefix,
                    memories.c.path < _descendant_upper_bound(old_prefix),
                )
                .order_by(memories.c.path)
            ).all()
            moving = {r.id for r in rows}
            targets = [(r, new_prefix + r.path[len(old_prefix) :]) for r in rows]
            for _row, target in targets:
                rules.validate_path(target)
            # Check destinations against memories that are not moving.
            for _row, target in targets:
                live = and_(
                    memories.c.store_id == store_id,
                    memories.c.deleted_at.is_(None),
                    memories.c.id.not_in(moving),
                )
                blocker = conn.execute(
                    select(memories.c.id, memories.c.path).where(
                        live,
                        or_(
                            memories.c.path.in_([target, *_ancestors(target)]),
                            and_(
                                memories.c.path >= target + "/",
                                memories.c.path < _descendant_upper_bound(target + "/"),
                            ),
                        ),
                    )
                ).first()
                if blocker is not None:
                    raise PathConflict(
                        f"can't move to {target!r}: the memory {blocker.path!r} is in the way",
                        conflicting_memory_id=blocker.id,
                        conflicting_path=blocker.path,
                    )
            now = _now()
            # Two passes keep the partial unique index satisfied mid-statement.
            for row, _target in targets:
                conn.execute(
                    update(memories)
                    .where(memories.c.id == row.id)
                    .values(path="\x01moving/" + row.id)
                )
            for row, target in targets:
                version_id = self._insert_version(
                    conn,
                    store_id=store_id,
                    memory_id=row.id,
                    operation=Operation.MODIFIED,
                    path=target,
                    blob_key=row.blob_key,
                    sha=row.content_sha256,
                    size=row.size_bytes,
                    actor=actor,
                    now=now,
                )
                conn.execute(
                    update(memories)
                    .where(memories.c.id == row.id)
                    .values(path=target, head_version_id=version_id, updated_at=now)
                )
                self._emit(
                    conn,
                    store_id,
                    ChangeKind.MEMORY_WRITTEN,
                    memory_id=row.id,
                    path=target,
                    old_path=row.path,
                    content_sha256=row.content_sha256,
                    version_id=version_id,
                )
            moved = conn.execute(
                select(memories).where(memories.c.id.in_(moving)).order_by(memories.c.path)
            ).all()
            return [self._memory_model(r) for r in moved]

    def read_blob(self, blob_key: str) -> bytes:
        """The bytes of a content-addressed blob. Raises NotFound (purged or unknown)."""
        with self._read() as conn:
            data = conn.execute(select(blobs.c.data).where(blobs.c.key == blob_key)).scalar()
        if data is None:
            raise NotFound(f"content {blob_key} is not stored (it may have been redacted)")
        return bytes(data)

    def read_blobs(self, blob_keys: Sequence[str]) -> dict[str, bytes]:
        """The bytes of several blobs in one query (a mount's read-ahead), keyed by blob
        key; keys not stored (purged or unknown) are left out, never an error.

        Args:
            blob_keys: at most a few hundred keys (one ``IN`` list).
        """
        if not blob_keys:
            return {}
        with self._read() as conn:
            rows = conn.execute(_BLOBS_DATA, {"keys": list(dict.fromkeys(blob_keys))}).all()
        return {row.key: bytes(row.data) for row in rows}

    # ----------------------------------------------------------- versions

    def list_versions(
        self,
        store_id: str,
        *,
        memory_id: str | None = None,
        operation: Operation | None = None,
        session_id: str | None = None,
        api_key_id: str | None = None,
        service_account_id: str | None = None,
        created_gte: datetime | None = None,
        created_lte: datetime | None = None,
        limit: int = 20,
        cursor: str | None = None,
        with_content: bool = False,
    ) -> Page[MemoryVersion]:
        """Versions newest first, filtered (api-contract §5.12).

        Raises:
            NotFound (store), InvalidInput (operation, limit), InvalidCursor.
        """
        _check_limit(limit)
        if operation is not None:
            try:
                operation = Operation(operation)
            except ValueError as exc:
                raise InvalidInput("operation must be created, modified or deleted") from exc
        fingerprint = _Cursor.fingerprint(
            "versions",
            store_id,
            memory_id,
            operation,
            session_id,
            api_key_id,
            service_account_id,
            created_gte,
            created_lte,
        )
        query = select(versions).where(versions.c.store_id == store_id)
        if memory_id is not None:
            query = query.where(versions.c.memory_id == memory_id)
        if operation is not None:
            query = query.where(versions.c.operation == operation.value)
        for actor_type, actor_id in (
            (ActorType.SESSION, session_id),
            (ActorType.API, api_key_id),
            (ActorType.SERVICE_ACCOUNT, service_account_id),
        ):
            if actor_id is not None:
                query = query.where(
                    versions.c.actor_type == actor_type.value, versions.c.actor_id == actor_id
                )
        if created_gte is not None:
            query = query.where(versions.c.created_at >= _ts(created_gte))
        if created_lte is not None:
            query = query.where(versions.c.created_at <= _ts(created_lte))
        if cursor is not None:
            seq = _Cursor.decode(cursor, fingerprint)
            if not isinstance(seq, int):
                raise InvalidCursor("page cursor is malformed")
            query = query.where(versions.c.seq < seq)
        query = query.order_by(versions.c.seq.desc()).limit(limit + 1)
        with self._read() as conn:
            self._store_row(conn, store_id)
            rows = conn.execute(query).all()
            page_rows = rows[:limit]
            items = [
                self._version_model(r, self._blob_data(conn, r.blob_key) if with_content else None)
                for r in page_rows
            ]
        next_cursor = (
            _Cursor.encode(fingerprint, page_rows[-1].seq)
            if len(rows) > limit and page_rows
            else None
        )
        return Page[MemoryVersion](items=items, next_cursor=next_cursor)

    def get_version(
        self, store_id: str, version_id: str, *, with_content: bool = True
    ) -> MemoryVersion:
        """A version, redacted or not. Raises NotFound."""
        with self._read() as conn:
            self._store_row(conn, store_id)
            row = conn.execute(
                select(versions).where(versions.c.id == version_id, versions.c.store_id == store_id)
            ).first()
            if row is None:
                raise NotFound(
                    f"memory version {version_id!r} not found in memory store {store_id!r}"
                )
            return self._version_model(
                row, self._blob_data(conn, row.blob_key) if with_content else None
            )

    def redact_version(
        self, store_id: str, version_id: str, *, actor: Actor | None
    ) -> MemoryVersion:
        """Scrubs a version (SPEC §2 redaction); already-redacted ones come back unchanged.

        The version's content, path, digest and size become null; its bytes are erased
        from the database (and, on SQLite, from the WAL by a checkpoint) unless another
        version or a live memory still holds identical content.

        Raises:
            NotFound, HeadVersionRedaction (head version of a live memory).
        """
        with self._write() as conn:
            self._lock_store(conn, store_id)
            row = conn.execute(
                select(versions).where(versions.c.id == version_id, versions.c.store_id == store_id)
            ).first()
            if row is None:
                raise NotFound(
                    f"memory version {version_id!r} not found in memory store {store_id!r}"
                )
            if row.redacted_at is not None:
                return self._version_model(row)
            head_of_live = conn.execute(
                select(memories.c.id).where(
                    memories.c.head_version_id == version_id, memories.c.deleted_at.is_(None)
                )
            ).first()
            if head_of_live is not None:
                raise HeadVersionRedaction(
                    f"memory version {version_id!r} is the head version of the live memory "
                    f"{head_of_live.id!r}: write a new version or delete the memory first"
                )
            self._redact_version_row(conn, row, actor, _now())
            self._audit(
                conn, store_id, "redact_version", memory_id=row.memory_id, actor=actor, reason=None
            )
            self._emit(conn, store_id, ChangeKind.VERSION_REDACTED, memory_id=row.memory_id)
            self._gc_blobs(conn, store_id, [row.blob_key])
            result = self._version_model(
                conn.execute(select(versions).where(versions.c.seq == row.seq)).one()
            )
        self._checkpoint()
        return result

    def audit_events(
        self, store_id: str, *, memory_id: str | None = None
    ) -> list[dict[str, str | None]]:
        """Audit trail of deletions, redactions, restores and store events, newest first.

        Returns:
            dicts with keys ``action``, ``memory_id``, ``reason``, ``actor_type``,
            ``actor_id``, ``created_at`` (RFC 3339 text). Works after the store is deleted.
        """
        query = select(audit_log).where(audit_log.c.store_id == store_id)
        if memory_id is not None:
            query = query.where(audit_log.c.memory_id == memory_id)
        with self._read() as conn:
            rows = conn.execute(query.order_by(audit_log.c.seq.desc())).all()
        return [
            {
                "action": r.action,
                "memory_id": r.memory_id,
                "reason": r.reason,
                "actor_type": r.actor_type,
                "actor_id": r.actor_id,
                "created_at": r.created_at,
            }
            for r in rows
        ]

    # -------------------------------------------------------- change feed

    def last_change_seq(self, store_id: str) -> int:
        """The newest change seq of a store (0 when none). Raises NotFound."""
        with self._read() as conn:
            return int(self._store_row(conn, store_id).last_change_seq)

    def changes_since(self, store_id: str, after_seq: int, *, limit: int = 1000) -> list[Change]:
        """Changes with seq > ``after_seq``, oldest first, at most ``limit``.

        Works after the store is deleted (the final entry is ``store_deleted``).
        """
        with self._read() as conn:
            rows = conn.execute(
                select(changes)
                .where(changes.c.store_id == store_id, changes.c.seq > after_seq)
                .order_by(changes.c.seq)
                .limit(limit)
            ).all()
        return [
            Change(
                seq=r.seq,
                memory_store_id=r.store_id,
                kind=ChangeKind(r.kind),
                memory_id=r.memory_id,
                path=r.path,
                old_path=r.old_path,
                blob_key=r.blob_key,
                content_sha256=r.content_sha256,
                memory_version_id=r.memory_version_id,
                created_at=datetime.fromisoformat(r.created_at),
            )
            for r in rows
        ]

    # --------------------------------------------------- sessions and keys

    def create_session(
        self,
        resources: Sequence[ResourceSpec],
        *,
        mount_root: str = "/mnt/memory",
        with_token: bool = True,
        title: str | None = None,
    ) -> tuple[Session, str | None]:
        """Attaches 1–8 non-archived stores; returns the session and its token (once).

        Each resource snapshots the store's name and description and gets a mount path
        ``<mount_root>/<slug>`` (SPEC §4 per-store layout; collisions get ``-2``, ``-3``).
        The token is ``memfs_st_…``; only its SHA-256 is stored.

        Raises:
            InvalidInput: no store, more than 8, a store twice, bad access or instructions.
            NotFound: an unknown store.
            StoreArchived: an archived store can't be attached.
        """
        if not resources:
            raise InvalidInput("a session needs at least one memory store")
        if len(resources) > MAX_STORES_PER_SESSION:
            raise InvalidInput(
                f"a session can attach at most {MAX_STORES_PER_SESSION} memory stores"
            )
        ids = [r.memory_store_id for r in resources]
        if len(set(ids)) != len(ids):
            raise InvalidInput("a memory store can be attached to a session only once")
        for spec in resources:
            rules.validate_instructions(spec.instructions)
            try:
                Access(spec.access)
            except ValueError as exc:
                raise InvalidInput("access must be read_write or read_only") from exc
        token = SESSION_TOKEN_PREFIX + secrets.token_urlsafe(32) if with_token else None
        session_id = new_id("session")
        now = _now()
        with self._write() as conn:
            store_rows = []
            for spec in resources:
                # Locked, so an archive can't commit between this check and our insert.
                row = self._lock_store(conn, spec.memory_store_id)
                if row.archived_at is not None:
                    raise StoreArchived(
                        f"memory store {row.id!r} is archived and can't be attached to a session"
                    )
                store_rows.append(row)
            slugs = rules.unique_slugs([(r.id, r.name) for r in store_rows])
            conn.execute(
                insert(sessions).values(
                    id=session_id,
                    title=title,
                    token_hash=_token_hash(token) if token else None,
                    created_at=now,
                )
            )
            root = mount_root.rstrip("/")
            for position, (spec, row) in enumerate(zip(resources, store_rows, strict=True)):
                conn.execute(
                    insert(session_resources).values(
                        session_id=session_id,
                        position=position,
                        store_id=row.id,
                        access=Access(spec.access).value,
                        instructions=spec.instructions,
                        name=row.name,
                        description=row.description,
                        mount_path=f"{root}/{slugs[row.id]}",
                    )
                )
            return self._session(conn, session_id), token

    def _session(self, conn: Connection, session_id: str) -> Session:
        row = conn.execute(select(sessions).where(sessions.c.id == session_id)).first()
        if row is None:
            raise NotFound(f"session {session_id!r} not found")
        resource_rows = conn.execute(
            select(session_resources)
            .where(session_resources.c.session_id == session_id)
            .order_by(session_resources.c.position)
        ).all()
        return Session(
            id=row.id,
            title=row.title,
            created_at=datetime.fromisoformat(row.created_at),
            resources=[
                SessionResource(
                    memory_store_id=r.store_id,
                    access=Access(r.access),
                    instructions=r.instructions,
                    name=r.name,
                    description=r.description,
                    mount_path=r.mount_path,
                )
                for r in resource_rows
            ],
        )

    def get_session(self, session_id: str) -> Session:
        """Raises NotFound."""
        with self._read() as conn:
            return self._session(conn, session_id)

    def authenticate_session(self, token: str) -> Session:
        """The session a ``memfs_st_…`` token belongs to. Raises AuthenticationFailed."""
        with self._read() as conn:
            session_id = conn.execute(
                select(sessions.c.id).where(sessions.c.token_hash == _token_hash(token))
            ).scalar()
            if session_id is None:
                raise AuthenticationFailed("invalid session token")
            return self._session(conn, session_id)

    @staticmethod
    def _api_key_model(row: Row[Any]) -> ApiKey:
        return ApiKey(
            id=row.id,
            name=row.name,
            scopes=[Scope(s) for s in json.loads(row.scopes_json)],
            store_ids=json.loads(row.store_ids_json),
            created_at=datetime.fromisoformat(row.created_at),
            revoked_at=_parse_ts(row.revoked_at),
        )

    def create_api_key(
        self, name: str, scopes: Sequence[Scope], store_ids: Sequence[str] = ()
    ) -> tuple[ApiKey, str]:
        """Creates a key; returns it and its ``memfs_sk_…`` secret, shown this once.

        Raises:
            InvalidInput: no scope, or an unknown scope.
            NotFound: a listed store does not exist.
        """
        if not scopes:
            raise InvalidInput("an API key needs at least one scope")
        try:
            clean_scopes = sorted({Scope(s).value for s in scopes})
        except ValueError as exc:
            raise InvalidInput(
                "scopes are memory:read, memory:write, memory:delete, memory:hard_delete, admin"
            ) from exc
        secret = API_KEY_SECRET_PREFIX + secrets.token_urlsafe(32)
        key_id = new_id("api_key")
        with self._write() as conn:
            for store_id in store_ids:
                self._store_row(conn, store_id)
            conn.execute(
                insert(api_keys).values(
                    id=key_id,
                    name=name,
                    secret_hash=_token_hash(secret),
                    scopes_json=json.dumps(clean_scopes),
                    store_ids_json=json.dumps(list(dict.fromkeys(store_ids))),
                    created_at=_now(),
                )
            )
            row = conn.execute(select(api_keys).where(api_keys.c.id == key_id)).one()
        return self._api_key_model(row), secret

    def list_api_keys(self) -> list[ApiKey]:
        """Every key, newest first (secrets are never stored, so never shown)."""
        with self._read() as conn:
            rows = conn.execute(select(api_keys).order_by(api_keys.c.id.desc())).all()
        return [self._api_key_model(r) for r in rows]

    def revoke_api_key(self, api_key_id: str) -> ApiKey:
        """Revokes a key (idempotent). Raises NotFound."""
        with self._write() as conn:
            row = conn.execute(select(api_keys).where(api_keys.c.id == api_key_id)).first()
            if row is None:
                raise NotFound(f"API key {api_key_id!r} not found")
            if row.revoked_at is None:
                conn.execute(
                    update(api_keys).where(api_keys.c.id == api_key_id).values(revoked_at=_now())
                )
            row = conn.execute(select(api_keys).where(api_keys.c.id == api_key_id)).one()
        return self._api_key_model(row)

    def authenticate_api_key(self, secret: str) -> ApiKey:
        """The active key with this secret. Raises AuthenticationFailed (unknown or revoked)."""
        with self._read() as conn:
            row = conn.execute(
                select(api_keys).where(api_keys.c.secret_hash == _token_hash(secret))
            ).first()
        if row is None or row.revoked_at is not None:
            raise AuthenticationFailed("invalid or revoked API key")
        return self._api_key_model(row)

    # -------------------------------------------------------- maintenance

    def prune_versions(self, *, older_than_s: int) -> int:
        """Drops versions written more than ``older_than_s`` seconds ago (SPEC §2
        retention), never the head version of a memory nor the content version a
        soft-deleted memory would be restored from. Returns how many were dropped."""
        cutoff = _ts(
            datetime.fromtimestamp(utcnow().timestamp() - older_than_s, tz=utcnow().tzinfo)
        )
        dropped = 0
        with self._write() as conn:
            for store_id in conn.execute(select(stores.c.id)).scalars().all():
                self._lock_store(conn, store_id)
                heads = select(memories.c.head_version_id)
                candidates = conn.execute(
                    select(versions).where(
                        versions.c.store_id == store_id,
                        versions.c.created_at < cutoff,
                        versions.c.id.not_in(heads),
                    )
                ).all()
                keep: set[int] = set()
                for tomb in conn.execute(
                    select(memories.c.id).where(
                        memories.c.store_id == store_id,
                        memories.c.delete_mode == DeleteMode.SOFT_DELETE.value,
                    )
                ).scalars():
                    seq = conn.execute(
                        select(func.max(versions.c.seq)).where(
                            versions.c.memory_id == tomb, versions.c.operation != "deleted"
                        )
                    ).scalar()
                    if seq is not None:
                        keep.add(int(seq))
                doomed = [v for v in candidates if v.seq not in keep]
                for v in doomed:
                    conn.execute(delete(versions).where(versions.c.seq == v.seq))
                self._gc_blobs(conn, store_id, [v.blob_key for v in doomed])
                dropped += len(doomed)
        self._checkpoint()
        return dropped

    def statistics(self) -> dict[str, int]:
        """Row counts: ``stores``, ``memories`` (live), ``versions``, ``blobs``."""
        with self._read() as conn:
            return {
                "stores": conn.execute(select(func.count()).select_from(stores)).scalar_one(),
                "memories": conn.execute(
                    select(func.count())
                    .select_from(memories)
                    .where(memories.c.deleted_at.is_(None))
                ).scalar_one(),
                "versions": conn.execute(select(func.count()).select_from(versions)).scalar_one(),
                "blobs": conn.execute(select(func.count()).select_from(blobs)).scalar_one(),
            }

    def iter_fsck_findings(self) -> Iterator[str]:
        """One line per broken invariant, from one consistent snapshot (memfs/store/fsck.py)."""
        with self._read() as conn:
            findings = list(_fsck.run_checks(conn))
        yield from findings

    def execute_raw_for_tests(self, sql: str) -> None:
        """Runs one SQL statement in a write transaction. For fsck tests that damage a
        database on purpose; never used by memfs itself."""
        with self._write() as conn:
            conn.execute(text(sql))
