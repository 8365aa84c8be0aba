"""The engine's operations calls on both dialects: the gauges ``memfs serve`` exposes
(Engine.gauges), the write observer (Engine.observe_writes), and backup_to's refusal of
PostgreSQL (README "Backup and restore", "Metrics")."""

from __future__ import annotations

from pathlib import Path

import pytest

from memfs.core.errors import InvalidInput
from memfs.store import Engine


def test_gauges_name_every_store_s_feed_seq_the_size_and_dreams(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("MEMFS_SEARCH_MODEL_DIR", raising=False)
    first = engine.stores.create("First")
    second = engine.stores.create("Second")
    engine.memories.create(first.id, "/a.md", "a\n")
    engine.memories.create(first.id, "/b.md", "b\n")
    engine.dreams.create(first.id, session_ids=None, model_id="memfs-consolidate")
    canceled = engine.dreams.create(second.id, session_ids=None, model_id="memfs-consolidate")
    engine.dreams.cancel(canceled.id)
    seqs, size_bytes, queued, dreams = engine.gauges()
    assert seqs == {first.id: engine.feed.last_seq(first.id), second.id: 0}
    assert seqs[first.id] >= 2
    assert size_bytes > 0
    # Without an embedding model nothing is embedded, so nothing is said to wait
    # (the queue keeps the two memories for when a model is configured).
    assert engine.search.index_lag().pending == 2
    assert queued == 0
    assert dreams == {
        "pending": 1, "running": 0, "completed": 0, "failed": 0, "canceled": 1
    }


def test_the_write_observer_is_told_of_each_write(engine: Engine) -> None:
    told: list[tuple[bool, float]] = []
    engine.observe_writes(lambda committed, duration_s: told.append((committed, duration_s)))
    store = engine.stores.create("Notes")
    with pytest.raises(InvalidInput):
        engine.memories.create(store.id, "no-slash", "x\n")
    engine.observe_writes(None)
    engine.memories.create(store.id, "/quiet.md", "x\n")
    assert [committed for committed, _ in told] == [True, False]
    assert all(duration_s >= 0 for _, duration_s in told)


def test_backup_to_is_for_sqlite(engine: Engine, tmp_path: Path) -> None:
    if engine.dialect == "sqlite":
        counts = engine.backup_to(tmp_path / "copy.db")
        assert counts["stores"] == 0
        return
    with pytest.raises(InvalidInput, match="back up PostgreSQL with pg_dump"):
        engine.backup_to(tmp_path / "copy.db")
    assert not (tmp_path / "copy.db").exists()
