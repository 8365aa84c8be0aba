"""Restoring a whole store to a point (SPEC §10 point-in-time recovery): new versions
only, all or nothing, an automatic snapshot first, undone by restoring to it."""

from __future__ import annotations

import pytest
from store_helpers import snapshot

from memfs.core.errors import (
    InvalidPoint,
    NotFound,
    PreconditionFailed,
    RedactedContent,
    StoreArchived,
)
from memfs.core.history import RestoreAction
from memfs.core.model import Actor, DeleteMode, MemoryStore
from memfs.store import Engine


def _state(engine: Engine, store: MemoryStore) -> list[tuple[str, str, str | None]]:
    return [
        (m.id, m.path, engine.memories.get(store.id, m.id).content)
        for m in engine.memories.all(store.id)
    ]


def _agent_session(engine: Engine, store: MemoryStore, actor: Actor) -> dict[str, str]:
    """Memories, the snapshot ``before``, then what an agent did."""
    memories = engine.for_caller(actor=actor).memories
    prefs = memories.create(store.id, "/user/prefs.md", "tz: Berlin\n")
    todo = memories.create(store.id, "/inbox/todo.md", "- [ ] notes\n")
    scratch = memories.create(store.id, "/inbox/scratch.md", "idea\n")
    engine.for_caller(actor=actor).snapshots.create(store.id, "before")
    memories.update(store.id, prefs.id, content="tz: Lisbon\n")
    memories.update(store.id, todo.id, path="/projects/todo.md")
    memories.delete(store.id, scratch.id)
    journal = memories.create(store.id, "/journal/today.md", "moved things\n")
    return {"prefs": prefs.id, "todo": todo.id, "scratch": scratch.id, "journal": journal.id}


def test_a_restore_brings_the_store_back_and_is_undone_by_its_snapshot(
    engine: Engine, store: MemoryStore, actor: Actor
) -> None:
    made = _agent_session(engine, store, actor)
    restores = engine.for_caller(actor=actor).restores
    plan = restores.plan(store.id, "before")
    assert not plan.applied
    assert [(s.action, s.memory_id) for s in plan.steps] == [
        (RestoreAction.BRING_BACK, made["scratch"]),
        (RestoreAction.CHANGE, made["todo"]),
        (RestoreAction.DELETE, made["journal"]),
        (RestoreAction.CHANGE, made["prefs"]),
    ]
    after_agent = _state(engine, store)

    done = restores.restore(store.id, "before", reason="undo the agent")

    assert done.applied
    assert done.snapshot is not None
    assert done.snapshot.name.startswith("auto-restore-")
    assert _state(engine, store) == [
        (made["scratch"], "/inbox/scratch.md", "idea\n"),
        (made["todo"], "/inbox/todo.md", "- [ ] notes\n"),
        (made["prefs"], "/user/prefs.md", "tz: Berlin\n"),
    ]
    assert engine.history.diff(store.id, "before", store.id, "now").entries == []
    event = engine.feed.audit_events(store.id)[0]
    assert event["action"] == "store_restore"
    assert event["reason"] == "undo the agent"
    assert event["metadata"] == {
        "point": "before",
        "snapshot": done.snapshot.name,
        "changed": "2",
        "deleted": "1",
        "brought_back": "1",
        "kept": "0",
    }

    restores.restore(store.id, done.snapshot.name)  # undo the undo
    assert _state(engine, store) == after_agent
    assert restores.restore(store.id, "now").snapshot is None  # nothing to do


def test_memories_that_swapped_paths_swap_back(
    engine: Engine, store: MemoryStore, actor: Actor
) -> None:
    memories = engine.for_caller(actor=actor).memories
    a = memories.create(store.id, "/a", "A")
    b = memories.create(store.id, "/b", "B")
    engine.for_caller(actor=actor).snapshots.create(store.id, "s")
    memories.update(store.id, a.id, path="/tmp")
    memories.update(store.id, b.id, path="/a")
    memories.update(store.id, a.id, path="/b")
    engine.for_caller(actor=actor).restores.restore(store.id, "s")
    assert _state(engine, store) == [(a.id, "/a", "A"), (b.id, "/b", "B")]


