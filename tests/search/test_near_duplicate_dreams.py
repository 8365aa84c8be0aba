"""Near duplicates in the ``memfs-consolidate`` dreamer (SPEC §11 with §7's local
embedding model): the tiny test model of the semantic-search tests (tiny_model.py) maps
each topic word to one axis, so "cat dog" and "kitten puppy" are the same vector
(similarity 1.0) and "cat recipe" is 0.707 from both; the expected output is exact."""

from __future__ import annotations

from pathlib import Path

import pytest

from memfs.core.dreams import Dream, DreamStatus, OutputBehavior
from memfs.dreams import run_dream
from memfs.store import Engine


def planted(engine: Engine) -> str:
    store = engine.stores.create("near")
    engine.memories.create(store.id, "/pets/first.md", "cat dog\n")
    engine.memories.create(store.id, "/pets/second.md", "kitten puppy\n")
    engine.memories.create(store.id, "/mixed.md", "cat recipe\n")
    engine.memories.create(store.id, "/trip.md", "flight hotel\n")
    return store.id


def run(engine: Engine, store_id: str, behavior: OutputBehavior) -> Dream:
    engine.dreams.create(store_id, session_ids=None, model_id="memfs-consolidate",
                         output_behavior=behavior)
    claimed = engine.dreams.claim("test-runner")
    assert claimed is not None
    return run_dream(engine, claimed, decay_below=0.05)


@pytest.mark.parametrize("behavior", list(OutputBehavior))
def test_near_duplicates_merge_into_the_first_created(
    engine: Engine, model_dir: Path, behavior: OutputBehavior
) -> None:
    store_id = planted(engine)
    dream = run(engine, store_id, behavior)
    assert dream.status is DreamStatus.COMPLETED, dream.error_message
    assert dream.output_store_id is not None
    output = dream.output_store_id
    live = {m.path: m for m in engine.memories.all(output)}
    # The same memory is kept whether the dream wrote into a fork or the input.
    assert sorted(live) == ["/mixed.md", "/pets/first.md", "/trip.md"]
    kept = engine.memories.get(output, live["/pets/first.md"].id)
    assert kept.metadata == {"memfs_absorbed": "/pets/second.md"}
    assert dream.result is not None
    assert dream.result["changes"] == [
        {"by": "/pets/first.md", "path": "/pets/second.md", "removed": "near_duplicate",
         "similarity": 1.0},
    ]
    assert dream.result["merged_into"] == {"/pets/second.md": "/pets/first.md"}
    assert dream.result["removed"]["near_duplicates"] == 1
    assert dream.result["near_duplicates"] == "merged at cosine similarity >= 0.95"
    if behavior is OutputBehavior.CREATE_NEW:
        assert len(engine.memories.all(store_id)) == 4  # the input untouched


def test_the_threshold_is_a_setting(
    engine: Engine, model_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMFS_DREAM_NEAR_DUPLICATE", "0.7")
    store_id = planted(engine)
    dream = run(engine, store_id, OutputBehavior.UPDATE_EXISTING)
    assert dream.status is DreamStatus.COMPLETED, dream.error_message
    assert sorted(m.path for m in engine.memories.all(store_id)) == [
        "/pets/first.md", "/trip.md"]
    assert dream.result is not None
    assert dream.result["merged_into"] == {
        "/mixed.md": "/pets/first.md", "/pets/second.md": "/pets/first.md"}
    assert [c.get("similarity") for c in dream.result["changes"]] == [0.7071, 1.0]
    first = next(m for m in engine.memories.all(store_id) if m.path == "/pets/first.md")
    assert engine.memories.get(store_id, first.id).metadata == {
        "memfs_absorbed": "/mixed.md, /pets/second.md"}


def test_without_a_model_near_duplicates_are_skipped(engine: Engine) -> None:
    store_id = planted(engine)
    dream = run(engine, store_id, OutputBehavior.UPDATE_EXISTING)
    assert dream.result is not None
    assert dream.result["near_duplicates"] == (
        "skipped: no embedding model is configured (MEMFS_SEARCH_MODEL_DIR)")
    assert len(engine.memories.all(store_id)) == 4
