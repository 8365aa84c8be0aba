"""The embedder: drains semantic search's durable queue off the write path (SPEC §7).

One worker thread per :class:`memfs.store.Engine` that asked for it
(:meth:`Engine.start_embedder`: a mount's daemon, ``memfs serve``). It polls the queue
every :data:`POLL_INTERVAL_S`, embeds up to :data:`BATCH` queued memories outside any
transaction and stores their vectors in one short write transaction; the lag goal is
under 2 s. Several embedders on one database (two daemons, a server) are safe: a vector
is stored only by the one that removes the queue row still naming the content it
embedded (memfs/store/semantic.py).

A failure (the database busy, a model file replaced by a broken one) is logged and
retried at the next poll; the queue keeps every row, so nothing is lost.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager

from sqlalchemy import Connection

from memfs.store import semantic
from memfs.store.embeddings import EmbeddingModel, IndexLag

__all__ = ["BATCH", "POLL_INTERVAL_S", "Embedder", "embed_batch"]

log = logging.getLogger(__name__)

POLL_INTERVAL_S = 0.2
BATCH = 256

Transaction = Callable[[], AbstractContextManager[Connection]]


def embed_batch(read: Transaction, write: Transaction, model: EmbeddingModel) -> tuple[int, int]:
    """Embeds the oldest :data:`BATCH` queued memories. Returns ``(stored, taken)``;
    ``taken`` 0 means the queue was empty."""
    with read() as conn:
        batch = semantic.pending(conn, BATCH)
    if not batch:
        return 0, 0
    vectors = model.embed([item.body for item in batch])
    embedded = [(item, vectors[i].astype("<f4").tobytes()) for i, item in enumerate(batch)]
    with write() as conn:
        stored = semantic.store_vectors(conn, model.fingerprint, embedded)
    return stored, len(batch)


def drain(
    read: Transaction, write: Transaction, model: EmbeddingModel
) -> Iterator[tuple[int, int]]:
    """Embeds until the queue is empty, yielding ``(stored, taken)`` per batch. Stops
    when a batch stores nothing (another embedder is taking the same rows)."""
    with write() as conn:
        semantic.drop_orphans(conn)
        semantic.requeue_other_models(conn, model.fingerprint)
    while True:
        stored, taken = embed_batch(read, write, model)
        if taken == 0:
            return
        yield stored, taken
        if stored == 0:
            return


class Embedder:
    """The worker thread; :meth:`stop` ends it (at most one batch later). ``catch_up``
    brings the full-text documents it embeds to their heads before each poll
    (:func:`memfs.store.search.catch_up`: a memory is embedded from its document).

    Attributes:
        lag: the queue as this thread last saw it after a poll (read without I/O by a
            mount's status, on the trio loop); None before the first poll.
    """

    def __init__(
        self,
        read: Transaction,
        write: Transaction,
        model: EmbeddingModel,
        catch_up: Callable[[], object] = lambda: None,
    ) -> None:
        self._read, self._write, self._model = read, write, model
        self._catch_up = catch_up
        self.lag: IndexLag | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="memfs-embedder", daemon=True)

    def start(self) -> None:
        """Starts polling."""
        self._thread.start()

    def _run(self) -> None:
        first = True
        while first or not self._stop.wait(POLL_INTERVAL_S):
            first = False
            try:
                self._catch_up()  # the full-text documents it embeds
                for _ in drain(self._read, self._write, self._model):
                    if self._stop.is_set():
                        return
                with self._read() as conn:
                    self.lag = semantic.lag(conn, self._model.fingerprint)
            except Exception:  # logged and retried: the queue still holds the rows
                log.exception("embedding queued memories failed; retrying")

    def stop(self) -> None:
        """Stops the thread and waits for it."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()
