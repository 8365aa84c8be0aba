"""Full-text search in the engine (SPEC §7), on SQLite and PostgreSQL: ranking
on a corpus with known answers (English and Japanese), the query language, filters, the
index following every write in its transaction, redaction reaching the index."""

from __future__ import annotations

import secrets
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text

from memfs.core.config import SEARCH_MODEL_ENV, database_url
from memfs.core.errors import InvalidInput, InvalidPath, NotFound, SearchUnavailable
from memfs.core.model import Actor, DeleteMode, MemoryStore
from memfs.core.query import parse
from memfs.store import Engine
from memfs.store._db import alembic_config

# path → content; the tests below know which memory each query must rank first.
CORPUS = {
    "/notes/fuse-kernel-cache.md": (
        "The kernel caches attributes and directory entries. FUSE kernel caching is "
        "controlled by the entry timeout; the kernel asks again after it expires."
    ),
    "/notes/sqlite-wal.md": (
        "SQLite in WAL mode lets readers proceed while one writer appends to the WAL; "
        "a checkpoint moves pages back. The kernel page cache is not involved here."
    ),
    "/notes/postgres.md": (
        "PostgreSQL serializes writers per store with SELECT FOR UPDATE on the store row."
    ),
    "/notes/trio.md": "Never block the trio event loop: run blocking calls in worker threads.",
    "/jp/kioku.md": (
        "長期記憶の設計について。記憶装置は会話をまたいで知識を保存する。"
        "記憶の検索は全文検索で行う。"
    ),
    "/jp/tokyo.md": "東京タワーは東京の観光名所です。夜景がきれいです。",
    "/jp/mixed.md": "FUSE をマウントすると記憶が見える。",
}


def paths(hits: list) -> list[str]:  # type: ignore[type-arg]
    return [hit.path for hit in hits]


@pytest.fixture
def corpus(engine: Engine, store: MemoryStore, actor: Actor) -> dict[str, str]:
    """The CORPUS written into ``store``; path → memory id."""
    return {
        path: engine.create_memory(store.id, path, content, actor=actor).id
        for path, content in CORPUS.items()
    }


@pytest.mark.parametrize(
    ("query", "first"),
    [
        ("kernel", "/notes/fuse-kernel-cache.md"),  # three times there, once elsewhere
        ("wal", "/notes/sqlite-wal.md"),
        ("writers store", "/notes/postgres.md"),
        ("記憶", "/jp/kioku.md"),  # two characters: shorter than a trigram
        ("記憶装置", "/jp/kioku.md"),
        ("東京タワー", "/jp/tokyo.md"),
        ("東京", "/jp/tokyo.md"),
    ],
)
def test_the_known_answer_ranks_first(
    engine: Engine, store: MemoryStore, corpus: dict[str, str], query: str, first: str
) -> None:
    hits = engine.search(query, [store.id])
    assert hits, query
    assert hits[0].path == first
    assert hits[0].memory_id == corpus[first]
    assert hits[0].store_id == store.id
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


def test_words_must_all_match(engine: Engine, store: MemoryStore, corpus: dict[str, str]) -> None:
    assert paths(engine.search("kernel checkpoint", [store.id])) == ["/notes/sqlite-wal.md"]
    assert engine.search("kernel postgresql", [store.id]) == []


def test_case_does_not_matter(engine: Engine, store: MemoryStore, corpus: dict[str, str]) -> None:
    assert paths(engine.search("TRIO", [store.id])) == ["/notes/trio.md"]


def test_phrases_match_words_in_order(
    engine: Engine, store: MemoryStore, corpus: dict[str, str]
) -> None:
    assert paths(engine.search('"kernel caches"', [store.id])) == ["/notes/fuse-kernel-cache.md"]
    assert engine.search('"caches kernel"', [store.id]) == []


def test_prefixes(engine: Engine, store: MemoryStore, corpus: dict[str, str]) -> None:
    assert set(paths(engine.search("seriali*", [store.id]))) == {"/notes/postgres.md"}
    assert set(paths(engine.search("check*", [store.id]))) == {"/notes/sqlite-wal.md"}
    assert engine.search("checkpointz*", [store.id]) == []


