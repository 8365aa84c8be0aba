"""The engine's folds (SPEC §4 "One save, one version"): a claim's first content, a
revival of the caller's own delete, a temporary folded into its target. Each takes back
only the caller's own, recent writes and otherwise changes nothing."""

from __future__ import annotations

import pytest
from sqlalchemy import create_engine, text

from memfs.core.errors import PreconditionFailed
from memfs.core.model import Actor, ActorType
from memfs.store import Engine

MOUNT = Actor(type=ActorType.SESSION, id="sesn_mount")
OTHER = Actor(type=ActorType.SESSION, id="sesn_other")


def _ops(engine: Engine, store_id: str, memory_id: str) -> list[tuple[str, str | None, str | None]]:
    return [
        (v.operation.value, v.path, engine.versions.get(store_id, v.id).content)
        for v in reversed(engine.versions.list(store_id, memory_id=memory_id, limit=100).items)
    ]


@pytest.fixture
def store_id(engine: Engine) -> str:
    return engine.stores.create("Notes").id


def test_a_claim_filled_is_one_created_version(engine: Engine, store_id: str) -> None:
    mount = engine.for_caller(actor=MOUNT)
    claim = mount.memories.create(store_id, "/new.md", "")
    filled = mount.folds.fill_claim(store_id, claim.id, "hello\n", metadata={"k": "v"})
    assert filled is not None
    assert filled.id == claim.id
    assert filled.content == "hello\n"
    assert filled.metadata == {"k": "v"}
    assert _ops(engine, store_id, claim.id) == [("created", "/new.md", "hello\n")]
    assert engine.memories.get(store_id, claim.id).content == "hello\n"
    assert engine.search.query("hello", [store_id])[0].memory_id == claim.id


def test_a_claim_and_its_fill_write_only_rows(engine: Engine, store_id: str) -> None:
    """What an ``O_EXCL`` claim costs (SPEC §4): the memory, its empty version and its
    change, and one queue row for the search index — no search document in either
    transaction; the fill indexes nothing either, and keeps the empty blob for the next
    claim instead of deleting it (fsck accepts it)."""
    mount = engine.for_caller(actor=MOUNT)
    claim = mount.memories.create(store_id, "/claimed.md", "")
    assert _count(engine, "search_docs") == 0
    assert _count(engine, "search_pending") == 1
    mount.folds.fill_claim(store_id, claim.id, "filled words\n")
    assert _count(engine, "search_docs") == 0
    assert _count(engine, "search_pending") == 1  # the claim's row, for the content
    assert _count(engine, "blobs") == 2  # the content and the kept empty blob
    assert list(engine.iter_fsck_findings()) == []
    second = mount.memories.create(store_id, "/second.md", "")
    assert _count(engine, "blobs") == 2  # the empty blob was not written again
    assert mount.folds.fill_claim(store_id, second.id, "more words\n") is not None
    assert [h.path for h in engine.search.query("words", [store_id])] == [
        "/claimed.md",
        "/second.md",
    ]


def _count(engine: Engine, table: str) -> int:
    """Rows of ``table``, read outside the engine."""
    raw = create_engine(engine.url)
    try:
        with raw.connect() as conn:
            return int(conn.execute(text(f"SELECT count(*) FROM {table}")).scalar_one())
    finally:
        raw.dispose()


def test_only_the_callers_empty_claim_is_filled(engine: Engine, store_id: str) -> None:
    mount = engine.for_caller(actor=MOUNT)
    theirs = engine.for_caller(actor=OTHER).memories.create(store_id, "/a.md", "")
    assert mount.folds.fill_claim(store_id, theirs.id, "x\n") is None
    written = mount.memories.create(store_id, "/b.md", "")
    mount.memories.update(store_id, written.id, content="y\n")
    assert mount.folds.fill_claim(store_id, written.id, "z\n") is None
    assert [op for op, _, _ in _ops(engine, store_id, written.id)] == ["created", "modified"]


def test_a_revival_keeps_the_id_and_adds_one_version(engine: Engine, store_id: str) -> None:
    mount = engine.for_caller(actor=MOUNT)
    memory = mount.memories.create(store_id, "/f.md", "one\n")
    mount.memories.delete(store_id, memory.id)
    revived = mount.folds.revive(store_id, memory.id, "two\n")
    assert revived is not None
    assert revived.id == memory.id
    assert revived.content == "two\n"
    assert _ops(engine, store_id, memory.id) == [
        ("created", "/f.md", "one\n"), ("modified", "/f.md", "two\n")
    ]
    mount.memories.delete(store_id, memory.id)
    same = mount.folds.revive(store_id, memory.id, "two\n")
    assert same is not None
    assert len(_ops(engine, store_id, memory.id)) == 2  # unchanged: no version
    assert engine.stores.get(store_id).entry_count == 1


