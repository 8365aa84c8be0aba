"""History you can use (SPEC §10), in the engine: points resolved to a store's seq,
as-of reads, snapshots (O(1), kept by retention, checked by fsck), diffs."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import event
from store_helpers import collect

from memfs.core.errors import Conflict, InvalidInput, InvalidPoint, NotFound, RedactedContent
from memfs.core.history import DiffStatus
from memfs.core.model import Actor, DeleteMode, Memory, MemoryPrefix, MemoryStore, utcnow
from memfs.core.points import (
    PointKind,
    parse_mount_store,
    parse_point,
    point_label,
    split_store_point,
)
from memfs.core.rules import StoreSpec
from memfs.store import Engine

# ----------------------------------------------------------------- the parser (pure)


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("now", PointKind.NOW),
        ("NOW", PointKind.NOW),
        ("Now", PointKind.NOW),
        ("2026-12-06T01:02:03Z", PointKind.TIME),
        ("2026-12-06T03:02:03.123456789+02:00", PointKind.TIME),
        ("2026-12-06", PointKind.TIME),
        ("memver_01jd8x", PointKind.VERSION),
        ("before-the-agent", PointKind.SNAPSHOT),
        ("snap_01jd8x", PointKind.SNAPSHOT),
        ("auto-restore-20261206T020950112941Z", PointKind.SNAPSHOT),
        ("nöw", PointKind.SNAPSHOT),
    ],
)
def test_a_point_is_read_by_its_form(text: str, kind: PointKind) -> None:
    assert parse_point(text).kind is kind


def test_a_time_is_read_as_utc() -> None:
    point = parse_point("2026-12-06T03:02:03.5+02:00")
    assert point.time is not None
    assert point.time.isoformat() == "2026-12-06T01:02:03.500000+00:00"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "a point must be 'now', an RFC 3339 time, a memver_ id or a snapshot name"),
        ("2026-13-01", "point '2026-13-01' is not a valid time: month must be in 1..12"),
        (
            "2026-12-06T01:02:03",
            "point '2026-12-06T01:02:03' is not an RFC 3339 time (e.g. 2026-12-06T01:02:03Z; "
            "a time needs its offset, Z for UTC)",
        ),
        ("memver_!", "point 'memver_!' is not a valid version id"),
        ("snap_!", "point 'snap_!' is not a valid snapshot id"),
        (
            "2026-12-06T01:02:03+25:00",
            "point '2026-12-06T01:02:03+25:00': UTC offset +25:00 is out of range "
            "(-23:59 to +23:59; Z for UTC)",
        ),
        (
            "2026-12-06T01:02:03-02:60",
            "point '2026-12-06T01:02:03-02:60': UTC offset -02:60 is out of range "
            "(-23:59 to +23:59; Z for UTC)",
        ),
        (
            "a/b",
            "point 'a/b' is not 'now', an RFC 3339 time, a memver_ id or a snapshot name "
            "(invalid snapshot name 'a/b': segment 'a/b' contains '/')",
        ),
    ],
)
def test_a_bad_point_is_named(text: str, message: str) -> None:
    with pytest.raises(InvalidPoint) as caught:
        parse_point(text)
    assert caught.value.message == message
    assert caught.value.code == "invalid_point"


def test_store_and_point_split_at_the_last_at_sign() -> None:
    assert split_store_point("notes") == ("notes", None)
    store, point = split_store_point("a@b@now")
    assert store == "a@b"
    assert point is not None
    assert point.kind is PointKind.NOW
    with pytest.raises(InvalidPoint):
        split_store_point("notes@")
    with pytest.raises(InvalidPoint):
        split_store_point("@now")


def test_a_mount_store_takes_a_point_and_is_then_read_only() -> None:
    assert parse_mount_store("notes") == (StoreSpec("notes", False), None)
    assert parse_mount_store("notes:ro") == (StoreSpec("notes", True), None)
    spec, point = parse_mount_store("notes@before-cleanup")
    assert spec == StoreSpec("notes", True)
    assert point is not None
    assert (point.kind, point.name) == (PointKind.SNAPSHOT, "before-cleanup")
    spec, point = parse_mount_store("a@b@now:ro")
    assert spec == StoreSpec("a@b", True)
    assert point is not None
    assert point.kind is PointKind.NOW
    with pytest.raises(InvalidInput, match="read-only"):
        parse_mount_store("notes@now:rw")
    with pytest.raises(InvalidPoint):
        parse_mount_store("notes@2026-02-30")


def test_a_point_labels_a_directory() -> None:
    moment = datetime(2026, 12, 6, 4, 45, 1, tzinfo=UTC)
    assert point_label(parse_point("now"), snapshot_name=None, resolved_at=moment) == (
        "20261206T044501Z"
    )
    assert point_label(
        parse_point("2026-12-06T06:02:03.5+02:00"), snapshot_name=None, resolved_at=moment
    ) == "20261206T040203.500000Z"
    assert point_label(parse_point("memver_abc"), snapshot_name=None, resolved_at=moment) == (
        "memver_abc"
    )
    assert point_label(parse_point("snap_x1"), snapshot_name="before", resolved_at=moment) == (
        "before"
    )
    assert point_label(parse_point("before"), snapshot_name=None, resolved_at=moment) == "before"


# ----------------------------------------------------------------- resolving points


def _write(engine: Engine, actor: Actor, store: MemoryStore, path: str, content: str) -> Memory:
    caller = engine.for_caller(actor=actor).memories
    try:
        current = caller.get_by_path(store.id, path, with_content=False)
    except NotFound:
        return caller.create(store.id, path, content)
    return caller.update(store.id, current.id, content=content)


def test_points_resolve_to_the_seq_of_the_store(
    engine: Engine, store: MemoryStore, actor: Actor
) -> None:
    assert engine.history.resolve(store.id).seq == 0  # no version yet: empty
    first = _write(engine, actor, store, "/a", "1")
    second = _write(engine, actor, store, "/a", "2")
    now = engine.history.resolve(store.id, "now")
    assert now.seq > 0
    assert engine.history.resolve(store.id, second.memory_version_id).seq == now.seq
    older = engine.history.resolve(store.id, first.memory_version_id)
    assert older.seq < now.seq
    assert engine.history.resolve(store.id, "2000-01-01T00:00:00Z").seq == 0
    just_now = utcnow().isoformat()
    assert engine.history.resolve(store.id, just_now).seq == now.seq


def test_a_snapshot_point_may_be_its_id(
    engine: Engine, store: MemoryStore, actor: Actor
) -> None:
    _write(engine, actor, store, "/a", "1")
    snap = engine.for_caller(actor=actor).snapshots.create(store.id, "first")
    _write(engine, actor, store, "/a", "2")
    by_id = engine.history.resolve(store.id, snap.id)
    by_name = engine.history.resolve(store.id, "first")
    assert (by_id.seq, by_id.snapshot_name) == (by_name.seq, "first")
    assert engine.history.get_by_path(store.id, "/a", snap.id).content == "1"
    with pytest.raises(InvalidPoint, match="has no snapshot of that id"):
        engine.history.resolve(store.id, "snap_missing")


def test_all_at_a_point_is_every_page_of_the_listing(
    engine: Engine, store: MemoryStore, actor: Actor
) -> None:
    writer = engine.for_caller(actor=actor)
    kept = _write(engine, actor, store, "/b/kept.md", "kept\n")
    gone = _write(engine, actor, store, "/a/gone.md", "gone\n")
    secret = _write(engine, actor, store, "/c/secret.md", "secret\n")
    writer.snapshots.create(store.id, "then")
    writer.memories.delete(store.id, gone.id)
    _write(engine, actor, store, "/c/secret.md", "public\n")
    writer.versions.redact(store.id, secret.memory_version_id)
    _write(engine, actor, store, "/d/new.md", "new\n")
    then = engine.history.all(store.id, "then")
    assert [m.path for m in then] == ["/a/gone.md", "/b/kept.md"]  # redacted: no path
    assert [m.path for m in then] == [
        m.path for m in collect(engine.history.list, store_id=store.id, at="then", limit=1)
    ]
    assert then[1].memory_version_id == kept.memory_version_id
    assert all(m.content is None for m in then)
    assert [m.path for m in engine.history.all(store.id, "now")] == [
        m.path for m in engine.memories.all(store.id)
    ]


def test_bad_points_are_refused_by_name(engine: Engine, store: MemoryStore, actor: Actor) -> None:
    other = engine.stores.create("other")
    elsewhere = _write(engine, actor, other, "/x", "x")
    future = (utcnow() + timedelta(hours=1)).isoformat()
    with pytest.raises(InvalidPoint, match=r"is in the future \(it is now "):
        engine.history.resolve(store.id, future)
    with pytest.raises(InvalidPoint) as caught:
        engine.history.resolve(store.id, elsewhere.memory_version_id)
    assert caught.value.message == (
        f"point {elsewhere.memory_version_id!r}: memory store {store.id!r} has no such version"
    )
    with pytest.raises(InvalidPoint) as caught:
        engine.history.resolve(store.id, "missing")
    assert caught.value.message == (
        f"point 'missing': memory store {store.id!r} has no snapshot of that name"
    )
    with pytest.raises(InvalidPoint) as caught:
        engine.history.resolve(store.id, "snap_01nope")
    assert caught.value.message == (
        f"point 'snap_01nope': memory store {store.id!r} has no snapshot of that id"
    )
    theirs = engine.for_caller(actor=actor).snapshots.create(other.id, "theirs")
    with pytest.raises(InvalidPoint, match="has no snapshot of that id"):
        engine.history.resolve(store.id, theirs.id)  # another store's snapshot
    with pytest.raises(NotFound):
        engine.history.resolve("memstore_nope", "now")


def test_a_snapshot_is_a_point_by_name_or_by_id(
    engine: Engine, store: MemoryStore, actor: Actor
) -> None:
    _write(engine, actor, store, "/a", "1")
    snapshot = engine.for_caller(actor=actor).snapshots.create(store.id, "one")
    _write(engine, actor, store, "/a", "2")
    by_name = engine.history.resolve(store.id, "one")
    assert engine.history.resolve(store.id, snapshot.id).seq == by_name.seq == snapshot.seq
    [memory] = engine.history.list(store.id, at=snapshot.id).items
    assert engine.history.get(store.id, memory.id, snapshot.id).content == "1"


def test_a_time_before_the_store_is_the_empty_store(
    engine: Engine, store: MemoryStore, actor: Actor
) -> None:
    before = (store.created_at - timedelta(days=365)).isoformat()
    _write(engine, actor, store, "/a", "1")
    assert engine.history.resolve(store.id, before).seq == 0
    assert engine.history.list(store.id, at=before).items == []
    assert engine.history.state(store.id, before) == []


# ----------------------------------------------------------------- as-of reads


def test_a_store_reads_as_it_was_at_a_snapshot(
    engine: Engine, store: MemoryStore, actor: Actor
) -> None:
    writer = engine.for_caller(actor=actor)
    a = _write(engine, actor, store, "/notes/a.md", "a one\n")
    b = _write(engine, actor, store, "/notes/b.md", "b one\n")
    gone = _write(engine, actor, store, "/old/gone.md", "bye\n")
    snap = writer.snapshots.create(store.id, "before", description="before the agent")
    _write(engine, actor, store, "/notes/a.md", "a two\n")
    writer.memories.update(store.id, b.id, path="/notes/deep/b.md")
    writer.memories.delete(store.id, gone.id)
    _write(engine, actor, store, "/new.md", "new\n")

    then = collect(engine.history.list, store_id=store.id, at="before", limit=1, with_content=True)
    assert [(m.path, m.content) for m in then] == [
        ("/notes/a.md", "a one\n"),
        ("/notes/b.md", "b one\n"),
        ("/old/gone.md", "bye\n"),
    ]
    assert all(isinstance(m, Memory) and m.metadata == {} for m in then)
    assert then[0].id == a.id
    assert then[0].memory_version_id == a.memory_version_id
    assert snap.memory_version_id == gone.memory_version_id

    now = collect(engine.history.list, store_id=store.id, at="now", limit=2)
    assert [m.path for m in now] == [m.path for m in engine.memories.all(store.id)]

    rolled = collect(engine.history.list, store_id=store.id, at=snap.name, depth=1, limit=1)
    assert rolled == [MemoryPrefix(path="/notes/"), MemoryPrefix(path="/old/")]
    under = collect(
        engine.history.list, store_id=store.id, at="now", path_prefix="/notes/", depth=1
    )
    assert [item.path for item in under] == ["/notes/a.md", "/notes/deep/"]

    assert engine.history.get(store.id, gone.id, "before").content == "bye\n"
    with pytest.raises(NotFound):
        engine.history.get(store.id, gone.id, "now")
    assert engine.history.get_by_path(store.id, "/notes/b.md", "before").id == b.id
    with pytest.raises(NotFound):
        engine.history.get_by_path(store.id, "/notes/b.md", "now")
    assert collect(engine.history.list, store_id=store.id, at="2000-01-01") == []


def test_a_redacted_version_reads_as_redacted_never_as_content(
    engine: Engine, store: MemoryStore, actor: Actor
) -> None:
    writer = engine.for_caller(actor=actor)
    secret = _write(engine, actor, store, "/secret.md", "the password is hunter2\n")
    writer.snapshots.create(store.id, "leaky")
    _write(engine, actor, store, "/secret.md", "no password here\n")
    engine.versions.redact(store.id, secret.memory_version_id)

    listed = collect(engine.history.list, store_id=store.id, at="leaky", with_content=True)
    assert listed == []  # its path is erased with its content
    with pytest.raises(RedactedContent, match="is the redacted version"):
        engine.history.get(store.id, secret.id, "leaky")
    with pytest.raises(NotFound):
        engine.history.get_by_path(store.id, "/secret.md", "leaky")
    change = engine.history.diff(store.id, "leaky", store.id, "now")
    [entry] = change.entries
    assert entry.redacted
    assert entry.diff is None
    assert entry.status is DiffStatus.MODIFIED
    assert "hunter2" not in change.model_dump_json()

    forgotten = _write(engine, actor, store, "/forget.md", "forget me\n")
    writer.snapshots.create(store.id, "before-forget")
    writer.memories.delete(store.id, forgotten.id, mode=DeleteMode.REDACT)
    then = collect(engine.history.list, store_id=store.id, at="before-forget")
    assert [m.path for m in then] == ["/secret.md"]  # /forget.md: redacted with its path
    with pytest.raises(RedactedContent):
        engine.history.get(store.id, forgotten.id, "before-forget")


# ----------------------------------------------------------------- snapshots


def test_snapshot_names_are_unique_and_checked(
    engine: Engine, store: MemoryStore, actor: Actor
) -> None:
    snapshots = engine.for_caller(actor=actor).snapshots
    first = snapshots.create(store.id, "one")
    assert first.id.startswith("snap_")
    assert first.created_by == actor
    assert first.seq == 0
    assert first.memory_version_id is None
    assert first.description == ""
    with pytest.raises(Conflict) as caught:
        snapshots.create(store.id, "one")
    assert caught.value.code == "snapshot_name_taken"
    for bad, why in [
        ("now", "it names the present"),
        ("NOW", "it names the present"),
        ("Now", "it names the present"),
        ("2026-01-01", "it would read as a time"),
        ("memver_x", "it would read as a version id"),
        ("snap_x", "it would read as a snapshot id"),
        ("auto-restore-1", "are reserved for the snapshots memfs takes itself"),
        ("AUTO-x", "are reserved for the snapshots memfs takes itself"),
        ("a@b", "'@' separates a store and a point"),
        ("a/b", "segment 'a/b' contains '/'"),
    ]:
        with pytest.raises(InvalidInput) as refused:
            snapshots.create(store.id, bad)
        assert refused.value.message.endswith(why), refused.value.message
        assert refused.value.code == "invalid_snapshot_name"
    with pytest.raises(InvalidPoint):
        snapshots.create(store.id, "future", at=(utcnow() + timedelta(days=1)).isoformat())
    second = snapshots.create(store.id, "two", description="d")
    assert [s.name for s in collect(snapshots.list, store_id=store.id, limit=1)] == ["two", "one"]
    assert snapshots.get(store.id, second.id) == second
    assert snapshots.delete(store.id, second.id) == second
    with pytest.raises(NotFound):
        snapshots.get(store.id, second.id)
    actions = [e["action"] for e in engine.feed.audit_events(store.id)]
    assert actions[:2] == ["snapshot_delete", "snapshot_create"]


def _statements_of_a_snapshot(engine: Engine, actor: Actor, count: int) -> int:
    store = engine.stores.create(f"snap {count}")
    for index in range(count):
        engine.for_caller(actor=actor).memories.create(store.id, f"/m{index}", f"{index}")
    statements: list[str] = []

    def count_statement(*args: object) -> None:
        statements.append(str(args[2]))

    event.listen(engine._sa, "before_cursor_execute", count_statement)
    try:
        engine.for_caller(actor=actor).snapshots.create(store.id, "s")
    finally:
        event.remove(engine._sa, "before_cursor_execute", count_statement)
    return len(statements)


def test_a_snapshot_costs_the_same_for_1_and_60_memories(engine: Engine, actor: Actor) -> None:
    assert _statements_of_a_snapshot(engine, actor, 1) == _statements_of_a_snapshot(
        engine, actor, 60
    )


def test_deleting_a_store_deletes_its_snapshots(engine: Engine, actor: Actor) -> None:
    store = engine.stores.create("doomed")
    _write(engine, actor, store, "/a", "a")
    engine.for_caller(actor=actor).snapshots.create(store.id, "s")
    engine.stores.delete(store.id)
    with pytest.raises(NotFound):
        engine.snapshots.list(store.id)


def test_retention_keeps_what_a_snapshot_needs(
    engine: Engine, store: MemoryStore, actor: Actor
) -> None:
    engine.stores.update(store.id, version_retention_s=3600)
    writer = engine.for_caller(actor=actor)
    kept = _write(engine, actor, store, "/a", "needed\n")
    _write(engine, actor, store, "/a", "head\n")
    snap = writer.snapshots.create(store.id, "s", at=kept.memory_version_id)
    later = utcnow() + timedelta(hours=2)

    [result] = engine.retention.prune(now=later)
    assert result.versions == 0
    assert result.kept == 1
    assert engine.history.get(store.id, kept.id, "s").content == "needed\n"

    writer.snapshots.delete(store.id, snap.id)
    [result] = engine.retention.prune(now=later)
    assert result.versions == 1


# ----------------------------------------------------------------- diff


def test_diff_names_added_removed_modified_renamed(
    engine: Engine, store: MemoryStore, actor: Actor
) -> None:
    writer = engine.for_caller(actor=actor)
    a = _write(engine, actor, store, "/a.md", "one\ntwo\nthree\n")
    b = _write(engine, actor, store, "/b.md", "bee\n")
    c = _write(engine, actor, store, "/c.md", "sea")
    _write(engine, actor, store, "/same.md", "same\n")
    writer.snapshots.create(store.id, "base")
    _write(engine, actor, store, "/a.md", "one\n2\nthree\n")
    writer.memories.update(store.id, b.id, path="/bb.md")
    writer.memories.update(store.id, c.id, path="/cc.md", content="sea!")
    gone = writer.memories.get_by_path(store.id, "/same.md")
    writer.memories.delete(store.id, gone.id)
    d = _write(engine, actor, store, "/d.md", "new\n")

    change = engine.history.diff(store.id, "base", store.id, "now")
    summary = [(e.status, e.old_path, e.new_path, e.content_changed) for e in change.entries]
    assert summary == [
        (DiffStatus.MODIFIED, "/a.md", "/a.md", True),
        (DiffStatus.RENAMED, "/b.md", "/bb.md", False),
        (DiffStatus.RENAMED, "/c.md", "/cc.md", True),
        (DiffStatus.ADDED, None, "/d.md", True),
        (DiffStatus.REMOVED, "/same.md", None, True),
    ]
    by_id = {e.memory_id: e for e in change.entries}
    assert by_id[a.id].diff == (
        "--- a/a.md\n+++ b/a.md\n@@ -1,3 +1,3 @@\n one\n-two\n+2\n three\n"
    )
    assert by_id[c.id].diff == (
        "--- a/c.md\n+++ b/cc.md\n@@ -1 +1 @@\n-sea\n\\ No newline at end of file\n"
        "+sea!\n\\ No newline at end of file\n"
    )
    assert by_id[d.id].diff == "--- /dev/null\n+++ b/d.md\n@@ -0,0 +1 @@\n+new\n"
    assert by_id[b.id].diff is None
    assert (change.insertions, change.deletions) == (3, 3)
    assert engine.history.diff(store.id, "now", store.id, "now").entries == []
    reverse = engine.history.diff(store.id, "now", store.id, "base")
    assert [e.status for e in reverse.entries] == [
        DiffStatus.MODIFIED,
        DiffStatus.RENAMED,
        DiffStatus.RENAMED,
        DiffStatus.REMOVED,
        DiffStatus.ADDED,
    ]


def test_pages_at_now_continue_across_writes(
    engine: Engine, store: MemoryStore, actor: Actor
) -> None:
    for name in "abcd":
        _write(engine, actor, store, f"/{name}", name)
    first = engine.history.list(store.id, "now", limit=2)
    _write(engine, actor, store, "/e", "e")
    rest = engine.history.list(store.id, "now", limit=10, cursor=first.next_cursor)
    assert [m.path for m in [*first.items, *rest.items]] == ["/a", "/b", "/c", "/d", "/e"]
    with pytest.raises(InvalidInput):  # a cursor of another point
        engine.history.list(store.id, "2000-01-01", limit=10, cursor=first.next_cursor)


def test_a_snapshot_never_takes_in_a_later_write_after_the_newest_version_is_erased(
    engine: Engine,
) -> None:
    """SPEC §10: a version's seq is never reused (SQLite: AUTOINCREMENT), so a snapshot
    taken before a hard delete of the newest version does not show the next write."""
    store = engine.stores.create("seq reuse")
    engine.memories.create(store.id, "/keep.md", "keep\n")
    secret = engine.memories.create(store.id, "/secret.md", "secret\n")
    engine.snapshots.create(store.id, "snap1")
    engine.memories.delete(store.id, secret.id, mode=DeleteMode.HARD_DELETE)
    engine.memories.create(store.id, "/after.md", "written after snap1\n")
    paths = [m.path for m in engine.history.list(store.id, "snap1").items]
    assert paths == ["/keep.md"]


def test_a_diff_of_one_store_reads_only_what_was_written_between_and_misses_nothing(
    engine: Engine,
) -> None:
    """The diff of two points of one store (and a restore plan) reads only the memories
    written between them; on a history of every kind of write it is the diff of the two
    whole states."""
    from memfs.core.history import classify
    from memfs.store.history import state_at

    store = engine.stores.create("mixed")
    m = engine.memories
    kept = m.create(store.id, "/kept.md", "untouched\n")
    edited = m.create(store.id, "/edited.md", "one\n")
    moved = m.create(store.id, "/moved.md", "moves\n")
    gone = m.create(store.id, "/gone.md", "deleted after\n")
    early = m.create(store.id, "/early.md", "deleted before\n")
    back = m.create(store.id, "/back.md", "comes back\n")
    m.delete(store.id, early.id, mode=DeleteMode.SOFT_DELETE)
    m.delete(store.id, back.id, mode=DeleteMode.SOFT_DELETE)
    secret = m.create(store.id, "/secret.md", "v1\n")
    m.update(store.id, secret.id, content="v2\n")
    engine.snapshots.create(store.id, "mid")
    m.update(store.id, edited.id, content="two\n")
    m.update(store.id, moved.id, path="/moved-to.md")
    m.delete(store.id, gone.id, mode=DeleteMode.SOFT_DELETE)
    m.restore(store.id, back.id)
    m.create(store.id, "/new.md", "new\n")
    same = m.create(store.id, "/same.md", "x\n")
    m.update(store.id, same.id, content="y\n")
    m.update(store.id, same.id, content="x\n")
    old_secret = engine.versions.list(store.id, memory_id=secret.id).items[-1]
    engine.versions.redact(store.id, old_secret.id)
    diff = engine.history.diff(store.id, "mid", store.id, "now")
    with engine._db.read() as conn:  # the whole states, as before the shortcut
        old = engine.history.resolve(store.id, "mid")
        new = engine.history.resolve(store.id, "now")
        expected = classify(state_at(conn, old, None), state_at(conn, new, None))
    assert sorted((e.status, e.memory_id) for e in diff.entries) == sorted(
        (status, (after or before).memory_id) for status, before, after in expected  # type: ignore[union-attr]
    )
    assert kept.id not in {e.memory_id for e in diff.entries}
    plan = engine.restores.plan(store.id, "mid")
    assert {s.memory_id for s in plan.steps} == {
        edited.id, moved.id, gone.id, back.id, same.id,
        *(e.memory_id for e in diff.entries if e.status is DiffStatus.ADDED),
    }
