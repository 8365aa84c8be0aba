"""Forking a store (SPEC §10): a new store holding another's state at a point, sharing
its content, remembering its origin and base; retention keeps the base; diff matches by
origin; 10,000 memories fork in seconds."""

from __future__ import annotations

import time
from datetime import timedelta

import pytest
from sqlalchemy import func, select

from memfs.core.errors import Conflict, InvalidInput, InvalidPoint, NotFound, StoreFull
from memfs.core.history import DiffStatus
from memfs.core.model import Actor, MemoryStore, Operation, utcnow
from memfs.store import Engine
from memfs.store.schema import blobs


def _paths(engine: Engine, store_id: str) -> dict[str, str | None]:
    return {
        m.path: engine.memories.get(store_id, m.id).content for m in engine.memories.all(store_id)
    }


def _blob_count(engine: Engine) -> int:
    with engine._db.read() as conn:
        return int(conn.execute(select(func.count()).select_from(blobs)).scalar_one())


def test_a_fork_holds_the_state_at_its_point_and_shares_content(
    engine: Engine, store: MemoryStore, actor: Actor
) -> None:
    writer = engine.for_caller(actor=actor)
    prefs = writer.memories.create(store.id, "/user/prefs.md", "tz: Berlin\n")
    writer.memories.create(store.id, "/inbox/todo.md", "- [ ] notes\n")
    writer.snapshots.create(store.id, "before")
    writer.memories.update(store.id, prefs.id, content="tz: Lisbon\n")
    writer.memories.create(store.id, "/journal/today.md", "later\n")
    blobs_before = _blob_count(engine)

    fork = writer.history.fork(store.id, at="before", name="try", description="an experiment")

    assert fork.name == "try"
    assert fork.description == "an experiment"
    assert fork.forked_from == store.id
    assert fork.fork_base is not None
    assert fork.entry_count == 2
    assert _paths(engine, fork.id) == {
        "/inbox/todo.md": "- [ ] notes\n",
        "/user/prefs.md": "tz: Berlin\n",
    }
    assert _blob_count(engine) == blobs_before  # no byte copied
    # Its base is a point of the origin: the state it was forked from.
    assert [e.path for e in engine.history.state(store.id, fork.fork_base)] == [
        "/inbox/todo.md",
        "/user/prefs.md",
    ]
    for memory in engine.memories.all(fork.id):
        [version] = engine.versions.list(fork.id, memory_id=memory.id).items
        assert version.operation is Operation.CREATED
        assert version.created_by == actor
    # A fork is an ordinary store: searchable, writable, the origin untouched by it.
    [hit] = engine.search.query("tz", store_ids=[fork.id])
    assert hit.path == "/user/prefs.md"
    forked_prefs = engine.memories.get_by_path(fork.id, "/user/prefs.md")
    writer.memories.update(fork.id, forked_prefs.id, content="tz: Tokyo\n")
    assert engine.memories.get(store.id, prefs.id).content == "tz: Lisbon\n"


def test_a_fork_at_now_by_default_and_from_an_empty_point(
    engine: Engine, store: MemoryStore, actor: Actor
) -> None:
    writer = engine.for_caller(actor=actor)
    empty = writer.history.fork(store.id, name="empty")
    assert empty.forked_from == store.id
    assert empty.fork_base is None
    assert empty.entry_count == 0
    writer.memories.create(store.id, "/a.md", "a\n")
    full = writer.history.fork(store.id, name="full")
    assert _paths(engine, full.id) == {"/a.md": "a\n"}


def test_a_fork_refuses_bad_points_and_unknown_stores(
    engine: Engine, store: MemoryStore, actor: Actor
) -> None:
    writer = engine.for_caller(actor=actor)
    with pytest.raises(InvalidPoint, match="no snapshot of that name"):
        writer.history.fork(store.id, at="nope", name="x")
    with pytest.raises(NotFound):
        writer.history.fork("memstore_missing", name="x")
    assert [s.name for s in engine.stores.list().items] == [store.name]


