"""Visibility in the store (SPEC §6): for a restricted viewer the
engine leaves hidden records out of listings (pages stay full), a mount's tree, counts,
search, versions and the change feed, answers NotFound by id, and refuses a write whose
result its writer could not see — on SQLite and PostgreSQL."""

from __future__ import annotations

import pytest

from memfs.core.errors import NotFound, NotRestorable, PathConflict, PermissionDenied
from memfs.core.model import Actor, ChangeKind, DeleteMode, MemoryStore
from memfs.core.visibility import Viewer
from memfs.store import Engine

ACTOR = Actor.api_key("apikey_tests")
ALICE = Viewer(user_id="alice")
BOB = Viewer(user_id="bob")
SUPPORT = Viewer(user_id="carol", roles=frozenset({"support"}))
NOBODY = Viewer()


def record(user: str | None, scope: str | None = None, **lists: list[str]) -> str:
    lines = ["---", "type: preference"]
    if user is not None:
        lines.append(f"user_id: {user}")
    if scope is not None:
        lines.append(f"scope: {scope}")
    for key, values in lists.items():
        lines.append(f"{key}: [{', '.join(values)}]")
    return "\n".join([*lines, "---", "likes tea\n"])


@pytest.fixture
def store(engine: Engine) -> MemoryStore:
    store = engine.stores.create("Shared")
    files = {
        "/a/alice.md": record("alice"),
        "/a/bob.md": record("bob"),
        "/a/bob-for-support.md": record("bob", allowed_roles=["support"]),
        "/a/bob-for-alice.md": record("bob", allowed_users=["alice"]),
        "/a/shared.md": record("bob", scope="share"),
        "/a/public.md": record("bob", scope="public"),
        "/b/plain.md": "no header, likes tea\n",
        "/c/only-bob/deep.md": record("bob"),
    }
    for path, content in files.items():
        engine.for_caller(actor=ACTOR).memories.create(store.id, path, content)
    return store


EVERYONE = {"/a/shared.md", "/a/public.md", "/b/plain.md"}
SEES = {
    "alice": EVERYONE | {"/a/alice.md", "/a/bob-for-alice.md"},
    "bob": EVERYONE | {"/a/bob.md", "/a/bob-for-support.md", "/a/bob-for-alice.md",
                       "/c/only-bob/deep.md"},
    "carol": EVERYONE | {"/a/bob-for-support.md"},
    None: EVERYONE,
}
VIEWERS = [ALICE, BOB, SUPPORT, NOBODY]


def _listed(engine: Engine, store: MemoryStore, viewer: Viewer | None) -> list[str]:
    paths, cursor = [], None
    while True:
        page = engine.for_caller(viewer=viewer).memories.list(store.id, limit=2, cursor=cursor)
        assert len(page.items) == 2 or page.next_cursor is None  # pages stay full
        paths += [item.path for item in page.items]
        if page.next_cursor is None:
            return paths
        cursor = page.next_cursor


@pytest.mark.parametrize("viewer", VIEWERS, ids=lambda v: str(v.user_id))
def test_listings_trees_counts_and_retrieves_show_exactly_what_the_viewer_sees(
    engine: Engine, store: MemoryStore, viewer: Viewer
) -> None:
    expected = SEES[viewer.user_id]
    assert set(_listed(engine, store, viewer)) == expected
    assert {m.path for m in engine.for_caller(viewer=viewer).memories.all(store.id)} == expected
    rolled_up = {item.path for item in engine.for_caller(viewer=viewer).memories.list(
        store.id, depth=1
    ).items}
    assert ("/c/" in rolled_up) == (viewer.user_id == "bob")  # a prefix of hidden ones only
    counted = engine.for_caller(viewer=viewer).stores.get(store.id)
    assert counted.entry_count == len(expected)
    everything = engine.memories.all(store.id)
    assert engine.stores.get(store.id).entry_count == len(everything) == 8
    sizes = {m.path: m.content_size_bytes for m in everything}
    assert counted.total_size_bytes == sum(sizes[p] for p in expected)
    listed = engine.for_caller(viewer=viewer).stores.list().items
    assert [s.entry_count for s in listed if s.id == store.id] == [len(expected)]
    for memory in everything:
        if memory.path in expected:
            assert engine.for_caller(viewer=viewer).memories.get(
                store.id, memory.id
            ).path == memory.path
            engine.for_caller(viewer=viewer).memories.get_by_path(store.id, memory.path)
        else:
            with pytest.raises(NotFound, match=f"memory '{memory.id}' not found"):
                engine.for_caller(viewer=viewer).memories.get(store.id, memory.id)
            with pytest.raises(NotFound):
                engine.for_caller(viewer=viewer).memories.get_by_path(store.id, memory.path)
    hits = engine.for_caller(viewer=viewer).search.query("tea", [store.id])
    assert {hit.path for hit in hits} == expected
    assert {hit.path for hit in engine.for_caller(viewer=viewer).search.query(
        "tea", None
    )} == expected
    assert len(engine.search.query("tea", [store.id])) == 8


