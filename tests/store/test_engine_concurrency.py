"""Concurrent writers: optimistic concurrency without lost updates, and two engines ("two
API servers") on one database racing for the same path or the last slot (SPEC §2)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
from _support.polling import wait_until
from sqlalchemy import create_engine, text
from store_helpers import collect

from memfs.core import rules
from memfs.core.errors import PathConflict, PreconditionFailed, StoreArchived, StoreBusy, StoreFull
from memfs.core.model import Actor, DeleteMode, MemoryStore, Operation
from memfs.store import Engine, ResourceSpec, memories

THREADS = 8
ATTEMPTS = 6
ROUNDS = 8
JOIN_TIMEOUT_S = 60.0


def run_threads(targets: list[Callable[[], Any]]) -> list[Any]:
    """Runs each target in its own thread, released together; returns each one's result
    or the exception it raised."""
    barrier = threading.Barrier(len(targets))
    results: list[Any] = [None] * len(targets)

    def run(i: int) -> None:
        barrier.wait(JOIN_TIMEOUT_S)
        try:
            results[i] = targets[i]()
        except Exception as exc:
            results[i] = exc

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(targets))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(JOIN_TIMEOUT_S)
        assert not thread.is_alive(), "a writer hung"
    return results


def test_read_modify_write_loses_no_update(
    engine: Engine, store: MemoryStore, actor: Actor
) -> None:
    memory = engine.for_caller(actor=actor).memories.create(store.id, "/counter", "")

    def writer(n: int) -> Callable[[], list[tuple[str, Any]]]:
        def attempts() -> list[tuple[str, Any]]:
            outcomes: list[tuple[str, Any]] = []
            for j in range(ATTEMPTS):
                current = engine.memories.get(store.id, memory.id)
                line = f"writer {n} attempt {j}\n"
                try:
                    updated = engine.for_caller(actor=actor).memories.update(
                        store.id,
                        memory.id,
                        content=current.content + line,
                        expected_sha256=current.content_sha256,
                    )
                except PreconditionFailed as exc:
                    outcomes.append(("failed", exc))
                else:
                    outcomes.append((line, updated.memory_version_id))
            return outcomes

        return attempts

    results = run_threads([writer(n) for n in range(THREADS)])
    for result in results:
        assert isinstance(result, list), f"a writer raised {result!r}"
    outcomes = [o for result in results for o in result]
    successes = [(line, version) for line, version in outcomes if line != "failed"]
    assert successes, "no write succeeded"
    assert len(outcomes) == THREADS * ATTEMPTS
    versions = {version for _, version in successes}
    assert len(versions) == len(successes), "two successes share a version"

    final = engine.memories.get(store.id, memory.id)
    assert sorted(final.content.splitlines(keepends=True)) == sorted(line for line, _ in successes)
    history = collect(
        engine.versions.list, store_id=store.id, memory_id=memory.id, with_content=True
    )[::-1]
    assert [v.operation for v in history] == [Operation.CREATED] + [Operation.MODIFIED] * len(
        successes
    )
    assert {v.id for v in history[1:]} == versions
    # Each version extends the one before it by exactly one successful writer's line.
    for before, after in zip(history, history[1:], strict=False):
        assert after.content.startswith(before.content)
        assert after.content.count("\n") == before.content.count("\n") + 1
    assert history[-1].id == final.memory_version_id


def test_two_servers_racing_for_one_path(
    engine: Engine, second_engine: Engine, store: MemoryStore, actor: Actor
) -> None:
    for round_ in range(ROUNDS):
        path = f"/race{round_}"
        results = run_threads(
            [
                lambda e=e, c=content, p=path: e.for_caller(actor=actor).memories.create(
                    store.id, p, c
                )
                for e, content in ((engine, "first"), (second_engine, "second"))
            ]
        )
        winners = [r for r in results if not isinstance(r, Exception)]
        losers = [r for r in results if isinstance(r, Exception)]
        assert len(winners) == 1, results
        assert len(losers) == 1, results
        assert isinstance(losers[0], PathConflict), repr(losers[0])
        assert losers[0].conflicting_memory_id == winners[0].id
        assert engine.memories.get_by_path(store.id, path).id == winners[0].id
    assert engine.stores.get(store.id).entry_count == ROUNDS


def test_two_servers_racing_for_a_file_and_a_directory(
    engine: Engine, second_engine: Engine, store: MemoryStore, actor: Actor
) -> None:
    for round_ in range(ROUNDS):
        base = f"/race{round_}"
        pairs = ((engine, base), (second_engine, base + "/b"))
        if round_ % 2:
            pairs = ((engine, base + "/b"), (second_engine, base))
        results = run_threads(
            [lambda e=e, p=p: e.for_caller(actor=actor).memories.create(
                store.id, p, p
            ) for e, p in pairs]
        )
        assert sorted(type(r).__name__ for r in results) == ["Memory", "PathConflict"], results
        live = [m.path for m in engine.memories.all(store.id) if m.path.startswith(base)]
        assert len(live) == 1


def test_two_servers_racing_for_the_last_slots(engine: Engine, database: str, actor: Actor) -> None:
    first, second = Engine(database, memory_limit=3), Engine(database, memory_limit=3)
    try:
        store = first.stores.create("small")
        results = run_threads(
            [
                lambda i=i: (first, second)[i % 2].for_caller(actor=actor).memories.create(
                    store.id, f"/m{i}", "x"
                )
                for i in range(6)
            ]
        )
        assert sorted(type(r).__name__ for r in results) == ["Memory"] * 3 + ["StoreFull"] * 3
        assert all(isinstance(r, StoreFull) for r in results if isinstance(r, Exception))
        assert engine.stores.get(store.id).entry_count == 3
    finally:
        first.close()
        second.close()


def _wait_until(condition: Callable[[], bool], what: str, timeout_s: float = 30.0) -> None:
    """:func:`wait_until`, but TimeoutError (never an AssertionError, which the xfail
    tests below expect from the engine bug itself) when ``condition`` stays false."""
    try:
        wait_until(condition, what, timeout_s)
    except AssertionError as exc:
        raise TimeoutError(str(exc)) from None


class Paused:
    """Wraps a function so that its first call stops (inside the caller's transaction)
    until :meth:`release`; ``reached`` is set when it stops."""

    def __init__(self, function: Callable[..., Any]) -> None:
        self.function = function
        self.reached = threading.Event()
        self._go = threading.Event()

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        result = self.function(*args, **kwargs)
        if not self.reached.is_set():
            self.reached.set()
            assert self._go.wait(JOIN_TIMEOUT_S)
        return result

    def release(self) -> None:
        self._go.set()


def in_thread(call: Callable[[], Any]) -> tuple[threading.Thread, dict[str, Any]]:
    """Starts ``call`` in a thread; the dict gets ``result`` or ``error``."""
    outcome: dict[str, Any] = {}

    def run() -> None:
        try:
            outcome["result"] = call()
        except Exception as exc:
            outcome["error"] = exc

    thread = threading.Thread(target=run)
    thread.start()
    return thread, outcome


def race(
    database: str, paused: Paused, first: Callable[[], Any], second: Callable[[], Any]
) -> tuple[dict[str, Any], dict[str, Any], bool]:
    """Runs ``first`` until it stops in ``paused``, then ``second`` until it finishes or
    waits for a PostgreSQL lock (what a correctly locking engine does), then lets
    ``first`` go on. Returns both outcomes and whether ``second`` finished before ``first``
    went on."""
    thread_1, outcome_1 = in_thread(first)
    _wait_until(paused.reached.is_set, "the first writer to pause")
    thread_2, outcome_2 = in_thread(second)
    probe = create_engine(database)

    def second_done_or_blocked() -> bool:
        if not thread_2.is_alive():
            return True
        with probe.connect() as conn:
            waiting = conn.execute(
                text(
                    "SELECT count(*) FROM pg_stat_activity WHERE datname = "
                    "current_database() AND wait_event_type = 'Lock'"
                )
            ).scalar_one()
        return waiting > 0

    try:
        _wait_until(second_done_or_blocked, "the second writer to finish or wait for a lock")
        second_went_first = not thread_2.is_alive()
    finally:
        probe.dispose()
        paused.release()
    thread_1.join(JOIN_TIMEOUT_S)
    thread_2.join(JOIN_TIMEOUT_S)
    if thread_1.is_alive() or thread_2.is_alive():
        raise TimeoutError("a writer hung")
    return outcome_1, outcome_2, second_went_first


def test_shared_blob_survives_a_concurrent_purge_in_another_store(
    engine: Engine,
    second_engine: Engine,
    database: str,
    actor: Actor,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    if engine.dialect != "postgresql":
        pytest.skip("SQLite serializes every writer; the race needs PostgreSQL")
    store_a, store_b = engine.stores.create("a"), engine.stores.create("b")
    doomed = engine.for_caller(actor=actor).memories.create(store_a.id, "/x", "shared content")
    # Server B pauses right after it found the blob already stored (the hard delete
    # of server A stores no blob, so only B's create reaches put_blob).
    paused = Paused(memories.put_blob)
    monkeypatch.setattr(memories, "put_blob", paused)

    created, purged, _ = race(
        database,
        paused,
        lambda: second_engine.for_caller(actor=actor).memories.create(
            store_b.id, "/y", "shared content"
        ),
        lambda: engine.for_caller(actor=actor).memories.delete(
            store_a.id,
            doomed.id,
            mode=DeleteMode.HARD_DELETE,
        ),
    )

    if "error" in created:
        raise created["error"]
    assert "error" not in purged, purged
    assert engine.memories.get_by_path(store_b.id, "/y").content == "shared content"


def test_an_archive_racing_a_new_session(
    engine: Engine, second_engine: Engine, database: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    if engine.dialect != "postgresql":
        pytest.skip("SQLite serializes every writer; the race needs PostgreSQL")
    store = engine.stores.create("s")
    # The session's transaction stops after it read the stores (it computes their slugs).
    paused = Paused(rules.unique_slugs)
    monkeypatch.setattr(rules, "unique_slugs", paused)

    attached, archived, archive_went_first = race(
        database,
        paused,
        lambda: second_engine.sessions.create([ResourceSpec(store.id)]),
        lambda: engine.stores.archive(store.id),
    )

    assert "error" not in archived, archived
    if archive_went_first:
        assert isinstance(attached.get("error"), StoreArchived), attached
    else:
        assert "result" in attached, attached


def test_a_writer_locked_out_past_the_busy_timeout_gets_store_busy(
    engine: Engine, database: str, actor: Actor
) -> None:
    """Contention gives a typed, retryable outcome (StoreBusy), never a
    driver's "database is locked" (a 500 at the API, a traceback at the CLI)."""
    store = engine.stores.create("s")
    impatient = Engine(database, busy_timeout_s=0.2)
    holder = create_engine(database)
    try:
        with holder.connect() as conn:
            # Another process's writer holds the store: a write lock (SQLite) or the
            # store row (PostgreSQL) until this block ends.
            if engine.dialect == "sqlite":
                conn.exec_driver_sql("BEGIN IMMEDIATE")
            else:
                conn.begin()
                conn.execute(text(f"SELECT id FROM stores WHERE id = '{store.id}' FOR UPDATE"))
            started = time.monotonic()
            with pytest.raises(StoreBusy) as info:
                impatient.for_caller(actor=actor).memories.create(store.id, "/a", "a")
            assert time.monotonic() - started < JOIN_TIMEOUT_S
            assert str(info.value) == (
                "the database stayed locked by another writer for 0.2 s; nothing was "
                "changed, try again"
            )
            conn.rollback()
        assert impatient.for_caller(actor=actor).memories.create(store.id, "/a", "a").path == "/a"
    finally:
        holder.dispose()
        impatient.close()
    assert [m.path for m in engine.memories.all(store.id)] == ["/a"]


def test_a_writer_waiting_on_another_thread_past_the_busy_timeout_gets_store_busy(
    database: str, actor: Actor
) -> None:
    impatient = Engine(database, busy_timeout_s=0.2)
    if impatient.dialect != "sqlite":
        impatient.close()
        pytest.skip("only SQLite writers take turns on the in-process write lock")
    try:
        store = impatient.stores.create("s")
        held = threading.Event()
        release = threading.Event()

        def hold_the_write_lock() -> None:
            with impatient._db.write():
                held.set()
                assert release.wait(JOIN_TIMEOUT_S)

        thread = threading.Thread(target=hold_the_write_lock)
        thread.start()
        try:
            assert held.wait(JOIN_TIMEOUT_S)
            with pytest.raises(StoreBusy):
                impatient.for_caller(actor=actor).memories.create(store.id, "/a", "a")
        finally:
            release.set()
            thread.join(JOIN_TIMEOUT_S)
        assert impatient.memories.all(store.id) == []
    finally:
        impatient.close()


# ----------------------------------------------------------------- history (SPEC §10)

RACE_MEMORIES = 60


def _contents(engine: Engine, store_id: str) -> dict[str, str | None]:
    return {
        m.path: engine.memories.get(store_id, m.id).content for m in engine.memories.all(store_id)
    }


def _changed_store(engine: Engine, actor: Actor, name: str) -> tuple[MemoryStore, list[str]]:
    """A store of RACE_MEMORIES memories, a snapshot ``base``, then every one changed."""
    store = engine.stores.create(name)
    writer = engine.for_caller(actor=actor).memories
    ids = [writer.create(store.id, f"/m{i:03d}", f"base {i}\n").id for i in range(RACE_MEMORIES)]
    engine.for_caller(actor=actor).snapshots.create(store.id, "base")
    for i, memory_id in enumerate(ids):
        writer.update(store.id, memory_id, content=f"changed {i}\n")
    return store, ids


@pytest.mark.parametrize("round_", range(3))
def test_a_write_racing_a_restore_is_in_it_or_after_it(
    engine: Engine, second_engine: Engine, actor: Actor, round_: int
) -> None:
    """A write from another server racing a restore: it lands before the restore (then
    the restore's snapshot holds it and the restore took it back to the point, one
    restore away) or after it (then it is the head); never lost, never half-applied."""
    store, ids = _changed_store(engine, actor, f"restore race {round_}")
    target = ids[round_ * 7]

    def write() -> Any:
        return second_engine.for_caller(actor=actor).memories.update(
            store.id, target, content="the racing write\n"
        )

    plan, written = run_threads(
        [lambda: engine.for_caller(actor=actor).restores.restore(store.id, "base"), write]
    )
    assert not isinstance(plan, Exception), plan
    assert not isinstance(written, Exception), written
    assert plan.snapshot is not None
    seq = engine.history.resolve(store.id, written.memory_version_id).seq
    head = engine.memories.get(store.id, target).content
    if seq <= plan.snapshot.seq:  # before: in the restore's snapshot, restored past
        then = engine.history.get(store.id, target, plan.snapshot.name)
        assert then.content == "the racing write\n"
        assert head == f"base {round_ * 7}\n"
    else:  # after every version of the restore
        newest_restore = max(
            engine.history.resolve(store.id, v.id).seq
            for v in engine.versions.list(store.id, limit=RACE_MEMORIES + 5).items
            if v.id != written.memory_version_id
        )
        assert seq > newest_restore
        assert head == "the racing write\n"
    # Everything else is the state at the point, all of it (all or nothing).
    others = {p: c for p, c in _contents(engine, store.id).items() if p != f"/m{round_ * 7:03d}"}
    assert others == {
        f"/m{i:03d}": f"base {i}\n" for i in range(RACE_MEMORIES) if ids[i] != target
    }


@pytest.mark.parametrize("round_", range(3))
def test_a_write_racing_a_merge_is_never_overwritten(
    engine: Engine, second_engine: Engine, actor: Actor, round_: int
) -> None:
    """A write to the origin racing a merge that changes the same memory: before the
    merge, the memory changed on both sides (the origin keeps the write, the fork's is
    a conflict copy); after it, the write is the head over the merged content. Either
    way the write is the head and the fork's content is in the origin's history."""
    origin, _ = _changed_store(engine, actor, f"merge race {round_}")
    fork = engine.for_caller(actor=actor).history.fork(origin.id, name=f"merge race fork {round_}")
    writer = engine.for_caller(actor=actor).memories
    for memory in engine.memories.all(fork.id):
        writer.update(fork.id, memory.id, content=f"fork's {memory.path}\n")
    target = engine.memories.get_by_path(origin.id, f"/m{round_ * 7:03d}").id

    def write() -> Any:
        return second_engine.for_caller(actor=actor).memories.update(
            origin.id, target, content="the racing write\n"
        )

    plan, written = run_threads(
        [lambda: engine.for_caller(actor=actor).history.merge(fork.id, into=origin.id), write]
    )
    assert not isinstance(plan, Exception), plan
    assert not isinstance(written, Exception), written
    assert plan.snapshot is not None
    path = f"/m{round_ * 7:03d}"
    assert engine.memories.get(origin.id, target).content == "the racing write\n"
    state = _contents(engine, origin.id)
    seq = engine.history.resolve(origin.id, written.memory_version_id).seq
    if seq <= plan.snapshot.seq:  # before: a two-sided change, the fork's beside it
        [copy] = [p for p in state if p.startswith(path + ".conflict-")]
        assert state[copy] == f"fork's {path}\n"
    else:  # after: it overwrote the merged content, which is its previous version
        assert not any(".conflict-" in p for p in state)
        versions = engine.versions.list(origin.id, memory_id=target, limit=2).items
        assert engine.versions.get(origin.id, versions[1].id).content == f"fork's {path}\n"
    others = {p: c for p, c in state.items() if p != path and ".conflict-" not in p}
    assert others == {
        f"/m{i:03d}": f"fork's /m{i:03d}\n" for i in range(RACE_MEMORIES) if i != round_ * 7
    }
