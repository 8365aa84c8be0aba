"""The record index (SPEC §6) kept by the store engine in the write transaction, on
SQLite and PostgreSQL: typed fields, tags, relations by id, last_accessed without a
version, decay with a fake clock. fsck runs at teardown (the ``engine`` fixture)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta

import pytest

from memfs.core.errors import InvalidRecord
from memfs.core.model import Actor, DeleteMode, MemoryStore, utcnow
from memfs.core.records import RecordFilter, RecordType
from memfs.store import Engine

ACTOR = Actor.api_key("apikey_records")

TONE = """---
type: preference
importance: 0.9
tags: [tone, style]
user_id: u1
relations:
  - {type: related_to, target: /prefs/old.md}
unknown_key: {kept: verbatim}
---
Be brief.
"""


class FakeClock:
    """A clock that moves only when told (starts at the real time: writes stamp their own)."""

    def __init__(self) -> None:
        self.now = utcnow()

    def __call__(self) -> datetime:
        return self.now

    def advance(self, days: float) -> None:
        self.now += timedelta(days=days)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def timed(database: str, clock: FakeClock) -> Iterator[Engine]:
    """An engine on the fake clock (fsck at teardown)."""
    eng = Engine(database, clock=clock)
    try:
        yield eng
        assert list(eng.iter_fsck_findings()) == []
    finally:
        eng.close()


@pytest.fixture
def store(engine: Engine) -> MemoryStore:
    return engine.stores.create("records")


def create(engine: Engine, store: MemoryStore, path: str, content: str) -> str:
    return engine.for_caller(actor=ACTOR).memories.create(store.id, path, content).id


def test_a_record_is_indexed_with_its_header(engine: Engine, store: MemoryStore) -> None:
    memory_id = create(engine, store, "/prefs/tone.md", TONE)
    record = engine.records.get([memory_id])[memory_id]
    assert (record.type, record.importance, record.user_id, record.tags) == (
        RecordType.PREFERENCE,
        0.9,
        "u1",
        ("style", "tone"),
    )
    assert record.version == 1
    assert record.path == "/prefs/tone.md"
    # The content is the author's bytes, unknown key and all.
    assert engine.memories.get(store.id, memory_id).content == TONE


def test_ordinary_front_matter_is_stored_and_not_indexed(
    engine: Engine, store: MemoryStore
) -> None:
    post = "---\ntype: post\nimportance: 7\n---\nhello\n"
    memory_id = create(engine, store, "/blog.md", post)
    assert engine.memories.get(store.id, memory_id).content == post
    assert engine.records.get([memory_id]) == {}


def test_a_bad_record_is_refused_and_nothing_changes(engine: Engine, store: MemoryStore) -> None:
    before = engine.statistics()
    with pytest.raises(InvalidRecord, match="importance: must be a number from 0 to 1"):
        create(engine, store, "/bad.md", "---\ntype: profile\nimportance: 2\n---\n")
    assert engine.statistics() == before
    memory_id = create(engine, store, "/good.md", "---\ntype: profile\n---\n")
    with pytest.raises(InvalidRecord, match="^invalid record header: scope: must be one of"):
        engine.for_caller(actor=ACTOR).memories.update(
            store.id,
            memory_id,
            content="---\ntype: profile\nscope: everyone\n---\n",
            path=None,
            expected_sha256=None,
            metadata=None,
        )
    assert engine.memories.get(store.id, memory_id).content == "---\ntype: profile\n---\n"
    assert len(engine.versions.list(store.id, memory_id=memory_id).items) == 1


def update(engine: Engine, store: MemoryStore, memory_id: str, **changes: object) -> None:
    engine.for_caller(actor=ACTOR).memories.update(
        store.id,
        memory_id,
        content=changes.get("content"),
        # type: ignore[arg-type]
        path=changes.get("path"),
        # type: ignore[arg-type]
        expected_sha256=None,
        metadata=None,
    )


def test_edits_move_the_index(engine: Engine, store: MemoryStore) -> None:
    memory_id = create(engine, store, "/r.md", TONE)
    update(engine, store, memory_id, content=TONE.replace("importance: 0.9", "importance: 0.2"))
    assert engine.records.get([memory_id])[memory_id].importance == 0.2
    # No longer a record: it leaves the index; a record again: it comes back.
    update(engine, store, memory_id, content="plain text now\n")
    assert engine.records.get([memory_id]) == {}
    update(engine, store, memory_id, content=TONE)
    assert engine.records.get([memory_id])[memory_id].version == 4
    engine.for_caller(actor=ACTOR).memories.delete(store.id, memory_id)
    assert engine.records.get([memory_id]) == {}
    engine.for_caller(actor=ACTOR).memories.restore(store.id, memory_id)
    assert engine.records.get([memory_id])[memory_id].importance == 0.9
    engine.for_caller(actor=ACTOR).memories.delete(store.id, memory_id, mode=DeleteMode.REDACT)
    assert engine.records.get([memory_id]) == {}


def test_filters(engine: Engine, store: MemoryStore) -> None:
    other = engine.stores.create("other")
    create(engine, store, "/a.md", TONE)
    create(engine, store, "/b.md", "---\ntype: episodic\nimportance: 0.3\ntags: [trip]\n---\n")
    create(engine, store, "/c.md", "---\ntype: preference\nuser_id: u2\n---\n")
    create(engine, store, "/plain.md", "plain")
    create(engine, other, "/a.md", TONE)

    def paths(record_filter: RecordFilter, stores: list[str] | None = None) -> list[str]:
        found = engine.records.list([store.id] if stores is None else stores, record_filter)
        return [r.path for r in found]

    assert paths(RecordFilter()) == ["/a.md", "/b.md", "/c.md"]
    assert paths(RecordFilter.of(record_type="preference")) == ["/a.md", "/c.md"]
    assert paths(RecordFilter.of(tag="trip")) == ["/b.md"]
    assert paths(RecordFilter.of(min_importance=0.5)) == ["/a.md"]
    assert paths(RecordFilter.of(user_id="u2")) == ["/c.md"]
    assert paths(RecordFilter.of(scope="share")) == []
    assert len(engine.records.list(None, RecordFilter.of(tag="tone"))) == 2
    engine.stores.delete(other.id)
    assert len(engine.records.list(None, RecordFilter.of(tag="tone"))) == 1


def test_relations_resolve_by_id_and_survive_renames(engine: Engine, store: MemoryStore) -> None:
    source = create(engine, store, "/prefs/tone.md", TONE)
    (relation,) = engine.records.get([source])[source].relations
    assert relation.dangling
    assert relation.target_memory_id is None
    # The target arrives later: the relation resolves to it.
    target = create(engine, store, "/prefs/old.md", "older preference\n")
    (relation,) = engine.records.get([source])[source].relations
    assert (relation.target_memory_id, relation.target_path) == (target, "/prefs/old.md")
    # A rename of the target keeps it (by id), also when the source is rewritten later.
    update(engine, store, target, path="/archive/old.md")
    update(engine, store, source, content=TONE.replace("0.9", "0.8"))
    (relation,) = engine.records.get([source])[source].relations
    assert (relation.target_memory_id, relation.target_path) == (target, "/archive/old.md")
    engine.for_caller(actor=ACTOR).memories.rename_prefix(store.id, "/archive/", "/attic/")
    (relation,) = engine.records.get([source])[source].relations
    assert relation.target_path == "/attic/old.md"
    (incoming,) = engine.records.relations_to(target)
    assert (incoming.memory_id, incoming.memory_path) == (source, "/prefs/tone.md")
    assert engine.records.findings() == []
    engine.for_caller(actor=ACTOR).memories.delete(store.id, target)
    (finding,) = engine.records.findings()
    assert "relation related_to → /prefs/old.md is dangling" in finding


def test_a_relation_by_id(engine: Engine, store: MemoryStore) -> None:
    target = create(engine, store, "/t.md", "target\n")
    source = create(
        engine,
        store,
        "/s.md",
        f"---\ntype: semantic\nrelations: [{{type: supersedes, target: {target}}}]\n---\n",
    )
    (relation,) = engine.records.get([source])[source].relations
    assert (relation.target_memory_id, relation.target_path) == (target, "/t.md")
    dangling = create(
        engine,
        store,
        "/d.md",
        "---\ntype: semantic\nrelations: [{type: related_to, "
        "target: mem_00000000000000000000000000}]\n---\n",
    )
    assert engine.records.get([dangling])[dangling].relations[0].dangling


def test_last_accessed_without_a_version_and_decay(timed: Engine, clock: FakeClock) -> None:
    store = timed.stores.create("decay")
    read = create(timed, store, "/read.md", "---\ntype: semantic\nimportance: 0.8\n---\n")
    unread = create(timed, store, "/unread.md", "---\ntype: semantic\nimportance: 0.8\n---\n")
    head = timed.memories.get(store.id, read).memory_version_id
    clock.advance(days=60)
    timed.records.note_access([read])
    assert timed.records.get([read])[read].last_accessed < clock.now  # batched: not yet
    timed.records.flush_access()
    records = timed.records.get([read, unread])
    assert records[read].last_accessed == clock.now
    assert timed.memories.get(store.id, read).memory_version_id == head  # no version
    assert len(timed.versions.list(store.id, memory_id=read).items) == 1
    clock.advance(days=30)
    records = timed.records.get([read, unread])
    assert records[read].decay_score == pytest.approx(0.4, abs=1e-3)
    assert records[unread].decay_score == pytest.approx(0.1, abs=1e-3)
    # The store's half-life (metadata) changes the score.
    timed.stores.update(store.id, metadata_patch={"record_half_life_days": "90"})
    assert timed.records.get([unread])[unread].decay_score == pytest.approx(0.4, abs=1e-3)
    # An edit keeps last_accessed.
    update(timed, store, read, content="---\ntype: semantic\nimportance: 0.6\n---\n")
    assert timed.records.get([read])[read].last_accessed == clock.now - timedelta(days=30)


def test_reads_are_written_at_close(database: str, clock: FakeClock) -> None:
    first = Engine(database, clock=clock)
    store = first.stores.create("close")
    memory_id = create(first, store, "/r.md", "---\ntype: profile\n---\n")
    clock.advance(days=3)
    first.records.note_access([memory_id, "mem_not_a_record"])
    first.close()
    with Engine(database, clock=clock) as second:
        assert second.records.get([memory_id])[memory_id].last_accessed == clock.now


def test_a_memory_tool_view_is_a_read(timed: Engine, clock: FakeClock) -> None:
    from anthropic.types.beta import BetaMemoryTool20250818ViewCommand

    from memfs.memory_tool import MemfsMemoryTool

    store = timed.stores.create("Notes")
    memory_id = create(timed, store, "/tone.md", TONE)
    head = timed.memories.get(store.id, memory_id).memory_version_id
    clock.advance(days=10)
    with MemfsMemoryTool.embedded(timed, ["Notes"]) as tool:
        shown = tool.execute(
            BetaMemoryTool20250818ViewCommand(command="view", path="/memories/tone.md")
        )
    assert "Be brief." in str(shown)
    timed.records.flush_access()
    assert timed.records.get([memory_id])[memory_id].last_accessed == clock.now
    assert timed.memories.get(store.id, memory_id).memory_version_id == head


def test_search_filters_by_record_fields(engine: Engine, store: MemoryStore) -> None:
    create(engine, store, "/a.md", TONE.replace("Be brief.", "kernel notes"))
    create(engine, store, "/b.md", "---\ntype: episodic\nimportance: 0.2\n---\nkernel trip\n")
    create(engine, store, "/c.md", "kernel, not a record\n")

    def hits(**filters: object) -> list[str]:
        found = engine.search.query(
            "kernel",
            [store.id],
            record_filter=RecordFilter.of(**filters),  # type: ignore[arg-type]
        )
        return sorted(hit.path for hit in found)

    assert hits() == ["/a.md", "/b.md", "/c.md"]
    assert hits(record_type="episodic") == ["/b.md"]
    assert hits(tag="tone") == ["/a.md"]
    assert hits(min_importance=0.5) == ["/a.md"]
    assert hits(record_type="profile") == []
