"""fsck: every check of memfs/store/fsck.py finds the damage it is there for.

Each test damages a database on purpose with raw SQL and asserts the exact finding line.
Damage that a foreign key would refuse goes through :func:`damage_unchecked` (a plain
sqlite3 connection without ``foreign_keys``, or PostgreSQL with triggers off).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import sqlite3
from datetime import datetime
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text
from store_helpers import execute_sql

from memfs.core.errors import CorruptedStore, InvalidInput
from memfs.core.ids import blob_key_of
from memfs.core.model import Actor, DeleteMode, MemoryStore, Scope, UserPrincipal
from memfs.store import Engine, ResourceSpec, fsck_database
from memfs.store.fsck import CHECKS

pytestmark = pytest.mark.corrupts_store

WHEN = "2026-01-01T00:00:00.000000Z"
ACTOR = Actor.api_key("apikey_tests")
GHOST_BLOB = "f" * 32


def key(text_: str) -> str:
    return blob_key_of(text_.encode())


def sha(text_: str) -> str:
    return hashlib.sha256(text_.encode()).hexdigest()


def findings(engine: Engine) -> list[str]:
    return list(engine.iter_fsck_findings())


def damage_unchecked(engine: Engine, database: str, sql: str) -> None:
    """Runs ``sql`` with foreign keys not enforced."""
    if engine.dialect == "sqlite":
        with contextlib.closing(sqlite3.connect(database.split("///", 1)[1])) as conn:
            conn.execute(sql)
            conn.commit()
        return
    raw = create_engine(database)
    try:
        with raw.begin() as conn:
            conn.execute(text("SET LOCAL session_replication_role = replica"))
            conn.execute(text(sql))
    finally:
        raw.dispose()


COVERED: set[str] = set()


def covers(check_name: str):  # type: ignore[no-untyped-def]
    COVERED.add(check_name)
    return lambda test: test


def test_every_check_has_a_test() -> None:
    assert {check.__name__ for check in CHECKS} == COVERED


def test_a_clean_store_has_no_finding(engine: Engine, store: MemoryStore, actor: Actor) -> None:
    a = engine.for_caller(actor=actor).memories.create(store.id, "/a", "one", metadata={"k": "v"})
    engine.for_caller(actor=actor).memories.update(store.id, a.id, content="two", path="/dir/a")
    b = engine.for_caller(actor=actor).memories.create(store.id, "/b", "two")
    engine.for_caller(actor=actor).versions.redact(store.id, a.memory_version_id)
    engine.for_caller(actor=actor).memories.delete(store.id, b.id)
    engine.for_caller(actor=actor).memories.restore(store.id, b.id)
    c = engine.for_caller(actor=actor).memories.create(store.id, "/c", "three")
    engine.for_caller(actor=actor).memories.delete(store.id, c.id, mode=DeleteMode.REDACT)
    d = engine.for_caller(actor=actor).memories.create(store.id, "/d", "four")
    engine.for_caller(actor=actor).memories.delete(store.id, d.id, mode=DeleteMode.HARD_DELETE)
    engine.for_caller(actor=actor).memories.rename_prefix(store.id, "/dir/", "/moved/")
    other = engine.stores.create("other")
    engine.for_caller(actor=actor).memories.create(other.id, "/x", "one")
    engine.stores.delete(other.id)
    engine.stores.archive(store.id)
    assert findings(engine) == []


@covers("check_blob_integrity")
def test_blob_integrity(engine: Engine, store: MemoryStore, actor: Actor) -> None:
    for path, content in (("/a", "aaaa"), ("/b", "bbbb"), ("/c", "cccc")):
        engine.for_caller(actor=actor).memories.create(store.id, path, content)
    execute_sql(engine.url, f"UPDATE blobs SET sha256 = '{'0' * 64}' WHERE key = '{key('aaaa')}'")
    execute_sql(engine.url, f"UPDATE blobs SET size_bytes = 99 WHERE key = '{key('bbbb')}'")
    execute_sql(
        engine.url,
        "UPDATE blobs SET data = (SELECT b.data FROM blobs b WHERE b.key = "
        f"'{key('bbbb')}') WHERE key = '{key('cccc')}'",
    )
    found = findings(engine)
    assert f"blob {key('aaaa')}: bytes do not match the recorded sha256" in found
    assert f"blob {key('bbbb')}: size_bytes 99 but 4 bytes stored" in found
    assert f"blob {key('cccc')}: bytes do not hash to the key" in found
    assert f"blob {key('cccc')}: bytes do not match the recorded sha256" in found


@covers("check_no_orphan_blobs")
def test_orphan_blob(engine: Engine, store: MemoryStore, actor: Actor) -> None:
    memory = engine.for_caller(actor=actor).memories.create(store.id, "/a", "first")
    engine.for_caller(actor=actor).memories.update(store.id, memory.id, content="second")
    assert findings(engine) == []
    # A redaction that forgot to purge the bytes.
    execute_sql(
        engine.url,
        "UPDATE versions SET blob_key = NULL, content_sha256 = NULL, size_bytes = NULL, "
        f"path = NULL, redacted_at = '{WHEN}' WHERE id = '{memory.memory_version_id}'",
    )
    assert findings(engine) == [f"blob {key('first')}: orphan (no memory or version references it)"]


@covers("check_no_dangling_blob_refs")
def test_dangling_blob_references(
    engine: Engine, database: str, store: MemoryStore, actor: Actor
) -> None:
    memory = engine.for_caller(actor=actor).memories.create(store.id, "/a", "content")
    damage_unchecked(engine, database, f"DELETE FROM blobs WHERE key = '{key('content')}'")
    found = findings(engine)
    assert f"memory {memory.id}: references missing blob {key('content')}" in found
    assert f"version {memory.memory_version_id}: references missing blob {key('content')}" in (
        found
    )
    # The engine refuses to serve what it can't find.
    with pytest.raises(CorruptedStore, match=f"blob {key('content')} is referenced but missing"):
        engine.memories.get(store.id, memory.id)


@covers("check_memory_digests")
def test_memory_digests(engine: Engine, store: MemoryStore, actor: Actor) -> None:
    a = engine.for_caller(actor=actor).memories.create(store.id, "/a", "aaaa")
    b = engine.for_caller(actor=actor).memories.create(store.id, "/b", "bbbb")
    execute_sql(
        engine.url, f"UPDATE memories SET content_sha256 = '{sha('other')}' WHERE id = '{a.id}'"
    )
    execute_sql(engine.url, f"UPDATE memories SET size_bytes = 5 WHERE id = '{b.id}'")
    found = findings(engine)
    assert f"memory {a.id}: content_sha256/size differ from its blob" in found
    assert f"memory {b.id}: content_sha256/size differ from its blob" in found


@covers("check_memory_states")
def test_memory_states(engine: Engine, store: MemoryStore, actor: Actor) -> None:
    m = [engine.for_caller(actor=actor).memories.create(
        store.id, f"/m{i}", f"content {i}"
    ) for i in range(5)]
    engine.for_caller(actor=actor).memories.delete(store.id, m[2].id)
    engine.for_caller(actor=actor).memories.delete(store.id, m[3].id, mode=DeleteMode.REDACT)
    engine.for_caller(actor=actor).memories.delete(store.id, m[4].id)
    raw = functools.partial(execute_sql, engine.url)
    raw(f"UPDATE memories SET delete_mode = 'soft_delete' WHERE id = '{m[0].id}'")
    raw(f"UPDATE memories SET blob_key = NULL WHERE id = '{m[1].id}'")
    raw(f"UPDATE memories SET blob_key = '{key('content 0')}' WHERE id = '{m[2].id}'")
    raw(f"UPDATE memories SET blob_key = NULL WHERE id = '{m[3].id}'")
    raw(f"UPDATE memories SET delete_mode = 'bogus' WHERE id = '{m[4].id}'")
    found = findings(engine)
    assert f"memory {m[0].id}: deleted_at and delete_mode disagree" in found
    assert f"memory {m[1].id}: live but has no content" in found
    assert f"memory {m[2].id}: soft-deleted tombstone still references content" in found
    assert f"memory {m[3].id}: redacted tombstone has no replacement content" in found
    assert f"memory {m[4].id}: unknown delete_mode 'bogus'" in found


@covers("check_heads")
def test_heads(engine: Engine, store: MemoryStore, actor: Actor) -> None:
    m = [engine.for_caller(actor=actor).memories.create(
        store.id, f"/m{i}", f"content {i}"
    ) for i in range(4)]
    newer = engine.for_caller(actor=actor).memories.update(store.id, m[2].id, content="newer")
    raw = functools.partial(execute_sql, engine.url)
    raw(f"UPDATE memories SET head_version_id = 'memver_nope' WHERE id = '{m[0].id}'")
    raw(f"UPDATE memories SET head_version_id = '{m[3].memory_version_id}' WHERE id = '{m[1].id}'")
    raw(f"UPDATE memories SET head_version_id = '{m[2].memory_version_id}' WHERE id = '{m[2].id}'")
    raw(f"UPDATE memories SET path = '/elsewhere' WHERE id = '{m[3].id}'")
    found = findings(engine)
    assert f"memory {m[0].id}: head version memver_nope does not exist" in found
    assert f"memory {m[1].id}: head version {m[3].memory_version_id} belongs to {m[3].id}" in found
    assert (
        f"memory {m[2].id}: head version {m[2].memory_version_id} is not its newest version"
        in found
    )
    assert f"memory {m[3].id}: head version does not record its current path and content" in found
    assert newer.memory_version_id != m[2].memory_version_id


@covers("check_version_shapes")
def test_version_shapes(engine: Engine, store: MemoryStore, actor: Actor) -> None:
    m = [engine.for_caller(actor=actor).memories.create(
        store.id, f"/m{i}", f"content {i}"
    ) for i in range(6)]
    for memory in m:
        engine.for_caller(actor=actor).memories.update(
            store.id, memory.id, content=memory.path + " v2"
        )
    engine.for_caller(actor=actor).memories.delete(store.id, m[4].id)
    deleted_version = engine.versions.list(store.id, memory_id=m[4].id).items[0].id
    old = [memory.memory_version_id for memory in m]  # the non-head 'created' versions
    raw = functools.partial(execute_sql, engine.url)
    raw(f"UPDATE versions SET content_sha256 = NULL WHERE id = '{old[0]}'")
    raw(f"UPDATE versions SET operation = 'renamed' WHERE id = '{old[1]}'")
    raw(f"UPDATE versions SET redacted_at = '{WHEN}' WHERE id = '{old[2]}'")
    raw(f"UPDATE versions SET path = NULL WHERE id = '{old[3]}'")
    raw(
        f"UPDATE versions SET blob_key = '{key('content 4')}', "
        f"content_sha256 = '{sha('content 4')}', size_bytes = 9 WHERE id = '{deleted_version}'"
    )
    raw(
        "UPDATE versions SET blob_key = NULL, content_sha256 = NULL, size_bytes = NULL "
        f"WHERE id = '{old[5]}'"
    )
    found = findings(engine)
    assert (
        f"version {old[0]}: blob_key, content_sha256 and size_bytes disagree on nullness" in found
    )
    assert f"version {old[1]}: unknown operation 'renamed'" in found
    assert f"version {old[2]}: redacted but still holds its path or content" in found
    assert f"version {old[3]}: not redacted but has no path" in found
    assert f"version {deleted_version}: a deleted version holds content" in found
    assert f"version {old[5]}: a created version holds no content" in found


@covers("check_owners")
def test_owners(engine: Engine, database: str, store: MemoryStore, actor: Actor) -> None:
    a = engine.for_caller(actor=actor).memories.create(store.id, "/a", "a")
    engine.for_caller(actor=actor).memories.update(store.id, a.id, content="a2")
    b = engine.for_caller(actor=actor).memories.create(store.id, "/b", "b")
    execute_sql(
        engine.url,
        f"UPDATE versions SET memory_id = 'mem_ghost' WHERE id = '{a.memory_version_id}'",
    )
    damage_unchecked(
        engine, database, f"UPDATE memories SET store_id = 'memstore_ghost' WHERE id = '{b.id}'"
    )
    damage_unchecked(
        engine,
        database,
        f"UPDATE versions SET store_id = 'memstore_ghost' WHERE id = '{b.memory_version_id}'",
    )
    found = findings(engine)
    assert f"version {a.memory_version_id}: its memory mem_ghost does not exist" in found
    assert f"memory {b.id}: its store memstore_ghost does not exist" in found
    assert f"version {b.memory_version_id}: its store memstore_ghost does not exist" in found


@covers("check_owners")
def test_owners_version_in_another_store_than_its_memory(
    engine: Engine, store: MemoryStore, actor: Actor
) -> None:
    other = engine.stores.create("other")
    a = engine.for_caller(actor=actor).memories.create(store.id, "/a", "a")
    engine.for_caller(actor=actor).memories.update(store.id, a.id, content="a2")
    first = engine.versions.list(store.id, memory_id=a.id).items[-1]
    execute_sql(engine.url, f"UPDATE versions SET store_id = '{other.id}' WHERE id = '{first.id}'")
    assert (
        f"version {first.id}: belongs to store {other.id} but its memory to {store.id}"
        in findings(engine)
    )


@covers("check_counters")
def test_counters(engine: Engine, store: MemoryStore, actor: Actor) -> None:
    engine.for_caller(actor=actor).memories.create(store.id, "/a", "12345")
    execute_sql(
        engine.url,
        f"UPDATE stores SET entry_count = 6, total_size_bytes = 7 WHERE id = '{store.id}'",
    )
    assert findings(engine) == [
        f"store {store.id}: entry_count 6 but 1 live memories",
        f"store {store.id}: total_size_bytes 7 but live content is 5",
    ]


@covers("check_paths")
def test_paths(engine: Engine, store: MemoryStore, actor: Actor) -> None:
    bad = engine.for_caller(actor=actor).memories.create(store.id, "/bad", "x")
    engine.for_caller(actor=actor).memories.create(store.id, "/dir/x", "x")
    file_over_dir = engine.for_caller(actor=actor).memories.create(store.id, "/other", "x")
    engine.for_caller(actor=actor).memories.create(store.id, "/dup", "x")
    twin = engine.for_caller(actor=actor).memories.create(store.id, "/twin", "x")
    raw = functools.partial(execute_sql, engine.url)
    raw(f"UPDATE memories SET path = '/bad/' WHERE id = '{bad.id}'")
    raw(f"UPDATE memories SET path = '/dir' WHERE id = '{file_over_dir.id}'")
    raw("DROP INDEX ix_memories_live_path")
    raw(f"UPDATE memories SET path = '/dup' WHERE id = '{twin.id}'")
    found = findings(engine)
    assert f"memory {bad.id}: invalid path '/bad/': path '/bad/' must not end with '/'" in found
    assert f"store {store.id}: '/dir' is both a memory and a directory" in found
    assert f"store {store.id}: several live memories at '/dup'" in found


@covers("check_change_feed")
def test_change_feed(engine: Engine, actor: Actor) -> None:
    gap, ahead = engine.stores.create("gap"), engine.stores.create("ahead")
    for store in (gap, ahead):
        engine.for_caller(actor=actor).memories.create(store.id, "/a", "a")
        engine.for_caller(actor=actor).memories.create(store.id, "/b", "b")
    execute_sql(engine.url, f"DELETE FROM changes WHERE store_id = '{gap.id}' AND seq = 1")
    execute_sql(engine.url, f"UPDATE stores SET last_change_seq = 3 WHERE id = '{ahead.id}'")
    found = findings(engine)
    assert f"store {gap.id}: change feed has gaps (1 entries up to seq 2)" in found
    assert f"store {ahead.id}: last_change_seq 3 but newest change is 2" in found
    assert len(found) == 2


@covers("check_metadata_json")
def test_metadata_json(engine: Engine, store: MemoryStore, actor: Actor) -> None:
    memory = engine.for_caller(actor=actor).memories.create(store.id, "/a", "a")
    other = engine.stores.create("other")
    raw = functools.partial(execute_sql, engine.url)
    raw(f"UPDATE stores SET metadata_json = 'not json' WHERE id = '{store.id}'")
    raw(f"UPDATE stores SET metadata_json = '[]' WHERE id = '{other.id}'")
    raw(f"""UPDATE memories SET metadata_json = '{{"k": 1}}' WHERE id = '{memory.id}'""")
    found = findings(engine)
    assert len(found) == 3
    assert found[0].startswith(f"store {store.id}: invalid metadata: ")
    assert found[1] == (
        f"store {other.id}: invalid metadata: invalid metadata: "
        "metadata must be an object of string keys and string values"
    )
    assert found[2] == (
        f"memory {memory.id}: invalid metadata: invalid metadata: value of 'k' must be a string"
    )


@covers("check_retention_and_audit")
def test_retention_and_audit_metadata(engine: Engine, store: MemoryStore, actor: Actor) -> None:
    memory = engine.for_caller(actor=actor).memories.create(store.id, "/a", "a")
    engine.for_caller(actor=actor).memories.delete(store.id, memory.id, audit_metadata={"k": "v"})
    raw = functools.partial(execute_sql, engine.url)
    raw(f"UPDATE stores SET version_retention_s = 0 WHERE id = '{store.id}'")
    raw("""UPDATE audit_log SET metadata_json = '{"k": 1}'""")
    found = findings(engine)
    assert len(found) == 2
    assert found[0].startswith(f"store {store.id}: version retention must be from 1 to ")
    assert found[1].endswith("invalid metadata: invalid metadata: value of 'k' must be a string")


@covers("check_snapshots")
def test_snapshots(engine: Engine, store: MemoryStore, actor: Actor) -> None:
    writer = engine.for_caller(actor=actor)
    needed = writer.memories.create(store.id, "/a", "needed")
    writer.memories.create(store.id, "/b", "needed")  # the same bytes: the blob stays used
    kept = writer.snapshots.create(store.id, "kept")
    writer.memories.update(store.id, needed.id, content="head")
    named = writer.snapshots.create(store.id, "named")
    pointed = writer.snapshots.create(store.id, "pointed")
    assert findings(engine) == []
    raw = functools.partial(execute_sql, engine.url)
    raw(f"DELETE FROM versions WHERE id = '{needed.memory_version_id}'")  # a bad prune
    raw(f"UPDATE snapshots SET name = 'now' WHERE id = '{named.id}'")
    raw(f"UPDATE snapshots SET memory_version_id = NULL WHERE id = '{pointed.id}'")
    assert findings(engine) == [
        f"snapshot {kept.id} (kept): memory {needed.id} has no version left at or before "
        "its point (retention pruned what it needs)",
        f"snapshot {named.id}: invalid snapshot name 'now': it names the present",
        f"snapshot {pointed.id}: memory_version_id must be set iff seq ({pointed.seq}) is not 0",
    ]


def _not_blobs(found: list[str]) -> list[str]:
    """The findings but the orphan blobs a raw DELETE of versions leaves."""
    return [f for f in found if not f.startswith("blob ")]


@covers("check_snapshots")
def test_a_dangling_snapshot(engine: Engine, store: MemoryStore, actor: Actor) -> None:
    """The version a snapshot names is gone with what it needed: named; a hard delete
    that erased a snapshot's point is no damage (an erasure wins over history)."""
    writer = engine.for_caller(actor=actor).memories
    erased = writer.create(store.id, "/erased", "gone for good")
    gone = engine.for_caller(actor=actor).snapshots.create(store.id, "erased")
    memory = writer.create(store.id, "/c", "one")
    writer.create(store.id, "/x", "other")
    point = writer.update(store.id, memory.id, content="two")
    dangling = engine.for_caller(actor=actor).snapshots.create(store.id, "dangling")
    head = writer.update(store.id, memory.id, content="three")
    writer.delete(store.id, erased.id, mode=DeleteMode.HARD_DELETE)
    assert gone.memory_version_id == erased.memory_version_id  # erased with its memory
    assert findings(engine) == []
    execute_sql(  # a bad prune: every version the snapshot needs of /c
        engine.url,
        f"DELETE FROM versions WHERE memory_id = '{memory.id}' "
        f"AND id <> '{head.memory_version_id}'",
    )
    assert _not_blobs(findings(engine)) == [
        f"snapshot {dangling.id} (dangling): dangling: its point {point.memory_version_id} "
        f"is gone and memory {memory.id} has no version left at or before its point "
        "(retention pruned what it needs)"
    ]


