"""Search (SPEC §7): the full-text index of live memories, the ranked queries over it,
and the semantic and hybrid rankings built on memfs/store/semantic.py's vectors;
:class:`Search` is their facade (``engine.search``, ``engine.for_caller(viewer=…).search``).

The SQL of full-text search (semantic.py has the vectors' and the queue's). ``search_docs``
(schema.py) holds one document per live memory — its store, current path and head
content. A write that changes a head, a path or whether a memory is live only queues
the memory (:func:`queue`: one ``search_pending`` row in the write's transaction); the
indexer (memfs/store/indexer.py, its own transactions, off the write path) and every
search before it reads (:meth:`Search.query`) bring the queued documents to the heads
they see (:func:`index_pending`), so a search never misses what was committed before
it began (SPEC §7). An erasure — redaction, hard delete, store deletion — removes the
document and the queue row in its own transaction (:func:`unindex_memory`,
:func:`unindex_store`), before it returns; a version redaction or a prune first brings
the memory's document to its head (:func:`settle`), so no erased content waits in a
document. Indexing queues the memory for embedding and drops its vector
(:func:`memfs.store.semantic.enqueue` / ``forget``). :func:`semantic_search` ranks by
cosine similarity, :func:`hybrid_search` fuses both rankings by reciprocal rank.

Concurrency: on SQLite one writer at a time indexes. On PostgreSQL the indexer takes
queue rows ``FOR UPDATE SKIP LOCKED`` (two indexers never index one memory at once) and
a write queues with ``ON CONFLICT DO UPDATE``, which waits for an indexer holding the
row: a write committed after the indexer read its head leaves a row behind it. An
erasure deletes the queue row before the document, so it waits for an indexer before
it touches what the indexer writes (no lock cycle).

Per dialect, beside ``search_docs``:

- **SQLite**: two FTS5 external-content tables over it, ``search_fts_words``
  (``unicode61``: words, phrases, prefixes, ranked by ``bm25``) and
  ``search_fts_trigram`` (``trigram``: substrings of three or more characters, for
  text without spaces, also ranked by ``bm25``). The trigram table holds only the
  documents a substring term can match — those whose path or body holds a character of
  a script written without spaces (:func:`memfs.core.query.holds_unspaced_script`, the rule
  that makes a term a substring term): trigrams of English text cost about six index
  entries per character and no query reads them. A substring term shorter than three
  characters is matched with ``LIKE``. After a redaction or hard delete
  :func:`scrub` merges every FTS5 segment (``'optimize'``): FTS5 deletes only mark
  entries, and the merge rewrites the segments without them, so with
  ``secure_delete`` on (memfs/store/_db.py) no token of erased content stays in the
  shadow tables (the WAL is truncated by the engine's checkpoint after such writes).
- **PostgreSQL**: a GIN index on ``to_tsvector('simple', <path words> || ' ' || body)`` queried
  with ``tsquery`` and ranked by ``ts_rank``; a ``pg_trgm`` GIN index on ``body``
  serving the substring terms (``ILIKE``). The ``pg_trgm`` extension (PostgreSQL
  contrib) is required; its absence is a DatabaseUnavailable naming it.

Limitations: a read-only engine (a database this process may not write) cannot index
what is queued: its searches see the documents as last indexed. PostgreSQL keeps a
deleted row's index entries until VACUUM reclaims them (as for every table of the
store); ``simple`` and ``unicode61`` split words a little differently (PostgreSQL
keeps ``a.b`` as one word). Scores compare within one search only.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from sqlalchemy import (
    Connection,
    Text,
    bindparam,
    delete,
    func,
    insert,
    literal,
    select,
    text,
    update,
)
from sqlalchemy.exc import DBAPIError

from memfs.core import config, rules
from memfs.core import query as query_language
from memfs.core.errors import DatabaseUnavailable, SearchUnavailable
from memfs.core.ids import sha256_of
from memfs.core.model import DeleteMode
from memfs.core.query import Query, SearchHit
from memfs.core.records import RecordFilter
from memfs.store import _hot, embeddings, semantic, visibility
from memfs.store._common import descendant_upper_bound, execute_many, store_row
from memfs.store._facade import Facade
from memfs.store.embedder import drain
from memfs.store.embeddings import IndexLag
from memfs.store.records import records_matching
from memfs.store.schema import blobs, memories, search_docs, search_pending
from memfs.store.search_sql import Compiled, compile_postgresql, compile_sqlite, pg_document

__all__ = [
    "PG_INDEXES",
    "SQLITE_FTS_PREFIX",
    "SQLITE_FTS_TABLES",
    "check_index",
    "create_index_objects",
    "index_memory",
    "rebuild",
    "rebuild_trigram",
    "scrub",
    "hybrid_search",
    "index_pending",
    "queue",
    "queue_many",
    "rebuild_stores",
    "settle",
    "take_queued",
    "search",
    "semantic_search",
    "unindex_memory",
    "unindex_store",
]

log = logging.getLogger(__name__)

# The FTS5 tables of SQLite; they and their shadow tables are named SQLITE_FTS_PREFIX….
SQLITE_FTS_PREFIX = "search_fts_"
SQLITE_FTS_TABLES = ("search_fts_words", "search_fts_trigram")
_WORDS_TABLE, _TRIGRAM_TABLE = SQLITE_FTS_TABLES
# The PostgreSQL indexes created beside schema.py's own.
PG_INDEXES = ("ix_search_docs_tsv", "ix_search_docs_trgm")
_SQLITE_DDL = (
    "CREATE VIRTUAL TABLE search_fts_words USING fts5(path, body, content='search_docs', "
    "content_rowid='doc_id', tokenize='unicode61 remove_diacritics 0')",
    "CREATE VIRTUAL TABLE search_fts_trigram USING fts5(path, body, content='search_docs', "
    "content_rowid='doc_id', tokenize='trigram')",
)
_PG_DDL = (
    f"CREATE INDEX ix_search_docs_tsv ON search_docs USING gin (({pg_document()}))",
    "CREATE INDEX ix_search_docs_trgm ON search_docs USING gin (body gin_trgm_ops)",
)


def create_index_objects(conn: Connection) -> None:
    """Creates the dialect's index objects beside ``search_docs`` (which must exist).

    Raises:
        DatabaseUnavailable: PostgreSQL without the ``pg_trgm`` extension (contrib).
    """
    if conn.dialect.name == "sqlite":
        for statement in _SQLITE_DDL:
            conn.exec_driver_sql(statement)
        return
    try:
        with conn.begin_nested():
            conn.exec_driver_sql("CREATE EXTENSION IF NOT EXISTS pg_trgm")
    except DBAPIError as exc:
        raise DatabaseUnavailable(
            "full-text search needs the PostgreSQL extension pg_trgm (package "
            f"postgresql-contrib); CREATE EXTENSION pg_trgm failed: {exc.orig}"
        ) from exc
    for statement in _PG_DDL:
        conn.exec_driver_sql(statement)


def rebuild(conn: Connection) -> int:
    """Rebuilds every document from the live memories (a migration, a repair).
    Returns how many were indexed."""
    conn.execute(delete(search_docs))
    rows = conn.execute(
        select(memories.c.id, memories.c.store_id, memories.c.path, blobs.c.data)
        .join(blobs, blobs.c.key == memories.c.blob_key)
        .where(memories.c.deleted_at.is_(None))
        .order_by(memories.c.store_id, memories.c.path)
    ).all()
    if rows:
        conn.execute(
            insert(search_docs),
            [
                {"memory_id": r.id, "store_id": r.store_id, "path": r.path, "body": _text(r.data)}
                for r in rows
            ],
        )
    if conn.dialect.name == "sqlite":
        conn.exec_driver_sql(f"INSERT INTO {_WORDS_TABLE}({_WORDS_TABLE}) VALUES ('rebuild')")
        rebuild_trigram(conn)
    return len(rows)


def rebuild_trigram(conn: Connection) -> int:
    """Rebuilds the SQLite trigram table from the documents: empties it (``'delete-all'``)
    and indexes the documents :func:`_trigram_indexed` names. Returns how many it holds.
    No-op (0) on PostgreSQL."""
    if conn.dialect.name != "sqlite":
        return 0
    conn.exec_driver_sql(f"INSERT INTO {_TRIGRAM_TABLE}({_TRIGRAM_TABLE}) VALUES ('delete-all')")
    docs = conn.execute(select(search_docs.c.doc_id, search_docs.c.path, search_docs.c.body))
    chosen = [(d.doc_id, d.path, d.body) for d in docs if _trigram_indexed(d.path, d.body)]
    execute_many(
        conn, f"INSERT INTO {_TRIGRAM_TABLE}(rowid, path, body) VALUES (?, ?, ?)", chosen
    )
    return len(chosen)


def rebuild_stores(conn: Connection, store_ids: Sequence[str]) -> int:
    """Rebuilds the documents of these stores' live memories (``memfs search reindex
    --store``), queueing each for embedding. Returns how many were indexed."""
    for store_id in store_ids:
        unindex_store(conn, store_id)
    rows = conn.execute(
        select(memories.c.id, memories.c.store_id, memories.c.path, blobs.c.data)
        .join(blobs, blobs.c.key == memories.c.blob_key)
        .where(memories.c.deleted_at.is_(None), memories.c.store_id.in_(list(store_ids)))
        .order_by(memories.c.store_id, memories.c.path)
    ).all()
    for r in rows:
        index_memory(conn, r.id, r.store_id, r.path, r.data)
    return len(rows)


def _text(data: bytes | memoryview) -> str:
    return bytes(data).decode("utf-8")


def _trigram_indexed(path: str, body: str) -> bool:
    """Whether a document belongs in the SQLite trigram table: only text a substring
    term can match (see the module docstring). A pure function of the document, so a
    delete names the same tables its insert did (an external-content FTS5 delete of
    a row never inserted corrupts the index)."""
    return query_language.holds_unspaced_script(path) or query_language.holds_unspaced_script(
        body
    )


def _fts_tables(path: str, body: str) -> tuple[str, ...]:
    """The SQLite FTS5 tables that index a document."""
    return SQLITE_FTS_TABLES if _trigram_indexed(path, body) else (_WORDS_TABLE,)


# The statements of index_memory, prebuilt: every write runs them (memfs.store._hot).
_FTS_DELETE = {
    table: text(
        f"INSERT INTO {table}({table}, rowid, path, body) "
        "VALUES ('delete', :doc_id, :path, :body)"
    )
    for table in SQLITE_FTS_TABLES
}
_FTS_INSERT = {
    table: text(f"INSERT INTO {table}(rowid, path, body) VALUES (:doc_id, :path, :body)")
    for table in SQLITE_FTS_TABLES
}
_DOCUMENT_OF = select(search_docs.c.doc_id, search_docs.c.path, search_docs.c.body).where(
    search_docs.c.memory_id == bindparam("memory_id")
)
_INSERT_DOCUMENT = insert(search_docs).returning(search_docs.c.doc_id)
_UPDATE_DOCUMENT = update(search_docs).where(search_docs.c.doc_id == bindparam("doc_id_"))


def _fts_delete(conn: Connection, doc_id: int, path: str, body: str) -> None:
    for table in _fts_tables(path, body):
        _hot.run(conn, _FTS_DELETE[table], {"doc_id": doc_id, "path": path, "body": body})


def _fts_insert(conn: Connection, doc_id: int, path: str, body: str) -> None:
    for table in _fts_tables(path, body):
        _hot.run(conn, _FTS_INSERT[table], {"doc_id": doc_id, "path": path, "body": body})


def index_memory(
    conn: Connection,
    memory_id: str,
    store_id: str,
    path: str,
    content: bytes | str,
    *,
    content_sha256: str | None = None,
    new: bool = False,
) -> None:
    """Makes the document of a live memory its current path and head content (insert
    or replace), in the caller's write transaction.

    Args:
        content_sha256: the content's SHA-256 (hex) when the caller has it (else it is
            computed for the embedding queue).
        new: the memory was created in this transaction, so it has no document and no
            vector yet: the lookups for them are skipped (the create hot path).
    """
    body = content if isinstance(content, str) else _text(content)
    sqlite = conn.dialect.name == "sqlite"
    old = None if new else _hot.first(conn, _DOCUMENT_OF, {"memory_id": memory_id})
    if old is not None and old.path == path and old.body == body:
        return
    if old is None or old.body != body:
        digest = content_sha256 or sha256_of(body.encode("utf-8"))
        semantic.enqueue(conn, memory_id, digest, new=new)
    if old is None:
        doc_id = _hot.scalar(
            conn,
            _INSERT_DOCUMENT,
            {"memory_id": memory_id, "store_id": store_id, "path": path, "body": body},
        )
    else:
        doc_id = old.doc_id
        if sqlite:
            _fts_delete(conn, doc_id, old.path, old.body)
        _hot.run(
            conn,
            _UPDATE_DOCUMENT,
            {"doc_id_": doc_id, "store_id": store_id, "path": path, "body": body},
        )
    if sqlite:
        _fts_insert(conn, doc_id, path, body)



def index_new_store(conn: Connection, store_id: str) -> int:
    """Indexes every live memory of a store whose memories were all written in this
    transaction (a fork, SPEC §10), so none has a document, queue row or vector yet.
    Set-based: one INSERT … SELECT per table whatever the store holds (the trigram
    subset of SQLite is chosen per document, :func:`_trigram_indexed`). Returns how
    many documents were written."""
    sqlite = conn.dialect.name == "sqlite"
    body = (
        func.cast(blobs.c.data, Text)
        if sqlite
        else func.convert_from(blobs.c.data, literal("UTF8"))
    )
    conn.execute(
        insert(search_docs).from_select(
            ["memory_id", "store_id", "path", "body"],
            select(memories.c.id, memories.c.store_id, memories.c.path, body)
            .join(blobs, blobs.c.key == memories.c.blob_key)
            .where(memories.c.store_id == store_id, memories.c.deleted_at.is_(None))
            .order_by(memories.c.path),
        )
    )
    semantic.queue_new(conn, store_id)
    docs = conn.execute(
        select(search_docs.c.doc_id, search_docs.c.path, search_docs.c.body).where(
            search_docs.c.store_id == store_id
        )
    ).all()
    if sqlite:
        conn.execute(
            text(
                f"INSERT INTO {_WORDS_TABLE}(rowid, path, body) "
                "SELECT doc_id, path, body FROM search_docs WHERE store_id = :store_id"
            ),
            {"store_id": store_id},
        )
        execute_many(
            conn,
            f"INSERT INTO {_TRIGRAM_TABLE}(rowid, path, body) VALUES (?, ?, ?)",
            [(d.doc_id, d.path, d.body) for d in docs if _trigram_indexed(d.path, d.body)],
        )
    return len(docs)


# ------------------------------------------------------------ the queue

# The queue row of a write (prebuilt: every write runs it). SQLite runs one writer at a
# time, so a row already there stays as it is (no page written). PostgreSQL's DO UPDATE
# locks the row, so it waits for an indexer holding it (FOR UPDATE) to commit and then
# inserts a new row: a head committed after the indexer read it is never left unqueued.
_QUEUE = {
    "sqlite": text(
        "INSERT INTO search_pending (memory_id, queued_at) VALUES (:memory_id, :now) "
        "ON CONFLICT (memory_id) DO NOTHING"
    ),
    "postgresql": text(
        "INSERT INTO search_pending (memory_id, queued_at) VALUES (:memory_id, :now) "
        "ON CONFLICT (memory_id) DO UPDATE SET queued_at = search_pending.queued_at"
    ),
}
_QUEUE_MANY = {
    "sqlite": "INSERT INTO search_pending (memory_id, queued_at) VALUES (?, ?) "
    "ON CONFLICT (memory_id) DO NOTHING",
    "postgresql": "INSERT INTO search_pending (memory_id, queued_at) VALUES (?, ?) "
    "ON CONFLICT (memory_id) DO UPDATE SET queued_at = search_pending.queued_at",
}
_ANY_PENDING = select(search_pending.c.memory_id).limit(1)
# conn.info key: this transaction queued a memory (see take_queued).
_QUEUED = "memfs.search.queued"


def queue(conn: Connection, memory_id: str) -> None:
    """Queues a memory for the indexer, in the caller's write transaction: its head, path
    or liveness changed (one small row; SPEC §7's index follows in
    :func:`index_pending`)."""
    _hot.run(conn, _QUEUE[conn.dialect.name], {"memory_id": memory_id, "now": time.time()})
    conn.info[_QUEUED] = True


def queue_many(conn: Connection, memory_ids: Sequence[str]) -> None:
    """:func:`queue` for many memories (a directory rename), in one executemany."""
    now = time.time()
    execute_many(conn, _QUEUE_MANY[conn.dialect.name], [(m, now) for m in memory_ids])
    if memory_ids:
        conn.info[_QUEUED] = True


def take_queued(conn: Connection) -> bool:
    """Whether ``conn``'s transaction queued a memory; the record is cleared (call it
    when the transaction ends)."""
    return bool(conn.info.pop(_QUEUED, None))


def has_pending(conn: Connection) -> bool:
    """Whether any memory waits for the indexer (one primary-key probe)."""
    return _hot.first(conn, _ANY_PENDING, {}) is not None


def pending_lag(conn: Connection) -> tuple[int, float]:
    """``(queued memories, seconds the oldest has waited)`` of the full-text queue."""
    count, oldest = conn.execute(
        select(func.count(), func.min(search_pending.c.queued_at))
    ).one()
    age = max(0.0, time.time() - float(oldest)) if oldest is not None else 0.0
    return int(count), age


def _index_heads(conn: Connection, memory_ids: Sequence[str]) -> None:
    """Brings the documents of ``memory_ids`` to the heads this transaction sees: a live
    memory's is written (or rewritten), any other's removed."""
    heads = conn.execute(
        select(
            memories.c.id,
            memories.c.store_id,
            memories.c.path,
            memories.c.content_sha256,
            blobs.c.data,
        )
        .join(blobs, blobs.c.key == memories.c.blob_key)
        .where(
            memories.c.id.in_(bindparam("ids", expanding=True)),
            memories.c.deleted_at.is_(None),
        ),
        {"ids": list(memory_ids)},
    ).all()
    live = {head.id: head for head in heads}
    for memory_id in memory_ids:
        head = live.get(memory_id)
        if head is None:
            _remove_document(conn, memory_id)
        else:
            index_memory(
                conn,
                memory_id,
                head.store_id,
                head.path,
                head.data,
                content_sha256=head.content_sha256,
            )


def index_pending(conn: Connection, limit: int | None, *, skip_locked: bool = True) -> int:
    """Indexes up to ``limit`` queued memories (None: all) at the heads this write
    transaction sees and removes their queue rows. Returns how many rows it took.

    Args:
        skip_locked: PostgreSQL: leave the rows another transaction holds (an indexer,
            a write queueing again) rather than wait for them; False waits (a search
            that must see them).
    """
    statement = select(search_pending.c.memory_id).order_by(search_pending.c.memory_id)
    if limit is not None:
        statement = statement.limit(limit).with_for_update(skip_locked=skip_locked)
    taken = list(conn.execute(statement).scalars())
    if not taken:
        return 0
    _index_heads(conn, taken)
    conn.execute(
        delete(search_pending).where(
            search_pending.c.memory_id.in_(bindparam("ids", expanding=True))
        ),
        {"ids": taken},
    )
    return len(taken)


def settle(conn: Connection, memory_ids: Sequence[str]) -> None:
    """Indexes the queued ones of ``memory_ids`` now, in the caller's write transaction:
    before a version redaction or prune erases content, the documents must already be
    the heads (a queued document may still hold what is being erased)."""
    if not memory_ids:
        return
    queued = list(
        conn.execute(
            select(search_pending.c.memory_id)
            .where(search_pending.c.memory_id.in_(bindparam("ids", expanding=True)))
            .order_by(search_pending.c.memory_id)
            .with_for_update(),
            {"ids": sorted(set(memory_ids))},
        ).scalars()
    )
    if not queued:
        return
    _index_heads(conn, queued)
    conn.execute(
        delete(search_pending).where(
            search_pending.c.memory_id.in_(bindparam("ids", expanding=True))
        ),
        {"ids": queued},
    )


# How many queued memories one transaction of a search's catching up indexes.
CATCH_UP_BATCH = 256
# A search waits at most this long for the index to reach the heads it sees; past it,
# it answers from the index as it is (and logs it): bounded, under any write load.
CATCH_UP_BUDGET_S = 10.0


def catch_up(
    read: Callable[[], contextlib.AbstractContextManager[Connection]],
    write: Callable[[], contextlib.AbstractContextManager[Connection]],
    *,
    batch: int = CATCH_UP_BATCH,
    budget_s: float = CATCH_UP_BUDGET_S,
    wait: bool = True,
    yield_to: Callable[[], bool] | None = None,
) -> int:
    """Brings the index up to every head committed before the call (SPEC §7: a search
    never misses what was committed before it began): indexes what the queue holds, in
    write transactions of ``batch`` memories, in the calling thread. Returns how many
    queue rows it took (0, after one read, when the queue is empty).

    Args:
        wait: PostgreSQL: when the rows left are held by other transactions (an
            indexer, a writer), wait for them one at a time (a search); False leaves
            them to their holders (the indexer thread).
        yield_to: asked after each batch; True stops there, the rest left queued (the
            indexer thread gives way to writes that resumed).

    Raises:
        StoreBusy: the database stayed locked past the busy timeout.
    """
    with read() as conn:
        if not has_pending(conn):
            return 0
        postgresql = conn.dialect.name == "postgresql"
    deadline = time.monotonic() + budget_s
    done = 0
    while True:
        with write() as conn:
            taken = index_pending(conn, batch)
        done += taken
        if taken < batch:
            # SQLite: the transaction saw every commit before it, and took all it saw.
            if not postgresql:
                return done
            with read() as conn:
                if not has_pending(conn):
                    return done
            if not wait:
                return done
            if taken == 0:
                # Every row left is another transaction's: wait for one (holding no
                # other lock while waiting, so no cycle), then take the rest again.
                with write() as conn:
                    done += index_pending(conn, 1, skip_locked=False)
        if yield_to is not None and yield_to():
            return done
        if time.monotonic() > deadline:
            log.warning(
                "the search index is still catching up after %.1f s (%d memories indexed); "
                "answering from the index as it is",
                budget_s,
                done,
            )
            return done


def _remove_document(conn: Connection, memory_id: str) -> None:
    """Removes a memory's document and its vector rows; no-op when it has none."""
    old = conn.execute(
        select(search_docs.c.doc_id, search_docs.c.path, search_docs.c.body).where(
            search_docs.c.memory_id == memory_id
        )
    ).first()
    semantic.forget(conn, [memory_id])
    if old is None:
        return
    if conn.dialect.name == "sqlite":
        _fts_delete(conn, old.doc_id, old.path, old.body)
    conn.execute(delete(search_docs).where(search_docs.c.doc_id == old.doc_id))