def test_negation_leaves_out(engine: Engine, store: MemoryStore, corpus: dict[str, str]) -> None:
    assert paths(engine.search("kernel -fuse", [store.id])) == ["/notes/sqlite-wal.md"]
    assert set(paths(engine.search("fuse -記憶", [store.id]))) == {"/notes/fuse-kernel-cache.md"}
    assert paths(engine.search('記憶 -"FUSE"', [store.id])) == ["/jp/kioku.md"]


def test_words_in_the_path_count(
    engine: Engine, store: MemoryStore, corpus: dict[str, str]
) -> None:
    assert paths(engine.search("postgres", [store.id])) == ["/notes/postgres.md"]


def test_snippets_highlight_the_match(
    engine: Engine, store: MemoryStore, corpus: dict[str, str]
) -> None:
    (hit,) = engine.search('"event loop"', [store.id])
    expected = "Never block the trio **event loop**: run blocking calls in worker threads."
    assert hit.snippet == expected
    (jp,) = engine.search("東京タワー", [store.id])
    assert jp.snippet.startswith("**東京タワー**は東京の観光名所です。")


def test_filters_store_prefix_and_limit(
    engine: Engine, store: MemoryStore, corpus: dict[str, str], actor: Actor
) -> None:
    other = engine.create_store("other")
    engine.create_memory(other.id, "/kernel.md", "kernel kernel kernel", actor=actor)
    assert {h.store_id for h in engine.search("kernel", [store.id])} == {store.id}
    assert {h.store_id for h in engine.search("kernel", [store.id, other.id])} == {
        store.id,
        other.id,
    }
    assert paths(engine.search("記憶", [store.id], path_prefix="/notes/")) == []
    assert set(paths(engine.search("記憶", [store.id], path_prefix="/jp/"))) == {
        "/jp/kioku.md",
        "/jp/mixed.md",
    }
    assert len(engine.search("kernel", [store.id, other.id], limit=1)) == 1
    assert engine.search("kernel", []) == []


def test_bad_requests_are_named(engine: Engine, store: MemoryStore) -> None:
    with pytest.raises(InvalidPath):
        engine.search("kernel", [store.id], path_prefix="/notes")
    with pytest.raises(InvalidInput, match="limit must be between 1 and 100"):
        engine.search("kernel", [store.id], limit=0)
    with pytest.raises(NotFound):
        engine.search("kernel", ["memstore_nope"])
    with pytest.raises(InvalidInput, match="at least one term that is not negated"):
        engine.search("-kernel", [store.id])