def test_versions_and_the_change_feed_hide_what_the_viewer_can_not_see(
    engine: Engine, store: MemoryStore
) -> None:
    by_path = {m.path: m for m in engine.memories.all(store.id)}
    bob_only = by_path["/a/bob.md"]
    # Live and hidden: restoring it is the 404 of an unknown id, never "is not deleted"
    # (which would tell Alice it exists).
    with pytest.raises(NotFound):
        engine.for_caller(actor=ACTOR, viewer=ALICE).memories.restore(store.id, bob_only.id)
    with pytest.raises(NotRestorable):
        engine.for_caller(actor=ACTOR, viewer=BOB).memories.restore(store.id, bob_only.id)
    seen_versions = engine.for_caller(viewer=ALICE).versions.list(store.id, limit=100).items
    assert {v.path for v in seen_versions} == SEES["alice"]
    with pytest.raises(NotFound):
        engine.for_caller(viewer=ALICE).versions.get(store.id, bob_only.memory_version_id)
    assert engine.for_caller(viewer=BOB).versions.get(
        store.id, bob_only.memory_version_id
    ).path == "/a/bob.md"

    changes = engine.for_caller(viewer=ALICE).feed.changes_since(store.id, 0)
    assert [c.seq for c in changes] == [c.seq for c in engine.feed.changes_since(store.id, 0)]
    written = [c for c in changes if c.kind is ChangeKind.MEMORY_WRITTEN]
    assert {c.path for c in written if c.path is not None} == SEES["alice"]
    hidden = [c for c in written if c.memory_id == bob_only.id]
    assert len(hidden) == 1
    assert (hidden[0].path, hidden[0].content_sha256, hidden[0].memory_version_id) == (
        None, None, None,
    )

    # Deleted, Bob's private record stays hidden: its versions and its restore listing
    # are judged by its last content.
    engine.for_caller(actor=ACTOR).memories.delete(store.id, bob_only.id)
    def versioned(viewer: Viewer) -> set[str]:
        return {v.memory_id for v in engine.for_caller(viewer=viewer).versions.list(
            store.id, limit=100
        ).items}

    assert bob_only.id not in versioned(ALICE)
    assert bob_only.id in versioned(BOB)
    assert [m.id for m in engine.for_caller(viewer=ALICE).memories.deleted(store.id)] == []
    assert [m.id for m in engine.for_caller(viewer=BOB).memories.deleted(store.id)] == [bob_only.id]
    deleted = engine.for_caller(viewer=ALICE).feed.changes_since(store.id, 0)[-1]
    assert (deleted.kind, deleted.memory_id, deleted.path) == (
        ChangeKind.MEMORY_DELETED, bob_only.id, None,
    )
    with pytest.raises(NotFound):
        engine.for_caller(actor=ACTOR, viewer=ALICE).memories.restore(store.id, bob_only.id)
    assert engine.for_caller(actor=ACTOR, viewer=BOB).memories.restore(
        store.id, bob_only.id
    ).id == bob_only.id


