"""Semantic search (SPEC §7): the embedding queue, the vectors and their nearest-neighbour
query. The SQL of it; memfs/embeddings.py computes the vectors.

Queueing: :func:`enqueue` runs where the full-text document is written
(:func:`memfs.store.search.index_memory`, in the full-text indexer's transaction, off
the write path), adding one ``search_queue`` row and dropping the memory's vector of the
old content. :func:`forget` removes both rows with the memory's document
(soft or hard delete, redaction, store deletion), so no vector of erased content stays.

Off the write path the embedder (:class:`memfs.store.embedder.Embedder`, a worker
thread) takes :func:`pending` rows, embeds them outside any transaction and stores the
vectors with :func:`store_vectors`, which keeps a vector only while its queue row still
names the content embedded (a write in between queued newer content).

Query: exact cosine similarity over the vectors of the configured model. The vectors
are read into a float32 matrix cached per database (:class:`VectorCache`), reloaded
when ``(count, max(vec_id))`` of the table changes; one matrix-vector product ranks
10,000 memories of 256 dimensions in 2-3 ms. The same code serves SQLite and PostgreSQL
(README "Semantic search" says why not sqlite-vec's or pgvector's indexes).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sqlalchemy import (
    Connection,
    Float,
    bindparam,
    delete,
    func,
    insert,
    literal,
    select,
    text,
    union,
)

from memfs.store import _hot
from memfs.store._common import descendant_upper_bound
from memfs.store.embeddings import IndexLag
from memfs.store.schema import (
    memories,
    search_docs,
    search_pending,
    search_queue,
    search_vectors,
)

if TYPE_CHECKING:
    import numpy as np

__all__ = [
    "Probe",
    "VectorCache",
    "check",
    "enqueue",
    "forget",
    "lag",
    "nearest",
    "pending",
    "queue_all",
    "requeue_other_models",
    "store_vectors",
]


# Prebuilt (compiled once, cached): enqueue runs in every write that changes a head.
_UPSERT_QUEUE = text(
    "INSERT INTO search_queue (memory_id, content_sha256, queued_at) "
    "VALUES (:memory_id, :sha, :now) ON CONFLICT (memory_id) DO UPDATE "
    "SET content_sha256 = excluded.content_sha256, queued_at = excluded.queued_at"
)
_DROP_OTHER_VECTOR = text(
    "DELETE FROM search_vectors WHERE memory_id = :memory_id AND content_sha256 <> :sha"
)


def enqueue(conn: Connection, memory_id: str, content_sha256: str, *, new: bool = False) -> None:
    """Queues a memory's new content for embedding and drops its vector of other content
    (in the caller's write transaction). Two prebuilt statements, ~0.1 ms; one when the
    memory is ``new`` (created in this transaction: it has no vector)."""
    values = {"memory_id": memory_id, "sha": content_sha256, "now": time.time()}
    _hot.run(conn, _UPSERT_QUEUE, values)
    if not new:
        _hot.run(conn, _DROP_OTHER_VECTOR, values)


def queue_new(conn: Connection, store_id: str) -> int:
    """Queues every live memory of a store whose memories were all written in this
    transaction (a fork: no queue row or vector exists yet), in one statement.
    Returns how many were queued."""
    live = select(
        memories.c.id, memories.c.content_sha256, literal(time.time(), Float)
    ).where(memories.c.store_id == store_id, memories.c.deleted_at.is_(None))
    result = conn.execute(
        insert(search_queue).from_select(["memory_id", "content_sha256", "queued_at"], live)
    )
    return int(result.rowcount or 0)


def forget(conn: Connection, memory_ids: Sequence[str]) -> None:
    """Removes the queue rows and vectors of memories that stopped being live."""
    if not memory_ids:
        return
    ids = list(memory_ids)
    conn.execute(delete(search_queue).where(search_queue.c.memory_id.in_(ids)))
    conn.execute(delete(search_vectors).where(search_vectors.c.memory_id.in_(ids)))


def queue_all(conn: Connection, store_ids: Sequence[str] | None) -> int:
    """Queues every live memory (of ``store_ids``; None: all) and drops their vectors: a
    rebuild (``memfs search reindex``, the migration). Returns how many were queued."""
    live = select(memories.c.id, memories.c.content_sha256).where(memories.c.deleted_at.is_(None))
    queued = delete(search_queue)
    vectors = delete(search_vectors)
    if store_ids is not None:
        chosen = list(store_ids)
        live = live.where(memories.c.store_id.in_(chosen))
        queued = queued.where(
            search_queue.c.memory_id.in_(
                select(memories.c.id).where(memories.c.store_id.in_(chosen))
            )
        )
        vectors = vectors.where(search_vectors.c.store_id.in_(chosen))
    rows = conn.execute(live).all()
    conn.execute(queued)
    conn.execute(vectors)
    now = time.time()
    if rows:
        conn.execute(
            insert(search_queue),
            [
                {"memory_id": r.id, "content_sha256": r.content_sha256, "queued_at": now}
                for r in rows
            ],
        )
    return len(rows)


def requeue_other_models(conn: Connection, model: str) -> int:
    """Queues the memories whose vector another model made (the model was changed) and
    not queued yet. Their old vectors stay until replaced; searches ignore them."""
    rows = conn.execute(
        select(search_vectors.c.memory_id, search_vectors.c.content_sha256)
        .where(search_vectors.c.model != model)
        .where(~search_vectors.c.memory_id.in_(select(search_queue.c.memory_id)))
    ).all()
    if rows:
        now = time.time()
        conn.execute(
            insert(search_queue),
            [
                {"memory_id": r.memory_id, "content_sha256": r.content_sha256, "queued_at": now}
                for r in rows
            ],
        )
    return len(rows)


@dataclass(frozen=True)
class Pending:
    """A queued memory with the content to embed."""

    memory_id: str
    store_id: str
    content_sha256: str
    body: str


def pending(conn: Connection, limit: int) -> list[Pending]:
    """The oldest ``limit`` queued memories with their document's content."""
    rows = conn.execute(
        select(
            search_queue.c.memory_id,
            search_queue.c.content_sha256,
            search_docs.c.store_id,
            search_docs.c.body,
        )
        .join(search_docs, search_docs.c.memory_id == search_queue.c.memory_id)
        .order_by(search_queue.c.queued_at, search_queue.c.memory_id)
        .limit(limit)
    ).all()
    return [Pending(r.memory_id, r.store_id, r.content_sha256, r.body) for r in rows]


def store_vectors(conn: Connection, model: str, embedded: Sequence[tuple[Pending, bytes]]) -> int:
    """Stores the vectors of embedded queue rows whose row still names the content
    embedded, and removes those rows (in a write transaction). Returns how many."""
    stored = 0
    for item, vector in embedded:
        claimed = conn.execute(
            delete(search_queue).where(
                search_queue.c.memory_id == item.memory_id,
                search_queue.c.content_sha256 == item.content_sha256,
            )
        ).rowcount
        if not claimed:
            continue
        conn.execute(delete(search_vectors).where(search_vectors.c.memory_id == item.memory_id))
        conn.execute(
            insert(search_vectors).values(
                memory_id=item.memory_id,
                store_id=item.store_id,
                model=model,
                content_sha256=item.content_sha256,
                vector=vector,
            )
        )
        stored += 1
    return stored


def drop_orphans(conn: Connection) -> None:
    """Removes queue rows without a search document (none should exist; cheap guard)."""
    conn.execute(
        delete(search_queue).where(~search_queue.c.memory_id.in_(select(search_docs.c.memory_id)))
    )


def lag(conn: Connection, model: str | None) -> IndexLag:
    """How many memories wait for a vector and since when (see :class:`IndexLag`): those
    queued for embedding, and those the full-text indexer has yet to queue (its
    ``search_pending`` rows)."""
    waiting = union(
        select(search_queue.c.memory_id, search_queue.c.queued_at),
        select(search_pending.c.memory_id, search_pending.c.queued_at),
    ).subquery()
    count, oldest = conn.execute(
        select(func.count(func.distinct(waiting.c.memory_id)), func.min(waiting.c.queued_at))
    ).one()
    age = max(0.0, time.time() - float(oldest)) if oldest is not None else 0.0
    return IndexLag(pending=int(count), oldest_seconds=round(age, 3), model=model)


# ------------------------------------------------------------------ query


class VectorCache:
    """One database's vectors of one model as a matrix, reloaded when they change.

    Thread-safe; one per :class:`memfs.store.Engine`."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._key: tuple[Any, ...] | None = None
        self._ids: list[str] = []
        self._codes: dict[str, int] = {}
        self._stores: np.ndarray | None = None
        self._matrix: np.ndarray | None = None

    def load(
        self, conn: Connection, model: str, dim: int
    ) -> tuple[list[str], dict[str, int], Any, Any]:
        """``(memory ids, {store id: code}, store code per row, (n, dim) matrix)`` of the
        current vectors."""
        import numpy as np

        count, newest = conn.execute(
            select(func.count(), func.max(search_vectors.c.vec_id)).where(
                search_vectors.c.model == model
            )
        ).one()
        key = (model, dim, count, newest)
        with self._lock:
            if key != self._key:
                rows = conn.execute(
                    select(
                        search_vectors.c.memory_id,
                        search_vectors.c.store_id,
                        search_vectors.c.vector,
                    ).where(search_vectors.c.model == model)
                ).all()
                rows = [r for r in rows if len(r.vector) == dim * 4]
                self._ids = [r.memory_id for r in rows]
                self._codes = {}
                for r in rows:
                    self._codes.setdefault(r.store_id, len(self._codes))
                self._stores = np.array([self._codes[r.store_id] for r in rows], dtype=np.int32)
                matrix = np.frombuffer(b"".join(bytes(r.vector) for r in rows), dtype="<f4")
                self._matrix = matrix.reshape(len(rows), dim)
                self._key = key
            return self._ids, self._codes, self._stores, self._matrix


@dataclass(frozen=True)
class Probe:
    """What a semantic query compares: the query's unit vector (``(dim,)`` float32),
    the model fingerprint of the vectors to compare it with, and the engine's cache."""

    cache: VectorCache
    model: str
    vector: Any


def nearest(
    conn: Connection,
    probe: Probe,
    store_ids: Sequence[str] | None,
    path_prefix: str,
    depth: int,
) -> list[tuple[str, float]]:
    """The ``depth`` memories (id, cosine similarity > 0) nearest the probe's vector,
    best first, among ``store_ids`` (None: all) below ``path_prefix``."""
    import numpy as np

    ids, codes, stores, matrix = probe.cache.load(conn, probe.model, int(probe.vector.shape[0]))
    if not ids:
        return []
    # einsum, not ``@``: numpy's BLAS would spread this memory-bound product over every
    # core, which on a busy 2-core machine made it 5-10x slower (scripts/bench-search).
    scores = np.einsum("ij,j->i", matrix, probe.vector.astype(np.float32))
    mask = scores > 0
    if store_ids is not None:
        wanted = [codes[s] for s in store_ids if s in codes]
        mask &= np.isin(stores, np.array(wanted, dtype=np.int32))
    if path_prefix != "/":
        below = set(
            conn.execute(
                select(search_docs.c.memory_id).where(
                    search_docs.c.path >= path_prefix,
                    search_docs.c.path < descendant_upper_bound(path_prefix),
                )
            ).scalars()
        )
        mask &= np.fromiter((i in below for i in ids), dtype=bool, count=len(ids))
    candidates = np.flatnonzero(mask)
    if candidates.size > depth:
        top = np.argpartition(-scores[candidates], depth - 1)[:depth]
        candidates = candidates[top]
    order = candidates[np.argsort(-scores[candidates], kind="stable")]
    return [(ids[i], float(scores[i])) for i in order]


def documents(conn: Connection, memory_ids: Sequence[str], hidden: Any = None) -> dict[str, Any]:
    """``{memory id: search_docs row}`` of these memories (those still live), less those
    of ``hidden`` (a ``SELECT memory_id`` of what the caller may not see)."""
    if not memory_ids:
        return {}
    statement = select(search_docs).where(
        search_docs.c.memory_id.in_(bindparam("ids", expanding=True))
    )
    if hidden is not None:
        statement = statement.where(search_docs.c.memory_id.not_in(hidden))
    rows = conn.execute(statement, {"ids": list(memory_ids)}).all()
    return {r.memory_id: r for r in rows}


def check(conn: Connection, text_queued: set[str] | frozenset[str] = frozenset()) -> Iterator[str]:
    """fsck: every queue row and vector belongs to a live memory, and a vector is of its
    memory's head content (a write drops the vector of the content it replaces) — once
    the full-text indexer has taken the memory (``text_queued``: the ids of
    ``search_pending``, whose rows and vectors it has yet to bring to the head)."""
    live = {
        r.id: r.content_sha256
        for r in conn.execute(
            select(memories.c.id, memories.c.content_sha256).where(memories.c.deleted_at.is_(None))
        )
    }
    for memory_id in conn.execute(select(search_queue.c.memory_id)).scalars():
        if memory_id in text_queued:
            continue
        if memory_id not in live:
            yield f"search queue: memory {memory_id} is not live"
    for memory_id, digest in conn.execute(
        select(search_vectors.c.memory_id, search_vectors.c.content_sha256)
    ).all():
        if memory_id in text_queued:
            continue
        if memory_id not in live:
            yield f"search vector: memory {memory_id} is not live"
        elif live[memory_id] != digest:
            yield f"search vector: memory {memory_id}'s vector is not of its head content"