def test_engine_refuses_to_overwrite_a_damaged_blob(
    engine: Engine, store: MemoryStore, actor: Actor
) -> None:
    engine.for_caller(actor=actor).memories.create(store.id, "/a", "payload")
    execute_sql(
        engine.url, f"UPDATE blobs SET sha256 = '{'0' * 64}' WHERE key = '{key('payload')}'"
    )
    with pytest.raises(CorruptedStore, match="holds different bytes than its key promises"):
        engine.for_caller(actor=actor).memories.create(store.id, "/b", "payload")
    assert [m.path for m in engine.memories.all(store.id)] == ["/a"]


@covers("check_dreams")
def test_dreams(engine: Engine, store: MemoryStore) -> None:
    from memfs.core.dreams import OutputBehavior
    from memfs.dreams import run_dream

    def completed(name: str, behavior: OutputBehavior) -> str:
        made = engine.stores.create(name)
        engine.memories.create(made.id, "/a", "same")
        engine.dreams.create(made.id, session_ids=None, model_id="memfs-consolidate",
                             output_behavior=behavior)
        claimed = engine.dreams.claim("fsck-test")
        assert claimed is not None
        ended = run_dream(engine, claimed)
        assert ended.output_store_id is not None
        return ended.id

    ghost_output = completed("ghost output", OutputBehavior.UPDATE_EXISTING)
    discarded = completed("discarded", OutputBehavior.CREATE_NEW)
    # Deleting a dream's output store (discarding it) is no finding.
    engine.stores.delete(engine.dreams.get(discarded).output_store_id or "")
    assert findings(engine) == []
    stale = engine.dreams.create(store.id, session_ids=None, model_id="memfs-consolidate")
    assert engine.dreams.claim("a-server-that-stopped") is not None
    errorless = completed("errorless", OutputBehavior.UPDATE_EXISTING)
    raw = functools.partial(execute_sql, engine.url)
    raw(f"UPDATE dreams SET output_store_id = 'memstore_ghost' WHERE id = '{ghost_output}'")
    raw(f"UPDATE dreams SET heartbeat_at = '{WHEN}' WHERE id = '{stale.id}'")
    raw(f"UPDATE dreams SET status = 'failed', ended_at = NULL WHERE id = '{errorless}'")
    found = findings(engine)
    assert len(found) == 4, found
    assert f"dream {ghost_output}: its output store memstore_ghost does not exist" in found
    assert f"dream {errorless}: failed without an end time" in found
    assert f"dream {errorless}: failed without an error type" in found
    [late] = [f for f in found if f.startswith(f"dream {stale.id}: running")]
    assert "no runner has it" in late