def test_no_revival_of_another_callers_delete_or_a_taken_path(
    engine: Engine, store_id: str
) -> None:
    mount = engine.for_caller(actor=MOUNT)
    memory = mount.memories.create(store_id, "/f.md", "one\n")
    engine.for_caller(actor=OTHER).memories.delete(store_id, memory.id)
    assert mount.folds.revive(store_id, memory.id) is None
    other = mount.memories.create(store_id, "/g.md", "g\n")
    mount.memories.delete(store_id, other.id)
    mount.memories.create(store_id, "/g.md", "new g\n")
    assert mount.folds.revive(store_id, other.id) is None
    assert mount.folds.revive(store_id, other.id, window_s=0.0) is None


def test_a_temporary_folds_into_its_target(engine: Engine, store_id: str) -> None:
    target = engine.memories.create(store_id, "/f.md", "old\n")
    mount = engine.for_caller(actor=MOUNT)
    temp = mount.memories.create(store_id, "/f.md.tmp123", "")
    assert mount.folds.fill_claim(store_id, temp.id, "new\n") is not None
    saved = mount.folds.fold_temporary(
        store_id, temp.id, target_id=target.id, path="/f.md", content="new\n",
        expected_sha256=target.content_sha256,
    )
    assert saved.id == target.id
    assert saved.content == "new\n"
    assert _ops(engine, store_id, target.id) == [
        ("created", "/f.md", "old\n"), ("modified", "/f.md", "new\n")
    ]
    assert engine.versions.list(store_id, memory_id=temp.id).items == []
    assert [m.path for m in engine.memories.all(store_id)] == ["/f.md"]
    assert engine.memories.deleted(store_id) == []


def test_a_fold_over_a_changed_target_changes_nothing(engine: Engine, store_id: str) -> None:
    target = engine.memories.create(store_id, "/f.md", "old\n")
    mount = engine.for_caller(actor=MOUNT)
    temp = mount.memories.create(store_id, "/tmp1", "new\n")
    with pytest.raises(PreconditionFailed):
        mount.folds.fold_temporary(
            store_id, temp.id, target_id=target.id, path="/f.md", content="new\n",
            expected_sha256="0" * 64,
        )
    assert engine.memories.get(store_id, temp.id).content == "new\n"
    assert engine.memories.get(store_id, target.id).content == "old\n"


def test_a_temporary_renamed_to_a_new_name_has_one_created_version(
    engine: Engine, store_id: str
) -> None:
    mount = engine.for_caller(actor=MOUNT)
    temp = mount.memories.create(store_id, "/tmp1", "")
    mount.folds.fill_claim(store_id, temp.id, "a\n")
    mount.memories.update(store_id, temp.id, content="a\nb\n")
    moved = mount.folds.fold_temporary(
        store_id, temp.id, target_id=None, path="/notes/new.md", content=None
    )
    assert moved.id == temp.id
    assert moved.path == "/notes/new.md"
    assert _ops(engine, store_id, temp.id) == [("created", "/notes/new.md", "a\nb\n")]


def test_someone_elses_temporary_is_only_soft_deleted(engine: Engine, store_id: str) -> None:
    target = engine.memories.create(store_id, "/f.md", "old\n")
    temp = engine.for_caller(actor=OTHER).memories.create(store_id, "/tmp1", "new\n")
    mount = engine.for_caller(actor=MOUNT)
    mount.folds.fold_temporary(
        store_id, temp.id, target_id=target.id, path="/f.md", content="new\n"
    )
    assert [m.id for m in engine.memories.deleted(store_id)] == [temp.id]
    assert [op for op, _, _ in _ops(engine, store_id, temp.id)] == ["created", "deleted"]
    moved = engine.for_caller(actor=OTHER).memories.create(store_id, "/tmp2", "x\n")
    renamed = mount.folds.fold_temporary(
        store_id, moved.id, target_id=None, path="/y.md", content=None
    )
    assert [op for op, _, _ in _ops(engine, store_id, renamed.id)] == ["created", "modified"]


def test_erase_temporary(engine: Engine, store_id: str) -> None:
    mount = engine.for_caller(actor=MOUNT)
    temp = mount.memories.create(store_id, "/tmp1", "x\n")
    assert mount.folds.erase_temporary(store_id, temp.id) is True
    assert engine.versions.list(store_id, memory_id=temp.id).items == []
    old = mount.memories.create(store_id, "/tmp2", "x\n")
    assert mount.folds.erase_temporary(store_id, old.id, window_s=0.0) is False
    assert [m.id for m in engine.memories.deleted(store_id)] == [old.id]
