"""The long-poll wake-ups of the change feed (memfs/api/changes.py), without HTTP: a
fake ``last_change_seq`` stands for the database, so that who reads it, when and how
often is visible."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
import trio
import trio.testing
from _support.polling import wait_until_async

from memfs.api.changes import ChangeNotifier, run_until_disconnected
from memfs.core.errors import NotFound

STORE = "memstore_test"
DEADLINE_S = 5.0


class FakeFeed:
    """``last_change_seq`` of one store, counting reads and how many overlap."""

    def __init__(self, seq: int = 0, *, delay_s: float = 0.0) -> None:
        self.seq = seq
        self.delay_s = delay_s
        self.gone = False
        self.reads = 0
        self.max_in_flight = 0
        self._in_flight = 0
        self._lock = threading.Lock()

    def last_change_seq(self, store_id: str) -> int:
        with self._lock:
            self.reads += 1
            self._in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self._in_flight)
        try:
            # A slow read in a worker thread, like a database round trip: the behaviour
            # under test (two reads of one store never overlap, max_in_flight).
            time.sleep(self.delay_s)
            if self.gone:
                raise NotFound(f"memory store {store_id!r} not found")
            return self.seq
        finally:
            with self._lock:
                self._in_flight -= 1


async def parked(notifier: ChangeNotifier, count: int) -> None:
    """Returns once ``count`` requests are parked on STORE and everything is idle."""
    with trio.fail_after(DEADLINE_S):
        await wait_until_async(lambda: notifier.waiting(STORE) == count, f"{count} parked")
        await trio.testing.wait_all_tasks_blocked(cushion=0.01)


async def test_notify_wakes_a_parked_wait_before_the_next_poll() -> None:
    feed = FakeFeed(seq=3)
    # One poll per minute: only notify() can end this wait in time.
    notifier = ChangeNotifier(feed.last_change_seq, poll_interval_s=60)
    done = trio.Event()

    async def wait() -> None:
        await notifier.wait(STORE, 3, timeout_s=30)
        done.set()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(wait)
        await parked(notifier, 1)
        reads = feed.reads
        notifier.notify("memstore_other")  # another store: nothing happens
        await trio.testing.wait_all_tasks_blocked(cushion=0.01)
        assert not done.is_set()
        assert feed.reads == reads
        notifier.notify(STORE)  # woken, but the seq did not move: parks again
        await trio.testing.wait_all_tasks_blocked(cushion=0.01)
        assert not done.is_set()
        assert feed.reads == reads + 1
        feed.seq = 4
        notifier.notify(STORE)
        with trio.fail_after(DEADLINE_S):
            await done.wait()
    assert notifier.waiting(STORE) == 0


async def test_a_write_made_elsewhere_is_found_by_the_poll() -> None:
    feed = FakeFeed(seq=7)
    notifier = ChangeNotifier(feed.last_change_seq, poll_interval_s=0.05)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(notifier.wait, STORE, 7, 30)
        await parked(notifier, 1)
        feed.seq = 8  # no notify(): another server wrote it
        await wait_until_async(lambda: not notifier.waiting(STORE), "the poll", timeout_s=1.0)


async def test_waiters_share_one_poller_and_all_see_the_change() -> None:
    feed = FakeFeed(seq=10, delay_s=0.005)
    notifier = ChangeNotifier(feed.last_change_seq, poll_interval_s=0.02)
    returned: list[int] = []

    async def wait(after: int) -> None:
        await notifier.wait(STORE, after, timeout_s=30)
        returned.append(after)

    async with trio.open_nursery() as nursery:
        for after in (10, 10, 10, 11, 11):
            nursery.start_soon(wait, after)
        await parked(notifier, 5)
        reads, start = feed.reads, trio.current_time()
        # Let it poll a while.
        await wait_until_async(lambda: feed.reads >= reads + 10, "10 polls", DEADLINE_S)
        # One poller, not five: at most one read per interval (fewer on a busy machine).
        assert feed.reads - reads <= (trio.current_time() - start) / 0.02 + 2
        assert returned == []
        feed.seq = 11  # wakes the three that saw 10, not the two that saw 11
        await wait_until_async(lambda: len(returned) >= 3, "3 waits returned", DEADLINE_S)
        assert returned == [10, 10, 10]
        assert notifier.waiting(STORE) == 2
        feed.seq = 12
        await wait_until_async(lambda: len(returned) >= 5, "5 waits returned", DEADLINE_S)
    assert feed.max_in_flight == 1  # never two reads of one store at once


async def test_another_waiter_takes_the_polling_over_when_the_poller_leaves() -> None:
    feed = FakeFeed(seq=1)
    notifier = ChangeNotifier(feed.last_change_seq, poll_interval_s=0.02)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(notifier.wait, STORE, 1, 0.1)  # parks first: the poller
        await parked(notifier, 1)
        nursery.start_soon(notifier.wait, STORE, 1, 30)
        # The first left; the second keeps polling.
        await wait_until_async(
            lambda: notifier.waiting(STORE) == 1 and feed.reads >= 20,
            "the second waiter polling alone",
            DEADLINE_S,
        )
        feed.seq = 2
        await wait_until_async(lambda: not notifier.waiting(STORE), "the poll", timeout_s=1.0)


async def test_a_deleted_store_ends_every_wait() -> None:
    feed = FakeFeed(seq=5)
    notifier = ChangeNotifier(feed.last_change_seq, poll_interval_s=60)
    async with trio.open_nursery() as nursery:
        for _ in range(3):
            nursery.start_soon(notifier.wait, STORE, 5, 30)
        await parked(notifier, 3)
        feed.gone = True
        notifier.notify(STORE)
        await wait_until_async(lambda: not notifier.waiting(STORE), "every wait ended", DEADLINE_S)


async def test_timeouts_and_cancellation_leave_nothing_behind() -> None:
    feed = FakeFeed(seq=0)
    notifier = ChangeNotifier(feed.last_change_seq, poll_interval_s=0.02)
    start = trio.current_time()
    await notifier.wait(STORE, 0, timeout_s=0.2)
    assert trio.current_time() - start >= 0.2
    async with trio.open_nursery() as nursery:
        for _ in range(4):
            nursery.start_soon(notifier.wait, STORE, 0, 30)
        await parked(notifier, 4)
        nursery.cancel_scope.cancel()
    assert notifier.waiting(STORE) == 0
    assert notifier._watches == {}


@pytest.mark.parametrize("disconnect", [True, False])
async def test_run_until_disconnected(disconnect: bool) -> None:
    send, receive = trio.open_memory_channel[dict[str, Any]](10)
    await send.send({"type": "http.request", "body": b"", "more_body": False})
    finished_waiting = trio.Event()
    cancelled = False

    async def wait() -> None:
        nonlocal cancelled
        try:
            if disconnect:
                await trio.sleep_forever()
            await trio.lowlevel.checkpoint()  # a wait that ends on its own
            finished_waiting.set()
        except trio.Cancelled:
            cancelled = True
            raise

    async def client_goes_away() -> None:
        await trio.testing.wait_all_tasks_blocked(cushion=0.01)
        await send.send({"type": "http.disconnect"})

    with trio.fail_after(DEADLINE_S):
        async with trio.open_nursery() as nursery:
            if disconnect:
                nursery.start_soon(client_goes_away)
            finished = await run_until_disconnected(receive.receive, wait)
    assert finished is not disconnect
    assert cancelled is disconnect
    assert finished_waiting.is_set() is not disconnect


async def test_close_ends_every_wait_now_and_later() -> None:
    feed = FakeFeed(seq=1)
    notifier = ChangeNotifier(feed.last_change_seq, poll_interval_s=60)
    async with trio.open_nursery() as nursery:
        for store in (STORE, STORE, "memstore_other"):
            nursery.start_soon(notifier.wait, store, 1, 30)
        await parked(notifier, 2)
        notifier.close()
        await wait_until_async(
            lambda: not notifier.waiting(STORE) and not notifier.waiting("memstore_other"),
            "every wait ended",
            DEADLINE_S,
        )
    with trio.fail_after(DEADLINE_S / 2):
        await notifier.wait(STORE, 1, timeout_s=30)