def test_redacted_content_stays_redacted(engine: Engine, store: MemoryStore, actor: Actor) -> None:
    memories = engine.for_caller(actor=actor).memories
    secret = memories.create(store.id, "/secret", "hunter2")
    forgotten = memories.create(store.id, "/forgotten", "forget me")
    engine.for_caller(actor=actor).snapshots.create(store.id, "s")
    memories.update(store.id, secret.id, content="rotated")
    engine.versions.redact(store.id, secret.memory_version_id)
    memories.delete(store.id, forgotten.id, mode=DeleteMode.REDACT)
    plan = engine.for_caller(actor=actor).restores.restore(store.id, "s")
    assert {(s.action, s.memory_id) for s in plan.steps} == {
        (RestoreAction.KEEP, secret.id),
        (RestoreAction.KEEP, forgotten.id),
    }
    assert plan.snapshot is None
    assert _state(engine, store) == [(secret.id, "/secret", "rotated")]


def test_a_failure_half_way_changes_nothing(
    engine: Engine, store: MemoryStore, actor: Actor, monkeypatch: pytest.MonkeyPatch
) -> None:
    _agent_session(engine, store, actor)
    before = snapshot(engine, store.id)
    snapshots_before = engine.snapshots.list(store.id, limit=100)
    from memfs.store import restores

    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(restores, "restore_memory", broken)  # after the deletions
    with pytest.raises(RuntimeError):
        engine.for_caller(actor=actor).restores.restore(store.id, "before")
    assert snapshot(engine, store.id) == before
    assert engine.snapshots.list(store.id, limit=100) == snapshots_before


def test_refusals(engine: Engine, store: MemoryStore, actor: Actor) -> None:
    restores = engine.for_caller(actor=actor).restores
    with pytest.raises(InvalidPoint):
        restores.restore(store.id, "no-such-snapshot")
    engine.for_caller(actor=actor).memories.create(store.id, "/a", "a")
    engine.stores.archive(store.id)
    with pytest.raises(StoreArchived):
        restores.restore(store.id, "2000-01-01")


# ----------------------------------------------------------------- one memory


def test_revert_one_memory_to_a_point_or_a_version(
    engine: Engine, store: MemoryStore, actor: Actor
) -> None:
    writer = engine.for_caller(actor=actor)
    memory = writer.memories.create(store.id, "/a.md", "one\n")
    writer.snapshots.create(store.id, "s")
    second = writer.memories.update(store.id, memory.id, content="two\n", path="/b.md")
    writer.memories.update(store.id, memory.id, content="three\n")
    other = writer.memories.create(store.id, "/other.md", "other\n")

    back = writer.restores.revert(store.id, memory.id, "s")
    assert (back.path, back.content) == ("/a.md", "one\n")
    [newest, *_] = engine.versions.list(store.id, memory_id=memory.id).items
    assert newest.created_by == actor
    again = writer.restores.revert(store.id, memory.id, second.memory_version_id)
    assert (again.path, again.content) == ("/b.md", "two\n")
    with pytest.raises(PreconditionFailed):
        writer.restores.revert(store.id, memory.id, "s", expected_sha256="0" * 64)
    with pytest.raises(NotFound, match="was not live at s"):
        writer.restores.revert(store.id, other.id, "s")
    events = [e for e in engine.feed.audit_events(store.id) if e["action"] == "memory_revert"]
    assert [e["metadata"]["point"] for e in events] == [second.memory_version_id, "s"]


def test_revert_brings_a_deleted_memory_back_and_never_redacted_content(
    engine: Engine, store: MemoryStore, actor: Actor
) -> None:
    writer = engine.for_caller(actor=actor)
    memory = writer.memories.create(store.id, "/a.md", "secret\n")
    writer.snapshots.create(store.id, "s")
    writer.memories.update(store.id, memory.id, content="public\n")
    writer.memories.delete(store.id, memory.id)

    back = writer.restores.revert(store.id, memory.id, "s")
    assert (back.id, back.path, back.content) == (memory.id, "/a.md", "secret\n")
    writer.memories.update(store.id, memory.id, content="later\n")
    writer.versions.redact(store.id, memory.memory_version_id)
    with pytest.raises(RedactedContent, match="can't come back"):
        writer.restores.revert(store.id, memory.id, "s")
    assert engine.memories.get(store.id, memory.id).content == "later\n"
