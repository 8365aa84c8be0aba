"""Semantic and hybrid search in the engine (SPEC §7), on SQLite and
PostgreSQL, with a tiny model the tests write (tiny_model.py): ranking with known
answers in English and Japanese, the durable queue and its lag, a write found by words
at once and by meaning once embedded, deletion and redaction removing the vector."""

from __future__ import annotations

from pathlib import Path

import pytest
from _support.polling import wait_until
from sqlalchemy import create_engine, text
from tiny_model import DIMENSIONS

from memfs.core.config import SEARCH_MODEL_ENV, database_url
from memfs.core.errors import InvalidInput, SearchUnavailable
from memfs.core.model import Actor, DeleteMode, MemoryStore
from memfs.core.visibility import Viewer
from memfs.store import Engine

# path → content; every query below knows which memory it must rank first, by meaning:
# the query's words are not in that memory (full text finds nothing).
CORPUS = {
    "/notes/db-tuning.md": "Tune postgres: the query planner and the table index.",
    "/notes/pets.md": "My cat sleeps on the keyboard-free sofa with a kitten.",
    "/notes/bread.md": "Bake bread in the oven: a recipe for the weekend.",
    "/notes/editor.md": "vim is my editor; emacs is another.",
    "/jp/trip.md": "来月の旅行はホテルを予約した。空港まで電車で行く。",
    "/jp/cooking.md": "週末に料理をする。レシピはノートにある。",
}


def _fill(engine: Engine, store: MemoryStore, actor: Actor) -> dict[str, str]:
    return {
        path: engine.for_caller(actor=actor).memories.create(store.id, path, content).id
        for path, content in CORPUS.items()
    }


def _paths(engine: Engine, store: MemoryStore, query: str, mode: str = "semantic") -> list[str]:
    return [hit.path for hit in engine.search.query(query, [store.id], mode=mode)]


@pytest.mark.usefixtures("model_dir")
def test_ranking_by_meaning_in_english_and_japanese(
    engine: Engine, store: MemoryStore, actor: Actor
) -> None:
    _fill(engine, store, actor)
    assert engine.search.index_lag().pending == len(CORPUS)
    assert engine.search.embed_pending() == len(CORPUS)
    assert engine.search.index_lag().pending == 0
    assert _paths(engine, store, "sqlite", mode="text") == []  # not a word of any memory
    assert _paths(engine, store, "sqlite")[0] == "/notes/db-tuning.md"
    assert _paths(engine, store, "データベース")[0] == "/notes/db-tuning.md"
    assert _paths(engine, store, "puppy")[0] == "/notes/pets.md"
    assert _paths(engine, store, "flight")[0] == "/jp/trip.md"
    assert _paths(engine, store, "飛行機")[0] == "/jp/trip.md"
    assert set(_paths(engine, store, "料理")[:2]) == {"/notes/bread.md", "/jp/cooking.md"}


@pytest.mark.usefixtures("model_dir")
def test_hybrid_is_the_default_and_fuses_both_rankings(
    engine: Engine, store: MemoryStore, actor: Actor
) -> None:
    _fill(engine, store, actor)
    engine.search.embed_pending()
    # "recipe" is a word of bread.md (both rankings) and means cooking.md (one ranking).
    assert _paths(engine, store, "recipe", mode="auto")[:2] == [
        "/notes/bread.md",
        "/jp/cooking.md",
    ]
    assert _paths(engine, store, "recipe", mode="text") == ["/notes/bread.md"]
    # A negated word leaves semantic hits holding it out too.
    assert "/notes/bread.md" not in _paths(engine, store, "recipe -oven", mode="auto")


