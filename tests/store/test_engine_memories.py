"""Memories: create, read, update, rename, listing with prefixes and depth, pagination and
content deduplication (SPEC §1–2, api-contract §5.7–5.10)."""

from __future__ import annotations

import hashlib

import pytest
from store_helpers import collect, snapshot

from memfs.core.errors import (
    ContentTooLarge,
    InvalidContent,
    InvalidCursor,
    InvalidInput,
    InvalidMetadata,
    InvalidPath,
    NotFound,
    PathConflict,
    PathTooLong,
    PreconditionFailed,
    StoreFull,
)
from memfs.core.model import Actor, MemoryPrefix, MemoryStore, Operation
from memfs.store import Engine

SHA256_EMPTY = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


# ---------------------------------------------------------------------- create


def test_create_memory(engine: Engine, store: MemoryStore, actor: Actor) -> None:
    content = "line one\r\n\ttab \u00e9 \U0001f600\n"
    memory = engine.for_caller(actor=actor).memories.create(store.id, "/notes/a.md", content)
    assert memory.id.startswith("mem_")
    assert memory.memory_store_id == store.id
    assert memory.path == "/notes/a.md"
    assert memory.content == content
    assert memory.content_sha256 == sha(content)
    assert memory.content_size_bytes == len(content.encode())
    assert memory.metadata == {}
    assert memory.created_at == memory.updated_at
    assert engine.memories.get(store.id, memory.id) == memory
    assert engine.memories.get_by_path(store.id, "/notes/a.md") == memory
    basic = engine.memories.get(store.id, memory.id, with_content=False)
    assert basic.content is None
    assert basic.content_sha256 == memory.content_sha256
    version = engine.versions.get(store.id, memory.memory_version_id)
    assert version.operation is Operation.CREATED
    assert (version.path, version.content, version.created_by) == ("/notes/a.md", content, actor)
    counted = engine.stores.get(store.id)
    assert (counted.entry_count, counted.total_size_bytes) == (1, len(content.encode()))
    assert counted.updated_at == store.updated_at  # memory changes don't touch the store


def test_create_empty_and_maximal_memories(
    engine: Engine, store: MemoryStore, actor: Actor
) -> None:
    memory = engine.for_caller(actor=actor).memories.create(store.id, "/empty", "")
    assert memory.content == ""
    assert memory.content_sha256 == SHA256_EMPTY
    assert memory.content_size_bytes == 0
    assert engine.memories.get(store.id, memory.id).content == ""
    assert engine.versions.get(store.id, memory.memory_version_id).content == ""
    memory = engine.for_caller(actor=actor).memories.create(
        store.id,
        "/big",
        "x" * 102_400,
        metadata={"type": "semantic"},
    )
    assert memory.content_size_bytes == 102_400
    assert engine.memories.get(store.id, memory.id).metadata == {"type": "semantic"}


BAD_CREATES = [
    ("no-slash", "x", None, InvalidPath),
    ("/a/", "x", None, InvalidPath),
    ("/e\u0301", "x", None, InvalidPath),
    ("/" + "x" * 256, "x", None, PathTooLong),
    ("/ok", "x" * 102_401, None, ContentTooLarge),
    ("/ok", "bell\x07", None, InvalidContent),
    ("/ok", "\ud800", None, InvalidContent),
    ("/ok", "x", {"k": "v" * 513}, InvalidMetadata),
]


def test_create_memory_refuses_bad_input(engine: Engine, store: MemoryStore, actor: Actor) -> None:
    engine.for_caller(actor=actor).memories.create(store.id, "/existing", "x")
    before = snapshot(engine, store.id)
    for path, content, metadata, error in BAD_CREATES:
        with pytest.raises(error) as info:
            engine.for_caller(actor=actor).memories.create(
                store.id, path, content, metadata=metadata
            )
        assert type(info.value) is error
        assert snapshot(engine, store.id) == before


