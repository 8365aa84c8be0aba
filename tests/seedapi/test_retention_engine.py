"""Version retention (SPEC §2) in the engine, with a fake clock: a store's
period, what a prune drops and what it must keep (the head version of every memory,
the version a restore needs), and that pruned content leaves the disk as a redaction's
does. fsck runs at the teardown of the ``engine`` fixture."""

from __future__ import annotations

import secrets
from datetime import timedelta
from pathlib import Path

import pytest

from memfs.core.config import database_url
from memfs.core.errors import InvalidInput, NotFound
from memfs.core.model import Actor, DeleteMode, Operation, utcnow
from memfs.store import Engine

ACTOR = Actor.api_key("apikey_retention_tests")
DAY_S = 24 * 3600
LATER = timedelta(days=31)


def _history(engine: Engine, store_id: str, memory_id: str) -> list[Operation]:
    page = engine.list_versions(store_id, memory_id=memory_id, limit=100)
    return [v.operation for v in page.items]


def test_a_store_keeps_versions_forever_unless_given_a_period(engine: Engine) -> None:
    forever = engine.create_store("forever")
    assert forever.version_retention_s is None
    kept = engine.create_store("thirty days", version_retention_s=30 * DAY_S)
    assert kept.version_retention_s == 30 * DAY_S
    memory = engine.create_memory(forever.id, "/a", "one", actor=ACTOR)
    engine.update_memory(forever.id, memory.id, actor=ACTOR, content="two")

    results = engine.prune_versions(now=utcnow() + timedelta(days=3650))

    assert [r.store_id for r in results] == [kept.id]
    assert _history(engine, forever.id, memory.id) == [Operation.MODIFIED, Operation.CREATED]
    changed = engine.update_store(forever.id, version_retention_s=DAY_S)
    assert changed.version_retention_s == DAY_S
    assert changed.updated_at > forever.updated_at
    assert engine.update_store(forever.id, version_retention_s=None).version_retention_s is None
    untouched = engine.update_store(kept.id, name="renamed")
    assert untouched.version_retention_s == 30 * DAY_S


@pytest.mark.parametrize("bad", [0, -1, 101 * 365 * DAY_S, True, "30d"])
def test_a_bad_period_is_refused_and_changes_nothing(engine: Engine, bad: object) -> None:
    store = engine.create_store("s")
    with pytest.raises(InvalidInput, match="version retention"):
        engine.update_store(store.id, name="new", version_retention_s=bad)  # type: ignore[arg-type]
    with pytest.raises(InvalidInput, match="version retention"):
        engine.create_store("t", version_retention_s=bad)  # type: ignore[arg-type]
    assert engine.get_store(store.id) == store
    assert [s.name for s in engine.list_stores().items] == ["s"]


def test_prune_drops_old_versions_and_keeps_heads_and_restore_sources(engine: Engine) -> None:
    store = engine.create_store("pruned", version_retention_s=30 * DAY_S)
    live = engine.create_memory(store.id, "/live", "live one", actor=ACTOR)
    engine.update_memory(store.id, live.id, actor=ACTOR, content="live two")
    live = engine.update_memory(store.id, live.id, actor=ACTOR, content="live three")
    soft = engine.create_memory(store.id, "/soft", "soft one", actor=ACTOR)
    engine.update_memory(store.id, soft.id, actor=ACTOR, content="soft two")
    engine.delete_memory(store.id, soft.id, actor=ACTOR)
    gone = engine.create_memory(store.id, "/gone", "gone one", actor=ACTOR)
    engine.delete_memory(store.id, gone.id, actor=ACTOR, mode=DeleteMode.REDACT)
    versions_before = engine.statistics()["versions"]

    assert [r.versions for r in engine.prune_versions()] == [0]  # nothing is 30 days old
    [dry] = engine.prune_versions(now=utcnow() + LATER, dry_run=True)
    assert (dry.versions, dry.blobs_purged) == (4, 0)
    assert engine.statistics()["versions"] == versions_before

    [result] = engine.prune_versions(now=utcnow() + LATER)

    # Dropped: live's v1 and v2, soft's v1, gone's redacted v1; kept: soft's v2 (what
    # a restore needs; the heads are never candidates).
    assert (result.versions, result.kept) == (4, 1)
    assert result.blobs_purged == 3  # "live one", "live two", "soft one"
    assert _history(engine, store.id, live.id) == [Operation.MODIFIED]
    assert engine.get_memory(store.id, live.id).content == "live three"
    assert _history(engine, store.id, soft.id) == [Operation.DELETED, Operation.MODIFIED]
    assert _history(engine, store.id, gone.id) == [Operation.DELETED]
    assert [r.versions for r in engine.prune_versions(now=utcnow() + LATER)] == [0]
    assert engine.restore_memory(store.id, soft.id, actor=ACTOR).content == "soft two"
    # Restored, it needs neither its old content version nor its tombstone's.
    assert [r.versions for r in engine.prune_versions(now=utcnow() + LATER)] == [2]
    assert _history(engine, store.id, soft.id) == [Operation.CREATED]
    prunes = [e for e in engine.audit_events(store.id) if e["action"] == "prune_versions"]
    assert [e["metadata"]["versions"] for e in prunes] == ["2", "4"]
    event = prunes[0]
    assert event["actor_type"] is None
    assert engine.search("live", [store.id])[0].memory_id == live.id
    assert engine.search('"live one"', [store.id]) == []


def test_prune_of_one_store_and_of_an_unknown_one(engine: Engine) -> None:
    first = engine.create_store("first", version_retention_s=DAY_S)
    second = engine.create_store("second", version_retention_s=DAY_S)
    for store in (first, second):
        memory = engine.create_memory(store.id, "/m", "old", actor=ACTOR)
        engine.update_memory(store.id, memory.id, actor=ACTOR, content="new")
    [result] = engine.prune_versions(store_id=first.id, now=utcnow() + timedelta(days=2))
    assert (result.store_id, result.versions) == (first.id, 1)
    assert engine.statistics()["versions"] == 3
    with pytest.raises(NotFound):
        engine.prune_versions(store_id="memstore_nope")


def _files_holding(directory: Path, needle: bytes) -> set[str]:
    return {p.name for p in directory.iterdir() if p.is_file() and needle in p.read_bytes()}


def test_pruned_content_leaves_the_sqlite_files(tmp_path: Path) -> None:
    secret = "PRUNED-" + secrets.token_hex(12)
    path = tmp_path / "store.db"
    engine = Engine(database_url(str(path)))
    try:
        store = engine.create_store("disk", version_retention_s=DAY_S)
        for i in range(40):  # neighbours on the same and later pages
            engine.create_memory(store.id, f"/n{i:02d}", f"neighbour {i} " * 30, actor=ACTOR)
        memory = engine.create_memory(store.id, f"/{secret}", f"token {secret}", actor=ACTOR)
        engine.update_memory(store.id, memory.id, actor=ACTOR, path="/renamed", content="new")
        assert _files_holding(tmp_path, secret.encode())  # the check can see the bytes

        [result] = engine.prune_versions(now=utcnow() + timedelta(days=2))

        assert result.versions == 1  # the secret's created version (the rest are heads)
        assert _files_holding(tmp_path, secret.encode()) == set()
        assert list(engine.iter_fsck_findings()) == []
    finally:
        engine.close()
    assert _files_holding(tmp_path, secret.encode()) == set()
