"""Change notification (memfs/store/notify.py; SPEC §4: an idle mount costs close to
nothing): a commit that grows a change feed, made through any engine on the database,
reaches the subscribers of ``Engine.watch_changes`` without them reading anything.

The safety check is pushed out of reach (``SAFETY_POLL_S`` = 1 h) where a test must
show that the notification itself arrived: only inotify (SQLite) or ``LISTEN/NOTIFY``
(PostgreSQL) can deliver it in time.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from _support.polling import wait_until
from sqlalchemy import create_engine, text
from store_helpers import ACTOR

from memfs.core.config import database_url
from memfs.core.model import MemoryStore, Scope
from memfs.store import Engine, notify

UNREACHABLE_S = 3600.0


class Received:
    """What a subscriber was told, in order (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.calls: list[frozenset[str] | None] = []

    def __call__(self, store_ids: frozenset[str] | None) -> None:
        with self._lock:
            self.calls.append(store_ids)

    def told(self, store_id: str) -> bool:
        """Whether some call named ``store_id`` (or every store)."""
        with self._lock:
            return any(c is None or store_id in c for c in self.calls)

    def count(self) -> int:
        with self._lock:
            return len(self.calls)


def _engines(url: str) -> Iterator[tuple[Engine, Engine]]:
    """Two engines on ``url`` (a reader and a writer); fsck at the end."""
    first, second = Engine(url), Engine(url)
    try:
        yield first, second
        findings = list(first.iter_fsck_findings())
        assert findings == [], "\n".join(findings)
    finally:
        second.close()
        first.close()


@pytest.fixture
def sqlite_engines(tmp_path: Path) -> Iterator[tuple[Engine, Engine]]:
    yield from _engines(database_url(str(tmp_path / "store.db")))


@pytest.fixture
def pg_engines(pg_database_url: Callable[..., str]) -> Iterator[tuple[Engine, Engine]]:
    yield from _engines(database_url(pg_database_url()))


@pytest.fixture
def no_safety_check(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(notify, "SAFETY_POLL_S", UNREACHABLE_S)
    monkeypatch.setattr(notify._PostgresSource, "interval_s", UNREACHABLE_S)


@pytest.mark.usefixtures("no_safety_check")
def test_a_commit_of_another_engine_is_notified(
    engine: Engine, store: MemoryStore, second_engine: Engine
) -> None:
    subscriber = Received()
    engine.watch_changes(subscriber)
    second_engine.for_caller(actor=ACTOR).memories.create(store.id, "/a.md", "a\n")
    wait_until(lambda: subscriber.told(store.id), "the notification of the write")
    if engine.dialect == "postgresql":  # the payload names the store written
        assert subscriber.calls == [frozenset({store.id})]


@pytest.mark.usefixtures("no_safety_check")
def test_reads_and_writes_without_a_change_notify_nobody(
    engine: Engine, store: MemoryStore, second_engine: Engine
) -> None:
    """Only a grown change feed notifies: reads, and writes that append to no feed (a
    session), don't. The write that follows them is the first thing told."""
    subscriber = Received()
    engine.watch_changes(subscriber)
    for _ in range(20):
        second_engine.feed.changes_since(store.id, 0)
        second_engine.feed.last_seq(store.id)
        second_engine.memories.all(store.id)
    second_engine.api_keys.create("reader", [Scope.READ])
    marker = second_engine.stores.create("marker")  # no feed entry either
    second_engine.stores.update(marker.id, description="now")  # a store_updated entry
    wait_until(lambda: subscriber.told(marker.id), "the marker's notification")
    assert len(subscriber.calls) == 1, subscriber.calls


def test_unsubscribed_and_closed_watches_are_quiet(
    engine: Engine, store: MemoryStore, second_engine: Engine
) -> None:
    gone, staying = Received(), Received()
    unsubscribe = engine.watch_changes(gone)
    engine.watch_changes(staying)
    unsubscribe()
    second_engine.for_caller(actor=ACTOR).memories.create(store.id, "/a.md", "a\n")
    wait_until(lambda: staying.told(store.id), "the notification of the write")
    assert gone.calls == []
    second_engine.close()
    with pytest.raises(RuntimeError, match="closed"):
        second_engine.watch_changes(Received())


@pytest.mark.usefixtures("no_safety_check")
def test_sqlite_a_commit_of_another_process_is_notified(tmp_path: Path) -> None:
    """The writer is another process (memfs's CLI), the reader sees its commit."""
    import subprocess
    import sys

    database = tmp_path / "store.db"
    engine = Engine(database_url(str(database)))
    try:
        store = engine.stores.create("Notes")
        subscriber = Received()
        engine.watch_changes(subscriber)
        subprocess.run(
            [sys.executable, "-m", "memfs.cli", "memory", "put", "Notes", "/a.md",
             "--content", "a\n", "--database", str(database)],
            check=True, capture_output=True, timeout=60,
        )
        wait_until(lambda: subscriber.told(store.id), "the notification of the CLI's write")
        assert engine.feed.changes_since(store.id, 0)[-1].path == "/a.md"
    finally:
        engine.close()


def test_sqlite_a_foreign_writer_is_seen_by_the_safety_check(
    sqlite_engines: tuple[Engine, Engine],
) -> None:
    """A write that is not memfs's (the sqlite3 shell) touches no file after its commit:
    the safety check (the file's data_version) sees it."""
    engine, _ = sqlite_engines
    store = engine.stores.create("Notes")
    subscriber = Received()
    engine.watch_changes(subscriber)
    path = engine.url.split("///", 1)[1]
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE stores SET description = 'changed' WHERE id = ?", (store.id,))
    wait_until(lambda: subscriber.count() >= 1, "the notification of the foreign write",
               timeout_s=notify.SAFETY_POLL_S + 5)


@pytest.mark.usefixtures("no_safety_check")
def test_sqlite_without_inotify_the_data_version_is_checked(
    sqlite_engines: tuple[Engine, Engine],
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture,
) -> None:
    """No inotify instance left (``fs.inotify.max_user_instances``): the watch says so
    and checks the file's change counter every FALLBACK_POLL_S instead."""
    engine, second_engine = sqlite_engines
    store = engine.stores.create("Notes")

    def no_inotify(directory: Path) -> None:
        raise OSError(24, "Too many open files")

    monkeypatch.setattr(notify, "_Inotify", no_inotify)
    subscriber = Received()
    engine.watch_changes(subscriber)
    assert "no inotify watch" in caplog.text
    second_engine.for_caller(actor=ACTOR).memories.create(store.id, "/a.md", "a\n")
    wait_until(lambda: subscriber.told(store.id), "the notification of the write")


def test_postgresql_a_lost_listen_connection_is_made_again(
    pg_engines: tuple[Engine, Engine], monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The server ends the LISTEN connection: every store counts as changed (what was
    notified meanwhile is unknown), the next safety check listens again, and later
    writes are notified by store as before."""
    engine, second_engine = pg_engines
    store = engine.stores.create("Notes")
    monkeypatch.setattr(notify._PostgresSource, "interval_s", 0.2)
    subscriber = Received()
    engine.watch_changes(subscriber)
    admin = create_engine(engine.url)
    try:
        with admin.begin() as conn:
            ended = conn.execute(text(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                " WHERE datname = current_database() AND query = :listen"
            ), {"listen": f"LISTEN {notify.CHANNEL}"}).all()
    finally:
        admin.dispose()
    assert ended == [(True,)]
    wait_until(lambda: subscriber.calls.count(None) >= 2,
               "the notices of the loss and of listening again")
    second_engine.for_caller(actor=ACTOR).memories.create(store.id, "/b.md", "b\n")
    wait_until(
        lambda: frozenset({store.id}) in subscriber.calls,
        "the notification of a write after the reconnection",
    )