def unindex_memory(conn: Connection, memory_id: str) -> None:
    """Removes a memory's document, vector and queue rows now, in the caller's write
    transaction (an erasure: redaction, hard delete, SPEC §7); no-op for what it lacks.
    The queue row goes first: on PostgreSQL that waits for an indexer holding it, before
    this transaction holds anything the indexer writes."""
    conn.execute(delete(search_pending).where(search_pending.c.memory_id == memory_id))
    _remove_document(conn, memory_id)


def unindex_store(conn: Connection, store_id: str) -> None:
    """Removes every document and queue row of a store (its deletion); call it while
    the store's memory rows still exist."""
    conn.execute(
        delete(search_pending).where(
            search_pending.c.memory_id.in_(
                select(memories.c.id).where(memories.c.store_id == store_id)
            )
        )
    )
    ids = conn.execute(
        select(search_docs.c.memory_id).where(search_docs.c.store_id == store_id)
    ).scalars()
    for memory_id in list(ids):
        _remove_document(conn, memory_id)


def scrub(conn: Connection) -> None:
    """Rewrites the FTS5 segments without the entries of removed documents (SQLite), so
    the tokens of redacted or hard-deleted content leave the shadow tables (SPEC §2, §7).
    Costs a pass over the whole index: run after redactions and hard deletes only."""
    if conn.dialect.name != "sqlite":
        return
    for table in SQLITE_FTS_TABLES:
        conn.exec_driver_sql(f"INSERT INTO {table}({table}) VALUES ('optimize')")


