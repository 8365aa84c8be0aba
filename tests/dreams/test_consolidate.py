"""The ``memfs-consolidate`` dreamer and the dream job on the engine (SPEC §11): exact
output on a store with planted duplicates, decayed and superseded records; the
transcript of the dream's session; cancel; a restart with a running dream."""

from __future__ import annotations

from datetime import timedelta

import pytest

from memfs.core.dreams import DreamStatus, OutputBehavior
from memfs.core.errors import Conflict, InvalidInput, NotFound, StoreArchived
from memfs.core.model import ActorType, utcnow
from memfs.dreams import DreamRunner, run_dream
from memfs.dreams.apply import apply_dream
from memfs.store import Engine, ResourceSpec


def record(kind: str, body: str, **header: str) -> str:
    lines = [f"type: {kind}"] + [f"{k}: {v}" for k, v in header.items()]
    return "---\n" + "\n".join(lines) + "\n---\n" + body + "\n"


def planted(engine: Engine) -> str:
    """A store with two exact duplicates of one note, a decayed record and a record
    superseding another; returns its id."""
    store = engine.stores.create("planted")
    engine.memories.create(store.id, "/notes/coffee.md", "Alice takes her coffee black.\n")
    engine.memories.create(store.id, "/inbox/coffee-copy.md", "Alice takes her coffee black.\n")
    engine.memories.create(store.id, "/inbox/coffee-again.md", "Alice takes her coffee black.\n")
    engine.memories.create(
        store.id, "/facts/old-city.md", record("semantic", "Alice lives in Lyon.", importance="0.9")
    )
    engine.memories.create(
        store.id,
        "/facts/city.md",
        "---\ntype: semantic\nimportance: 0.9\nrelations:\n"
        "  - {type: supersedes, target: /facts/old-city.md}\n---\nAlice lives in Paris.\n",
    )
    engine.memories.create(
        store.id, "/episodes/weather.md", record("episodic", "It rained.", importance="0.01")
    )
    engine.memories.create(store.id, "/profile.md", record("profile", "Alice.", importance="1"))
    return store.id


def dream_and_run(engine: Engine, store_id: str, **options: object) -> object:
    engine.dreams.create(
        store_id,
        session_ids=None,
        model_id="memfs-consolidate",
        output_behavior=OutputBehavior.UPDATE_EXISTING,
        **options,  # type: ignore[arg-type]
    )
    claimed = engine.dreams.claim("test-runner")
    assert claimed is not None
    return run_dream(engine, claimed, decay_below=0.05)


def test_consolidation_gives_the_exact_expected_store(engine: Engine) -> None:
    store_id = planted(engine)
    dream = dream_and_run(engine, store_id)
    assert dream.status is DreamStatus.COMPLETED, dream.error_message  # type: ignore[attr-defined]
    live = {m.path: m for m in engine.memories.all(store_id)}
    assert sorted(live) == ["/facts/city.md", "/notes/coffee.md", "/profile.md"]
    kept = engine.memories.get(store_id, live["/notes/coffee.md"].id)
    assert kept.metadata == {"memfs_absorbed": "/inbox/coffee-again.md, /inbox/coffee-copy.md"}
    assert dream.result == {  # type: ignore[attr-defined]
        "changes": [
            {"by": "/facts/city.md", "path": "/facts/old-city.md", "removed": "superseded"},
            {"path": "/episodes/weather.md", "removed": "decayed"},
            {"by": "/notes/coffee.md", "path": "/inbox/coffee-again.md", "removed": "duplicate"},
            {"by": "/notes/coffee.md", "path": "/inbox/coffee-copy.md", "removed": "duplicate"},
        ],
        "decay_below": 0.05,
        "dreamer": "memfs-consolidate",
        "memories_read": 7,
        # Each removed duplicate → the memory kept in its place.
        "merged_into": {
            "/inbox/coffee-again.md": "/notes/coffee.md",
            "/inbox/coffee-copy.md": "/notes/coffee.md",
        },
        "near_duplicates": "skipped: no embedding model is configured (MEMFS_SEARCH_MODEL_DIR)",
        "output_store_id": store_id,
        "removed": {"decayed": 1, "duplicates": 2, "near_duplicates": 0, "superseded": 1},
        "transcript_events_read": 0,
    }
    # An automatic snapshot first; every version the dream wrote names its session.
    snapshots = engine.snapshots.list(store_id).items
    assert [s.name.startswith("auto-dream-") for s in snapshots] == [True]
    session_id = dream.session_id  # type: ignore[attr-defined]
    assert session_id is not None
    written = [
        v for v in engine.versions.list(store_id, limit=100).items
        if v.created_by is not None and v.created_by.type is ActorType.SESSION
    ]
    assert len(written) == 4
    assert {v.created_by.id for v in written if v.created_by} == {session_id}
    # Its transcript says what it read and wrote.
    lines = [e.text() for e in engine.transcripts.all(session_id)]
    assert lines[0].startswith("snapshot auto-dream-")
    assert "remove /facts/old-city.md: superseded by /facts/city.md" in lines
    assert lines[-1].startswith("completed")