CONFLICTS = [
    ("/a", "/a", "a memory already exists at '/c0/a'"),
    ("/a", "/a/b", "path '/c1/a/b' is below the memory '/c1/a', which is a file"),
    ("/a", "/a/b/c/d", "path '/c2/a/b/c/d' is below the memory '/c2/a', which is a file"),
    ("/a/b", "/a", "path '/c3/a' is a directory holding the memory '/c3/a/b'"),
    ("/a/b/c", "/a", "path '/c4/a' is a directory holding the memory '/c4/a/b/c'"),
]


def test_create_never_overwrites_and_names_the_blocker(
    engine: Engine, store: MemoryStore, actor: Actor
) -> None:
    for case, (first, second, message) in enumerate(CONFLICTS):
        root = f"/c{case}"
        blocker = engine.for_caller(actor=actor).memories.create(store.id, root + first, "first")
        before = snapshot(engine, store.id)
        with pytest.raises(PathConflict) as info:
            engine.for_caller(actor=actor).memories.create(store.id, root + second, "second")
        assert str(info.value) == message
        assert info.value.conflicting_memory_id == blocker.id
        assert info.value.conflicting_path == root + first
        assert snapshot(engine, store.id) == before


def test_paths_that_share_a_string_prefix_or_differ_in_case_coexist(
    engine: Engine, store: MemoryStore, actor: Actor
) -> None:
    for path in ("/a", "/ab", "/a-b/c", "/a.b", "/a0/x", "/notes/x", "/notes-archive/x"):
        engine.for_caller(actor=actor).memories.create(store.id, path, path)
    assert len(engine.memories.all(store.id)) == 7
    # Paths are case-sensitive.
    engine.for_caller(actor=actor).memories.create(store.id, "/Case", "upper")
    engine.for_caller(actor=actor).memories.create(store.id, "/case", "lower")
    assert engine.memories.get_by_path(store.id, "/Case").content == "upper"
    assert engine.memories.get_by_path(store.id, "/case").content == "lower"


def test_store_full(engine: Engine, database: str, actor: Actor) -> None:
    limited = Engine(database, memory_limit=3)
    try:
        store = limited.stores.create("small")
        memories = [limited.for_caller(actor=actor).memories.create(
            store.id, f"/m{i}", "x"
        ) for i in range(3)]
        before = snapshot(limited, store.id)
        with pytest.raises(StoreFull) as info:
            limited.for_caller(actor=actor).memories.create(store.id, "/m3", "x")
        assert str(info.value) == (f"memory store {store.id!r} holds 3 memories; the limit is 3")
        assert snapshot(limited, store.id) == before
        # Deleting one frees a slot; restoring it while full is refused.
        limited.for_caller(actor=actor).memories.delete(store.id, memories[0].id)
        limited.for_caller(actor=actor).memories.create(store.id, "/m3", "x")
        with pytest.raises(StoreFull):
            limited.for_caller(actor=actor).memories.restore(store.id, memories[0].id)
        # Updates and renames of a full store still work.
        limited.for_caller(actor=actor).memories.update(
            store.id, memories[1].id, content="y", path="/n1"
        )
    finally:
        limited.close()


# ------------------------------------------------------------------------ read


def test_unknown_deleted_and_foreign_memories(
    engine: Engine, store: MemoryStore, actor: Actor
) -> None:
    other = engine.stores.create("other")
    foreign = engine.for_caller(actor=actor).memories.create(other.id, "/x", "x")
    gone = engine.for_caller(actor=actor).memories.create(store.id, "/gone", "x")
    engine.for_caller(actor=actor).memories.delete(store.id, gone.id)
    with pytest.raises(NotFound, match=f"memory {foreign.id!r} not found in memory store"):
        engine.memories.get(store.id, foreign.id)
    with pytest.raises(NotFound):
        engine.memories.get(store.id, gone.id)
    with pytest.raises(NotFound):
        engine.memories.get(store.id, "mem_nope")
    with pytest.raises(NotFound, match="^no memory at '/gone' in memory store"):
        engine.memories.get_by_path(store.id, "/gone")
    with pytest.raises(NotFound):
        engine.memories.get_by_path(store.id, "/x")
    with pytest.raises(NotFound):
        engine.memories.get("memstore_nope", foreign.id)
    for memory_id in (gone.id, foreign.id, "mem_nope"):
        with pytest.raises(NotFound):
            engine.for_caller(actor=actor).memories.update(store.id, memory_id, content="y")