@covers("check_sessions")
def test_sessions(engine: Engine, store: MemoryStore) -> None:
    key_, _ = engine.api_keys.create("k", [Scope.READ])
    no_expiry, _ = engine.sessions.create([ResourceSpec(store.id)])
    too_long, _ = engine.sessions.create([ResourceSpec(store.id)])
    ghost_key, _ = engine.sessions.create([ResourceSpec(store.id)])
    not_revoked, _ = engine.sessions.create([ResourceSpec(store.id)], api_key_id=key_.id)
    fine, _ = engine.sessions.create([ResourceSpec(store.id)], with_token=False)
    raw = functools.partial(execute_sql, engine.url)
    raw(f"UPDATE sessions SET expires_at = NULL WHERE id = '{no_expiry.id}'")
    raw(
        f"UPDATE sessions SET expires_at = '2099-01-01T00:00:00.000000Z' WHERE id = '{too_long.id}'"
    )
    raw(f"UPDATE sessions SET api_key_id = 'apikey_ghost' WHERE id = '{ghost_key.id}'")
    raw(f"UPDATE api_keys SET revoked_at = '{WHEN}' WHERE id = '{key_.id}'")
    lifetime = datetime.fromisoformat("2099-01-01T00:00:00+00:00") - too_long.created_at
    assert sorted(findings(engine)) == sorted(
        [
            f"session {no_expiry.id}: has a token but no expiry, or an expiry but no token",
            f"session {too_long.id}: expires {lifetime} after its creation (1 s to 30 days)",
            f"session {ghost_key.id}: its API key apikey_ghost does not exist",
            f"session {not_revoked.id}: its API key {key_.id} is revoked but it is not",
        ]
    )
    assert fine.id not in " ".join(findings(engine))


