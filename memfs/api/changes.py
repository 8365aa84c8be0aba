"""The change feed over HTTP (SPEC §4 remote mounts): the wake-ups of long polls. The
wire form of a change is :func:`memfs.wire.change_to_wire`.

``GET /v1/memory_stores/{id}/changes?after=SEQ&timeout_s=N`` answers at once when the
store has changes after ``SEQ``; otherwise it parks in :meth:`ChangeNotifier.wait` for
up to ``N`` seconds. A parked request learns of a new change in one of two ways:

* **Writes through this server** wake it at once: every request that may have written
  to a store calls :meth:`ChangeNotifier.notify` when it ends (``routes._run``).
* **Writes made elsewhere** (another ``memfs serve`` on the same PostgreSQL database,
  the CLI or an embedded mount on the same SQLite file) arrive as notifications of the
  engine's change watch (:meth:`memfs.store.Engine.watch_changes`: PostgreSQL
  ``LISTEN/NOTIFY``, an inotify watch of the SQLite file), which wake the parked
  requests of the stores named (SPEC §4 "an idle mount costs (close to) nothing":
  nothing is read while nothing changes). Without a watch the store's
  ``last_change_seq`` is read every :data:`POLL_INTERVAL_S` instead; with one, every
  :data:`WATCHED_POLL_INTERVAL_S` as a backstop. The read is shared: of all the requests
  parked on one store, one at a time (the *poller*) reads the seq, and wakes the others
  when it moved; when the poller leaves (its change came, its time ran out, its client
  went away) it wakes the others and one of them takes over. So a store costs one cheap
  query per wake-up, however many mounts watch it.

There is no background task: the work happens inside the parked requests, so a request
that ends, or is cancelled because its client disconnected
(:func:`run_until_disconnected`), leaves nothing behind (the watch subscription, made
by the first wait, lasts until :meth:`ChangeNotifier.close`).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import anyio.to_thread
import sniffio

from memfs.core.errors import NotFound

__all__ = [
    "MAX_CHANGES_LIMIT",
    "MAX_LONG_POLL_TIMEOUT_S",
    "POLL_INTERVAL_S",
    "WATCHED_POLL_INTERVAL_S",
    "ChangeNotifier",
    "run_until_disconnected",
]

log = logging.getLogger(__name__)

# Wire limits of GET …/changes (memfs.remote.client docstring).
MAX_LONG_POLL_TIMEOUT_S = 30.0
MAX_CHANGES_LIMIT = 1000
# How often a parked store is polled for writes this server did not make, without a
# change watch. SPEC §4: a change made elsewhere appears in a mount "within about one
# second".
POLL_INTERVAL_S = 0.25
# The same with a change watch, whose notifications wake parked requests at once: a
# backstop only (SPEC §4: an idle mount costs (close to) nothing).
WATCHED_POLL_INTERVAL_S = 10.0

# Engine.watch_changes: subscribes a callback (called from another thread with the
# store ids that changed, or None for any) and returns the function that unsubscribes.
Watch = Callable[[Callable[[frozenset[str] | None], None]], Callable[[], None]]


class _StoreWatch:
    """What the requests parked on one store share."""

    def __init__(self) -> None:
        self.waiters = 0
        self.polling = False
        # Bumped by notify(): a seq read that started before it may be stale.
        self.generation = 0
        # The newest seq the poller read; None before the first read.
        self.seq: int | None = None
        # The store was gone (NotFound) or could not be read: every waiter stops.
        self.ended = False
        self._event = anyio.Event()

    def beyond(self, after: int) -> bool:
        return self.ended or (self.seq is not None and self.seq > after)

    def wake(self) -> None:
        """Wakes every request in :meth:`next_wake`."""
        self._event.set()
        self._event = anyio.Event()

    async def next_wake(self, timeout_s: float = float("inf")) -> None:
        """Returns at the next :meth:`wake`, or after ``timeout_s``."""
        event = self._event  # taken before any checkpoint: no wake-up is lost
        with anyio.move_on_after(timeout_s):
            await event.wait()


class ChangeNotifier:
    """Parks long polls until their store's change feed moves (module docstring).

    One per application; use it from the event loop only.

    Args:
        read_last_seq: ``engine.feed.last_seq`` (blocking; run in a worker thread).
            Raises NotFound once the store is deleted.
        watch: ``Engine.watch_changes`` (blocking; run in a worker thread by the first
            wait), or None to poll.
        poll_interval_s: seconds between two reads of a parked store's seq; default
            :data:`WATCHED_POLL_INTERVAL_S` with a watch, else :data:`POLL_INTERVAL_S`.
    """

    def __init__(
        self,
        read_last_seq: Callable[[str], int],
        *,
        watch: Watch | None = None,
        poll_interval_s: float | None = None,
    ) -> None:
        self._read_last_seq = read_last_seq
        self._watch = watch
        if poll_interval_s is None:
            poll_interval_s = POLL_INTERVAL_S if watch is None else WATCHED_POLL_INTERVAL_S
        self._poll_interval_s = poll_interval_s
        self._watches: dict[str, _StoreWatch] = {}
        self._closed = False
        self._subscribed: anyio.Event | None = None
        self._unsubscribe: Callable[[], None] | None = None

    def close(self) -> None:
        """Ends every wait now and every later one at once (the server is shutting down:
        parked long polls answer instead of holding the graceful shutdown up), and the
        watch subscription."""
        self._closed = True
        if self._unsubscribe is not None:
            self._unsubscribe()
        for watch in self._watches.values():
            watch.ended = True
            watch.wake()

    def _notified(self, store_ids: frozenset[str] | None) -> None:
        """On the loop: the watch says ``store_ids`` changed (None: any may have)."""
        for store_id in list(self._watches) if store_ids is None else store_ids:
            self.notify(store_id)

    async def _subscribe(self) -> None:
        """Subscribes to the watch once (the first wait; the others wait for it, so no
        wait reads the seq before notifications reach it)."""
        if self._watch is None or self._closed:
            return
        if self._subscribed is not None:
            await self._subscribed.wait()
            return
        self._subscribed = anyio.Event()
        try:
            self._unsubscribe = await anyio.to_thread.run_sync(
                self._watch, _on_loop(self._notified)
            )
            if self._closed:
                self._unsubscribe()
        except Exception as exc:  # no notifications: poll as without a watch
            log.warning("no change notifications (parked long polls poll instead): %s", exc)
            self._poll_interval_s = min(self._poll_interval_s, POLL_INTERVAL_S)
        finally:
            self._subscribed.set()

    def notify(self, store_id: str) -> None:
        """Tells requests parked on ``store_id`` that it may have changed (this server
        wrote to it): the poller reads its seq now instead of at the next interval."""
        watch = self._watches.get(store_id)
        if watch is not None:
            watch.generation += 1
            watch.wake()

    def waiting(self, store_id: str) -> int:
        """How many requests are parked on ``store_id`` now."""
        watch = self._watches.get(store_id)
        return 0 if watch is None else watch.waiters

    async def wait(self, store_id: str, after: int, timeout_s: float) -> None:
        """Returns once the store's newest seq is beyond ``after``, once the store is
        gone, after ``timeout_s`` seconds, or at :meth:`close`, whichever comes first.
        The caller then reads the feed again: this only says *when*.

        Never raises for a store that disappears or can't be read (that ends the wait;
        the caller's next read reports it). Cancellation is safe at any point.
        """
        await self._subscribe()
        if self._closed:  # before it, or while it subscribed
            return
        watch = self._watches.get(store_id)
        if watch is None:
            watch = self._watches[store_id] = _StoreWatch()
        watch.waiters += 1
        try:
            with anyio.move_on_after(timeout_s):
                await self._wait(watch, store_id, after)
        finally:
            watch.waiters -= 1
            if watch.waiters == 0:
                del self._watches[store_id]

    async def _wait(self, watch: _StoreWatch, store_id: str, after: int) -> None:
        while True:
            if watch.beyond(after):
                return
            if not watch.polling:
                break
            await watch.next_wake()  # the poller wakes us when the seq moves or it leaves
        watch.polling = True
        try:
            while True:
                generation = watch.generation
                seq = await self._read(store_id)
                if seq is None:
                    watch.ended = True
                if seq != watch.seq:
                    watch.seq = seq
                    watch.wake()
                if watch.beyond(after):
                    return
                if watch.generation == generation:
                    await watch.next_wake(self._poll_interval_s)
        finally:
            watch.polling = False
            watch.wake()  # another parked request takes the polling over

    async def _read(self, store_id: str) -> int | None:
        """The store's newest seq; None when it is gone or can't be read."""
        try:
            return await anyio.to_thread.run_sync(self._read_last_seq, store_id)
        except NotFound:
            return None
        except Exception as exc:  # the caller's next read raises it properly
            log.warning("long poll of memory store %s stopped: %s", store_id, exc)
            return None


def _on_loop(
    callback: Callable[[frozenset[str] | None], None],
) -> Callable[[frozenset[str] | None], None]:
    """``callback`` made callable from any thread: it runs soon on the current event
    loop (trio or asyncio); the caller never blocks, and once the loop has ended the
    call is dropped."""
    if sniffio.current_async_library() == "trio":
        import trio

        token = trio.lowlevel.current_trio_token()

        def on_trio(store_ids: frozenset[str] | None) -> None:
            with contextlib.suppress(trio.RunFinishedError):
                token.run_sync_soon(callback, store_ids)

        return on_trio
    import asyncio

    loop = asyncio.get_running_loop()

    def on_asyncio(store_ids: frozenset[str] | None) -> None:
        with contextlib.suppress(RuntimeError):  # the loop is closed
            loop.call_soon_threadsafe(callback, store_ids)

    return on_asyncio


async def run_until_disconnected(
    receive: Callable[[], Awaitable[Any]], wait: Callable[[], Awaitable[None]]
) -> bool:
    """Runs ``wait()`` until it returns or the HTTP client disconnects, whichever first.

    Args:
        receive: the request's ASGI ``receive`` (its body not read yet, e.g. a GET).
        wait: what to run, e.g. a :meth:`ChangeNotifier.wait`.

    Returns:
        True if ``wait()`` returned, False if the client went away first (``wait()`` was
        cancelled: a parked long poll does not outlive its connection).
    """
    finished = False

    async def watch(cancel_scope: anyio.CancelScope) -> None:
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                cancel_scope.cancel()
                return

    async with anyio.create_task_group() as group:
        group.start_soon(watch, group.cancel_scope)
        await wait()
        finished = True
        group.cancel_scope.cancel()
    return finished
