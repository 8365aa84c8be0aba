"""Full-text search in the engine (SPEC §7), on SQLite and PostgreSQL: ranking
on a corpus with known answers (English and Japanese), the query language, filters, the
index following every write (queued in the write's transaction, indexed by the indexer
or by the next search, in any process), redaction reaching the index at once."""

from __future__ import annotations

import secrets
import subprocess
import sys
from pathlib import Path

import pytest
from _support.polling import wait_until
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
        path: engine.for_caller(actor=actor).memories.create(store.id, path, content).id
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
    hits = engine.search.query(query, [store.id])
    assert hits, query
    assert hits[0].path == first
    assert hits[0].memory_id == corpus[first]
    assert hits[0].store_id == store.id
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


def test_words_must_all_match(engine: Engine, store: MemoryStore, corpus: dict[str, str]) -> None:
    assert paths(engine.search.query("kernel checkpoint", [store.id])) == ["/notes/sqlite-wal.md"]
    assert engine.search.query("kernel postgresql", [store.id]) == []


def test_case_does_not_matter(engine: Engine, store: MemoryStore, corpus: dict[str, str]) -> None:
    assert paths(engine.search.query("TRIO", [store.id])) == ["/notes/trio.md"]


def test_phrases_match_words_in_order(
    engine: Engine, store: MemoryStore, corpus: dict[str, str]
) -> None:
    assert paths(engine.search.query(
        '"kernel caches"', [store.id]
    )) == ["/notes/fuse-kernel-cache.md"]
    assert engine.search.query('"caches kernel"', [store.id]) == []


def test_prefixes(engine: Engine, store: MemoryStore, corpus: dict[str, str]) -> None:
    assert set(paths(engine.search.query("seriali*", [store.id]))) == {"/notes/postgres.md"}
    assert set(paths(engine.search.query("check*", [store.id]))) == {"/notes/sqlite-wal.md"}
    assert engine.search.query("checkpointz*", [store.id]) == []


def test_negation_leaves_out(engine: Engine, store: MemoryStore, corpus: dict[str, str]) -> None:
    assert paths(engine.search.query("kernel -fuse", [store.id])) == ["/notes/sqlite-wal.md"]
    assert set(paths(engine.search.query(
        "fuse -記憶", [store.id]
    ))) == {"/notes/fuse-kernel-cache.md"}
    assert paths(engine.search.query('記憶 -"FUSE"', [store.id])) == ["/jp/kioku.md"]


def test_words_in_the_path_count(
    engine: Engine, store: MemoryStore, corpus: dict[str, str]
) -> None:
    assert paths(engine.search.query("postgres", [store.id])) == ["/notes/postgres.md"]


def test_snippets_highlight_the_match(
    engine: Engine, store: MemoryStore, corpus: dict[str, str]
) -> None:
    (hit,) = engine.search.query('"event loop"', [store.id])
    expected = "Never block the trio **event loop**: run blocking calls in worker threads."
    assert hit.snippet == expected
    (jp,) = engine.search.query("東京タワー", [store.id])
    assert jp.snippet.startswith("**東京タワー**は東京の観光名所です。")


def test_filters_store_prefix_and_limit(
    engine: Engine, store: MemoryStore, corpus: dict[str, str], actor: Actor
) -> None:
    other = engine.stores.create("other")
    engine.for_caller(actor=actor).memories.create(other.id, "/kernel.md", "kernel kernel kernel")
    assert {h.store_id for h in engine.search.query("kernel", [store.id])} == {store.id}
    assert {h.store_id for h in engine.search.query("kernel", [store.id, other.id])} == {
        store.id,
        other.id,
    }
    assert paths(engine.search.query("記憶", [store.id], path_prefix="/notes/")) == []
    assert set(paths(engine.search.query("記憶", [store.id], path_prefix="/jp/"))) == {
        "/jp/kioku.md",
        "/jp/mixed.md",
    }
    assert len(engine.search.query("kernel", [store.id, other.id], limit=1)) == 1
    assert engine.search.query("kernel", []) == []


def test_bad_requests_are_named(engine: Engine, store: MemoryStore) -> None:
    with pytest.raises(InvalidPath):
        engine.search.query("kernel", [store.id], path_prefix="/notes")
    with pytest.raises(InvalidInput, match="limit must be between 1 and 100"):
        engine.search.query("kernel", [store.id], limit=0)
    with pytest.raises(NotFound):
        engine.search.query("kernel", ["memstore_nope"])
    with pytest.raises(InvalidInput, match="at least one term that is not negated"):
        engine.search.query("-kernel", [store.id])