# ---------------------------------------------------------------------- update


def test_update_content(engine: Engine, store: MemoryStore, actor: Actor) -> None:
    memory = engine.for_caller(actor=actor).memories.create(store.id, "/a", "one")
    updated = engine.for_caller(actor=actor).memories.update(
        store.id,
        memory.id,
        content="three",
        expected_sha256=sha("one"),
    )
    assert updated.id == memory.id
    assert updated.path == "/a"
    assert updated.content == "three"
    assert (updated.content_sha256, updated.content_size_bytes) == (sha("three"), 5)
    assert updated.memory_version_id != memory.memory_version_id
    assert updated.created_at == memory.created_at
    assert updated.updated_at > memory.updated_at
    version = engine.versions.get(store.id, updated.memory_version_id)
    assert (version.operation, version.path, version.content) == (Operation.MODIFIED, "/a", "three")
    assert engine.stores.get(store.id).total_size_bytes == 5


def test_rename_keeps_the_id(engine: Engine, store: MemoryStore, actor: Actor) -> None:
    memory = engine.for_caller(actor=actor).memories.create(store.id, "/old/name.md", "body")
    renamed = engine.for_caller(actor=actor).memories.update(
        store.id, memory.id, path="/new/name.md"
    )
    assert renamed.id == memory.id
    assert (renamed.path, renamed.content, renamed.content_sha256) == (
        "/new/name.md",
        "body",
        memory.content_sha256,
    )
    assert engine.memories.get_by_path(store.id, "/new/name.md").id == memory.id
    with pytest.raises(NotFound):
        engine.memories.get_by_path(store.id, "/old/name.md")
    version = engine.versions.get(store.id, renamed.memory_version_id)
    assert (version.operation, version.path, version.content) == (
        Operation.MODIFIED,
        "/new/name.md",
        "body",
    )
    both = engine.for_caller(actor=actor).memories.update(
        store.id,
        memory.id,
        path="/final",
        content="new body",
        expected_sha256=sha("body"),
    )
    assert (both.id, both.path, both.content) == (memory.id, "/final", "new body")
    assert len(collect(engine.versions.list, store_id=store.id, memory_id=memory.id)) == 3
    # A file may move into a directory of its own name and back.
    assert engine.for_caller(actor=actor).memories.update(
        store.id, memory.id, path="/final/x"
    ).path == (
        "/final/x"
    )
    assert engine.for_caller(actor=actor).memories.update(
        store.id, memory.id, path="/final"
    ).path == "/final"


def test_update_that_changes_nothing_writes_no_version(
    engine: Engine, store: MemoryStore, actor: Actor
) -> None:
    memory = engine.for_caller(actor=actor).memories.create(
        store.id, "/a", "same", metadata={"k": "v"}
    )
    before = snapshot(engine, store.id)
    for kwargs in (
        {},
        {"content": "same"},
        {"path": "/a"},
        {"content": "same", "path": "/a", "expected_sha256": sha("same")},
        {"metadata": {"k": "v"}},
    ):
        assert engine.for_caller(actor=actor).memories.update(
            store.id, memory.id, **kwargs
        ) == memory
        assert snapshot(engine, store.id) == before


