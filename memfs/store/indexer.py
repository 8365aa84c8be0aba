"""The indexer: drains the full-text index's durable queue off the write path (SPEC §7).

A write queues the memory it changed (one ``search_pending`` row in its transaction,
:func:`memfs.store.search.queue`); this thread brings the queued documents to their
heads in write transactions of its own (:func:`memfs.store.search.catch_up`). One per
:class:`memfs.store.Engine` that asked for it (:meth:`Engine.start_indexer`: a mount's
daemon, ``memfs serve``). It sleeps until the engine's change watch says a change feed
grew — a commit of this process or of any other on the database — and then waits for
the writes to pause (:data:`QUIET_S`, at most :data:`MAX_DELAY_S` after the first), so
a burst of closes is indexed in a few batches after it, not between its commits; when
the writes resume while it indexes, it stops after its batch and waits for the next
pause, until :data:`MAX_DELAY_S` after the first wake, when it drains the queue whole. An
idle database costs it nothing.

The queue is durable and a search indexes what it finds queued before it reads
(:meth:`memfs.store.search.Search.query`), so this thread only keeps the index close
behind the heads (the measured lag is in README "Performance"); nothing depends on it
for correctness. Several indexers on one database are safe (PostgreSQL: ``SKIP
LOCKED``; SQLite: one writer at a time). A failure is retried after :data:`RETRY_S`:
the database busy or its disk full (conditions its writers report) is noted at INFO,
anything else logged as an error.
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from collections.abc import Callable
from contextlib import AbstractContextManager

from sqlalchemy import Connection

from memfs.core.errors import DatabaseUnreachable, StorageFull, StoreBusy
from memfs.store.search import catch_up

__all__ = ["BATCH", "MAX_DELAY_S", "QUIET_S", "Indexer"]

log = logging.getLogger(__name__)

# The writes' pause the indexer waits for, and the longest it defers indexing under a
# stream of writes with no pause. Indexing in the middle of a burst takes the CPU, the
# GIL and the write lock from the closes it follows (cp -r of 1,000 notes through a
# mount took a quarter longer with 1 s here than with 10 s); a search indexes what is
# still queued itself, so a longer deferral delays nothing a reader can see.
QUIET_S = 0.1
MAX_DELAY_S = 5.0
# Memories per transaction: small, so a close waiting for the write lock waits at most
# one batch (about 20 ms of 4 KiB notes).
BATCH = 64
RETRY_S = 5.0

Transaction = Callable[[], AbstractContextManager[Connection]]


class Indexer:
    """The worker thread; :meth:`wake` after a commit, :meth:`stop` ends it (at most
    one batch later).

    Attributes:
        indexed: how many queued memories this thread has indexed (statistics).
    """

    def __init__(self, read: Transaction, write: Transaction) -> None:
        self._read, self._write = read, write
        self.indexed = 0
        self._last_wake = 0.0
        self._woken = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="memfs-indexer", daemon=True)

    def start(self) -> None:
        """Starts the thread; it indexes what is queued already, then waits for wakes."""
        self._woken.set()
        self._thread.start()

    def wake(self, _store_ids: object = None) -> None:
        """Tells the thread the queue may have grown (thread-safe, never blocks); the
        signature of a :meth:`memfs.store.Engine.watch_changes` callback. While the
        thread waits for the writes to pause, a wake only notes the time: the thread
        is not woken once per commit."""
        self._last_wake = time.monotonic()
        self._woken.set()

    def _settle(self, give_up: float) -> bool | None:
        """Waits until no wake came for :data:`QUIET_S`, at most until ``give_up``
        (monotonic s). True: the writes paused; False: they did not by ``give_up``;
        None: stopped meanwhile."""
        while True:
            now = time.monotonic()
            quiet_at = self._last_wake + QUIET_S
            if now >= quiet_at or now >= give_up:
                self._woken.clear()  # a wake after this is seen by the next round
                return None if self._stop.is_set() else now >= quiet_at
            if self._stop.wait(min(quiet_at, give_up) - now):
                return None

    def _woken_since(self, started: float) -> bool:
        """Whether a wake (a commit) came after ``started`` (monotonic s)."""
        return self._last_wake > started

    def _run(self) -> None:
        give_up: float | None = None  # when the deferral of the queued rows ends
        while True:
            self._woken.wait()
            if give_up is None:
                give_up = time.monotonic() + MAX_DELAY_S
            paused = self._settle(give_up)
            if paused is None:
                return
            started = time.monotonic()
            # After a pause, a write that comes during the indexing wins: the thread
            # stops after its batch and waits for the next pause (the deferral's end
            # stays where it was). Past that end it drains the queue whole.
            resumed = functools.partial(self._woken_since, started) if paused else None
            try:
                self.indexed += catch_up(
                    self._read, self._write, batch=BATCH, wait=False, yield_to=resumed
                )
                if resumed is not None and resumed():
                    self._woken.set()  # rows are left: wait for the next pause
                else:
                    give_up = None
                continue
            except (StoreBusy, StorageFull, DatabaseUnreachable) as exc:
                # Conditions of the database that its writers report (a full disk is the
                # mount's ENOSPC and status; a PostgreSQL restart is every caller's 503):
                # the queue keeps the rows, searches catch up. No traceback: nothing here
                # is a bug.
                log.info("indexing queued memories waits: %s", exc)
            except Exception:  # logged and retried: the queue still holds the rows
                log.exception("indexing queued memories failed; retrying")
            give_up = None
            if self._stop.wait(RETRY_S):
                return
            self._woken.set()

    def stop(self) -> None:
        """Stops the thread and waits for it."""
        self._stop.set()
        self._woken.set()
        if self._thread.is_alive():
            self._thread.join()
