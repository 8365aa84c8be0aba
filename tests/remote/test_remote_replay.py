"""Applying writes once and replaying the outbox in order, losing nothing
(memfs/remote/replay.py against the real API in-process, tests/remote/live_server.py)."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from live_server import BASE_URL, LiveServer

from memfs.core.errors import (
    AuthenticationFailed,
    PermissionDenied,
    StoreArchived,
)
from memfs.core.model import MemoryStore, Operation
from memfs.remote import MemfsClient, ServerUnavailable
from memfs.remote.outbox import Outbox, PendingWrite, WriteOperation, WriteOutcome
from memfs.remote.replay import apply_write, conflict_path, replay_outbox
from memfs.store import Engine

WHEN = datetime(2026, 1, 2, 3, 4, 5, 123456, tzinfo=UTC)


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def create(store_id: str, path: str, content: str) -> PendingWrite:
    return PendingWrite(store_id, WriteOperation.CREATE, path, content=content, created_at=WHEN)


def update(
    store_id: str, path: str, content: str, base: str, memory_id: str | None = None
) -> PendingWrite:
    return PendingWrite(
        store_id,
        WriteOperation.UPDATE,
        path,
        memory_id=memory_id,
        content=content,
        expected_sha256=sha(base),
        created_at=WHEN,
    )


def contents(engine: Engine, store_id: str) -> dict[str, str]:
    return {m.path: m.content or "" for m in _full(engine, store_id)}


def _full(engine: Engine, store_id: str) -> list:  # type: ignore[type-arg]
    return [engine.memories.get(store_id, m.id) for m in engine.memories.all(store_id)]


def versions(engine: Engine, store_id: str, memory_id: str) -> list[Operation]:
    page = engine.versions.list(store_id, memory_id=memory_id, limit=100)
    return [v.operation for v in reversed(page.items)]


@pytest.fixture
def outbox(tmp_path: Path) -> Iterator[Outbox]:
    box = Outbox(tmp_path / "outbox", rejected_dir=tmp_path / "rejected")
    yield box
    box.close()


# ------------------------------------------------------------ conflict names


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("/d/notes.md", "/d/notes.conflict-20260102T030405.123456Z-sesn_1.md"),
        ("/README", "/README.conflict-20260102T030405.123456Z-sesn_1"),
        ("/.bashrc", "/.bashrc.conflict-20260102T030405.123456Z-sesn_1"),
        ("/a/b.tar.gz", "/a/b.tar.conflict-20260102T030405.123456Z-sesn_1.gz"),
    ],
)
def test_conflict_path_follows_the_spec_pattern(path: str, expected: str) -> None:
    assert conflict_path(path, WHEN, "sesn_1") == expected


def test_conflict_path_stays_within_name_max() -> None:
    result = conflict_path("/d/" + "é" * 127 + ".md", WHEN, "sesn_" + "x" * 26)
    name = result.rsplit("/", 1)[1]
    assert len(name.encode()) <= 255
    assert name.endswith(".conflict-20260102T030405.123456Z-sesn_" + "x" * 26 + ".md")
    assert name.startswith("é")


# ------------------------------------------------------------------- create


async def test_create_is_applied(
    client: MemfsClient, server: LiveServer, store_engine: Engine, rw_store: MemoryStore
) -> None:
    result = await apply_write(
        client, create(rw_store.id, "/a.md", "hello"), session_id=server.session.id
    )
    assert result.outcome is WriteOutcome.APPLIED
    assert result.memory is not None
    assert result.memory.path == "/a.md"
    assert contents(store_engine, rw_store.id) == {"/a.md": "hello"}


async def test_a_create_whose_response_was_lost_is_not_applied_twice(
    client: MemfsClient, server: LiveServer, store_engine: Engine, rw_store: MemoryStore
) -> None:
    write = create(rw_store.id, "/a.md", "hello")
    server.network.lose_responses = 1
    with pytest.raises(ServerUnavailable):
        await apply_write(client, write, session_id=server.session.id)

    result = await apply_write(client, write, session_id=server.session.id)

    assert result.outcome is WriteOutcome.ALREADY_APPLIED
    (memory,) = store_engine.memories.all(rw_store.id)
    assert result.memory is not None
    assert result.memory.id == memory.id
    assert versions(store_engine, rw_store.id, memory.id) == [Operation.CREATED]


async def test_a_create_on_a_path_taken_elsewhere_keeps_both(
    client: MemfsClient, server: LiveServer, store_engine: Engine, rw_store: MemoryStore
) -> None:
    store_engine.memories.create(rw_store.id, "/a.md", "theirs")
    result = await apply_write(
        client, create(rw_store.id, "/a.md", "mine"), session_id=server.session.id
    )
    copy = f"/a.conflict-20260102T030405.123456Z-{server.session.id}.md"
    assert result.outcome is WriteOutcome.CONFLICT
    assert result.conflict_path == copy
    assert contents(store_engine, rw_store.id) == {"/a.md": "theirs", copy: "mine"}


async def test_a_conflict_copy_is_made_once_across_a_lost_response(
    client: MemfsClient, server: LiveServer, store_engine: Engine, rw_store: MemoryStore
) -> None:
    memory = store_engine.memories.create(rw_store.id, "/a.md", "base")
    store_engine.memories.update(rw_store.id, memory.id, content="theirs")
    write = update(rw_store.id, "/a.md", "mine", "base", memory_id=memory.id)

    # The update fails its precondition, then the conflict copy's create is applied
    # but its response is lost.
    server.network.crash_after_writes = 2
    with pytest.raises(ServerUnavailable):
        await apply_write(client, write, session_id=server.session.id)
    server.network.down = False
    result = await apply_write(client, write, session_id=server.session.id)

    copy = f"/a.conflict-20260102T030405.123456Z-{server.session.id}.md"
    assert result.outcome is WriteOutcome.CONFLICT
    assert contents(store_engine, rw_store.id) == {"/a.md": "theirs", copy: "mine"}


# ------------------------------------------------------------------- update


async def test_update_with_the_opened_content_is_applied(
    client: MemfsClient, server: LiveServer, store_engine: Engine, rw_store: MemoryStore
) -> None:
    memory = store_engine.memories.create(rw_store.id, "/a.md", "v1")
    result = await apply_write(
        client, update(rw_store.id, "/a.md", "v2", "v1", memory.id), session_id=server.session.id
    )
    assert result.outcome is WriteOutcome.APPLIED
    assert contents(store_engine, rw_store.id) == {"/a.md": "v2"}


async def test_an_update_whose_response_was_lost_is_recognised(
    client: MemfsClient, server: LiveServer, store_engine: Engine, rw_store: MemoryStore
) -> None:
    memory = store_engine.memories.create(rw_store.id, "/a.md", "v1")
    write = update(rw_store.id, "/a.md", "v2", "v1", memory.id)
    server.network.lose_responses = 1
    with pytest.raises(ServerUnavailable):
        await apply_write(client, write, session_id=server.session.id)

    result = await apply_write(client, write, session_id=server.session.id)

    assert result.outcome is WriteOutcome.ALREADY_APPLIED
    assert versions(store_engine, rw_store.id, memory.id) == [
        Operation.CREATED,
        Operation.MODIFIED,
    ]
    assert len(store_engine.memories.all(rw_store.id)) == 1


async def test_concurrent_writers_keep_both_contents(
    client: MemfsClient, server: LiveServer, store_engine: Engine, rw_store: MemoryStore
) -> None:
    memory = store_engine.memories.create(rw_store.id, "/notes/todo.md", "base")
    store_engine.memories.update(rw_store.id, memory.id, content="other mount")

    result = await apply_write(
        client,
        update(rw_store.id, "/notes/todo.md", "this mount", "base", memory.id),
        session_id=server.session.id,
    )

    copy = f"/notes/todo.conflict-20260102T030405.123456Z-{server.session.id}.md"
    assert result.outcome is WriteOutcome.CONFLICT
    assert result.conflict_path == copy
    assert "changed elsewhere" in result.detail
    # The head keeps the winner; this mount's content lands beside it.
    assert contents(store_engine, rw_store.id) == {
        "/notes/todo.md": "other mount",
        copy: "this mount",
    }


async def test_a_queued_append_is_merged_with_an_append_elsewhere(
    client: MemfsClient, server: LiveServer, store_engine: Engine, rw_store: MemoryStore
) -> None:
    """SPEC §4 concurrent writers: edits apart are merged three-way (base: the version
    the write expected) and applied as one version; no conflict copy."""
    memory = store_engine.memories.create(rw_store.id, "/log.md", "start\n")
    store_engine.memories.update(rw_store.id, memory.id, content="start\ntheirs\n")
    write = update(rw_store.id, "/log.md", "start\nours\n", "start\n", memory.id)

    result = await apply_write(client, write, session_id=server.session.id)

    assert result.outcome is WriteOutcome.APPLIED
    assert "merged" in result.detail
    assert contents(store_engine, rw_store.id) == {"/log.md": "start\ntheirs\nours\n"}
    assert versions(store_engine, rw_store.id, memory.id) == [
        Operation.CREATED, Operation.MODIFIED, Operation.MODIFIED,
    ]


async def test_a_merged_write_whose_response_was_lost_is_not_merged_twice(
    client: MemfsClient, server: LiveServer, store_engine: Engine, rw_store: MemoryStore
) -> None:
    memory = store_engine.memories.create(rw_store.id, "/log.md", "start\n")
    store_engine.memories.update(rw_store.id, memory.id, content="start\ntheirs\n")
    write = update(rw_store.id, "/log.md", "start\nours\n", "start\n", memory.id)
    # The second write request is the merge: applied, then the server dies.
    server.network.crash_after_writes = 2
    with pytest.raises(ServerUnavailable):
        await apply_write(client, write, session_id=server.session.id)
    assert contents(store_engine, rw_store.id) == {"/log.md": "start\ntheirs\nours\n"}
    server.network.down = False

    result = await apply_write(client, write, session_id=server.session.id)

    assert result.outcome is WriteOutcome.ALREADY_APPLIED  # made by this session
    assert contents(store_engine, rw_store.id) == {"/log.md": "start\ntheirs\nours\n"}
    assert len(versions(store_engine, rw_store.id, memory.id)) == 3


async def test_an_update_of_a_memory_created_offline_finds_it_by_path(
    client: MemfsClient, server: LiveServer, store_engine: Engine, rw_store: MemoryStore
) -> None:
    store_engine.memories.create(rw_store.id, "/d/new.md", "first")
    result = await apply_write(
        client, update(rw_store.id, "/d/new.md", "second", "first"), session_id=server.session.id
    )
    assert result.outcome is WriteOutcome.APPLIED
    assert contents(store_engine, rw_store.id) == {"/d/new.md": "second"}


async def test_an_update_of_a_memory_deleted_elsewhere_recreates_it(
    client: MemfsClient, server: LiveServer, store_engine: Engine, rw_store: MemoryStore
) -> None:
    memory = store_engine.memories.create(rw_store.id, "/a.md", "v1")
    store_engine.memories.delete(rw_store.id, memory.id)
    result = await apply_write(
        client, update(rw_store.id, "/a.md", "v2", "v1", memory.id), session_id=server.session.id
    )
    assert result.outcome is WriteOutcome.APPLIED
    assert contents(store_engine, rw_store.id) == {"/a.md": "v2"}


# ---------------------------------------------------------- delete, renames


async def test_delete_is_applied_once(
    client: MemfsClient, server: LiveServer, store_engine: Engine, rw_store: MemoryStore
) -> None:
    memory = store_engine.memories.create(rw_store.id, "/a.md", "v1")
    write = PendingWrite(
        rw_store.id, WriteOperation.DELETE, "/a.md", memory_id=memory.id, expected_sha256=sha("v1")
    )
    first = await apply_write(client, write, session_id=server.session.id)
    again = await apply_write(client, write, session_id=server.session.id)
    assert (first.outcome, again.outcome) == (
        WriteOutcome.APPLIED,
        WriteOutcome.ALREADY_APPLIED,
    )
    assert store_engine.memories.all(rw_store.id) == []


async def test_a_delete_of_content_changed_elsewhere_keeps_the_newer_content(
    client: MemfsClient, server: LiveServer, store_engine: Engine, rw_store: MemoryStore
) -> None:
    memory = store_engine.memories.create(rw_store.id, "/a.md", "v1")
    store_engine.memories.update(rw_store.id, memory.id, content="newer")
    write = PendingWrite(
        rw_store.id, WriteOperation.DELETE, "/a.md", memory_id=memory.id, expected_sha256=sha("v1")
    )
    result = await apply_write(client, write, session_id=server.session.id)
    assert result.outcome is WriteOutcome.CONFLICT
    assert contents(store_engine, rw_store.id) == {"/a.md": "newer"}


async def test_rename_is_applied_once_and_keeps_the_id(
    client: MemfsClient, server: LiveServer, store_engine: Engine, rw_store: MemoryStore
) -> None:
    memory = store_engine.memories.create(rw_store.id, "/a.md", "v1")
    write = PendingWrite(
        rw_store.id, WriteOperation.RENAME, "/a.md", memory_id=memory.id, new_path="/b.md"
    )
    server.network.lose_responses = 1
    with pytest.raises(ServerUnavailable):
        await apply_write(client, write, session_id=server.session.id)
    result = await apply_write(client, write, session_id=server.session.id)

    assert result.outcome is WriteOutcome.APPLIED
    assert result.memory is not None
    assert result.memory.id == memory.id
    assert contents(store_engine, rw_store.id) == {"/b.md": "v1"}
    assert versions(store_engine, rw_store.id, memory.id) == [
        Operation.CREATED,
        Operation.MODIFIED,
    ]


async def test_a_rename_onto_a_taken_path_moves_nothing(
    client: MemfsClient, server: LiveServer, store_engine: Engine, rw_store: MemoryStore
) -> None:
    memory = store_engine.memories.create(rw_store.id, "/a.md", "mine")
    store_engine.memories.create(rw_store.id, "/b.md", "theirs")
    write = PendingWrite(
        rw_store.id, WriteOperation.RENAME, "/a.md", memory_id=memory.id, new_path="/b.md"
    )
    result = await apply_write(client, write, session_id=server.session.id)
    assert result.outcome is WriteOutcome.CONFLICT
    assert contents(store_engine, rw_store.id) == {"/a.md": "mine", "/b.md": "theirs"}


async def test_a_rename_of_a_memory_created_offline_is_recognised_when_done(
    client: MemfsClient, server: LiveServer, store_engine: Engine, rw_store: MemoryStore
) -> None:
    store_engine.memories.create(rw_store.id, "/b.md", "moved before the crash")
    write = PendingWrite(rw_store.id, WriteOperation.RENAME, "/a.md", new_path="/b.md")
    result = await apply_write(client, write, session_id=server.session.id)
    assert result.outcome is WriteOutcome.ALREADY_APPLIED


async def test_rename_prefix_is_applied_and_replays_harmlessly(
    client: MemfsClient, server: LiveServer, store_engine: Engine, rw_store: MemoryStore
) -> None:
    store_engine.memories.create(rw_store.id, "/old/a.md", "a")
    store_engine.memories.create(rw_store.id, "/old/s/b.md", "b")
    write = PendingWrite(rw_store.id, WriteOperation.RENAME_PREFIX, "/old/", new_path="/new/")
    first = await apply_write(client, write, session_id=server.session.id)
    again = await apply_write(client, write, session_id=server.session.id)
    assert [m.path for m in first.moved] == ["/new/a.md", "/new/s/b.md"]
    assert (again.outcome, again.moved) == (WriteOutcome.APPLIED, [])
    assert contents(store_engine, rw_store.id) == {"/new/a.md": "a", "/new/s/b.md": "b"}


# ----------------------------------------------------------------- refusals


async def test_final_refusals_are_raised(
    client: MemfsClient,
    server: LiveServer,
    store_engine: Engine,
    rw_store: MemoryStore,
    ro_store: MemoryStore,
) -> None:
    with pytest.raises(PermissionDenied):
        await apply_write(client, create(ro_store.id, "/a.md", "x"), session_id=server.session.id)
    store_engine.stores.archive(rw_store.id)
    with pytest.raises(StoreArchived):
        await apply_write(client, create(rw_store.id, "/a.md", "x"), session_id=server.session.id)


# ------------------------------------------------------------------- replay


async def test_writes_queued_while_down_replay_in_order_once(
    client: MemfsClient,
    server: LiveServer,
    store_engine: Engine,
    rw_store: MemoryStore,
    outbox: Outbox,
) -> None:
    server.network.down = True
    outbox.append(create(rw_store.id, "/log.md", "1"))
    for n in range(2, 6):
        outbox.append(update(rw_store.id, "/log.md", str(n), str(n - 1)))
    outbox.append(PendingWrite(rw_store.id, WriteOperation.RENAME, "/log.md", new_path="/final.md"))

    paused = await replay_outbox(outbox, client, session_id=server.session.id)
    assert isinstance(paused.stopped_by, ServerUnavailable)
    assert len(outbox) == 6
    assert store_engine.memories.all(rw_store.id) == []

    server.network.down = False
    report = await replay_outbox(outbox, client, session_id=server.session.id)

    assert report.stopped_by is None
    assert [e.seq for e, _ in report.results] == [1, 2, 3, 4, 5, 6]
    assert report.count(WriteOutcome.APPLIED) == 6
    assert len(outbox) == 0
    (memory,) = store_engine.memories.all(rw_store.id)
    assert contents(store_engine, rw_store.id) == {"/final.md": "5"}
    page = store_engine.versions.list(rw_store.id, memory_id=memory.id, limit=100)
    assert [(v.operation, v.content_sha256) for v in reversed(page.items)] == [
        (Operation.CREATED, sha("1")),
        *[(Operation.MODIFIED, sha(str(n))) for n in range(2, 6)],
        (Operation.MODIFIED, sha("5")),  # the rename
    ]


@pytest.mark.parametrize("crash_after", [1, 2, 3, 4, 5])
async def test_a_server_killed_mid_stream_gets_every_write_once_in_order(
    client: MemfsClient,
    server: LiveServer,
    store_engine: Engine,
    rw_store: MemoryStore,
    outbox: Outbox,
    crash_after: int,
) -> None:
    for n in range(5):
        outbox.append(create(rw_store.id, f"/f{n}.md", f"content {n}"))
    server.network.crash_after_writes = crash_after

    first = await replay_outbox(outbox, client, session_id=server.session.id)
    assert isinstance(first.stopped_by, ServerUnavailable)
    assert len(outbox) == 5 - (crash_after - 1)

    server.network.down = False  # the server restarts
    second = await replay_outbox(outbox, client, session_id=server.session.id)

    assert second.stopped_by is None
    outcomes = [r.outcome for _, r in first.results + second.results]
    assert outcomes.count(WriteOutcome.ALREADY_APPLIED) == 1
    assert contents(store_engine, rw_store.id) == {f"/f{n}.md": f"content {n}" for n in range(5)}
    memories = sorted(store_engine.memories.all(rw_store.id), key=lambda m: m.id)
    assert [m.path for m in memories] == [f"/f{n}.md" for n in range(5)]  # ids in write order


async def test_a_daemon_crash_between_applied_and_done_replays_as_already_applied(
    client: MemfsClient,
    server: LiveServer,
    store_engine: Engine,
    rw_store: MemoryStore,
    tmp_path: Path,
) -> None:
    memory = store_engine.memories.create(rw_store.id, "/a.md", "v1")
    box = Outbox(tmp_path / "o", rejected_dir=tmp_path / "r")
    entry = box.append(update(rw_store.id, "/a.md", "v2", "v1", memory.id))
    box.append(create(rw_store.id, "/b.md", "b"))
    await apply_write(client, entry.write, session_id=server.session.id)
    box.close()  # the daemon dies before writing the done line

    reopened = Outbox(tmp_path / "o", rejected_dir=tmp_path / "r")
    report = await replay_outbox(reopened, client, session_id=server.session.id)
    reopened.close()

    assert [r.outcome for _, r in report.results] == [
        WriteOutcome.ALREADY_APPLIED,
        WriteOutcome.APPLIED,
    ]
    assert contents(store_engine, rw_store.id) == {"/a.md": "v2", "/b.md": "b"}
    assert versions(store_engine, rw_store.id, memory.id) == [
        Operation.CREATED,
        Operation.MODIFIED,
    ]


async def test_refused_entries_are_kept_and_the_rest_replays(
    client: MemfsClient,
    server: LiveServer,
    store_engine: Engine,
    rw_store: MemoryStore,
    ro_store: MemoryStore,
    outbox: Outbox,
    tmp_path: Path,
) -> None:
    outbox.append(create(ro_store.id, "/refused.md", "words nobody may lose"))
    outbox.append(create(rw_store.id, "/ok.md", "fine"))
    seen: list[object] = []

    report = await replay_outbox(
        outbox, client, session_id=server.session.id, on_result=lambda e, r: seen.append(r)
    )

    assert report.stopped_by is None
    assert [type(exc) for _, exc in report.rejected] == [PermissionDenied]
    assert report.count(WriteOutcome.REJECTED) == 1
    assert report.count(WriteOutcome.APPLIED) == 1
    assert isinstance(seen[0], PermissionDenied)
    assert contents(store_engine, rw_store.id) == {"/ok.md": "fine"}
    kept = tmp_path / "rejected" / "20260102T030405.123456Z-1-refused.md"
    assert kept.read_text() == "words nobody may lose"
    assert "read_only_attachment" in kept.with_name(kept.name + ".json").read_text()


async def test_a_refused_token_pauses_the_replay_and_keeps_the_entry(
    server: LiveServer, rw_store: MemoryStore, outbox: Outbox
) -> None:
    outbox.append(create(rw_store.id, "/a.md", "x"))
    async with MemfsClient(BASE_URL, "memfs_st_revoked", transport=server.transport()) as client:
        report = await replay_outbox(outbox, client, session_id=server.session.id)
    assert isinstance(report.stopped_by, AuthenticationFailed)
    assert len(outbox) == 1
