"""A fork compared with its origin reads only what changed since the fork
(:mod:`memfs.store.forkdiff`): on a randomized run of edits, renames, deletes, restores,
hard deletes, redactions, creates and merges on both sides, every diff of the two (either
way round, at several points) and every merge plan equal the ones read whole."""

from __future__ import annotations

import random
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest

from memfs.core.errors import InvalidPoint, MemfsError
from memfs.core.history import ResolvedPoint
from memfs.core.model import Actor, DeleteMode, MemoryStore
from memfs.store import Engine, forkdiff, forks

_FROZEN = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)


@pytest.fixture
def frozen_names(monkeypatch: pytest.MonkeyPatch) -> None:
    """Conflict copies are named by the time of the plan: one time for both readings."""
    monkeypatch.setattr(forks, "utcnow", lambda: _FROZEN)


class _Whole:
    """Turns the fork shortcut off for the readings inside a ``with``."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.monkeypatch = monkeypatch

    def __enter__(self) -> None:
        self.monkeypatch.setattr(forkdiff, "changed", lambda *args: None)
        self.monkeypatch.setattr(forks, "_changed_on_fork", lambda *args: None)

    def __exit__(self, *exc: object) -> None:
        self.monkeypatch.undo()
        self.monkeypatch.setattr(forks, "utcnow", lambda: _FROZEN)


def _live(engine: Engine, store_id: str) -> list[Any]:
    return engine.memories.all(store_id)


def _edit(rng: random.Random, engine: Engine, writer: Any, store_id: str, tag: str) -> None:
    """One random change to the store (a refused one is skipped: a path taken, a head
    version that may not be redacted)."""
    live = _live(engine, store_id)
    deleted = engine.memories.deleted(store_id)
    choice = rng.choice(
        ["create", "update", "update", "rename", "delete", "restore", "hard", "redact", "same"]
    )
    try:
        if choice == "create" or not live:
            writer.memories.create(store_id, f"/n/{tag}-{rng.randrange(10**6)}.md", f"{tag}\n")
        elif choice == "update":
            memory = rng.choice(live)
            writer.memories.update(store_id, memory.id, content=f"{tag} {rng.randrange(3)}\n")
        elif choice == "same":  # both sides may write the same text
            memory = rng.choice(live)
            writer.memories.update(store_id, memory.id, content="shared text\n")
        elif choice == "rename":
            memory = rng.choice(live)
            writer.memories.update(store_id, memory.id, path=f"/r/{rng.randrange(40)}.md")
        elif choice == "delete":
            writer.memories.delete(store_id, rng.choice(live).id)
        elif choice == "restore" and deleted:
            writer.memories.restore(store_id, rng.choice(deleted).id)
        elif choice == "hard":
            writer.memories.delete(store_id, rng.choice(live).id, mode=DeleteMode.HARD_DELETE)
        elif choice == "redact":
            memory = rng.choice(live + deleted)
            page = engine.versions.list(store_id, memory_id=memory.id, limit=50)
            writer.versions.redact(store_id, rng.choice(page.items).id)
    except MemfsError:
        pass


def _points(engine: Engine, store_id: str, fork: MemoryStore) -> Iterator[str]:
    yield "now"
    if fork.fork_base:
        yield fork.fork_base
    for snapshot in engine.snapshots.list(store_id, limit=100).items:
        yield snapshot.name


def _gap(fast: Any, whole: Any) -> tuple[Any, ...]:
    """What one reading has that the other has not (the assertion's message)."""
    a = [e.model_dump() for e in fast.entries]
    b = [e.model_dump() for e in whole.entries]
    only_fast = [e for e in a if e not in b]
    return (fast.from_point, fast.to_point, only_fast, [e for e in b if e not in a])


def _same_both_ways(
    engine: Engine, monkeypatch: pytest.MonkeyPatch, origin: MemoryStore, fork: MemoryStore
) -> int:
    """Asserts every reading equals the whole one; returns how many were compared."""
    fork = engine.stores.get(fork.id)
    history = engine.history
    compared = 0
    with engine._db.read() as conn:  # the shortcut is taken: the test can fail
        now_o = ResolvedPoint(origin.id, "now", history.resolve(origin.id).seq)
        now_f = ResolvedPoint(fork.id, "now", history.resolve(fork.id).seq)
        assert forkdiff.changed(conn, now_o, now_f, None) is not None
    for point in _points(engine, origin.id, fork):
        for old, old_at, new, new_at in (
            (origin.id, point, fork.id, "now"),
            (fork.id, "now", origin.id, point),
        ):
            try:
                fast = history.diff(old, old_at, new, new_at)
            except InvalidPoint:  # a hard delete took the point's version with it
                continue
            with _Whole(monkeypatch):
                whole = history.diff(old, old_at, new, new_at)
            assert fast.model_dump() == whole.model_dump(), _gap(fast, whole)
            compared += 1
    fast_plan = history.plan_merge(fork.id)
    with _Whole(monkeypatch):
        whole_plan = history.plan_merge(fork.id)
    fast_steps = [s.model_dump() for s in fast_plan.steps]
    whole_steps = [s.model_dump() for s in whole_plan.steps]
    assert fast_plan.model_dump() == whole_plan.model_dump(), (
        [s for s in fast_steps if s not in whole_steps],
        [s for s in whole_steps if s not in fast_steps],
    )
    return compared + 1


# 80 seeds pass; 27 once caught two merge steps at one path coming in either order.
@pytest.mark.parametrize("seed", [1, 2, 27])
def test_a_fork_diffs_and_merges_as_read_whole(
    engine: Engine,
    store: MemoryStore,
    actor: Actor,
    monkeypatch: pytest.MonkeyPatch,
    frozen_names: None,
    seed: int,
) -> None:
    rng = random.Random(seed)
    writer = engine.for_caller(actor=actor)
    for index in range(24):
        writer.memories.create(store.id, f"/m/{index}.md", f"memory {index}\n")
    for _ in range(8):
        _edit(rng, engine, writer, store.id, "before")
    writer.snapshots.create(store.id, "base")
    for _ in range(4):
        _edit(rng, engine, writer, store.id, "after-base")
    fork = writer.history.fork(store.id, at="base" if seed % 2 else "now", name="fork")
    compared = 0
    grandchild = None
    for round_ in range(6):
        for _ in range(5):
            _edit(rng, engine, writer, store.id, f"origin{round_}")
            _edit(rng, engine, writer, fork.id, f"fork{round_}")
            if grandchild is not None:
                _edit(rng, engine, writer, grandchild.id, f"grandchild{round_}")
        if round_ == 2:
            writer.snapshots.create(store.id, "mid")
            grandchild = writer.history.fork(fork.id, name="grandchild")
        compared += _same_both_ways(engine, monkeypatch, store, fork)
        if grandchild is not None:  # a fork of a fork, with its own origin
            compared += _same_both_ways(engine, monkeypatch, fork, grandchild)
        if round_ in (1, 3):
            writer.history.merge(fork.id, into=store.id)
            compared += _same_both_ways(engine, monkeypatch, store, fork)
        if round_ == 4 and grandchild is not None:
            writer.history.merge(grandchild.id, into=fork.id)
            compared += _same_both_ways(engine, monkeypatch, fork, grandchild)
    assert compared > 40


def test_a_restricted_callers_fork_is_read_whole(
    engine: Engine, store: MemoryStore, actor: Actor
) -> None:
    """What a restricted caller did not see was not forked: nothing can be skipped."""
    from memfs.core.visibility import Viewer

    writer = engine.for_caller(actor=actor)
    writer.memories.create(store.id, "/a.md", "a\n")
    restricted = engine.for_caller(actor=actor, viewer=Viewer())
    fork = restricted.history.fork(store.id, name="narrow")
    full = writer.history.fork(store.id, name="wide")
    assert engine.stores.get(fork.id).forked_from == store.id
    with engine._db.read() as conn:
        now = ResolvedPoint(store.id, "now", engine.history.resolve(store.id).seq)
        assert forkdiff.fork_of(conn, store.id, fork.id) is None
        assert forkdiff.fork_of(conn, store.id, full.id) is not None
        assert forkdiff.changed(conn, now, ResolvedPoint(full.id, "now", 10**9), Viewer()) is None
