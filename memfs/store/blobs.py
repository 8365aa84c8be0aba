"""Content-addressed blobs and their garbage collection; :class:`Blobs` reads them
(``engine.blobs``).

Owns the ``blobs`` table: each distinct content once, keyed by its xxh3-128 digest,
with its SHA-256 recorded. A blob is written in the same transaction as the first row
that references it (:func:`put_blob`) and deleted in the same transaction as the last
reference goes (:func:`gc_blobs`: redaction, hard delete, store deletion, retention
pruning in :mod:`memfs.store.retention`), so a crash at any point leaves neither an
orphan nor a dangling reference. One exception: the empty blob (:data:`EMPTY_BLOB_KEY`)
may stay unreferenced when an ``O_EXCL`` claim's empty version is replaced by its
content (memfs/store/folds.py), so the next claim does not write it again (it holds no
content to erase).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from sqlalchemy import (
    Connection,
    LargeBinary,
    bindparam,
    delete,
    or_,
    select,
    text,
)

from memfs.core.errors import CorruptedStore, NotFound
from memfs.core.ids import blob_key_of, sha256_of
from memfs.core.model import ChangeKind
from memfs.store import _hot, feed
from memfs.store._facade import Facade
from memfs.store.schema import blobs, memories, versions

__all__ = ["EMPTY_BLOB_KEY", "blob_data", "gc_blobs", "put_blob", "read_blob", "read_blobs"]

# The key of the empty content: the one blob that may be unreferenced (see above).
EMPTY_BLOB_KEY = blob_key_of(b"")

_BLOB_DATA = select(blobs.c.data).where(blobs.c.key == bindparam("key"))
_BLOBS_DATA = select(blobs.c.key, blobs.c.data).where(
    blobs.c.key.in_(bindparam("keys", expanding=True))
)
_BLOB_SHA256 = select(blobs.c.sha256).where(blobs.c.key == bindparam("key"))
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
# the row before checking references, see gc_blobs) either waits and then sees our
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


def put_blob(conn: Connection, data: bytes, sha256: str | None = None) -> tuple[str, str]:
    """Stores ``data`` once; returns ``(blob_key, sha256)``.

    Args:
        sha256: the digest of ``data`` when the caller has it (a checked
            :class:`memfs.core.content.Content`); None computes it.

    Raises:
        CorruptedStore: an existing blob with this key holds other bytes (an xxh3
            collision or a damaged row); nothing is overwritten.
    """
    key = blob_key_of(data)
    digest = sha256_of(data) if sha256 is None else sha256
    params = {"key": key, "sha256": digest, "size_bytes": len(data), "data": data}
    if conn.dialect.name == "postgresql":
        # Row-locks the blob until commit (see _UPSERT_BLOB_POSTGRESQL).
        existing = _hot.scalar(conn, _UPSERT_BLOB_POSTGRESQL, params)
    else:
        # SQLite has one writer at a time, so this is race-free; new content costs
        # one statement, known content a second one to verify the digest.
        inserted = _hot.run(conn, _INSERT_BLOB_SQLITE, params)
        existing = digest if inserted else _hot.scalar(conn, _BLOB_SHA256, {"key": key})
    if existing != digest:
        raise CorruptedStore(f"blob {key} holds different bytes than its key promises")
    return key, digest


def gc_blobs(conn: Connection, store_id: str | None, keys: Iterable[str | None]) -> int:
    """Deletes the given blobs that nothing references any more, and announces each in
    the change feed of ``store_id`` (``blob_purged``) so mounts drop them from caches.
    Returns how many were deleted.

    Never the empty blob (:data:`EMPTY_BLOB_KEY`): it holds nothing to erase, and every
    ``O_EXCL`` claim refers to it, so its ``blob_purged`` told every mount that a claim
    of its, written but not yet closed, had its content redacted elsewhere — and the
    mount discarded what the writer had written (a failed save's claim taken back just
    before ``tar -x`` created the next file). SPEC §4: nothing written is lost."""
    purged = 0
    for key in sorted({k for k in keys if k is not None and k != EMPTY_BLOB_KEY}):
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
            feed.emit(conn, store_id, ChangeKind.BLOB_PURGED, blob_key=key, content_sha256=digest)
    return purged


def blob_data(conn: Connection, key: str | None) -> bytes | None:
    """The bytes of a referenced blob (None for no key). Raises CorruptedStore if gone."""
    if key is None:
        return None
    data = conn.execute(_BLOB_DATA, {"key": key}).scalar()
    if data is None:
        raise CorruptedStore(f"blob {key} is referenced but missing")
    return bytes(data)


def read_blob(conn: Connection, blob_key: str) -> bytes:
    """The bytes of a blob. Raises NotFound (purged or unknown)."""
    data = conn.execute(_BLOB_DATA, {"key": blob_key}).scalar()
    if data is None:
        raise NotFound(f"content {blob_key} is not stored (it may have been redacted)")
    return bytes(data)


def read_blobs(conn: Connection, blob_keys: Sequence[str]) -> dict[str, bytes]:
    """The stored ones of ``blob_keys`` in one query, keyed by blob key."""
    if not blob_keys:
        return {}
    rows = conn.execute(_BLOBS_DATA, {"keys": list(dict.fromkeys(blob_keys))}).all()
    return {row.key: bytes(row.data) for row in rows}


class Blobs(Facade):
    """Reads of content-addressed blobs (a mount's cache fills from them)."""

    def read(self, blob_key: str) -> bytes:
        """The bytes of a content-addressed blob. Raises NotFound (purged or unknown)."""
        with self._read() as conn:
            return read_blob(conn, blob_key)

    def read_many(self, blob_keys: Sequence[str]) -> dict[str, bytes]:
        """The bytes of several blobs in one query (a mount's read-ahead), keyed by blob
        key; keys not stored (purged or unknown) are left out, never an error.

        Args:
            blob_keys: at most a few hundred keys (one ``IN`` list).
        """
        if not blob_keys:
            return {}
        with self._read() as conn:
            return read_blobs(conn, blob_keys)