def test_precondition_mismatch_changes_nothing(
    engine: Engine, store: MemoryStore, actor: Actor
) -> None:
    memory = engine.for_caller(actor=actor).memories.create(store.id, "/a", "current")
    before = snapshot(engine, store.id)
    stale = sha("stale")
    for kwargs in (
        {"content": "new"},
        {"path": "/b"},
        {"content": "current"},  # even a no-op update checks the precondition first
        {},
    ):
        with pytest.raises(PreconditionFailed) as info:
            engine.for_caller(actor=actor).memories.update(
                store.id, memory.id, expected_sha256=stale, **kwargs
            )
        assert info.value.actual_sha256 == sha("current")
        assert str(info.value) == (
            f"memory {memory.id!r} has content_sha256 {sha('current')}, not the expected {stale}"
        )
        assert snapshot(engine, store.id) == before


def test_rename_onto_occupied_path(engine: Engine, store: MemoryStore, actor: Actor) -> None:
    memory = engine.for_caller(actor=actor).memories.create(store.id, "/a", "a")
    target = engine.for_caller(actor=actor).memories.create(store.id, "/b", "b")
    directory = engine.for_caller(actor=actor).memories.create(store.id, "/dir/x", "x")
    before = snapshot(engine, store.id)
    for path, blocker in (("/b", target), ("/b/c", target), ("/dir", directory)):
        with pytest.raises(PathConflict) as info:
            engine.for_caller(actor=actor).memories.update(store.id, memory.id, path=path)
        assert info.value.conflicting_memory_id == blocker.id
        assert info.value.conflicting_path == blocker.path
        assert snapshot(engine, store.id) == before


def test_rename_with_replace_soft_deletes_the_destination(
    engine: Engine, store: MemoryStore, actor: Actor
) -> None:
    source = engine.for_caller(actor=actor).memories.create(store.id, "/tmp-file", "new text")
    target = engine.for_caller(actor=actor).memories.create(store.id, "/file", "old text")
    moved = engine.for_caller(actor=actor).memories.update(
        store.id, source.id, path="/file", replace=True
    )
    assert (moved.id, moved.path, moved.content) == (source.id, "/file", "new text")
    assert [m.id for m in engine.memories.all(store.id)] == [source.id]
    with pytest.raises(NotFound):
        engine.memories.get(store.id, target.id)
    tomb = engine.versions.list(store.id, memory_id=target.id).items[0]
    assert (tomb.operation, tomb.path, tomb.reason) == (
        Operation.DELETED,
        "/file",
        "replaced by rename",
    )
    assert [m.id for m in engine.memories.deleted(store.id)] == [target.id]
    counted = engine.stores.get(store.id)
    assert (counted.entry_count, counted.total_size_bytes) == (1, len("new text"))
    # replace=True does not remove a directory in the way.
    engine.for_caller(actor=actor).memories.create(store.id, "/dir/child", "c")
    with pytest.raises(PathConflict):
        engine.for_caller(actor=actor).memories.update(
            store.id, source.id, path="/dir", replace=True
        )


def test_update_metadata_only_writes_no_version(
    engine: Engine, store: MemoryStore, actor: Actor
) -> None:
    memory = engine.for_caller(actor=actor).memories.create(
        store.id, "/a", "x", metadata={"a": "1"}
    )
    updated = engine.for_caller(actor=actor).memories.update(
        store.id, memory.id, metadata={"b": "2"}
    )
    assert updated.metadata == {"b": "2"}
    assert updated.memory_version_id == memory.memory_version_id
    assert len(collect(engine.versions.list, store_id=store.id)) == 1


def test_update_refuses_bad_input(engine: Engine, store: MemoryStore, actor: Actor) -> None:
    memory = engine.for_caller(actor=actor).memories.create(store.id, "/a", "x")
    before = snapshot(engine, store.id)
    for kwargs, error in (
        ({"content": "x" * 102_401}, ContentTooLarge),
        ({"content": "\x00"}, InvalidContent),
        ({"path": "/bad/"}, InvalidPath),
        ({"path": "/" + "x" * 300}, PathTooLong),
        ({"metadata": {"": "v"}}, InvalidMetadata),
    ):
        with pytest.raises(error):
            engine.for_caller(actor=actor).memories.update(store.id, memory.id, **kwargs)
        assert snapshot(engine, store.id) == before