def test_a_fork_refuses_a_name_in_use(engine: Engine, store: MemoryStore, actor: Actor) -> None:
    history = engine.for_caller(actor=actor).history
    history.fork(store.id, name="try")
    for taken in ("try", store.name):
        with pytest.raises(Conflict) as refused:
            history.fork(store.id, name=taken)
        assert refused.value.code == "store_name_taken"
        assert refused.value.message == (
            f"a memory store is already named {taken!r}: give the fork another name"
        )
    assert sorted(s.name for s in engine.stores.list().items) == ["test store", "try"]


def test_a_redacted_version_is_not_forked(
    engine: Engine, store: MemoryStore, actor: Actor
) -> None:
    writer = engine.for_caller(actor=actor)
    secret = writer.memories.create(store.id, "/secret.md", "password\n")
    writer.memories.create(store.id, "/kept.md", "kept\n")
    writer.snapshots.create(store.id, "s")
    writer.memories.update(store.id, secret.id, content="nothing\n")
    writer.versions.redact(store.id, secret.memory_version_id)

    fork = writer.history.fork(store.id, at="s", name="f")

    assert _paths(engine, fork.id) == {"/kept.md": "kept\n"}


def test_diff_of_a_fork_and_its_origin_matches_by_origin(
    engine: Engine, store: MemoryStore, actor: Actor
) -> None:
    writer = engine.for_caller(actor=actor)
    prefs = writer.memories.create(store.id, "/prefs.md", "tz: Berlin\n")
    todo = writer.memories.create(store.id, "/todo.md", "- [ ] a\n")
    fork = writer.history.fork(store.id, name="f")
    forked_prefs = engine.memories.get_by_path(fork.id, "/prefs.md")
    forked_todo = engine.memories.get_by_path(fork.id, "/todo.md")
    assert engine.history.diff(store.id, "now", fork.id, "now").entries == []

    writer.memories.update(fork.id, forked_prefs.id, content="tz: Lisbon\n")
    writer.memories.update(fork.id, forked_todo.id, path="/done/todo.md")
    added = writer.memories.create(fork.id, "/new.md", "new\n")

    diff = engine.history.diff(store.id, "now", fork.id, "now")
    found = {(e.status, e.old_memory_id, e.memory_id) for e in diff.entries}
    assert found == {
        (DiffStatus.MODIFIED, prefs.id, forked_prefs.id),
        (DiffStatus.RENAMED, todo.id, forked_todo.id),
        (DiffStatus.ADDED, None, added.id),
    }
    # And the other way round.
    back = engine.history.diff(fork.id, "now", store.id, "now")
    assert {e.status for e in back.entries} == {
        DiffStatus.MODIFIED,
        DiffStatus.RENAMED,
        DiffStatus.REMOVED,
    }


def test_retention_keeps_what_a_forks_base_needs(
    engine: Engine, store: MemoryStore, actor: Actor
) -> None:
    engine.stores.update(store.id, version_retention_s=3600)
    writer = engine.for_caller(actor=actor)
    memory = writer.memories.create(store.id, "/a", "base\n")
    fork = writer.history.fork(store.id, name="f")
    writer.memories.update(store.id, memory.id, content="head\n")
    later = utcnow() + timedelta(hours=2)

    [result] = engine.retention.prune(now=later)
    assert result.versions == 0
    assert engine.history.get(store.id, memory.id, fork.fork_base or "").content == "base\n"

    engine.stores.delete(fork.id, force=True)
    [result] = engine.retention.prune(now=later)
    assert result.versions == 1


def test_a_fork_is_set_based(engine: Engine, store: MemoryStore, actor: Actor) -> None:
    """2,000 memories (seeding is one create each, the slow part); 10,000 fork in about
    1 s on SQLite, 5 s on PostgreSQL (README, "Forking a store")."""
    count = 2_000
    writer = engine.for_caller(actor=actor)
    _seed(engine, store, count)

    started = time.perf_counter()
    fork = writer.history.fork(store.id, name="big")
    elapsed_s = time.perf_counter() - started

    assert fork.entry_count == count
    assert engine.memories.get_by_path(fork.id, "/d/77/m01777.md").content == "memory 1777\n"
    assert elapsed_s < 5.0, f"forking {count} memories took {elapsed_s:.2f} s"
    print(f"\nfork of {count} memories: {elapsed_s:.2f} s ({engine.url.split(':')[0]})")


