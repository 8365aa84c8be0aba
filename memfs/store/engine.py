"""The store engine: one open database and its lifecycle; the calls are the facades.

One engine runs on embedded SQLite (WAL) and on PostgreSQL, through SQLAlchemy Core. It
owns what lives as long as the database is open: the connections
(:class:`memfs.store._connections.Database`: opening, the in-process write lock, typed
contention, the WAL checkpoint), the change watch, the pending erasure, the batched
record reads, the vector cache, the indexer thread and the embedder thread.

Everything else is a per-aggregate facade (:mod:`memfs.store.caller`):
``engine.for_caller(actor=…, viewer=…)`` binds who writes and what it may see (SPEC §6)
once, and its ``.stores``, ``.memories``, ``.versions``, ``.sessions``, ``.api_keys``,
``.identities``, ``.search``, ``.records``, ``.feed``, ``.blobs``, ``.retention``,
``.history``, ``.snapshots``, ``.restores``, ``.transcripts`` and ``.dreams`` each
run one transaction per call with the visibility hooks of :mod:`memfs.store._facade`.
The engine itself is the unrestricted caller without actor (``engine.memories.get(…)``).

=================  ===========================================================
``stores``         stores: create, find, patch, list, archive, delete; counts
``memories``       memories: create, read, update; the aggregate's facade
``memory_rows``    the per-store path rules, the memory limit, the tombstone
``tombstones``     deletes in the three SPEC §2 modes, restore, retract
``folds``          a mount's own intermediate writes folded into one save (SPEC §4)
``renames``        directory renames (one set-based move)
``listing``        prefix listings with depth roll-up, a mount's tree, tombstones
``versions``       versions and their redaction
``credentials``    sessions, API keys, their tokens and secrets
``sign_ins``       console sign-ins (SPEC §12), checked against their credential
``feed``           the change feed and the audit log
``blobs``          content-addressed blobs and their collection
``retention``      a store's version retention period; pruning past it
``history``        points of a store's history, as-of reads, diffs (SPEC §10)
``forks``          forking a store at a point; what a fork's base needs (SPEC §10)
``snapshots``      named points of a store's history (SPEC §10)
``restores``       restoring a whole store to a point (SPEC §10)
``transcripts``    sessions' events (SPEC §11)
``dreams``         dreams and their status transitions (SPEC §11)
``search``         the full-text index of live memories, its queue and ranked query
``indexer``        the thread that drains the full-text queue off the write path
``identities``     mounts on (identity, template) pairs, default stores (SPEC §8)
``records``        the record index (SPEC §6): typed headers, tags, relations, access
``fsck``           one check per invariant of ``schema.py``
=================  ===========================================================

Every call is synchronous and thread-safe; callers on the trio loop (the FUSE layer,
the API) call through ``trio.to_thread.run_sync``. Write transactions lock the store
row first (``SELECT … FOR UPDATE`` on PostgreSQL, ``BEGIN IMMEDIATE`` on SQLite), so the
per-store invariants that span rows (path uniqueness against ancestors and descendants,
the memory limit, the gap-free change sequence, the counters) hold across threads,
processes and API servers sharing one database.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy.exc import DBAPIError

from memfs.core import config
from memfs.core.errors import (
    Conflict,
    CorruptedStore,
    DatabaseReadOnly,
    DatabaseUnavailable,
    InvalidInput,
    StorageFull,
    StoreBusy,
)
from memfs.core.model import Actor, Change, utcnow
from memfs.core.visibility import Viewer
from memfs.home import fsync_directory
from memfs.store import backup, feed, semantic
from memfs.store._connections import ERASE_WAIT_S, Database
from memfs.store._db import SQLITE_BUSY_TIMEOUT_MS
from memfs.store._facade import Parts
from memfs.store.caller import Caller
from memfs.store.schema import ERASED_FROM

if TYPE_CHECKING:
    import numpy as np

    from memfs.store import records as record_index
    from memfs.store.embedder import Embedder
    from memfs.store.embeddings import IndexLag
    from memfs.store.indexer import Indexer
    from memfs.store.notify import ChangeCallback

__all__ = ["ERASE_WAIT_S", "Engine"]

_SQLITE_FULL = 13  # sqlite3.h: SQLITE_FULL, "insertion failed because database is full"


class Engine(Caller):
    """A handle on one store database.

    Args:
        url: a SQLAlchemy URL (see :func:`memfs.core.config.database_url`); SQLite files and
            their directory are created on first use, schema included.
        memory_limit: live memories allowed per store (SPEC §1 limits); None reads
            ``$MEMFS_MEMORY_LIMIT``, else 10,000.
        synchronous_full: SQLite only. True (``PRAGMA synchronous=FULL``) fsyncs the WAL
            at every commit, so a committed version survives power loss too. False
            (``NORMAL``, the WAL's usual setting) makes a commit durable against any
            process crash — the WAL is written before commit returns — and fsyncs at
            checkpoints; a power loss may roll back the newest commits, never corrupt.
            None reads ``$MEMFS_SQLITE_SYNC`` (``full`` or ``normal``), else ``normal``.
        busy_timeout_s: how long a call waits for a lock another writer holds (another
            thread, process or server) before it raises StoreBusy, changing nothing.
        create: SQLite: make the file (and its directory) when it does not exist; False
            raises DatabaseNotFound instead (commands that only read or check).
        read_only: open for reading only: nothing is ever written (no journal-mode
            switch, no checkpoint; writes raise DatabaseReadOnly). None: read-only
            exactly when the SQLite file exists and this process may not write it.
        clock: the time of record reads (``last_accessed``) and of decay scores (SPEC
            §6); a fake clock in tests. Writes keep their own timestamps.

    Raises:
        DatabaseNotFound: a missing SQLite file with ``create=False`` (or ``read_only``).
        ForeignDatabase: the database holds another application's tables; untouched.
        DatabaseReadOnly: ``read_only`` and the schema needs an upgrade.
        DatabaseUnavailable: the database can't be opened (the reason is named).
        StoreBusy: another process held the database past the busy timeout.

    Every call may raise StoreBusy (contention gives a typed outcome, never a hang).

    The engine's own facades (``engine.memories``, ``engine.stores``, …) are those of the
    unrestricted caller without actor; :meth:`for_caller` binds others.
    """

    def __init__(
        self,
        url: str,
        *,
        memory_limit: int | None = None,
        synchronous_full: bool | None = None,
        busy_timeout_s: float = SQLITE_BUSY_TIMEOUT_MS / 1000,
        create: bool = True,
        read_only: bool | None = None,
        clock: Callable[[], datetime] = utcnow,
    ) -> None:
        self.url = url
        self.memory_limit = config.memory_limit() if memory_limit is None else memory_limit
        if synchronous_full is None:
            synchronous_full = config.sqlite_synchronous_full()
        self._db = Database(
            url,
            synchronous_full=synchronous_full,
            busy_timeout_s=busy_timeout_s,
            create=create,
            read_only=read_only,
        )
        self._sa = self._db.sa
        self.dialect = self._db.dialect
        self.read_only = self._db.read_only
        self.clock = clock
        # Made at the first record read (the record index's module is imported then).
        self._access_log: record_index.AccessLog | None = None
        self._access_log_lock = threading.Lock()
        self._embedder: Embedder | None = None
        self._indexer: Indexer | None = None
        self._indexer_unsubscribe: Callable[[], None] | None = None
        self._parts = Parts(
            db=self._db,
            memory_limit=self.memory_limit,
            clock=clock,
            read_only=self.read_only,
            vectors=semantic.VectorCache(),
            note_access=self._note_access,
            flush_access=self._flush_access,
        )
        super().__init__(self._parts, actor=None, viewer=None)

    def for_caller(self, *, actor: Actor | None = None, viewer: Viewer | None = None) -> Caller:
        """The facades of one caller: its writes name ``actor`` (a session, an API key, a
        service account; None: unattributed), and what is hidden from ``viewer`` (SPEC §6;
        None: unrestricted) is absent from what its calls see and refused to its writes.
        Cheap: bind one per request or per mount."""
        return Caller(self._parts, actor=actor, viewer=viewer)

    def close(self) -> None:
        """Stops the indexer and the embedder, then releases every pooled connection
        (checkpointing the SQLite WAL, waiting at most :data:`ERASE_WAIT_S` for
        readers), after writing the pending record reads, and ends every
        :meth:`watch_changes`."""
        if self._indexer_unsubscribe is not None:
            self._indexer_unsubscribe()
            self._indexer_unsubscribe = None
        if self._indexer is not None:
            self._indexer.stop()
            self._indexer = None
        if self._embedder is not None:
            self._embedder.stop()
            self._embedder = None
        if self._access_log is not None:
            self._access_log.close()
        self._db.close()

    def __enter__(self) -> Engine:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def watch_changes(self, callback: ChangeCallback) -> Callable[[], None]:
        """Calls ``callback(store_ids)`` — the ids of stores whose change feed grew, or
        None when any may have — whenever a commit of any process grows a change feed of
        this database, from a thread of the engine's (so ``callback`` must be quick and
        thread-safe, e.g. hand over to an event loop). Committed after this returns
        means told: read the feed afterwards and nothing is missed. What it costs when
        nothing changes: one cheap check per database every few seconds, however many
        stores and subscribers (:mod:`memfs.store.notify`). Blocking the first time
        (opens the watch).

        Returns:
            The function that ends this subscription.
        """
        return self._db.watch.subscribe(callback)

    def observe_writes(self, observer: Callable[[bool, float], None] | None) -> None:
        """Calls ``observer(committed, duration_s)`` after every write transaction of
        this engine, on the writing thread: whether it committed, and how long it held
        this process's turn to write (waiting for the database lock included), in
        seconds. ``observer`` must be quick and must not raise (``memfs serve`` and the
        mount daemons count them in :mod:`memfs.metrics`). None: nobody is told."""
        self._db.write_observer = observer

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
        return self._db.erasure_pending()

    @property
    def inline_capable(self) -> bool:
        """Whether :meth:`inline` can run writes: the database is a writable SQLite file
        (PostgreSQL writes are network round trips, always on a worker thread)."""
        return self._db.inline_capable

    def inline(self) -> contextlib.AbstractContextManager[None]:
        """A block in which the calling thread's engine calls never wait: a write that
        would wait for another writer (of this process or another) raises
        :class:`memfs.store.WouldWait` at once having changed nothing, and its commit
        leaves SQLite's checkpoint to a thread of the engine's. For a trio loop that runs a bounded
        write itself rather than hand it to a worker thread (the embedded backend's
        writes of one memory, SPEC §4); see
        :meth:`memfs.store._connections.Database.inline`.

        Raises:
            WouldWait: as said; at once when not :attr:`inline_capable`.
        """
        return self._db.inline()

    def feed_probe(self) -> feed.FeedProbe | None:
        """A :class:`memfs.store.feed.FeedProbe` of this database: the newest change seq
        of a store read on the calling thread without waiting (a mount's open checks it
        between polls). SQLite files only; None for PostgreSQL and in-memory databases
        (use ``engine.feed.last_seq``). The caller closes it."""
        path = self._db.sqlite_file
        if path is None or not path.exists():
            return None
        return feed.FeedProbe(path)

    def feed_receipt(self) -> list[Change]:
        """The change-feed entries the calling thread's last write appended, as
        committed, oldest first (empty when it appended none or failed): a writer that
        follows the feed knows its own entries without reading them back."""
        return self._db.receipt()

    def start_indexer(self) -> bool:
        """Starts the full-text indexer thread when the database is writable (a mount's
        daemon, ``memfs serve``): woken by the change watch after commits of any
        process, it indexes the queued memories once the writes pause
        (:mod:`memfs.store.indexer`); :meth:`close` stops it. Searches do not depend on
        it (they catch up first); it keeps the index close behind the heads. Blocking
        (opens the change watch). Returns whether it runs."""
        if self.read_only or self._indexer is not None:
            return self._indexer is not None
        from memfs.store.indexer import Indexer

        self._indexer = Indexer(self._db.read, self._db.write)
        self._indexer_unsubscribe = self.watch_changes(self._indexer.wake)
        self._indexer.start()
        return True

    def start_embedder(self) -> bool:
        """Starts the embedder thread when a model is configured and the database is
        writable (a mount's daemon, ``memfs serve``); :meth:`close` stops it. Returns
        whether it runs.

        Raises:
            SearchUnavailable: ``$MEMFS_SEARCH_MODEL_DIR`` names no usable model.
        """
        from memfs.store import embeddings, search
        from memfs.store.embedder import Embedder

        model = embeddings.configured_model()
        if model is None or self.read_only or self._embedder is not None:
            return self._embedder is not None
        read, write = self._db.read, self._db.write
        self._embedder = Embedder(
            read, write, model, catch_up=lambda: search.catch_up(read, write, wait=False)
        )
        self._embedder.start()
        return True

    def embed(self, texts: Sequence[str]) -> np.ndarray | None:
        """``texts`` as unit vectors of the local embedding model (SPEC §7), a float32
        array ``(len(texts), dimensions)`` whose dot products are cosine similarities;
        None when no model is configured.

        Raises:
            SearchUnavailable: ``$MEMFS_SEARCH_MODEL_DIR`` names no usable model.
        """
        from memfs.store import embeddings

        model = embeddings.configured_model()
        return None if model is None else model.embed(list(texts))

    def embedder_lag(self) -> IndexLag | None:
        """The lag this engine's embedder last saw (no I/O: safe on an event loop);
        None when no embedder runs or before its first poll."""
        return None if self._embedder is None else self._embedder.lag

    def _note_access(self, memory_ids: Sequence[str]) -> None:
        if not self.read_only:  # a read-only engine records no reads
            self._records_access_log().note(memory_ids)

    def _records_access_log(self) -> record_index.AccessLog:
        with self._access_log_lock:
            if self._access_log is None:
                from memfs.store import records as record_index

                self._access_log = record_index.AccessLog(
                    self._write_access_times, clock=self.clock
                )
            return self._access_log

    def _flush_access(self) -> None:
        if self._access_log is not None:
            self._access_log.flush()

    def _write_access_times(self, accessed: dict[str, str]) -> None:
        from memfs.store import records as record_index

        with self._db.write() as conn:
            record_index.touch(conn, accessed)

    def statistics(self) -> dict[str, int]:
        """Row counts: ``stores``, ``memories`` (live), ``versions``, ``blobs``."""
        from memfs.store import stores

        with self._db.read() as conn:
            return stores.statistics(conn)

    def gauges(self) -> tuple[dict[str, int], int, int, dict[str, int]]:
        """What ``memfs serve`` exposes about the database as Prometheus gauges, read in
        one call (a scrape's worker thread): the newest change-feed seq of every store
        (by store id), the database's size on disk in bytes (SQLite: the file and its
        WAL; PostgreSQL: ``pg_database_size``), how many live memories wait for their
        semantic-search vector (0 when no embedding model is configured: nothing is
        embedded, so nothing waits), and how many dreams are in each status (SPEC §11)."""
        from memfs.store import dreams, stores

        with self._db.read() as conn:
            seqs = stores.feed_seqs(conn)
            by_status = dreams.count_by_status(conn)
            if self.dialect == "postgresql":
                size_bytes = int(
                    conn.exec_driver_sql("SELECT pg_database_size(current_database())")
                    .scalar_one()
                )
        if self.dialect != "postgresql":
            size_bytes = 0
            path = self._db.sqlite_file
            for file in () if path is None else (path, path.with_name(path.name + "-wal")):
                with contextlib.suppress(FileNotFoundError):  # no WAL (yet)
                    size_bytes += file.stat().st_size
        lag = self.search.index_lag()
        return seqs, size_bytes, 0 if lag.model is None else lag.pending, by_status

    def vacuum_erased(self) -> list[str]:
        """Takes the bytes of past erasures (redactions, hard deletes, store deletions,
        version prunes) out of the database files (SPEC §2: erased, not hidden).

        PostgreSQL keeps a deleted or updated row's old version in the table's and its
        indexes' files until VACUUM FULL rewrites them: this runs it on every table of
        :data:`memfs.store.schema.ERASED_FROM` (an exclusive lock on each while it is
        rewritten, so writers wait; seconds on a large store). Its WAL keeps them until
        the segments are recycled, which no command of memfs's can force. SQLite erases
        at once (``secure_delete``); this completes a pending checkpoint there.

        Returns:
            The tables rewritten (PostgreSQL), or the empty list (SQLite).

        Raises:
            StoreBusy: SQLite: a reader of an older snapshot kept the erasure pending.
            DatabaseReadOnly: a database opened read-only.
        """
        if self.read_only:
            raise DatabaseReadOnly("vacuum needs a database opened for writing")
        if self.dialect != "postgresql":
            if not self._db.checkpoint(erasing=False):
                raise StoreBusy(
                    "a reader of an older snapshot held the database: the erasure is still "
                    "pending (memfs status, memfs fsck say since when); try again"
                )
            return []
        tables = [table.name for table in ERASED_FROM]
        self._db.vacuum_full(tables)
        return tables

    def backup_to(self, destination: Path, *, replace: bool = False) -> dict[str, int]:
        """Writes a consistent, verified, private copy of this SQLite database to
        ``destination`` while other connections and processes keep writing
        (:mod:`memfs.store.backup`: ``VACUUM INTO``, so no free page holds erased bytes).

        The copy is written to a temporary name beside ``destination``, checked as
        ``memfs fsck`` checks (``integrity_check`` and every invariant), then renamed
        into place (``0600``; the directory fsynced): ``destination`` is a whole,
        checked database or untouched.

        Args:
            destination: the backup file (its directory must exist).
            replace: replace an existing ``destination``; False refuses it.

        Returns:
            The copy's row counts (:meth:`statistics`) and ``size_bytes``.

        Raises:
            InvalidInput: PostgreSQL or an in-memory database (use ``pg_dump``).
            Conflict: ``destination`` exists and ``replace`` is False.
            CorruptedStore: the copy failed its check (the findings are named; it was
                removed).
            StorageFull: no room for the copy. OSError: the directory can't be written.
        """
        source = self._db.sqlite_file
        if source is None:
            raise InvalidInput(
                "memfs backup copies an embedded SQLite database; back up PostgreSQL with "
                "pg_dump (README: Backup and restore)"
            )
        if destination.exists() and not replace:
            raise Conflict(f"{destination} exists; give --force to replace it")
        temporary = destination.with_name(f".{destination.name}.backup-{os.getpid()}.tmp")
        temporary.unlink(missing_ok=True)  # left by a crash of a process with our pid
        try:
            raw = self._db.sa.raw_connection()
            try:
                backup.vacuum_into(raw.driver_connection, temporary)  # type: ignore[arg-type]
            except sqlite3.OperationalError as exc:
                if exc.sqlite_errorcode & 0xFF == _SQLITE_FULL:
                    raise StorageFull(
                        f"disk full: no room for the backup under {destination.parent}",
                        path=str(destination.parent),
                    ) from exc
                raise DatabaseUnavailable(f"the backup could not be written: {exc}") from exc
            finally:
                raw.close()
            with Engine(f"sqlite:///{temporary}", create=False, read_only=True) as copy:
                findings = list(copy.iter_fsck_findings(sqlite_check="integrity"))
                counts = copy.statistics()
            if findings:
                raise CorruptedStore(
                    "the backup failed its check, so it was not kept: " + "; ".join(findings)
                )
            counts["size_bytes"] = temporary.stat().st_size
            if replace:
                os.replace(temporary, destination)
            else:
                os.link(temporary, destination)  # refuses a destination made meanwhile
            fsync_directory(destination.parent)
        except FileExistsError as exc:
            raise Conflict(f"{destination} exists; give --force to replace it") from exc
        finally:
            temporary.unlink(missing_ok=True)
        return counts

    def iter_fsck_findings(self, *, sqlite_check: str | None = None) -> Iterator[str]:
        """One line per broken invariant, from one consistent snapshot (memfs/store/fsck.py).

        Args:
            sqlite_check: also run SQLite's page-level check first: ``"integrity"``
                (``PRAGMA integrity_check``) or ``"quick"`` (``quick_check``); ignored on
                PostgreSQL. None: the memfs invariants only.

        Raises:
            InvalidInput: an unknown ``sqlite_check``.
        """
        from memfs.store import fsck as _fsck

        findings: list[str] = []
        try:
            with self._db.read() as conn:
                if sqlite_check is not None and self.dialect == "sqlite":
                    findings.extend(_fsck.sqlite_findings(conn, sqlite_check))
                findings.extend(_fsck.run_checks(conn))
        except DBAPIError as exc:  # a damaged file: what was found stands, and this too
            findings.append(f"database: reading it failed: {exc.orig}")
        yield from findings