def test_semantic_search_names_the_setting(
    engine: Engine, store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(SEARCH_MODEL_ENV, raising=False)
    with pytest.raises(SearchUnavailable, match=f"not configured: {SEARCH_MODEL_ENV}"):
        engine.search.query("kernel", [store.id], mode="semantic")


def test_a_write_is_found_by_the_next_search(
    engine: Engine, second_engine: Engine, store: MemoryStore, actor: Actor
) -> None:
    """Read-your-writes: a search first indexes what the writes queued, so a search
    right after the write returns finds it — from another engine (server) too."""
    for i in range(20):
        word = f"fresh{i}word"
        memory = engine.for_caller(actor=actor).memories.create(
            store.id, f"/m{i}", f"just written {word}"
        )
        assert paths(second_engine.search.query(word, [store.id])) == [f"/m{i}"]
        engine.for_caller(actor=actor).memories.update(store.id, memory.id, content="rewritten")
        assert second_engine.search.query(word, [store.id]) == []


def test_a_write_is_found_by_a_search_in_another_process(
    engine: Engine, store: MemoryStore, actor: Actor
) -> None:
    """SPEC §7 for every caller: a process that never wrote (a CLI search, another
    server) finds what was committed before its search began, though no indexer ran."""
    engine.for_caller(actor=actor).memories.create(store.id, "/other", "zebracrossing here")
    found = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from memfs.store import Engine; "
            "e = Engine(sys.argv[1]); "
            "print(*[h.path for h in e.search.query('zebracrossing', [sys.argv[2]])]); "
            "e.close()",
            engine.url,
            store.id,
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    assert found.stdout.split() == ["/other"]


def _index_rows(engine: Engine, memory_id: str) -> tuple[int, int]:
    """``(search documents, queue rows)`` of a memory, read outside the engine."""
    raw = create_engine(engine.url)
    try:
        with raw.connect() as conn:
            docs = conn.execute(
                text("SELECT count(*) FROM search_docs WHERE memory_id = :m"), {"m": memory_id}
            ).scalar_one()
            queued = conn.execute(
                text("SELECT count(*) FROM search_pending WHERE memory_id = :m"),
                {"m": memory_id},
            ).scalar_one()
            return docs, queued
    finally:
        raw.dispose()


def test_a_write_queues_one_row_and_a_search_indexes_it(
    engine: Engine, store: MemoryStore, actor: Actor
) -> None:
    """The write's transaction holds no document, only the queue row; the search that
    follows writes the document and removes the row; fsck accepts both states."""
    memory = engine.for_caller(actor=actor).memories.create(store.id, "/q", "queued words")
    assert _index_rows(engine, memory.id) == (0, 1)
    assert list(engine.iter_fsck_findings()) == []
    assert paths(engine.search.query("queued", [store.id])) == ["/q"]
    assert _index_rows(engine, memory.id) == (1, 0)
    engine.for_caller(actor=actor).memories.update(store.id, memory.id, content="newer")
    assert _index_rows(engine, memory.id) == (1, 1)  # the old document waits
    assert list(engine.iter_fsck_findings()) == []
    assert engine.search.text_lag()[0] == 1
    assert engine.search.catch_up() == 1
    assert engine.search.text_lag() == (0, 0.0)


@pytest.mark.parametrize("mode", [DeleteMode.REDACT, DeleteMode.HARD_DELETE])
def test_an_erasure_removes_a_queued_document_before_it_returns(
    engine: Engine, store: MemoryStore, actor: Actor, mode: DeleteMode
) -> None:
    """SPEC §7: a redaction or hard delete erases the index's copy in its transaction,
    also when the document waited for the indexer (no row left to index it later)."""
    memory = engine.for_caller(actor=actor).memories.create(store.id, "/e", "first secret")
    engine.search.catch_up()
    engine.for_caller(actor=actor).memories.update(store.id, memory.id, content="second")
    assert _index_rows(engine, memory.id) == (1, 1)
    engine.for_caller(actor=actor).memories.delete(store.id, memory.id, mode=mode)
    assert _index_rows(engine, memory.id) == (0, 0)
    assert engine.search.query("secret", [store.id]) == []


def test_a_version_redaction_first_brings_a_queued_document_to_its_head(
    engine: Engine, store: MemoryStore, actor: Actor
) -> None:
    """A version redaction must not leave its content in a document the indexer has
    yet to replace: the memory is indexed in the redaction's transaction."""
    memory = engine.for_caller(actor=actor).memories.create(store.id, "/v", "oldsecret text")
    engine.search.catch_up()
    engine.for_caller(actor=actor).memories.update(store.id, memory.id, content="new text")
    engine.for_caller(actor=actor).versions.redact(store.id, memory.memory_version_id)
    assert _index_rows(engine, memory.id) == (1, 0)
    raw = create_engine(engine.url)
    try:
        with raw.connect() as conn:
            body = conn.execute(
                text("SELECT body FROM search_docs WHERE memory_id = :m"), {"m": memory.id}
            ).scalar_one()
    finally:
        raw.dispose()
    assert body == "new text"


def test_the_indexer_thread_drains_the_queue(
    engine: Engine, store: MemoryStore, actor: Actor
) -> None:
    """Engine.start_indexer: woken by the commits, it indexes them once the writes
    pause; a search then has nothing left to index."""
    assert engine.start_indexer()
    for i in range(30):
        engine.for_caller(actor=actor).memories.create(store.id, f"/i{i}", f"note {i}")
    wait_until(lambda: engine.search.text_lag()[0] == 0, "the indexer drained the queue")
    assert engine.search.catch_up() == 0
    assert len(engine.search.query("note", [store.id], limit=100)) == 30


def test_the_index_follows_every_kind_of_write(
    engine: Engine, store: MemoryStore, actor: Actor
) -> None:
    memory = engine.for_caller(actor=actor).memories.create(store.id, "/a/one.md", "alpha bravo")
    engine.for_caller(actor=actor).memories.update(store.id, memory.id, content="charlie delta")
    assert engine.search.query("alpha", [store.id]) == []
    assert paths(engine.search.query("charlie", [store.id])) == ["/a/one.md"]
    engine.for_caller(actor=actor).memories.update(store.id, memory.id, path="/a/two.md")
    assert paths(engine.search.query("charlie", [store.id])) == ["/a/two.md"]
    engine.for_caller(actor=actor).memories.rename_prefix(store.id, "/a/", "/b/")
    assert paths(engine.search.query("charlie", [store.id])) == ["/b/two.md"]
    assert paths(engine.search.query("two", [store.id])) == ["/b/two.md"]
    engine.for_caller(actor=actor).memories.delete(store.id, memory.id)
    assert engine.search.query("charlie", [store.id]) == []
    engine.for_caller(actor=actor).memories.restore(store.id, memory.id)
    assert paths(engine.search.query("charlie", [store.id])) == ["/b/two.md"]
    replaced = engine.for_caller(actor=actor).memories.create(store.id, "/c.md", "echo")
    engine.for_caller(actor=actor).memories.update(store.id, memory.id, path="/c.md", replace=True)
    assert engine.search.query("echo", [store.id]) == []
    assert replaced.id not in {h.memory_id for h in engine.search.query("c", [store.id])}
    engine.for_caller(actor=actor).memories.delete(store.id, memory.id, mode=DeleteMode.REDACT)
    assert engine.search.query("charlie", [store.id]) == []
    assert engine.search.query("REDACTED", [store.id]) == []
    gone = engine.for_caller(actor=actor).memories.create(store.id, "/gone", "foxtrot")
    engine.for_caller(actor=actor).memories.delete(store.id, gone.id, mode=DeleteMode.HARD_DELETE)
    assert engine.search.query("foxtrot", [store.id]) == []
    kept = engine.stores.create("kept")
    engine.for_caller(actor=actor).memories.create(kept.id, "/g", "golf")
    engine.for_caller(actor=actor).memories.create(store.id, "/g", "golf")
    engine.stores.delete(store.id)
    assert {h.store_id for h in engine.search.query("golf", [kept.id])} == {kept.id}
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
    """The paths of the documents SQLite's trigram table holds, once the indexer has
    taken what the writes queued."""
    engine.search.catch_up()
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
    english = engine.for_caller(actor=actor).memories.create(
        store.id, "/en.md", "plain english words"
    )
    japanese = engine.for_caller(actor=actor).memories.create(store.id, "/jp.md", "長期記憶の設計")
    in_path = engine.for_caller(actor=actor).memories.create(
        store.id, "/記憶装置/note.md", "english body"
    )
    assert _trigram_paths(engine) == {"/jp.md", "/記憶装置/note.md"}
    assert paths(engine.search.query("記憶装置", [store.id])) == ["/記憶装置/note.md"]
    engine.for_caller(actor=actor).memories.rename_prefix(store.id, "/記憶装置/", "/plain/")
    assert _trigram_paths(engine) == {"/jp.md"}
    assert engine.search.query("記憶装置", [store.id]) == []
    engine.for_caller(actor=actor).memories.update(store.id, english.id, content="今は日本語の文章")
    engine.for_caller(actor=actor).memories.update(store.id, japanese.id, content="now english")
    assert _trigram_paths(engine) == {"/en.md"}
    assert paths(engine.search.query("日本語", [store.id])) == ["/en.md"]
    assert engine.search.query("長期記憶", [store.id]) == []
    engine.for_caller(actor=actor).memories.update(store.id, in_path.id, path="/東京/note.md")
    assert _trigram_paths(engine) == {"/en.md", "/東京/note.md"}
    engine.for_caller(actor=actor).memories.delete(store.id, english.id)
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
        store = engine.stores.create("s")
        engine.for_caller(actor=ACTOR).memories.create(store.id, "/en", "written in english")
        engine.for_caller(actor=ACTOR).memories.create(store.id, "/jp", "以前の記憶")
    count = "SELECT count(*) FROM search_fts_trigram_docsize"
    assert _downgrade(database, "0009_semantic", count) == 2
    with Engine(database) as engine:
        assert _trigram_paths(engine) == {"/jp"}
        assert paths(engine.search.query("前の記", [store.id])) == ["/jp"]
        assert paths(engine.search.query("english", [store.id])) == ["/en"]
        assert list(engine.iter_fsck_findings()) == []


@pytest.mark.empty_database
def test_the_migration_indexes_existing_memories(database: str) -> None:
    with Engine(database) as engine:
        store = engine.stores.create("s")
        engine.for_caller(actor=ACTOR).memories.create(
            store.id, "/old", "written before search existed"
        )
        engine.for_caller(actor=ACTOR).memories.create(store.id, "/jp", "以前の記憶")
    assert _downgrade(database, "0003", "SELECT count(*) FROM memories") == 2
    with Engine(database) as engine:
        assert paths(engine.search.query("existed", [store.id])) == ["/old"]
        assert paths(engine.search.query("記憶", [store.id])) == ["/jp"]
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
        store = engine.stores.create("s")
        for i in range(40):
            engine.for_caller(actor=ACTOR).memories.create(
                store.id, f"/n{i}", f"neighbour zq{i:04d} words"
            )
        memory = engine.for_caller(actor=ACTOR).memories.create(
            store.id, "/secret", f"the {token} here"
        )
        assert paths(engine.search.query(token, [store.id])) == ["/secret"]
        if script == "japanese":  # a substring: the trigram table's
            assert paths(engine.search.query(token[4:9], [store.id])) == ["/secret"]
        version = memory.memory_version_id
        if how == "redact_version":
            engine.for_caller(actor=ACTOR).memories.update(
                store.id, memory.id, content="nothing to see"
            )
            for i in range(40, 60):  # later segments
                engine.for_caller(actor=ACTOR).memories.create(
                    store.id, f"/n{i}", f"neighbour zq{i:04d}"
                )
        assert _files_holding(tmp_path, tail)  # the check can see the token
        if how == "redact_version":
            engine.for_caller(actor=ACTOR).versions.redact(store.id, version)
        else:
            engine.for_caller(actor=ACTOR).memories.delete(
                store.id, memory.id, mode=DeleteMode(how)
            )
        assert engine.search.query(token, [store.id]) == []
        assert engine.search.query(token[:10] + "*", [store.id]) == []
        assert engine.search.query(token[4:9], [store.id]) == []
        assert _files_holding(tmp_path, tail) == set()
        assert list(engine.iter_fsck_findings()) == []
    finally:
        engine.close()
    assert _files_holding(tmp_path, tail) == set()


def test_the_parser_is_the_one_the_engine_uses(engine: Engine, store: MemoryStore) -> None:
    engine.for_caller(actor=ACTOR).memories.create(store.id, "/p", "parsed once")
    assert paths(engine.search.query(parse('"parsed once"'), [store.id])) == ["/p"]