def test_a_writer_can_not_write_a_record_it_could_not_see(
    engine: Engine, store: MemoryStore
) -> None:
    before = engine.feed.last_seq(store.id)
    for viewer, content in (
        (ALICE, record("bob")),
        (ALICE, record(None)),
        (NOBODY, record("alice")),
    ):
        with pytest.raises(PermissionDenied) as refused:
            engine.for_caller(actor=ACTOR, viewer=viewer).memories.create(
                store.id, "/new.md", content
            )
        assert refused.value.code == "record_not_visible"
    mine = engine.for_caller(actor=ACTOR, viewer=ALICE).memories.create(
        store.id, "/new.md", record("alice")
    )
    # Giving one's own record away is refused too, and leaves it as it was.
    with pytest.raises(PermissionDenied, match="invisible to its writer"):
        engine.for_caller(actor=ACTOR, viewer=ALICE).memories.update(
            store.id, mine.id, content=record("bob")
        )
    assert engine.memories.get(store.id, mine.id).content == record("alice")
    shared = engine.for_caller(actor=ACTOR, viewer=ALICE).memories.update(
        store.id,
        mine.id,
        content=record("bob", scope="share"),
    )
    assert shared.content == record("bob", scope="share")
    assert engine.feed.last_seq(store.id) == before + 2
    # Another's private record can't be changed or deleted: it does not exist for Alice.
    bob_only = engine.memories.get_by_path(store.id, "/a/bob.md")
    with pytest.raises(NotFound):
        engine.for_caller(actor=ACTOR, viewer=ALICE).memories.update(
            store.id, bob_only.id, content="x"
        )
    for mode in DeleteMode:
        with pytest.raises(NotFound):
            engine.for_caller(actor=ACTOR, viewer=ALICE).memories.delete(
                store.id, bob_only.id, mode=mode
            )
    assert engine.memories.get(store.id, bob_only.id).content == record("bob")
    # An unrestricted caller writes anything.
    engine.for_caller(actor=ACTOR).memories.create(store.id, "/ownerless.md", record(None))


def test_record_listings_and_relations_hide_what_the_viewer_can_not_see(
    engine: Engine, store: MemoryStore
) -> None:
    pointing = engine.for_caller(actor=ACTOR).memories.create(
        store.id,
        "/a/points.md",
        "---\ntype: semantic\nscope: share\nrelations:\n"
        "  - {type: related_to, target: /a/bob.md}\n"
        "  - {type: related_to, target: /a/shared.md}\n---\nsee there\n",
    )
    listed = {r.path for r in engine.for_caller(viewer=ALICE).records.list([store.id])}
    assert listed == (SEES["alice"] - {"/b/plain.md"}) | {"/a/points.md"}
    bob_only = engine.memories.get_by_path(store.id, "/a/bob.md")
    assert engine.for_caller(viewer=ALICE).records.get([bob_only.id]) == {}
    relations = engine.for_caller(viewer=ALICE).records.get([pointing.id])[pointing.id].relations
    assert [(r.target, r.target_path) for r in relations] == [
        ("/a/bob.md", None), ("/a/shared.md", "/a/shared.md"),
    ]
    relations = engine.for_caller(viewer=BOB).records.get([pointing.id])[pointing.id].relations
    assert [r.target_path for r in relations] == ["/a/bob.md", "/a/shared.md"]
    assert engine.for_caller(viewer=BOB).records.relations_to(bob_only.id)
    # What points at a record is hidden with its source.
    engine.for_caller(actor=ACTOR).memories.create(
        store.id,
        "/a/bob-points.md",
        "---\ntype: semantic\nuser_id: bob\nrelations: [{type: related_to, target: /a/shared.md}]"
        "\n---\nx\n",
    )
    shared = engine.memories.get_by_path(store.id, "/a/shared.md")
    sources = {r.memory_path for r in engine.for_caller(viewer=ALICE).records.relations_to(
        shared.id
    )}
    assert sources == {"/a/points.md"}
    assert {r.memory_path for r in engine.records.relations_to(shared.id)} == {
        "/a/points.md", "/a/bob-points.md",
    }