@covers("check_principals")
def test_principals(engine: Engine, store: MemoryStore) -> None:
    alice = UserPrincipal(user_id="alice", roles=("support",))
    half, _ = engine.api_keys.create("k", [Scope.READ], principal=alice)
    not_a_list, _ = engine.sessions.create([ResourceSpec(store.id)], principal=alice)
    fine, _ = engine.sessions.create([ResourceSpec(store.id)], principal=alice)
    raw = functools.partial(execute_sql, engine.url)
    raw(f"UPDATE api_keys SET principal_roles_json = NULL WHERE id = '{half.id}'")
    raw(f"UPDATE sessions SET principal_roles_json = '{{}}' WHERE id = '{not_a_list.id}'")
    assert sorted(findings(engine)) == sorted(
        [
            f"api_keys {half.id}: principal_user_id and principal_roles_json must be both "
            "set or both NULL",
            f"sessions {not_a_list.id}: principal_roles_json is not a JSON list of strings",
        ]
    )
    assert fine.id not in " ".join(findings(engine))


def test_sqlite_integrity_check_finds_damaged_pages(tmp_path: Path) -> None:
    """fsck also asks SQLite about its own file (integrity_check, or
    quick_check): damage below the rows memfs reads shows up as findings."""
    path = tmp_path / "memfs.db"
    with Engine(f"sqlite:///{path}") as engine:
        store = engine.stores.create("s")
        for index in range(300):
            engine.for_caller(actor=ACTOR).memories.create(
                store.id, f"/m{index:03}", f"content {index} " * 20
            )
        page_size = engine._sa.connect().exec_driver_sql("PRAGMA page_size").scalar()
    assert fsck_database(str(path)) == []
    assert fsck_database(str(path), sqlite_check="quick") == []
    data = bytearray(path.read_bytes())
    pages = len(data) // page_size
    for page in range(pages // 2, pages // 2 + 4):  # four pages in the middle of the file
        start = page * page_size + 8
        data[start : start + 64] = b"\xa5" * 64
    path.write_bytes(bytes(data))

    for check, pragma in (("integrity", "integrity_check"), ("quick", "quick_check")):
        found = fsck_database(str(path), sqlite_check=check)
        assert found, check
        assert found[0].startswith(f"sqlite {pragma}: "), found
    with pytest.raises(InvalidInput, match="^the SQLite check is one of"):
        fsck_database(str(path), sqlite_check="thorough")


def test_fsck_reports_a_database_it_cannot_open(tmp_path: Path) -> None:
    missing = tmp_path / "nope" / "memfs.db"
    assert fsck_database(str(missing)) == [
        f"database: no memfs database at {missing} (create one with a command that makes "
        "it, e.g. `memfs store create`)"
    ]
    assert not missing.parent.exists()
    foreign = tmp_path / "notes.db"
    with contextlib.closing(sqlite3.connect(foreign)) as db:
        db.execute("CREATE TABLE notes (body TEXT)")
        db.commit()
    assert fsck_database(str(foreign)) == [
        f"database: {foreign} holds tables (notes) but is not a memfs database (no memfs "
        "schema revision); memfs left it alone"
    ]


@covers("check_search_index")
def test_fsck_accepts_queued_work_and_finds_queue_rows_of_erased_memories(
    engine: Engine, store: MemoryStore, actor: Actor
) -> None:
    """A queued memory (its document not yet its head) is the indexer's work, not a
    finding; a queue row of a memory that is gone or redacted is (an erasure removes
    its row in its transaction)."""
    raw = functools.partial(execute_sql, engine.url)
    queued = engine.for_caller(actor=actor).memories.create(store.id, "/queued", "words")
    engine.for_caller(actor=actor).memories.delete(store.id, queued.id)  # soft: still queued
    redacted = engine.for_caller(actor=actor).memories.create(store.id, "/redacted", "x")
    engine.for_caller(actor=actor).memories.delete(store.id, redacted.id, mode=DeleteMode.REDACT)
    assert list(engine.iter_fsck_findings()) == []
    raw(
        "INSERT INTO search_pending (memory_id, queued_at) VALUES "
        f"('mem_gone', 1.0), ('{redacted.id}', 1.0)"
    )
    assert list(engine.iter_fsck_findings()) == [
        f"search pending: memory {redacted.id} was erased (redact)",
        "search pending: memory mem_gone does not exist",
    ]
    raw("DELETE FROM search_pending")  # the teardown's fsck: the document of /queued …
    engine.search.reindex(None)  # … is rebuilt from the heads


@covers("check_search_index")
def test_fsck_finds_an_index_that_disagrees_with_the_heads(
    engine: Engine, store: MemoryStore, actor: Actor
) -> None:
    raw = functools.partial(execute_sql, engine.url)
    stale = engine.for_caller(actor=actor).memories.create(store.id, "/stale", "old words")
    # Japanese text: in both FTS5 tables (English text is in the words table only).
    missing = engine.for_caller(actor=actor).memories.create(store.id, "/missing", "words 長期記憶")
    moved = engine.for_caller(actor=actor).memories.create(store.id, "/moved", "words")
    engine.search.catch_up()  # the documents written (a queued one is the indexer's work)
    raw(f"UPDATE search_docs SET body = 'x' WHERE memory_id = '{stale.id}'")
    raw(f"DELETE FROM search_docs WHERE memory_id = '{missing.id}'")
    raw(f"UPDATE search_docs SET path = '/x' WHERE memory_id = '{moved.id}'")
    every = list(engine.iter_fsck_findings())
    index = [f for f in every if f.startswith("search index ")]
    findings = [f for f in every if f not in index]
    if engine.dialect == "sqlite":  # the FTS5 tables still hold the deleted document
        assert index == [
            f"search index {table}: holds 1 document(s) it should not (removed, or not "
            "text a substring term can match)"
            for table in ("search_fts_words", "search_fts_trigram")
        ]
    else:
        assert index == []
    assert sorted(findings) == sorted(
        [
            f"memory {stale.id}: its search document is not its head content",
            f"memory {missing.id}: live but not in the search index",
            f"memory {moved.id}: its search document has another store or path",
        ]
    )


@covers("check_mount_counts")
def test_identity_mounts(engine: Engine, store: MemoryStore) -> None:
    default, _ = engine.identities.ensure_default_store("idn_fsck", "tmpl_fsck")
    engine.identities.mount("idn_fsck", "tmpl_fsck", store.id)
    assert findings(engine) == []
    raw = functools.partial(execute_sql, engine.url)
    raw(f"UPDATE stores SET identity_template_count = 5 WHERE id = '{store.id}'")
    raw(f"UPDATE identity_mounts SET access = 'read_write' WHERE store_id = '{store.id}'")
    raw(f"UPDATE stores SET identity_id = NULL, template_id = NULL WHERE id = '{default.id}'")
    assert sorted(findings(engine)) == sorted(
        [
            f"store {store.id}: identity_template_count 5 but 1 mounts",
            f"store {default.id}: pair None but default mount of ('idn_fsck', 'tmpl_fsck')",
            f"mount of {store.id} on idn_fsck/tmpl_fsck: explicit but read_write",
        ]
    )


@covers("check_records")
def test_fsck_finds_a_record_index_that_disagrees_with_the_heads(
    engine: Engine, store: MemoryStore, actor: Actor
) -> None:
    raw = functools.partial(execute_sql, engine.url)
    header = "---\ntype: semantic\nimportance: 0.5\ntags: [a]\n---\n"
    changed = engine.for_caller(actor=actor).memories.create(store.id, "/changed", header)
    missing = engine.for_caller(actor=actor).memories.create(store.id, "/missing", header)
    plain = engine.for_caller(actor=actor).memories.create(store.id, "/plain", "no record")
    raw(f"UPDATE records SET importance = 0.9 WHERE memory_id = '{changed.id}'")
    raw(f"DELETE FROM records WHERE memory_id = '{missing.id}'")
    raw(
        "INSERT INTO records (memory_id, store_id, type, scope, last_accessed) VALUES "
        f"('{plain.id}', '{store.id}', 'episodic', 'private', '2026-01-01T00:00:00.000000Z')"
    )
    raw(
        f"INSERT INTO record_tags (memory_id, tag, store_id) VALUES ('mem_gone', 'a', '{store.id}')"
    )
    assert sorted(findings(engine)) == sorted(
        [
            f"memory {changed.id}: its record index row disagrees with its header",
            f"memory {missing.id}: a record missing from the record index",
            f"record_tags row of {missing.id}: no such record in the index",
            f"memory {plain.id}: in the record index but its content is no record",
            "record_tags row of mem_gone: no such record in the index",
        ]
    )


@covers("check_forks")
def test_fsck_finds_a_pruned_fork_base(
    engine: Engine, store: MemoryStore, actor: Actor
) -> None:
    writer = engine.for_caller(actor=actor)
    memory = writer.memories.create(store.id, "/a", "base\n")
    writer.memories.create(store.id, "/b", "the base version\n")
    fork = writer.history.fork(store.id, name="f")
    writer.memories.update(store.id, memory.id, content="head\n")
    execute_sql(
        engine.url,
        f"UPDATE memories SET origin_memory_id = 'mem_elsewhere' WHERE store_id = '{fork.id}'",
    )
    assert list(engine.iter_fsck_findings()) == []  # an origin memory gone is no finding
    head = engine.memories.get(store.id, memory.id).memory_version_id
    execute_sql(
        engine.url,
        f"DELETE FROM versions WHERE memory_id = '{memory.id}' AND id <> '{head}'",
    )
    [finding] = list(engine.iter_fsck_findings())
    assert "has no version left at or before the fork's base" in finding
    engine.stores.delete(fork.id, force=True)


@covers("check_forks")
def test_fsck_finds_a_pruned_merge_base(
    engine: Engine, store: MemoryStore, actor: Actor
) -> None:
    """Once merged, the fork's state at its last merge is the next merge's base: what
    it needs of the fork's history is checked; the flag is a fork's only."""
    writer = engine.for_caller(actor=actor)
    writer.memories.create(store.id, "/a", "base\n")
    writer.memories.create(store.id, "/b", "other\n")
    fork = writer.history.fork(store.id, name="f")
    forked = engine.memories.get_by_path(fork.id, "/a")
    writer.memories.update(fork.id, forked.id, content="fork\n")
    writer.history.merge(fork.id, into=store.id)
    head = writer.memories.update(fork.id, forked.id, content="later\n")
    assert findings(engine) == []
    raw = functools.partial(execute_sql, engine.url)
    raw(  # a bad prune: every version of /a the last merge needs, its point among them
        f"DELETE FROM versions WHERE memory_id = '{forked.id}' "
        f"AND id <> '{head.memory_version_id}'"
    )
    raw(f"UPDATE stores SET fork_merged_seq = 1 WHERE id = '{store.id}'")
    assert _not_blobs(findings(engine)) == [
        f"store {store.id}: fork_merged_seq is set but the store is no fork",
        f"fork {fork.id}: memory {forked.id} has no version left at or before its last "
        "merge, the next merge's base (retention pruned what it needs)",
    ]
    raw(f"UPDATE stores SET fork_merged_seq = NULL WHERE id = '{store.id}'")
    raw(f"UPDATE stores SET fork_created_seq = 1 WHERE id = '{store.id}'")
    assert f"store {store.id}: fork_created_seq is set but the store is no fork" in findings(
        engine
    )
    raw(f"UPDATE stores SET fork_created_seq = NULL WHERE id = '{store.id}'")
    engine.stores.delete(fork.id, force=True)


@covers("check_console_sign_ins")
def test_console_sign_ins(engine: Engine) -> None:
    execute_sql(
        engine.url,
        "INSERT INTO console_sign_ins (id_hash, api_key_id, session_id, created_at, expires_at)"
        f" VALUES ('{'a' * 64}', NULL, NULL, '2026-12-06T00:00:00.000000Z',"
        " '2026-12-05T00:00:00.000000Z')",
    )
    assert findings(engine) == [
        "console sign-in aaaaaaaaaaaa…: names neither an API key and a session",
        "console sign-in aaaaaaaaaaaa…: expires at 2026-12-05T00:00:00.000000Z, not after "
        "its creation 2026-12-06T00:00:00.000000Z",
    ]
    execute_sql(engine.url, "DELETE FROM console_sign_ins")