def _validate(
    conn: Connection, store_ids: Sequence[str] | None, path_prefix: str, limit: int
) -> bool:
    """Checks the arguments of a search; False when it covers no store at all."""
    rules.validate_path_prefix(path_prefix)
    query_language.validate_limit(limit)
    for store_id in store_ids or ():
        store_row(conn, store_id)
    return store_ids is None or bool(store_ids)


def _text_rows(
    conn: Connection,
    query: Query,
    store_ids: Sequence[str] | None,
    path_prefix: str,
    limit: int,
    hidden: Any,
    record_filter: RecordFilter | None,
) -> list[Any]:
    """The full-text ranking: ``(memory_id, store_id, path, body, score)`` rows, best
    first (arguments already checked; ``hidden`` and ``record_filter`` as in
    :func:`search`)."""
    compiled = Compiled()
    if conn.dialect.name == "sqlite":
        compile_sqlite(compiled, query)
    else:
        compile_postgresql(compiled, query)
    where = list(compiled.where)
    if store_ids is not None:
        stores_in = ", ".join(compiled.param(s) for s in store_ids)
        where.append(f"d.store_id IN ({stores_in})")
    if path_prefix != "/":
        low = compiled.param(path_prefix)
        high = compiled.param(descendant_upper_bound(path_prefix))
        where.append(f"d.path >= {low} AND d.path < {high}")
    if record_filter is not None and not record_filter.empty:
        # The record index's own translation of the filter (memfs/store/records.py),
        # compiled with named parameters as this text statement uses them.
        matching = records_matching(record_filter).compile()
        where.append(f"d.memory_id IN ({matching})")
        compiled.params.update(matching.params)
    if hidden is not None:  # visibility (SPEC §6 and §7)
        subquery = hidden.compile(dialect=conn.dialect, compile_kwargs={"literal_binds": True})
        where.append(f"d.memory_id NOT IN ({subquery})")
    score = " + ".join(compiled.score) or "0"
    statement = (
        f"SELECT d.memory_id, d.store_id, d.path, d.body, ({score}) AS score "
        f"FROM search_docs d {' '.join(compiled.joins)} WHERE {' AND '.join(where) or 'TRUE'} "
        f"ORDER BY score DESC, d.path LIMIT {compiled.param(limit)}"
    )
    return list(conn.execute(text(statement), compiled.params).all())