def test_a_path_conflict_names_no_record_the_viewer_can_not_see(
    engine: Engine, store: MemoryStore
) -> None:
    """The path stays taken (paths are unique per store), but the id and path of the
    hidden record in the way are left out; a visible blocker is still named."""
    bob_only = engine.memories.get_by_path(store.id, "/a/bob.md")
    hidden_dir = engine.memories.get_by_path(store.id, "/c/only-bob/deep.md")
    mine = engine.for_caller(actor=ACTOR).memories.create(store.id, "/a/draft.md", record("alice"))
    attempts = [
        lambda: engine.for_caller(actor=ACTOR, viewer=ALICE).memories.create(
            store.id, "/a/bob.md", "x\n"
        ),
        # A hidden record below the path, and above it: its path is not told either.
        lambda: engine.for_caller(actor=ACTOR, viewer=ALICE).memories.create(
            store.id, "/c/only-bob", "x\n"
        ),
        lambda: engine.for_caller(actor=ACTOR, viewer=ALICE).memories.create(
            store.id,
            "/c/only-bob/deep.md/x.md",
            "x\n",
        ),
        lambda: engine.for_caller(actor=ACTOR, viewer=ALICE).memories.update(
            store.id,
            mine.id,
            path="/a/bob.md",
            replace=True,
        ),
    ]
    messages: list[str] = []
    for attempt in attempts:
        with pytest.raises(PathConflict) as caught:
            attempt()
        conflict = caught.value
        assert (conflict.conflicting_memory_id, conflict.conflicting_path) == (None, None)
        for hidden in (bob_only.id, hidden_dir.id):
            assert hidden not in conflict.message
        messages.append(conflict.message)
    assert "deep.md" not in messages[1]  # the hidden record below /c/only-bob
    # Restoring a memory onto a path a hidden record took meanwhile.
    gone = engine.for_caller(actor=ACTOR).memories.create(store.id, "/d/x.md", record("alice"))
    engine.for_caller(actor=ACTOR).memories.delete(store.id, gone.id)
    taker = engine.for_caller(actor=ACTOR).memories.create(store.id, "/d/x.md", record("bob"))
    with pytest.raises(PathConflict) as caught:
        engine.for_caller(actor=ACTOR, viewer=ALICE).memories.restore(store.id, gone.id)
    assert caught.value.conflicting_memory_id is None
    assert taker.id not in caught.value.message
    # A blocker the viewer sees is named, as for an unrestricted caller.
    shared = engine.memories.get_by_path(store.id, "/a/shared.md")
    with pytest.raises(PathConflict) as caught:
        engine.for_caller(actor=ACTOR, viewer=ALICE).memories.create(
            store.id, "/a/shared.md", "x\n"
        )
    assert caught.value.conflicting_memory_id == shared.id
    with pytest.raises(PathConflict) as caught:
        engine.for_caller(actor=ACTOR).memories.create(store.id, "/a/bob.md", "x\n")
    assert caught.value.conflicting_memory_id == bob_only.id


def test_a_rename_never_replaces_a_record_the_viewer_can_not_see(
    engine: Engine, store: MemoryStore
) -> None:
    mine = engine.for_caller(actor=ACTOR).memories.create(store.id, "/a/draft.md", record("alice"))
    bob_only = engine.memories.get_by_path(store.id, "/a/bob.md")
    with pytest.raises(PathConflict):
        engine.for_caller(actor=ACTOR, viewer=ALICE).memories.update(
            store.id,
            mine.id,
            path="/a/bob.md",
            replace=True,
        )
    assert engine.memories.get(store.id, bob_only.id).content == record("bob")
    # Over a record she sees, the rename replaces it as rename(2) does.
    shared = engine.memories.get_by_path(store.id, "/a/shared.md")
    moved = engine.for_caller(actor=ACTOR, viewer=ALICE).memories.update(
        store.id,
        mine.id,
        path="/a/shared.md",
        replace=True,
    )
    assert moved.path == "/a/shared.md"
    with pytest.raises(NotFound):
        engine.memories.get(store.id, shared.id)


@pytest.mark.parametrize("viewer", VIEWERS, ids=lambda v: str(v.user_id))
def test_a_fork_copies_only_what_its_caller_sees(
    engine: Engine, store: MemoryStore, viewer: Viewer
) -> None:
    """SPEC §10: a restricted caller's fork holds what it may read, no more (a fork
    never widens what anyone sees); the records it copies are indexed as records."""
    fork = engine.for_caller(actor=ACTOR, viewer=viewer).history.fork(store.id, name="f")
    copied = {m.path for m in engine.memories.all(fork.id)}
    assert copied == SEES[viewer.user_id]
    assert fork.entry_count == len(copied)
    records = {r.memory_id for r in engine.records.list([fork.id])}
    assert records == {m.id for m in engine.memories.all(fork.id) if m.path != "/b/plain.md"}


def test_merging_a_restricted_fork_never_deletes_what_it_left_out(
    engine: Engine, store: MemoryStore
) -> None:
    """An unrestricted merge of alice's fork: what alice could not see was never forked,
    so it is not "deleted on the fork"; what she deleted on it is."""
    fork = engine.for_caller(actor=ACTOR, viewer=ALICE).history.fork(store.id, name="f")
    mine = engine.memories.get_by_path(fork.id, "/b/plain.md")
    engine.for_caller(actor=ACTOR, viewer=ALICE).memories.delete(fork.id, mine.id)
    plan = engine.for_caller(actor=ACTOR).history.merge(fork.id, into=store.id)
    assert [(s.action.value, s.path_before) for s in plan.steps] == [("delete", "/b/plain.md")]
    left = {m.path for m in engine.memories.all(store.id)}
    assert left == (SEES["bob"] | {"/a/alice.md"}) - {"/b/plain.md"}