def _seed(engine: Engine, store: MemoryStore, count: int) -> None:
    """``count`` memories in 100 directories, one create each."""
    writer = engine.memories
    for index in range(count):
        writer.create(store.id, f"/d/{index % 100:02d}/m{index:05d}.md", f"memory {index}\n")


# ----------------------------------------------------------------- merge


def _scene(engine: Engine, store: MemoryStore, actor: Actor) -> tuple[MemoryStore, dict[str, str]]:
    """An origin with five memories, a fork of it, then changes on both sides."""
    writer = engine.for_caller(actor=actor).memories
    made = {
        name: writer.create(store.id, f"/{name}.md", f"{name} base\n").id
        for name in ("same", "fork_edit", "both_edit", "fork_del", "origin_edit")
    }
    fork = engine.for_caller(actor=actor).history.fork(store.id, name="fork")

    def forked(name: str) -> str:
        return engine.memories.get_by_path(fork.id, f"/{name}.md").id

    writer.update(fork.id, forked("fork_edit"), content="fork_edit by fork\n", path="/moved.md")
    writer.update(fork.id, forked("both_edit"), content="both_edit by fork\n")
    writer.delete(fork.id, forked("fork_del"))
    writer.create(fork.id, "/added.md", "added on the fork\n")
    writer.update(store.id, made["both_edit"], content="both_edit by origin\n")
    writer.update(store.id, made["origin_edit"], content="origin_edit by origin\n")
    return fork, made


def test_a_merge_is_three_way_and_keeps_both_sides_of_a_conflict(
    engine: Engine, store: MemoryStore, actor: Actor
) -> None:
    fork, made = _scene(engine, store, actor)
    history = engine.for_caller(actor=actor).history
    dry = history.plan_merge(fork.id, into=store.id)
    assert not dry.applied
    assert sorted((s.action.value, s.path or s.path_before) for s in dry.steps) == [
        ("conflict_copy", dry.steps[1].path),
        ("create", "/added.md"),
        ("delete", "/fork_del.md"),
        ("update", "/moved.md"),
    ]
    assert _paths(engine, store.id)["/fork_del.md"] == "fork_del base\n"  # a dry run

    done = history.merge(fork.id, into=store.id, reason="try it")

    assert done.applied
    assert done.snapshot is not None
    assert done.snapshot.name.startswith("auto-merge-")
    state = _paths(engine, store.id)
    [copy] = [p for p in state if ".conflict-" in p]
    assert copy.startswith("/both_edit.conflict-")
    assert copy.endswith(f"-{fork.id}.md")
    assert state == {
        "/added.md": "added on the fork\n",
        "/both_edit.md": "both_edit by origin\n",  # the origin keeps its content
        copy: "both_edit by fork\n",  # the fork's beside it, never dropped
        "/moved.md": "fork_edit by fork\n",  # changed on the fork only: taken
        "/origin_edit.md": "origin_edit by origin\n",
        "/same.md": "same base\n",
    }
    assert engine.memories.get_by_path(store.id, "/moved.md").id == made["fork_edit"]
    [event] = [e for e in engine.feed.audit_events(store.id) if e["action"] == "store_merge"]
    assert (event["actor_type"], event["actor_id"]) == (actor.type.value, actor.id)
    assert event["reason"] == "try it"
    assert event["metadata"]["fork"] == fork.id
    # Merging again changes nothing; restoring the automatic snapshot undoes the merge.
    again = history.merge(fork.id, into=store.id)
    assert again.snapshot is None
    assert [s.action for s in again.steps] == []
    engine.for_caller(actor=actor).restores.restore(store.id, done.snapshot.name)
    assert "/added.md" not in _paths(engine, store.id)
    assert _paths(engine, store.id)["/fork_del.md"] == "fork_del base\n"


def test_a_merge_refuses_what_is_no_fork_of_the_target(
    engine: Engine, store: MemoryStore, actor: Actor
) -> None:
    history = engine.for_caller(actor=actor).history
    other = engine.stores.create("other")
    fork = history.fork(store.id, name="fork")
    with pytest.raises(Conflict, match="is not a fork"):
        history.merge(store.id, into=other.id)
    with pytest.raises(InvalidInput, match=f"is a fork of '{store.id}', not of '{other.id}'"):
        history.merge(fork.id, into=other.id)