def search(
    conn: Connection,
    query: Query,
    store_ids: Sequence[str] | None,
    *,
    path_prefix: str,
    limit: int,
    hidden: Any = None,
    record_filter: RecordFilter | None = None,
) -> list[SearchHit]:
    """See :meth:`memfs.store.search.Search.query` (full text). ``hidden``: a ``SELECT
    memory_id`` of the memories the caller may not see (memfs/store/visibility.py),
    never hits; ``record_filter``: only the records it keeps (SPEC §7)."""
    if not _validate(conn, store_ids, path_prefix, limit):
        return []
    rows = _text_rows(conn, query, store_ids, path_prefix, limit, hidden, record_filter)
    return [
        SearchHit(
            store_id=r.store_id,
            memory_id=r.memory_id,
            path=r.path,
            score=round(float(r.score), 6),
            snippet=query_language.snippet(r.body, query),
        )
        for r in rows
    ]


# ------------------------------------------------------------ semantic, hybrid

# Reciprocal-rank fusion (Cormack et al. 2009): a hit's score is the sum over the
# rankings holding it of 1 / (RRF_K + rank), rank from 1.
RRF_K = 60
# How many hits of each ranking the fusion looks at.
_FUSION_DEPTH = 100


def _excluded(query: Query, path: str, body: str) -> bool:
    """A semantic hit holding a negated term (as a case-insensitive substring)."""
    haystack = f"{path} {body}".lower()
    return any(term.text.lower() in haystack for term in query.negative)


