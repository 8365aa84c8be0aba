"""The indexer thread gives way to writes (memfs/store/indexer.py): after the writes
paused it indexes, but a write that comes meanwhile stops it after its batch until the
next pause, until MAX_DELAY_S after the first wake, when it drains the queue whole (a
search indexes what is queued itself, so only the lag depends on it: README
"Performance", writes)."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator

import pytest

from memfs.store import indexer as indexer_module
from memfs.store.indexer import Indexer


@contextlib.contextmanager
def _no_transaction() -> Iterator[None]:
    raise AssertionError("the fake catch_up opens no transaction")
    yield


def test_the_indexer_stops_after_a_batch_when_writes_resume_and_drains_past_its_deferral(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(indexer_module, "QUIET_S", 0.05)
    monkeypatch.setattr(indexer_module, "MAX_DELAY_S", 0.6)
    calls: list[str] = []
    drained = threading.Event()
    indexer: Indexer

    def fake_catch_up(
        read: object, write: object, *, batch: int, wait: bool,
        yield_to: Callable[[], bool] | None = None,
    ) -> int:
        if yield_to is None:
            calls.append("drained")
            drained.set()
            return 5
        assert not yield_to(), "no write came since the batch began"
        indexer.wake()  # a close commits while the batch is indexed
        assert yield_to()
        calls.append("gave way")
        return 1

    monkeypatch.setattr(indexer_module, "catch_up", fake_catch_up)
    indexer = Indexer(_no_transaction, _no_transaction)
    started = time.monotonic()
    indexer.start()
    try:
        assert drained.wait(10), calls
        drained_after_s = time.monotonic() - started
    finally:
        indexer.stop()
    assert calls[-1] == "drained", calls
    assert calls.count("drained") == 1, calls
    assert set(calls[:-1]) == {"gave way"}, calls
    assert len(calls) >= 3, calls
    assert drained_after_s >= 0.6, "it drained only once its deferral ended"
    assert indexer.indexed == len(calls) - 1 + 5