def test_the_same_store_gives_the_same_output(engine: Engine) -> None:
    results = []
    for _ in range(2):
        ended = dream_and_run(engine, planted(engine))
        result = dict(ended.result)  # type: ignore[attr-defined]
        result.pop("output_store_id")
        results.append(result)
    assert results[0] == results[1]


def test_create_refusals_are_named(engine: Engine) -> None:
    store_id = planted(engine)
    with pytest.raises(InvalidInput) as long_text:
        engine.dreams.create(store_id, session_ids=None, model_id="memfs-consolidate",
                             instructions="x" * 4097)
    assert long_text.value.code == "instructions_too_long"
    with pytest.raises(InvalidInput) as many:
        engine.dreams.create(store_id, session_ids=[f"sesn_{i}" for i in range(101)],
                             model_id="memfs-consolidate")
    assert many.value.code == "too_many_sessions"
    with pytest.raises(NotFound) as unknown:
        engine.dreams.create(store_id, session_ids=["sesn_nope"], model_id="memfs-consolidate")
    assert unknown.value.code == "session_not_found"
    engine.dreams.create(store_id, session_ids=None, model_id="memfs-consolidate")
    with pytest.raises(Conflict) as active:
        engine.dreams.create(store_id, session_ids=None, model_id="memfs-consolidate")
    assert active.value.code == "dream_already_active"
    archived = engine.stores.create("archived")
    engine.stores.archive(archived.id)
    with pytest.raises(StoreArchived) as refused:
        engine.dreams.create(archived.id, session_ids=None, model_id="memfs-consolidate")
    assert refused.value.code == "store_archived"


def test_a_canceled_dream_stops_at_its_next_step(engine: Engine) -> None:
    store_id = planted(engine)
    engine.dreams.create(store_id, session_ids=None, model_id="memfs-consolidate",
                         output_behavior=OutputBehavior.UPDATE_EXISTING)
    claimed = engine.dreams.claim("test-runner")
    assert claimed is not None
    steps: list[str] = []

    def cancel_after_first_removal(line: str) -> None:
        steps.append(line)
        if line.startswith("remove "):
            engine.dreams.cancel(claimed.id)

    ended = run_dream(engine, claimed, progress=cancel_after_first_removal, decay_below=0.05)
    assert ended.status is DreamStatus.CANCELED
    assert ended.ended_at is not None
    # The first removal was announced, then the cancel stopped it before doing it.
    assert len(engine.memories.all(store_id)) == 7
    assert steps[-1] == "canceled"


def test_a_restart_fails_the_dream_a_stopped_server_left_running(engine: Engine) -> None:
    store_id = planted(engine)
    dream = engine.dreams.create(store_id, session_ids=None, model_id="memfs-consolidate")
    assert engine.dreams.claim("a-server-that-stops") is not None
    # Not stale yet: a runner starting now leaves it alone.
    assert engine.dreams.fail_stale(30.0) == []
    later = utcnow() + timedelta(seconds=31)
    assert engine.dreams.fail_stale(30.0, at=later) == [dream.id]
    failed = engine.dreams.get(dream.id)
    assert failed.status is DreamStatus.FAILED
    assert failed.error_type == "dream_interrupted"