def _semantic_ranking(
    conn: Connection,
    probe: semantic.Probe,
    query: Query,
    store_ids: Sequence[str] | None,
    path_prefix: str,
    depth: int,
    hidden: Any,
    record_filter: RecordFilter | None,
) -> list[tuple[Any, float]]:
    """``(search_docs row, cosine)`` best first, negated terms, ``hidden`` and what
    ``record_filter`` does not keep left out."""
    nearest = semantic.nearest(conn, probe, store_ids, path_prefix, depth + 20)
    docs = semantic.documents(conn, [memory_id for memory_id, _ in nearest], hidden)
    if record_filter is not None and not record_filter.empty:
        kept = {row[0] for row in conn.execute(records_matching(record_filter))}
        docs = {memory_id: doc for memory_id, doc in docs.items() if memory_id in kept}
    ranked = [
        (docs[memory_id], score)
        for memory_id, score in nearest
        if memory_id in docs and not _excluded(query, docs[memory_id].path, docs[memory_id].body)
    ]
    return ranked[:depth]


def _doc_hit(doc: Any, score: float, query: Query) -> SearchHit:
    return SearchHit(
        store_id=doc.store_id,
        memory_id=doc.memory_id,
        path=doc.path,
        score=round(score, 6),
        snippet=query_language.snippet(doc.body, query),
    )