def test_a_merge_is_all_or_nothing(engine: Engine, store: MemoryStore, actor: Actor) -> None:
    fork, _ = _scene(engine, store, actor)
    before = _paths(engine, store.id)
    small = Engine(engine.url, memory_limit=5)  # the origin holds 5: the create is refused
    try:
        with pytest.raises(StoreFull):
            small.for_caller(actor=actor).history.merge(fork.id, into=store.id)
    finally:
        small.close()
    assert _paths(engine, store.id) == before
    assert engine.snapshots.list(store.id).items == []


def test_the_merge_base_moves_with_each_merge(
    engine: Engine, store: MemoryStore, actor: Actor
) -> None:
    """A second merge compares with what the first agreed on: changes apart merge again
    without conflict copies; a memory changed on both sides since still gets one."""
    writer = engine.for_caller(actor=actor).memories
    history = engine.for_caller(actor=actor).history
    for name in ("a", "b", "c"):
        writer.create(store.id, f"/{name}.md", f"{name} 0\n")
    fork = history.fork(store.id, name="fork")

    def forked(name: str) -> str:
        return engine.memories.get_by_path(fork.id, f"/{name}.md").id

    def origin(name: str) -> str:
        return engine.memories.get_by_path(store.id, f"/{name}.md").id

    writer.update(fork.id, forked("a"), content="a 1 by fork\n")
    writer.create(fork.id, "/new.md", "new 1 by fork\n")
    writer.update(store.id, origin("b"), content="b 1 by origin\n")
    first = history.merge(fork.id, into=store.id)
    assert sorted(s.action.value for s in first.steps) == ["create", "update"]

    # Apart again: the fork edits what it changed and what it added; the origin edits
    # what it changed, and what came from the fork.
    writer.update(fork.id, forked("a"), content="a 2 by fork\n")
    writer.update(fork.id, forked("new"), content="new 2 by fork\n")
    writer.update(store.id, origin("b"), content="b 2 by origin\n")
    writer.update(store.id, origin("c"), content="c 2 by origin\n")
    second = history.merge(fork.id, into=store.id)

    assert [(s.action.value, s.path) for s in second.steps] == [
        ("update", "/a.md"),
        ("update", "/new.md"),
    ]
    assert second.base != first.base  # the fork's state at the first merge
    assert _paths(engine, store.id) == {
        "/a.md": "a 2 by fork\n",
        "/b.md": "b 2 by origin\n",
        "/c.md": "c 2 by origin\n",
        "/new.md": "new 2 by fork\n",
    }
    assert history.merge(fork.id, into=store.id).steps == []  # nothing new: nothing

    # A real two-sided change since the last merge still conflicts.
    writer.update(fork.id, forked("a"), content="a 3 by fork\n")
    writer.update(store.id, origin("a"), content="a 3 by origin\n")
    third = history.merge(fork.id, into=store.id)
    assert [s.action.value for s in third.steps] == ["conflict_copy"]
    state = _paths(engine, store.id)
    assert state["/a.md"] == "a 3 by origin\n"
    [copy] = [p for p in state if ".conflict-" in p]
    assert state[copy] == "a 3 by fork\n"


def test_retention_keeps_what_the_last_merge_needs(
    engine: Engine, store: MemoryStore, actor: Actor
) -> None:
    writer = engine.for_caller(actor=actor).memories
    history = engine.for_caller(actor=actor).history
    writer.create(store.id, "/a.md", "a 0\n")
    fork = history.fork(store.id, name="fork")
    engine.stores.update(fork.id, version_retention_s=3600)
    forked = engine.memories.get_by_path(fork.id, "/a.md").id
    writer.update(fork.id, forked, content="a 1\n")
    history.merge(fork.id, into=store.id)
    writer.update(fork.id, forked, content="a 2\n")
    later = utcnow() + timedelta(hours=2)

    [result] = engine.retention.prune(store_id=fork.id, now=later)
    assert result.versions == 1  # the fork's creation; "a 1" is the last merge's
    writer.update(store.id, engine.memories.get_by_path(store.id, "/a.md").id, content="o\n")
    [step] = history.merge(fork.id, into=store.id).steps  # "a 1" is still the base
    assert step.action.value == "conflict_copy"