# ------------------------------------------------------------------- listing


def _paths(items: list) -> list[tuple[str, str]]:
    return [("prefix" if isinstance(i, MemoryPrefix) else "memory", i.path) for i in items]


def test_list_documented_depth_1_example(engine: Engine, store: MemoryStore, actor: Actor) -> None:
    for path in ("/notes/a.md", "/notes/b/c.md", "/top.md"):
        engine.for_caller(actor=actor).memories.create(store.id, path, path)
    page = engine.memories.list(store.id, path_prefix="/", depth=1)
    assert _paths(page.items) == [("prefix", "/notes/"), ("memory", "/top.md")]
    assert page.next_cursor is None
    assert _paths(engine.memories.list(store.id, path_prefix="/notes/", depth=1).items) == [
        ("memory", "/notes/a.md"),
        ("prefix", "/notes/b/"),
    ]


TREE = (
    "/a-b",
    "/a.md",
    "/a/x",
    "/a/y/w/q",
    "/a/y/z",
    "/a/y0",
    "/notes-archive/todo.md",
    "/notes/a.md",
    "/notes/b/c.md",
    "/top.md",
    "/z/\u00e9",
    "/\u00e9",
)


def _rollup(prefix: str, depth: int) -> list[tuple[str, str]]:
    """api-contract §5.10 rollup, computed independently of the engine."""
    out: list[tuple[str, str]] = []
    for path in sorted((p for p in TREE if p.startswith(prefix)), key=str.encode):
        rel = path[len(prefix) :].split("/")
        if depth == 0 or len(rel) <= depth:
            out.append(("memory", path))
        else:
            item = ("prefix", prefix + "/".join(rel[:depth]) + "/")
            if item not in out:
                out.append(item)
    return out


LISTINGS = [
    ("/notes/", 0, [("memory", "/notes/a.md"), ("memory", "/notes/b/c.md")]),
    (
        "/a/",
        0,
        [("memory", "/a/x"), ("memory", "/a/y/w/q"), ("memory", "/a/y/z"), ("memory", "/a/y0")],
    ),
    ("/a/", 1, [("memory", "/a/x"), ("prefix", "/a/y/"), ("memory", "/a/y0")]),
    (
        "/a/",
        2,
        [("memory", "/a/x"), ("prefix", "/a/y/w/"), ("memory", "/a/y/z"), ("memory", "/a/y0")],
    ),
    ("/a/y/", 1, [("prefix", "/a/y/w/"), ("memory", "/a/y/z")]),
    (
        "/",
        1,
        [
            ("memory", "/a-b"),
            ("memory", "/a.md"),
            ("prefix", "/a/"),
            ("prefix", "/notes-archive/"),
            ("prefix", "/notes/"),
            ("memory", "/top.md"),
            ("prefix", "/z/"),
            ("memory", "/\u00e9"),
        ],
    ),
    ("/nothing/", 0, []),
]


def test_list_prefix_matches_whole_segments_and_rolls_up(
    engine: Engine, store: MemoryStore, actor: Actor
) -> None:
    for path in TREE:
        engine.for_caller(actor=actor).memories.create(store.id, path, path)
    for prefix, depth, expected in LISTINGS:
        assert expected == _rollup(prefix, depth)
        page = engine.memories.list(store.id, path_prefix=prefix, depth=depth)
        assert _paths(page.items) == expected, (prefix, depth)
        assert page.next_cursor is None