def semantic_search(
    conn: Connection,
    probe: semantic.Probe,
    query: Query,
    store_ids: Sequence[str] | None,
    *,
    path_prefix: str,
    limit: int,
    hidden: Any = None,
    record_filter: RecordFilter | None = None,
) -> list[SearchHit]:
    """The memories whose vector is nearest the probe's, best first; score = cosine
    similarity. Memories still queued for embedding are not found; ``hidden`` as in
    :func:`search`."""
    if not _validate(conn, store_ids, path_prefix, limit):
        return []
    ranked = _semantic_ranking(
        conn, probe, query, store_ids, path_prefix, limit, hidden, record_filter
    )
    return [_doc_hit(doc, score, query) for doc, score in ranked]


def hybrid_search(
    conn: Connection,
    probe: semantic.Probe,
    query: Query,
    store_ids: Sequence[str] | None,
    *,
    path_prefix: str,
    limit: int,
    hidden: Any = None,
    record_filter: RecordFilter | None = None,
) -> list[SearchHit]:
    """Full-text and semantic rankings fused by reciprocal rank (:data:`RRF_K`): a
    memory both find ranks above one only either finds. A memory written a moment ago
    is found by its words at once and by its meaning once embedded. ``hidden`` as in
    :func:`search`."""
    if not _validate(conn, store_ids, path_prefix, limit):
        return []
    words = _text_rows(
        conn, query, store_ids, path_prefix, _FUSION_DEPTH, hidden, record_filter
    )
    meaning = _semantic_ranking(
        conn, probe, query, store_ids, path_prefix, _FUSION_DEPTH, hidden, record_filter
    )
    fused: dict[str, float] = {}
    docs: dict[str, Any] = {}
    for rank, row in enumerate(words, 1):
        fused[row.memory_id] = 1.0 / (RRF_K + rank)
        docs[row.memory_id] = row
    for rank, (doc, _) in enumerate(meaning, 1):
        fused[doc.memory_id] = fused.get(doc.memory_id, 0.0) + 1.0 / (RRF_K + rank)
        docs.setdefault(doc.memory_id, doc)
    best = sorted(fused, key=lambda m: (-fused[m], docs[m].path))[:limit]
    return [_doc_hit(docs[m], fused[m], query) for m in best]


