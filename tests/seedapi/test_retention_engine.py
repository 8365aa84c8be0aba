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
    page = engine.versions.list(store_id, memory_id=memory_id, limit=100)
    return [v.operation for v in page.items]


def test_a_store_keeps_versions_forever_unless_given_a_period(engine: Engine) -> None:
    forever = engine.stores.create("forever")
    assert forever.version_retention_s is None
    kept = engine.stores.create("thirty days", version_retention_s=30 * DAY_S)
    assert kept.version_retention_s == 30 * DAY_S
    memory = engine.for_caller(actor=ACTOR).memories.create(forever.id, "/a", "one")
    engine.for_caller(actor=ACTOR).memories.update(forever.id, memory.id, content="two")

    results = engine.retention.prune(now=utcnow() + timedelta(days=3650))

    assert [r.store_id for r in results] == [kept.id]
    assert _history(engine, forever.id, memory.id) == [Operation.MODIFIED, Operation.CREATED]
    changed = engine.stores.update(forever.id, version_retention_s=DAY_S)
    assert changed.version_retention_s == DAY_S
    assert changed.updated_at > forever.updated_at
    assert engine.stores.update(forever.id, version_retention_s=None).version_retention_s is None
    untouched = engine.stores.update(kept.id, name="renamed")
    assert untouched.version_retention_s == 30 * DAY_S


@pytest.mark.parametrize("bad", [0, -1, 101 * 365 * DAY_S, True, "30d"])
def test_a_bad_period_is_refused_and_changes_nothing(engine: Engine, bad: object) -> None:
    store = engine.stores.create("s")
    with pytest.raises(InvalidInput, match="version retention"):
        engine.stores.update(store.id, name="new", version_retention_s=bad)  # type: ignore[arg-type]
    with pytest.raises(InvalidInput, match="version retention"):
        engine.stores.create("t", version_retention_s=bad)  # type: ignore[arg-type]
    assert engine.stores.get(store.id) == store
    assert [s.name for s in engine.stores.list().items] == ["s"]


def test_prune_drops_old_versions_and_keeps_heads_and_restore_sources(engine: Engine) -> None:
    store = engine.stores.create("pruned", version_retention_s=30 * DAY_S)
    live = engine.for_caller(actor=ACTOR).memories.create(store.id, "/live", "live one")
    engine.for_caller(actor=ACTOR).memories.update(store.id, live.id, content="live two")
    live = engine.for_caller(actor=ACTOR).memories.update(store.id, live.id, content="live three")
    soft = engine.for_caller(actor=ACTOR).memories.create(store.id, "/soft", "soft one")
    engine.for_caller(actor=ACTOR).memories.update(store.id, soft.id, content="soft two")
    engine.for_caller(actor=ACTOR).memories.delete(store.id, soft.id)
    gone = engine.for_caller(actor=ACTOR).memories.create(store.id, "/gone", "gone one")
    engine.for_caller(actor=ACTOR).memories.delete(store.id, gone.id, mode=DeleteMode.REDACT)
    versions_before = engine.statistics()["versions"]

    assert [r.versions for r in engine.retention.prune()] == [0]  # nothing is 30 days old
    [dry] = engine.retention.prune(now=utcnow() + LATER, dry_run=True)
    assert (dry.versions, dry.blobs_purged) == (4, 0)
    assert engine.statistics()["versions"] == versions_before

    [result] = engine.retention.prune(now=utcnow() + LATER)

    # Dropped: live's v1 and v2, soft's v1, gone's redacted v1; kept: soft's v2 (what
    # a restore needs; the heads are never candidates).
    assert (result.versions, result.kept) == (4, 1)
    assert result.blobs_purged == 3  # "live one", "live two", "soft one"
    assert _history(engine, store.id, live.id) == [Operation.MODIFIED]
    assert engine.memories.get(store.id, live.id).content == "live three"
    assert _history(engine, store.id, soft.id) == [Operation.DELETED, Operation.MODIFIED]
    assert _history(engine, store.id, gone.id) == [Operation.DELETED]
    assert [r.versions for r in engine.retention.prune(now=utcnow() + LATER)] == [0]
    assert engine.for_caller(actor=ACTOR).memories.restore(store.id, soft.id).content == "soft two"
    # Restored, it needs neither its old content version nor its tombstone's.
    assert [r.versions for r in engine.retention.prune(now=utcnow() + LATER)] == [2]
    assert _history(engine, store.id, soft.id) == [Operation.CREATED]
    prunes = [e for e in engine.feed.audit_events(store.id) if e["action"] == "prune_versions"]
    assert [e["metadata"]["versions"] for e in prunes] == ["2", "4"]
    event = prunes[0]
    assert event["actor_type"] is None
    assert engine.search.query("live", [store.id])[0].memory_id == live.id
    assert engine.search.query('"live one"', [store.id]) == []


def test_prune_of_one_store_and_of_an_unknown_one(engine: Engine) -> None:
    first = engine.stores.create("first", version_retention_s=DAY_S)
    second = engine.stores.create("second", version_retention_s=DAY_S)
    for store in (first, second):
        memory = engine.for_caller(actor=ACTOR).memories.create(store.id, "/m", "old")
        engine.for_caller(actor=ACTOR).memories.update(store.id, memory.id, content="new")
    [result] = engine.retention.prune(store_id=first.id, now=utcnow() + timedelta(days=2))
    assert (result.store_id, result.versions) == (first.id, 1)
    assert engine.statistics()["versions"] == 3
    with pytest.raises(NotFound):
        engine.retention.prune(store_id="memstore_nope")


def _files_holding(directory: Path, needle: bytes) -> set[str]:
    return {p.name for p in directory.iterdir() if p.is_file() and needle in p.read_bytes()}


def test_pruned_content_leaves_the_sqlite_files(tmp_path: Path) -> None:
    secret = "PRUNED-" + secrets.token_hex(12)
    path = tmp_path / "store.db"
    engine = Engine(database_url(str(path)))
    try:
        store = engine.stores.create("disk", version_retention_s=DAY_S)
        for i in range(40):  # neighbours on the same and later pages
            engine.for_caller(actor=ACTOR).memories.create(
                store.id, f"/n{i:02d}", f"neighbour {i} " * 30
            )
        memory = engine.for_caller(actor=ACTOR).memories.create(
            store.id, f"/{secret}", f"token {secret}"
        )
        engine.for_caller(actor=ACTOR).memories.update(
            store.id, memory.id, path="/renamed", content="new"
        )
        assert _files_holding(tmp_path, secret.encode())  # the check can see the bytes

        [result] = engine.retention.prune(now=utcnow() + timedelta(days=2))

        assert result.versions == 1  # the secret's created version (the rest are heads)
        assert _files_holding(tmp_path, secret.encode()) == set()
        assert list(engine.iter_fsck_findings()) == []
    finally:
        engine.close()
    assert _files_holding(tmp_path, secret.encode()) == set()