def test_list_every_item_exactly_once_with_any_limit(
    engine: Engine, store: MemoryStore, actor: Actor
) -> None:
    for path in TREE:
        engine.for_caller(actor=actor).memories.create(store.id, path, path)
    gone = engine.for_caller(actor=actor).memories.create(store.id, "/deleted/x", "x")
    engine.for_caller(actor=actor).memories.delete(store.id, gone.id)
    for prefix in ("/", "/a/", "/notes/"):
        for depth in (0, 1, 2, 3):
            expected = _rollup(prefix, depth)
            for limit in range(1, len(expected) + 2):
                items = collect(
                    engine.memories.list,
                    store_id=store.id,
                    path_prefix=prefix,
                    depth=depth,
                    limit=limit,
                )
                assert _paths(items) == expected, (prefix, depth, limit)


def test_list_with_content(engine: Engine, store: MemoryStore, actor: Actor) -> None:
    engine.for_caller(actor=actor).memories.create(store.id, "/a", "alpha")
    engine.for_caller(actor=actor).memories.create(store.id, "/b", "")
    basic = engine.memories.list(store.id).items
    assert [m.content for m in basic] == [None, None]
    assert [m.content_sha256 for m in basic] == [sha("alpha"), SHA256_EMPTY]
    full = engine.memories.list(store.id, with_content=True).items
    assert [m.content for m in full] == ["alpha", ""]


def test_list_refuses_bad_arguments(engine: Engine, store: MemoryStore, actor: Actor) -> None:
    for i in range(3):
        engine.for_caller(actor=actor).memories.create(store.id, f"/d/m{i}", "x")
    for prefix in ("/notes", "notes/", "", "//"):
        with pytest.raises(InvalidPath):
            engine.memories.list(store.id, path_prefix=prefix)
    for depth in (-1, True, 1.5):
        with pytest.raises(InvalidInput, match="depth"):
            engine.memories.list(store.id, depth=depth)
    for limit in (0, 101):
        with pytest.raises(InvalidInput, match="^limit must be an integer from 1 to 100$"):
            engine.memories.list(store.id, limit=limit)
    cursor = engine.memories.list(store.id, limit=1).next_cursor
    assert cursor is not None
    # The cursor is bound to the store, prefix and depth; limit and view may change.
    assert engine.memories.list(store.id, limit=5, cursor=cursor, with_content=True).items
    for kwargs in ({"path_prefix": "/d/"}, {"depth": 1}):
        with pytest.raises(InvalidCursor):
            engine.memories.list(store.id, cursor=cursor, **kwargs)
    other = engine.stores.create("other")
    with pytest.raises(InvalidCursor):
        engine.memories.list(other.id, cursor=cursor)
    versions_cursor = engine.versions.list(store.id, limit=1).next_cursor
    assert versions_cursor is not None
    with pytest.raises(InvalidCursor):
        engine.memories.list(store.id, cursor=versions_cursor)
    with pytest.raises(NotFound):
        engine.memories.list("memstore_nope")


# ------------------------------------------------------------------- dedup


def test_identical_content_is_stored_once(engine: Engine, store: MemoryStore, actor: Actor) -> None:
    other = engine.stores.create("other")
    first = engine.for_caller(actor=actor).memories.create(store.id, "/a", "same bytes")
    second = engine.for_caller(actor=actor).memories.create(store.id, "/b", "same bytes")
    engine.for_caller(actor=actor).memories.create(other.id, "/c", "same bytes")
    assert engine.statistics()["blobs"] == 1
    assert first.blob_key == second.blob_key != ""
    assert engine.blobs.read(first.blob_key) == b"same bytes"
    engine.for_caller(actor=actor).memories.update(store.id, first.id, content="different")
    assert engine.statistics()["blobs"] == 2
    engine.for_caller(actor=actor).memories.update(store.id, first.id, content="same bytes")
    assert engine.statistics()["blobs"] == 2
    with pytest.raises(NotFound):
        engine.blobs.read("0" * 32)
    # Read-ahead: several blobs in one query; unknown keys are left out, not an error.
    both = engine.blobs.read_many([first.blob_key, "0" * 32, first.blob_key])
    assert both == {first.blob_key: b"same bytes"}
    assert engine.blobs.read_many([]) == {}