# -------------------------------------------------------------------- fsck


def _check_queue(rows: dict[str, Any], queued: set[str]) -> Iterator[str]:
    """fsck: every queue row names a memory that exists and was not erased (a
    redaction, hard delete or store deletion removes its row in its transaction)."""
    for memory_id in sorted(queued):
        row = rows.get(memory_id)
        if row is None:
            yield f"search pending: memory {memory_id} does not exist"
        elif row.delete_mode not in (None, DeleteMode.SOFT_DELETE.value):
            yield f"search pending: memory {memory_id} was erased ({row.delete_mode})"


def check_index(conn: Connection) -> Iterator[str]:
    """fsck: the documents are exactly the live memories with their current path and
    head content, except the queued memories (work the indexer has yet to do); every
    queue row names a memory that exists and was not erased (an erasure removes its
    row); and (SQLite) the FTS5 tables agree with the documents."""
    rows = {
        r.id: r
        for r in conn.execute(
            select(
                memories.c.id,
                memories.c.store_id,
                memories.c.path,
                memories.c.content_sha256,
                memories.c.deleted_at,
                memories.c.delete_mode,
            )
        )
    }
    live = {memory_id: r for memory_id, r in rows.items() if r.deleted_at is None}
    queued = set(conn.execute(select(search_pending.c.memory_id)).scalars())
    yield from _check_queue(rows, queued)
    seen: set[str] = set()
    doc_ids: set[int] = set()
    trigram_ids: set[int] = set()
    for doc in conn.execute(select(search_docs)):
        seen.add(doc.memory_id)
        doc_ids.add(doc.doc_id)
        if _trigram_indexed(doc.path, doc.body):
            trigram_ids.add(doc.doc_id)
        if doc.memory_id in queued and doc.memory_id in rows:
            continue  # the indexer brings it to the head
        head = live.get(doc.memory_id)
        if head is None:
            yield f"search document {doc.doc_id}: memory {doc.memory_id} is not live"
        elif (head.store_id, head.path) != (doc.store_id, doc.path):
            yield f"memory {doc.memory_id}: its search document has another store or path"
        elif sha256_of(doc.body.encode("utf-8")) != head.content_sha256:
            yield f"memory {doc.memory_id}: its search document is not its head content"
    for memory_id in sorted(live.keys() - seen - queued):
        yield f"memory {memory_id}: live but not in the search index"
    yield from semantic.check(conn, queued)
    if conn.dialect.name != "sqlite":
        return
    # Read-only (fsck may run on a read-only open, beside writers): FTS5's own
    # 'integrity-check' is an INSERT, so compare the documents each FTS5 table holds
    # (its ``_docsize`` shadow table, one row per document) with the documents it
    # should hold (the trigram table: only those _trigram_indexed names).
    for table, expected in ((_WORDS_TABLE, doc_ids), (_TRIGRAM_TABLE, trigram_ids)):
        indexed = set(conn.exec_driver_sql(f"SELECT id FROM {table}_docsize").scalars())
        if indexed - expected:
            yield (
                f"search index {table}: holds {len(indexed - expected)} document(s) it "
                "should not (removed, or not text a substring term can match)"
            )
        if expected - indexed:
            yield f"search index {table}: lacks {len(expected - indexed)} document(s)"


def _semantic_unavailable() -> SearchUnavailable:
    """The SearchUnavailable of a semantic search: it names the setting (SPEC §7)."""
    return SearchUnavailable(
        f"semantic search is not configured: {config.SEARCH_MODEL_ENV} names no embedding "
        "model directory; full-text search works without one (drop --semantic)"
    )