def test_the_runner_fails_stale_dreams_at_start_and_runs_pending_ones(engine: Engine) -> None:
    store_id = planted(engine)
    stale = engine.dreams.create(store_id, session_ids=None, model_id="memfs-consolidate")
    engine.dreams.claim("gone")
    runner = DreamRunner(engine, stale_s=0.0, poll_s=0.05)
    assert runner.start() == [stale.id]
    other = engine.stores.create("other").id
    engine.memories.create(other, "/a.md", "same\n")
    engine.memories.create(other, "/b.md", "same\n")
    pending = engine.dreams.create(other, session_ids=None, model_id="memfs-consolidate",
                                   output_behavior=OutputBehavior.UPDATE_EXISTING)
    runner.wake()
    try:
        deadline = utcnow() + timedelta(seconds=20)
        while engine.dreams.get(pending.id).status in (DreamStatus.PENDING, DreamStatus.RUNNING):
            assert utcnow() < deadline, "the runner never ended the dream"
            runner._wake.wait(0.05)
    finally:
        runner.stop()
    assert engine.dreams.get(pending.id).status is DreamStatus.COMPLETED
    assert [m.path for m in engine.memories.all(other)] == ["/a.md"]


def test_a_language_model_without_an_endpoint_fails_at_once(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    store_id = planted(engine)
    engine.dreams.create(store_id, session_ids=None, model_id="claude-opus-4-7")
    claimed = engine.dreams.claim("r")
    assert claimed is not None
    ended = run_dream(engine, claimed)
    assert ended.status is DreamStatus.FAILED
    assert ended.error_type == "model_endpoint_not_configured"
    assert "ANTHROPIC_API_KEY" in (ended.error_message or "")


def test_deleting_a_session_erases_its_transcript(engine: Engine) -> None:
    store_id = planted(engine)
    made, _ = engine.sessions.create([ResourceSpec(store_id, "read_only")], with_token=False)
    engine.transcripts.append(made.id, [{"type": "user.message", "content": "hi"}])
    assert engine.transcripts.count([made.id]) == {made.id: 1}
    engine.sessions.delete(made.id)
    assert engine.transcripts.count([made.id]) == {}


def test_create_new_dreams_into_a_fork_and_applying_merges_it_back(engine: Engine) -> None:
    """SPEC §11: ``create_new`` writes into a fork of the input (§10) and leaves the
    input alone; applying the dream merges the fork back (after a snapshot)."""
    store_id = planted(engine)
    before = {m.path: m.content for m in engine.memories.all(store_id)}
    engine.dreams.create(
        store_id, session_ids=None, model_id="memfs-consolidate",
        output_behavior=OutputBehavior.CREATE_NEW,
    )
    claimed = engine.dreams.claim("test-runner")
    assert claimed is not None
    dream = run_dream(engine, claimed, decay_below=0.05)
    assert dream.status is DreamStatus.COMPLETED, dream.error_message
    output = dream.output_store_id
    assert output is not None
    assert output != store_id
    assert engine.stores.get(output).forked_from == store_id
    assert {m.path: m.content for m in engine.memories.all(store_id)} == before
    # The kept duplicate is the one created first in the input, as with
    # update_existing (the fork's copies count from their originals).
    kept = ["/facts/city.md", "/notes/coffee.md", "/profile.md"]
    assert sorted(m.path for m in engine.memories.all(output)) == kept
    diff = engine.history.diff(store_id, "now", output, "now")
    changes = [(e.status.value, e.old_path) for e in diff.entries]
    assert sorted(c for c in changes if c[0] != "modified") == [
        ("removed", "/episodes/weather.md"), ("removed", "/facts/old-city.md"),
        ("removed", "/inbox/coffee-again.md"), ("removed", "/inbox/coffee-copy.md"),
    ]
    plan, carried = apply_dream(engine, dream, actor=None)
    assert plan.snapshot is not None
    assert carried == 1
    assert sorted(m.path for m in engine.memories.all(store_id)) == kept
    # The note of what the kept memory absorbed comes along (a metadata-only change).
    coffee = next(m for m in engine.memories.all(store_id) if m.path == "/notes/coffee.md")
    assert engine.memories.get(store_id, coffee.id).metadata == {
        "memfs_absorbed": "/inbox/coffee-again.md, /inbox/coffee-copy.md"}