def test_without_a_model_auto_is_full_text_and_semantic_names_the_setting(
    engine: Engine, store: MemoryStore, actor: Actor, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(SEARCH_MODEL_ENV, raising=False)
    _fill(engine, store, actor)
    assert _paths(engine, store, "recipe", mode="auto") == ["/notes/bread.md"]
    for mode in ("semantic", "hybrid"):
        with pytest.raises(SearchUnavailable, match=f"not configured: {SEARCH_MODEL_ENV}"):
            engine.search.query("recipe", [store.id], mode=mode)
    with pytest.raises(InvalidInput, match="search mode must be one of"):
        engine.search.query("recipe", [store.id], mode="fuzzy")
    assert engine.search.index_lag().model is None


def test_a_broken_model_directory_is_named(
    engine: Engine, store: MemoryStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    empty = tmp_path / "no-model"
    empty.mkdir()
    monkeypatch.setenv(SEARCH_MODEL_ENV, str(empty))
    with pytest.raises(SearchUnavailable, match="lacks model.safetensors"):
        engine.search.query("recipe", [store.id], mode="semantic")
    assert engine.search.query("recipe", [store.id]) == []  # auto: full text still answers
    (empty / "model.safetensors").write_bytes(b"not a tensor file")
    (empty / "tokenizer.json").write_text("{}")
    with pytest.raises(SearchUnavailable, match="model.safetensors"):
        engine.search.query("recipe", [store.id], mode="semantic")


@pytest.mark.usefixtures("model_dir")
def test_a_write_is_found_by_words_at_once_and_by_meaning_after_the_lag(
    engine: Engine, database: str, store: MemoryStore, actor: Actor
) -> None:
    """Stale-after-write: full text is in the write's transaction; the vector follows
    from the embedder of another engine (a daemon or server) on the same database."""
    with Engine(database) as daemon:
        assert daemon.start_embedder()
        _write_then_search(engine, store, actor)


def _write_then_search(engine: Engine, store: MemoryStore, actor: Actor) -> None:
    memory = engine.for_caller(actor=actor).memories.create(
        store.id, "/new.md", "Booked a hotel for the trip"
    )
    assert _paths(engine, store, "hotel", mode="auto") == ["/new.md"]
    wait_until(lambda: _paths(engine, store, "airport") == ["/new.md"], "its vector", 60)
    assert engine.search.index_lag().pending == 0
    # New content: the old vector goes with the write; the new one follows.
    engine.for_caller(actor=actor).memories.update(
        store.id, memory.id, content="A cake in the oven"
    )
    assert _paths(engine, store, "airport") == []
    wait_until(lambda: _paths(engine, store, "recipe") == ["/new.md"], "the new vector", 60)


def _vector_rows(database: str, memory_id: str) -> int:
    sa = create_engine(database)
    try:
        with sa.connect() as conn:
            return int(
                conn.execute(
                    text("SELECT count(*) FROM search_vectors WHERE memory_id = :m"),
                    {"m": memory_id},
                ).scalar_one()
                + conn.execute(
                    text("SELECT count(*) FROM search_queue WHERE memory_id = :m"),
                    {"m": memory_id},
                ).scalar_one()
            )
    finally:
        sa.dispose()


@pytest.mark.usefixtures("model_dir")
@pytest.mark.parametrize("mode", [DeleteMode.REDACT, DeleteMode.HARD_DELETE])
def test_redaction_and_hard_delete_remove_the_vector(
    engine: Engine, database: str, store: MemoryStore, actor: Actor, mode: DeleteMode
) -> None:
    ids = _fill(engine, store, actor)
    engine.search.embed_pending()
    doomed = ids["/notes/pets.md"]
    assert _vector_rows(database, doomed) == 1
    engine.for_caller(actor=actor).memories.delete(store.id, doomed, mode=mode)
    assert _vector_rows(database, doomed) == 0
    assert "/notes/pets.md" not in _paths(engine, store, "puppy")
    # The redaction's "[REDACTED]" replacement is not queued: the memory is not live.
    assert engine.search.index_lag().pending == 0


@pytest.mark.usefixtures("model_dir")
def test_the_vector_bytes_leave_the_sqlite_file(actor: Actor, tmp_path: Path) -> None:
    """secure_delete zeroes the freed row; the erasing write checkpoints the WAL."""
    database = database_url(str(tmp_path / "erase.db"))
    with Engine(database) as engine:
        store = engine.stores.create("s")
        memory = engine.for_caller(actor=actor).memories.create(
            store.id, "/secret.md", "cat dog kitten"
        )
        engine.search.embed_pending()
        sa = create_engine(database)
        with sa.connect() as conn:
            vector = conn.execute(
                text("SELECT vector FROM search_vectors WHERE memory_id = :m"), {"m": memory.id}
            ).scalar_one()
        sa.dispose()
        assert len(vector) == 4 * DIMENSIONS
        engine.for_caller(actor=actor).memories.delete(
            store.id, memory.id, mode=DeleteMode.HARD_DELETE
        )
        files = [p for p in tmp_path.iterdir() if p.name.startswith("erase.db")]
        assert files
        assert all(bytes(vector) not in p.read_bytes() for p in files)
        assert list(engine.iter_fsck_findings()) == []


@pytest.mark.usefixtures("model_dir")
def test_filters_and_a_soft_delete_and_restore(
    engine: Engine, store: MemoryStore, actor: Actor
) -> None:
    ids = _fill(engine, store, actor)
    other = engine.stores.create("other")
    engine.for_caller(actor=actor).memories.create(other.id, "/elsewhere.md", "sqlite tables")
    engine.search.embed_pending()
    assert [h.path for h in engine.search.query("postgres", [other.id], mode="semantic")] == [
        "/elsewhere.md"
    ]
    everywhere = [h.path for h in engine.search.query("postgres", None, mode="semantic")]
    assert set(everywhere[:2]) == {"/elsewhere.md", "/notes/db-tuning.md"}
    below = engine.search.query("sqlite", [store.id], path_prefix="/jp/", mode="semantic")
    assert {h.path for h in below} <= {"/jp/trip.md", "/jp/cooking.md"}
    engine.for_caller(actor=actor).memories.delete(store.id, ids["/notes/db-tuning.md"])
    assert _paths(engine, store, "sqlite") == []
    engine.for_caller(actor=actor).memories.restore(store.id, ids["/notes/db-tuning.md"])
    engine.search.embed_pending()
    assert _paths(engine, store, "sqlite") == ["/notes/db-tuning.md"]


@pytest.mark.usefixtures("model_dir")
def test_reindex_rebuilds_text_and_vectors(
    engine: Engine, store: MemoryStore, actor: Actor
) -> None:
    _fill(engine, store, actor)
    engine.search.embed_pending()
    assert engine.search.reindex([store.id]) == len(CORPUS)
    assert engine.search.index_lag().pending == len(CORPUS)
    assert _paths(engine, store, "sqlite") == []
    assert engine.search.embed_pending() == len(CORPUS)
    assert _paths(engine, store, "sqlite")[0] == "/notes/db-tuning.md"
    assert engine.search.reindex(None) == len(CORPUS)
    assert _paths(engine, store, "bread", mode="text") == ["/notes/bread.md"]


@pytest.mark.usefixtures("model_dir")
@pytest.mark.parametrize("mode", ["semantic", "hybrid"])
def test_a_viewer_never_finds_by_meaning_what_it_can_not_see(
    engine: Engine, store: MemoryStore, actor: Actor, mode: str
) -> None:
    """SPEC §7 with visibility (SPEC §6): a record of bob's is no hit for alice, by
    meaning as by words."""
    bobs = "---\ntype: preference\nuser_id: bob\n---\nMy cat and the kitten\n"
    engine.for_caller(actor=actor).memories.create(store.id, "/bob.md", bobs)
    engine.for_caller(actor=actor).memories.create(store.id, "/plain.md", "a dog and a puppy")
    engine.search.embed_pending()
    paths = {h.path for h in engine.search.query("pets", [store.id], mode=mode)}
    assert paths == {"/bob.md", "/plain.md"}
    for viewer in (Viewer(user_id="alice"), Viewer()):
        hits = engine.for_caller(viewer=viewer).search.query("pets", [store.id], mode=mode)
        assert {h.path for h in hits} == {"/plain.md"}
    bob = engine.for_caller(viewer=Viewer(user_id="bob")).search.query(
        "pets", [store.id], mode=mode
    )
    assert {h.path for h in bob} == {"/bob.md", "/plain.md"}