def test_semantic_search_names_the_setting(
    engine: Engine, store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(SEARCH_MODEL_ENV, raising=False)
    with pytest.raises(SearchUnavailable, match=f"not configured: {SEARCH_MODEL_ENV}"):
        engine.search("kernel", [store.id], mode="semantic")


def test_a_write_is_found_by_the_next_search(
    engine: Engine, second_engine: Engine, store: MemoryStore, actor: Actor
) -> None:
    """Stale-after-write: the index is written in the write's transaction, so a search
    right after the write returns finds it — from another engine (server) too."""
    for i in range(20):
        word = f"fresh{i}word"
        memory = engine.create_memory(store.id, f"/m{i}", f"just written {word}", actor=actor)
        assert paths(second_engine.search(word, [store.id])) == [f"/m{i}"]
        engine.update_memory(store.id, memory.id, actor=actor, content="rewritten")
        assert second_engine.search(word, [store.id]) == []


def test_the_index_follows_every_kind_of_write(
    engine: Engine, store: MemoryStore, actor: Actor
) -> None:
    memory = engine.create_memory(store.id, "/a/one.md", "alpha bravo", actor=actor)
    engine.update_memory(store.id, memory.id, actor=actor, content="charlie delta")
    assert engine.search("alpha", [store.id]) == []
    assert paths(engine.search("charlie", [store.id])) == ["/a/one.md"]
    engine.update_memory(store.id, memory.id, actor=actor, path="/a/two.md")
    assert paths(engine.search("charlie", [store.id])) == ["/a/two.md"]
    engine.rename_prefix(store.id, "/a/", "/b/", actor=actor)
    assert paths(engine.search("charlie", [store.id])) == ["/b/two.md"]
    assert paths(engine.search("two", [store.id])) == ["/b/two.md"]
    engine.delete_memory(store.id, memory.id, actor=actor)
    assert engine.search("charlie", [store.id]) == []
    engine.restore_memory(store.id, memory.id, actor=actor)
    assert paths(engine.search("charlie", [store.id])) == ["/b/two.md"]
    replaced = engine.create_memory(store.id, "/c.md", "echo", actor=actor)
    engine.update_memory(store.id, memory.id, actor=actor, path="/c.md", replace=True)
    assert engine.search("echo", [store.id]) == []
    assert replaced.id not in {h.memory_id for h in engine.search("c", [store.id])}
    engine.delete_memory(store.id, memory.id, actor=actor, mode=DeleteMode.REDACT)
    assert engine.search("charlie", [store.id]) == []
    assert engine.search("REDACTED", [store.id]) == []
    gone = engine.create_memory(store.id, "/gone", "foxtrot", actor=actor)
    engine.delete_memory(store.id, gone.id, actor=actor, mode=DeleteMode.HARD_DELETE)
    assert engine.search("foxtrot", [store.id]) == []
    kept = engine.create_store("kept")
    engine.create_memory(kept.id, "/g", "golf", actor=actor)
    engine.create_memory(store.id, "/g", "golf", actor=actor)
    engine.delete_store(store.id)
    assert {h.store_id for h in engine.search("golf", [kept.id])} == {kept.id}
    assert list(engine.iter_fsck_findings()) == []


def _downgrade(database: str, revision: str, probe: str) -> object:
    """Downgrades ``database`` to ``revision`` with Alembic (outside any engine), then
    returns the scalar the SQL ``probe`` reads from it."""
    from alembic import command

    raw = create_engine(database)
    try:
        with raw.begin() as conn:
            config = alembic_config()
            config.attributes["connection"] = conn
            command.downgrade(config, revision)
        with raw.connect() as conn:
            return conn.execute(text(probe)).scalar()
    finally:
        raw.dispose()


def _trigram_paths(engine: Engine) -> set[str]:
    """The paths of the documents SQLite's trigram table holds."""
    raw = create_engine(engine.url)
    try:
        with raw.connect() as conn:
            return set(
                conn.execute(
                    text(
                        "SELECT d.path FROM search_docs d "
                        "JOIN search_fts_trigram_docsize t ON t.id = d.doc_id"
                    )
                ).scalars()
            )
    finally:
        raw.dispose()


def test_only_text_a_substring_term_can_match_is_in_the_trigram_table(
    engine: Engine, store: MemoryStore, actor: Actor
) -> None:
    """What search costs a write: English documents stay out of the trigram table; a document
    goes in and out of it as its path or body gains or loses text without spaces, and
    substring search follows it."""
    if engine.dialect != "sqlite":
        pytest.skip("the trigram table is SQLite's (PostgreSQL: a pg_trgm index on body)")
    english = engine.create_memory(store.id, "/en.md", "plain english words", actor=actor)
    japanese = engine.create_memory(store.id, "/jp.md", "長期記憶の設計", actor=actor)
    in_path = engine.create_memory(store.id, "/記憶装置/note.md", "english body", actor=actor)
    assert _trigram_paths(engine) == {"/jp.md", "/記憶装置/note.md"}
    assert paths(engine.search("記憶装置", [store.id])) == ["/記憶装置/note.md"]
    engine.rename_prefix(store.id, "/記憶装置/", "/plain/", actor=actor)
    assert _trigram_paths(engine) == {"/jp.md"}
    assert engine.search("記憶装置", [store.id]) == []
    engine.update_memory(store.id, english.id, actor=actor, content="今は日本語の文章")
    engine.update_memory(store.id, japanese.id, actor=actor, content="now english")
    assert _trigram_paths(engine) == {"/en.md"}
    assert paths(engine.search("日本語", [store.id])) == ["/en.md"]
    assert engine.search("長期記憶", [store.id]) == []
    engine.update_memory(store.id, in_path.id, actor=actor, path="/東京/note.md")
    assert _trigram_paths(engine) == {"/en.md", "/東京/note.md"}
    engine.delete_memory(store.id, english.id, actor=actor)
    assert _trigram_paths(engine) == {"/東京/note.md"}
    assert list(engine.iter_fsck_findings()) == []


@pytest.mark.empty_database
def test_the_trigram_migration_drops_documents_no_substring_term_can_match(
    database: str,
) -> None:
    """0010_trigram_subset: a database whose trigram table holds every document (as 0004
    built it) keeps only the documents with text without spaces, and fsck agrees."""
    if not database.startswith("sqlite"):
        pytest.skip("the trigram table is SQLite's (PostgreSQL: the migration changes nothing)")
    with Engine(database) as engine:
        store = engine.create_store("s")
        engine.create_memory(store.id, "/en", "written in english", actor=ACTOR)
        engine.create_memory(store.id, "/jp", "以前の記憶", actor=ACTOR)
    count = "SELECT count(*) FROM search_fts_trigram_docsize"
    assert _downgrade(database, "0009_semantic", count) == 2
    with Engine(database) as engine:
        assert _trigram_paths(engine) == {"/jp"}
        assert paths(engine.search("前の記", [store.id])) == ["/jp"]
        assert paths(engine.search("english", [store.id])) == ["/en"]
        assert list(engine.iter_fsck_findings()) == []


@pytest.mark.empty_database
def test_the_migration_indexes_existing_memories(database: str) -> None:
    with Engine(database) as engine:
        store = engine.create_store("s")
        engine.create_memory(store.id, "/old", "written before search existed", actor=ACTOR)
        engine.create_memory(store.id, "/jp", "以前の記憶", actor=ACTOR)
    assert _downgrade(database, "0003", "SELECT count(*) FROM memories") == 2
    with Engine(database) as engine:
        assert paths(engine.search("existed", [store.id])) == ["/old"]
        assert paths(engine.search("記憶", [store.id])) == ["/jp"]
        assert list(engine.iter_fsck_findings()) == []


ACTOR = Actor.api_key("apikey_tests")


def _files_holding(directory: Path, needle: bytes) -> set[str]:
    return {p.name for p in directory.iterdir() if p.is_file() and needle in p.read_bytes()}


def _japanese_token() -> str:
    """Random kanji: one unicode61 token, and trigrams no neighbour shares."""
    return "".join(chr(0x4E00 + secrets.randbelow(0x5000)) for _ in range(12))


@pytest.mark.parametrize("script", ["latin", "japanese"])
@pytest.mark.parametrize("how", ["redact_version", "redact", "hard_delete"])
def test_redaction_removes_tokens_from_the_index_and_its_files(
    tmp_path: Path, how: str, script: str
) -> None:
    """SPEC §2/§7: after a redaction or hard delete no token of the content is left in
    the SQLite file or its WAL (FTS5 shadow tables included), and no search finds it.
    The Japanese secret is in the trigram table too."""
    if script == "latin":
        token = "zq" + secrets.token_hex(12)  # one unicode61 token
        tail = token[-16:].encode()  # FTS5 prefix-compresses terms: the unshared part
    else:
        token = "記" + _japanese_token()
        tail = token[-8:].encode()
    engine = Engine(database_url(str(tmp_path / "store.db")))
    try:
        store = engine.create_store("s")
        for i in range(40):
            engine.create_memory(store.id, f"/n{i}", f"neighbour zq{i:04d} words", actor=ACTOR)
        memory = engine.create_memory(store.id, "/secret", f"the {token} here", actor=ACTOR)
        assert paths(engine.search(token, [store.id])) == ["/secret"]
        if script == "japanese":  # a substring: the trigram table's
            assert paths(engine.search(token[4:9], [store.id])) == ["/secret"]
        version = memory.memory_version_id
        if how == "redact_version":
            engine.update_memory(store.id, memory.id, actor=ACTOR, content="nothing to see")
            for i in range(40, 60):  # later segments
                engine.create_memory(store.id, f"/n{i}", f"neighbour zq{i:04d}", actor=ACTOR)
        assert _files_holding(tmp_path, tail)  # the check can see the token
        if how == "redact_version":
            engine.redact_version(store.id, version, actor=ACTOR)
        else:
            engine.delete_memory(store.id, memory.id, actor=ACTOR, mode=DeleteMode(how))
        assert engine.search(token, [store.id]) == []
        assert engine.search(token[:10] + "*", [store.id]) == []
        assert engine.search(token[4:9], [store.id]) == []
        assert _files_holding(tmp_path, tail) == set()
        assert list(engine.iter_fsck_findings()) == []
    finally:
        engine.close()
    assert _files_holding(tmp_path, tail) == set()


def test_the_parser_is_the_one_the_engine_uses(engine: Engine, store: MemoryStore) -> None:
    engine.create_memory(store.id, "/p", "parsed once", actor=ACTOR)
    assert paths(engine.search(parse('"parsed once"'), [store.id])) == ["/p"]
