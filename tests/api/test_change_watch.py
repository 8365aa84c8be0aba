"""Parked long polls of the change feed wake from the engine's change watch (SPEC §4: an
idle mount costs close to nothing; memfs/api/changes.py): a write made elsewhere —
another process, another server — reaches them at once on SQLite and on PostgreSQL, and
while nothing changes the server reads nothing (it used to read each watched store's seq
4 times a second).

Hypercorn runs in the test's trio loop; the remote mount's own client parks the polls.
"""

from __future__ import annotations

import functools
import sys
import threading
from collections import Counter
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import hypercorn.trio
import pytest
import trio
import trio.testing
from _support.polling import wait_until_async
from hypercorn.config import Config

from memfs.api import changes, create_app
from memfs.api.changes import ChangeNotifier
from memfs.core.model import Access, MemoryStore
from memfs.remote import MemfsClient
from memfs.store import Engine, ResourceSpec
from memfs.wire.changes import ChangePage

# SPEC §4: a change made elsewhere appears within about one second.
ARRIVAL_S = 1.0
DEADLINE_S = 10.0
STORES = 8
IDLE_S = 3.0


@dataclass
class Served:
    url: str
    app: Any

    @property
    def notifier(self) -> ChangeNotifier:
        notifier: ChangeNotifier = self.app.state.change_notifier
        return notifier


@pytest.fixture
def no_backstops(monkeypatch: pytest.MonkeyPatch) -> None:
    """Neither the notifier's backstop poll nor the watch's safety check comes in time:
    only a notification can wake a parked poll."""
    monkeypatch.setattr(changes, "WATCHED_POLL_INTERVAL_S", 3600.0)
    # By name: the store's modules are not imported outside tests/store (test_layers).
    monkeypatch.setattr("memfs.store.notify.SAFETY_POLL_S", 3600.0)
    monkeypatch.setattr("memfs.store.notify._PostgresSource.interval_s", 3600.0)


@pytest.fixture
async def served(engine: Engine, no_backstops: None) -> AsyncIterator[Served]:
    """``create_app(engine)`` on Hypercorn in this test's loop."""
    app = create_app(engine)
    config = Config()
    config.bind = ["127.0.0.1:0"]
    config.accesslog = None
    stop = trio.Event()
    async with trio.open_nursery() as nursery:
        asgi: Any = app
        serve = functools.partial(hypercorn.trio.serve, asgi, config)
        binds = await nursery.start(functools.partial(serve, shutdown_trigger=stop.wait))
        yield Served(binds[0], app)
        app.state.change_notifier.close()
        stop.set()


def _session(engine: Engine) -> tuple[list[MemoryStore], str]:
    stores = [engine.stores.create(f"s{i}") for i in range(STORES)]
    _, token = engine.sessions.create([ResourceSpec(s.id, Access.READ_WRITE) for s in stores])
    assert token is not None
    return stores, token


async def test_a_write_of_another_process_wakes_its_stores_parked_poll_at_once(
    engine: Engine, database: str, served: Served
) -> None:
    stores, token = _session(engine)
    target = stores[3]
    batches: dict[str, ChangePage] = {}

    async with MemfsClient(served.url, token) as client, trio.open_nursery() as nursery:

        async def poll(store: MemoryStore) -> None:
            batches[store.id] = await client.changes(store.id, after=0, timeout_s=30)

        for store in stores:
            nursery.start_soon(poll, store)
        await wait_until_async(
            lambda: all(served.notifier.waiting(s.id) == 1 for s in stores),
            "every poll parked", DEADLINE_S,
        )
        await trio.testing.wait_all_tasks_blocked(cushion=0.05)
        await trio.run_process(
            [sys.executable, "-m", "memfs.cli", "memory", "put", "s3", "/a.md", "--content",
             "a\n", "--database", database],
            capture_stdout=True, capture_stderr=True,
        )
        written_at = trio.current_time()
        await wait_until_async(lambda: target.id in batches, "the poll of s3 to answer",
                               DEADLINE_S, interval_s=0.005)
        arrived_s = trio.current_time() - written_at
        assert [c.path for c in batches[target.id].data] == ["/a.md"]
        assert arrived_s < ARRIVAL_S
        assert list(batches) == [target.id]  # the others stay parked
        nursery.cancel_scope.cancel()


class CountingSeq:
    """``engine.feed.last_seq``, counting the reads per store."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        self._lock = threading.Lock()
        self.reads: Counter[str] = Counter()

    def __call__(self, store_id: str) -> int:
        with self._lock:
            self.reads[store_id] += 1
        return self._engine.feed.last_seq(store_id)


async def test_parked_polls_read_nothing_while_nothing_changes(engine: Engine) -> None:
    """Eight stores parked for IDLE_S: one read of each seq when its poll parks, none
    after (with POLL_INTERVAL_S polling, 12 each)."""
    stores = [engine.stores.create(f"s{i}") for i in range(STORES)]
    read = CountingSeq(engine)
    notifier = ChangeNotifier(read, watch=engine.watch_changes)
    assert changes.WATCHED_POLL_INTERVAL_S > IDLE_S
    try:
        async with trio.open_nursery() as nursery:
            for store in stores:
                nursery.start_soon(notifier.wait, store.id, 0, IDLE_S)
    finally:
        notifier.close()
    assert read.reads == {store.id: 1 for store in stores}


async def test_a_closed_notifier_ends_its_subscription(engine: Engine) -> None:
    told: list[frozenset[str] | None] = []

    def watch(callback: Any) -> Any:
        def record(store_ids: frozenset[str] | None) -> None:
            told.append(store_ids)
            callback(store_ids)

        return engine.watch_changes(record)

    store = engine.stores.create("s")
    notifier = ChangeNotifier(engine.feed.last_seq, watch=watch)
    await notifier.wait(store.id, 0, 0.01)  # subscribes
    notifier.close()
    later: list[frozenset[str] | None] = []  # subscribed now: told of the write
    unsubscribe = engine.watch_changes(later.append)
    engine.memories.create(store.id, "/a.md", "a\n")
    await wait_until_async(lambda: later, "the later subscriber's notice", DEADLINE_S)
    unsubscribe()
    assert told == []