class Search(Facade):
    """Ranked search as one caller may run it (what is hidden from its viewer is never
    a hit, SPEC §7), and the upkeep of the index behind it."""

    def query(
        self,
        query: str | query_language.Query,
        store_ids: Sequence[str] | None,
        *,
        path_prefix: str = "/",
        limit: int = query_language.DEFAULT_SEARCH_LIMIT,
        mode: str = query_language.SEARCH_AUTO,
        record_filter: RecordFilter | None = None,
    ) -> list[SearchHit]:
        """Ranked hits among the live memories of ``store_ids`` (SPEC §7), best first;
        the query language is :mod:`memfs.core.query`'s.

        Every query first brings the full-text index up to the heads committed before
        it (:meth:`catch_up`), so it sees every one of them. Semantic search ranks by
        the cosine similarity of the configured model's vectors
        (``$MEMFS_SEARCH_MODEL_DIR``), which the embedder computes off the write
        path: a memory is found by meaning once embedded (:meth:`index_lag`). Hybrid
        fuses both by reciprocal rank.

        Args:
            query: the query text (parsed with :func:`memfs.core.query.parse`) or a parsed one.
            store_ids: the stores to search; the caller passes only those it may read.
                None searches every store (a caller that may read them all).
            path_prefix: a directory prefix ending with ``/`` (whole segments match).
            limit: at most this many hits, 1–100.
            mode: ``auto`` (hybrid with a usable model configured, else full text), ``text``,
                ``semantic`` or ``hybrid`` (:data:`memfs.core.query.SEARCH_MODES`).
            record_filter: only records it keeps (SPEC §7: record type, tags,
                minimum importance); None or empty: every memory.

        Raises:
            InvalidInput: a malformed query, prefix, limit or mode.
            NotFound: an unknown store.
            SearchUnavailable: ``semantic``/``hybrid`` without a usable model (the
                message names the setting).
        """
        query_language.validate_mode(mode)
        parsed = query if isinstance(query, query_language.Query) else query_language.parse(query)
        scope = None if store_ids is None else list(store_ids)
        model = None
        if mode == query_language.SEARCH_AUTO:
            with contextlib.suppress(SearchUnavailable):  # a broken model: full text only
                model = embeddings.configured_model()
        elif mode != query_language.SEARCH_TEXT:
            model = embeddings.configured_model()
            if model is None:
                raise _semantic_unavailable()
        # The index first catches up with what the snapshot it reads finds queued (SPEC
        # §7); with nothing queued that costs one primary-key probe in the same read.
        caught_up = self._parts.read_only  # a read-only engine can't write the index
        while True:
            with self._read() as conn:
                if caught_up or not has_pending(conn):
                    return self._ranked(
                        conn, parsed, scope, model, mode, path_prefix, limit, record_filter
                    )
            catch_up(self._db.read, self._db.write)
            caught_up = True

    def _ranked(
        self,
        conn: Connection,
        parsed: Query,
        scope: list[str] | None,
        model: embeddings.EmbeddingModel | None,
        mode: str,
        path_prefix: str,
        limit: int,
        record_filter: RecordFilter | None,
    ) -> list[SearchHit]:
        """The hits of :meth:`query` from the index as ``conn`` sees it."""
        hidden = None if self.viewer is None else visibility.hidden_ids(self.viewer)
        if model is None:
            return search(
                conn,
                parsed,
                scope,
                path_prefix=path_prefix,
                limit=limit,
                hidden=hidden,
                record_filter=record_filter,
            )
        vector = model.embed([" ".join(t.text for t in parsed.positive)])[0]
        ranked = semantic_search if mode == query_language.SEARCH_SEMANTIC else hybrid_search
        probe = semantic.Probe(self._parts.vectors, model.fingerprint, vector)
        return ranked(
            conn,
            probe,
            parsed,
            scope,
            path_prefix=path_prefix,
            limit=limit,
            hidden=hidden,
            record_filter=record_filter,
        )

    def catch_up(self) -> int:
        """Indexes what the full-text queue holds now, in this thread, so a search that
        follows finds every head committed before this call (SPEC §7); one read when
        nothing is queued, nothing at all on a read-only engine (it can't write the
        index). Returns how many queued memories it indexed.

        Raises:
            StoreBusy: the database stayed locked past the busy timeout.
        """
        if self._parts.read_only:
            return 0
        return catch_up(self._db.read, self._db.write)

    def text_lag(self) -> tuple[int, float]:
        """``(queued memories, seconds the oldest has waited)``: how far the full-text
        index is behind the heads (a search catches up first; this is what it would
        have to index)."""
        with self._read() as conn:
            return pending_lag(conn)

    def embed_pending(self, progress: Callable[[int], None] | None = None) -> int:
        """Embeds every queued memory now, in this thread (``memfs search reindex``,
        tests); ``progress`` is called with each batch's size. Returns how many vectors
        were stored.

        Raises:
            SearchUnavailable: no usable model is configured.
        """
        model = embeddings.configured_model()
        if model is None:
            raise _semantic_unavailable()
        self.catch_up()  # the documents the vectors are computed from
        stored = 0
        for done, taken in drain(self._db.read, self._db.write, model):
            stored += done
            if progress is not None:
                progress(taken)
        return stored

    def index_lag(self) -> IndexLag:
        """How many live memories wait for their vector, and the oldest wait (seconds);
        ``model`` is the configured model's fingerprint (None without one, or when its
        files are unusable)."""
        try:
            model = embeddings.configured_model()
        except SearchUnavailable:
            model = None
        with self._read() as conn:
            return semantic.lag(conn, None if model is None else model.fingerprint)

    def reindex(self, store_ids: Sequence[str] | None) -> int:
        """Rebuilds the full-text documents of ``store_ids`` (None: the whole index) from
        the heads and queues every memory for a new vector (a changed model, an
        upgraded database); :meth:`embed_pending` then embeds them. Returns how many
        memories were indexed.

        Raises:
            NotFound: an unknown store.
        """
        with self._write() as conn:
            if store_ids is None:
                conn.execute(delete(search_pending))  # every document is its head again
                count = rebuild(conn)
            else:
                for store_id in store_ids:
                    store_row(conn, store_id)
                count = rebuild_stores(conn, list(store_ids))
            semantic.queue_all(conn, None if store_ids is None else list(store_ids))
            scrub(conn)
            return count
