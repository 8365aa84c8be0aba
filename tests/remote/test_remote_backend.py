"""RemoteBackend: the FUSE backend Protocol over client + cache + outbox, against the real
API in-process (tests/remote/live_server.py); no kernel mount here (tests/faults mount)."""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import trio
import trio.testing
from _support.polling import wait_until_async
from _support.scripts import script_process
from live_server import BASE_URL, LiveServer

from memfs.backend import AttachmentSpec, Backend, MemoryChange
from memfs.core.errors import (
    InvalidPoint,
    NotFound,
    PermissionDenied,
    PreconditionFailed,
    StoreArchived,
)
from memfs.core.model import Actor, ChangeKind, DeleteMode, Memory, MemoryStore, Operation
from memfs.remote import MemfsClient, ServerUnavailable
from memfs.remote.backend import (
    PENDING_VERSION_PREFIX,
    PROVISIONAL_ID_PREFIX,
    REPLAY_RETRY_MAX_S,
    REPLAY_RETRY_MIN_S,
    TOKEN_REFUSED,
    RemoteBackend,
)
from memfs.remote.cache import ContentCache
from memfs.remote.outbox import read_pending
from memfs.store import Engine


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def contents(engine: Engine, store_id: str) -> dict[str, str]:
    return {
        m.path: engine.memories.get(store_id, m.id).content or ""
        for m in engine.memories.all(store_id)
    }


def make_backend(server: LiveServer, home: Path) -> RemoteBackend:
    client = MemfsClient(BASE_URL, server.token, transport=server.transport())
    return RemoteBackend(client, cache=ContentCache(home / "cache"), home=home)


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


@pytest.fixture
async def backend(
    server: LiveServer, home: Path, rw_store: MemoryStore, ro_store: MemoryStore
) -> AsyncIterator[RemoteBackend]:
    remote = make_backend(server, home)
    await remote.open_session(
        [AttachmentSpec(rw_store.id, False), AttachmentSpec(ro_store.id, True)],
        mount_root="/mnt/x",
    )
    yield remote
    server.network.down = False
    await remote.aclose()


def requests_to(server: LiveServer, suffix: str) -> int:
    return sum(1 for _, path, _, _ in server.network.requests if path.endswith(suffix))


async def test_it_implements_the_fuse_backend_protocol(backend: RemoteBackend) -> None:
    implementation: Backend = backend  # checked by mypy; the names by this test
    for name in Backend.__dict__:
        if not name.startswith("_"):
            assert callable(getattr(implementation, name)), name


# ----------------------------------------------------------------- session


async def test_open_session_checks_attachments_against_the_token(
    server: LiveServer, home: Path, rw_store: MemoryStore, ro_store: MemoryStore
) -> None:
    remote = make_backend(server, home)
    with pytest.raises(PermissionDenied) as writable_ro:
        await remote.open_session([AttachmentSpec(ro_store.id, False)], mount_root="/m")
    assert writable_ro.value.code == "read_only_attachment"
    with pytest.raises(PermissionDenied) as foreign:
        await remote.open_session([AttachmentSpec("memstore_other", True)], mount_root="/m")
    assert foreign.value.code == "store_not_allowed"
    # Mounting a read_write attachment read-only is allowed.
    session_id = await remote.open_session([AttachmentSpec(rw_store.id, True)], mount_root="/m")
    assert session_id == server.session.id
    assert (home / "outbox" / session_id / "journal.jsonl").exists()
    await remote.aclose()


async def test_resolve_store_by_id_name_slug_or_directory(
    backend: RemoteBackend, rw_store: MemoryStore
) -> None:
    for name in (rw_store.id, "Notes", "notes"):
        store = await backend.resolve_store(name)
        assert store.id == rw_store.id
        assert store.name == "Notes"
    with pytest.raises(NotFound):
        await backend.resolve_store("nope")


# ----------------------------------------------------------------- reading


async def test_memories_are_keyed_by_their_sha256(
    backend: RemoteBackend, store_engine: Engine, rw_store: MemoryStore
) -> None:
    store_engine.memories.create(rw_store.id, "/a.md", "alpha")
    (memory,) = await backend.list_memories(rw_store.id)
    assert memory.blob_key == memory.content_sha256 == sha("alpha")
    assert memory.content is None


async def test_a_point_is_resolved_once_and_read_with_at(
    backend: RemoteBackend, store_engine: Engine, rw_store: MemoryStore
) -> None:
    a = store_engine.memories.create(rw_store.id, "/a.md", "alpha")
    gone = store_engine.memories.create(rw_store.id, "/gone.md", "bye")
    snapshot = store_engine.for_caller(actor=Actor.api_key("apikey_t")).snapshots.create(
        rw_store.id, "before"
    )
    store_engine.memories.update(rw_store.id, a.id, content="alpha two", path="/b.md")
    store_engine.memories.delete(rw_store.id, gone.id)
    at = await backend.resolve_point(rw_store.id, "before")
    assert (at.text, at.label, at.fixed) == ("before", "before", "before")
    then = await backend.list_memories_at(at)
    assert [(m.path, m.memory_version_id) for m in then] == [
        ("/a.md", a.memory_version_id), ("/gone.md", gone.memory_version_id),
    ]
    assert [await backend.read_content(m) for m in then] == [b"alpha", b"bye"]
    assert (await backend.resolve_point(rw_store.id, snapshot.id)).label == "before"
    # `now` is fixed as the newest version: a later write is not in it.
    now = await backend.resolve_point(rw_store.id, "now")
    assert now.fixed.startswith("memver_")
    store_engine.memories.create(rw_store.id, "/later.md", "later")
    assert [m.path for m in await backend.list_memories_at(now)] == ["/b.md"]
    for bad in ("no-such", "2999-01-01T00:00:00Z", "memver_nope"):
        with pytest.raises(InvalidPoint):
            await backend.resolve_point(rw_store.id, bad)


async def test_a_cached_file_is_read_without_a_round_trip(
    backend: RemoteBackend, server: LiveServer, store_engine: Engine, rw_store: MemoryStore
) -> None:
    store_engine.memories.create(rw_store.id, "/a.md", "alpha")
    (memory,) = await backend.list_memories(rw_store.id)
    assert await backend.read_content(memory) == b"alpha"
    assert requests_to(server, f"/memory_versions/{memory.memory_version_id}") == 1

    server.network.requests.clear()
    server.network.down = True
    assert await backend.read_content(memory) == b"alpha"
    assert server.network.requests == []


async def test_the_cache_serves_a_restarted_daemon(
    server: LiveServer, home: Path, store_engine: Engine, rw_store: MemoryStore
) -> None:
    store_engine.memories.create(rw_store.id, "/a.md", "alpha")
    first = make_backend(server, home)
    await first.open_session([AttachmentSpec(rw_store.id, False)], mount_root="/m")
    (memory,) = await first.list_memories(rw_store.id)
    await first.read_content(memory)
    await first.aclose()

    second = make_backend(server, home)
    await second.open_session([AttachmentSpec(rw_store.id, False)], mount_root="/m")
    server.network.requests.clear()
    assert await second.read_content(memory) == b"alpha"
    assert server.network.requests == []
    await second.aclose()


async def test_a_redaction_while_unmounted_is_purged_at_the_next_start(
    server: LiveServer, home: Path, store_engine: Engine, rw_store: MemoryStore
) -> None:
    """SPEC §2: redacted bytes leave every local cache. A daemon that was not running
    when the redaction happened reads the feed from where the last one stopped."""
    secret = store_engine.memories.create(rw_store.id, "/s.md", "db_password=OFFLINE")
    first = make_backend(server, home)
    await first.open_session([AttachmentSpec(rw_store.id, False)], mount_root="/m")
    seq = await first.last_change_seq(rw_store.id)
    await first.changes_since(rw_store.id, 0)
    (memory,) = await first.list_memories(rw_store.id)
    assert await first.read_content(memory) == b"db_password=OFFLINE"
    await first.aclose()

    store_engine.memories.delete(rw_store.id, secret.id, mode=DeleteMode.REDACT)
    cache = ContentCache(home / "cache")
    assert cache.get(sha("db_password=OFFLINE")) is not None  # nothing ran to purge it

    second = make_backend(server, home)
    await second.open_session([AttachmentSpec(rw_store.id, False)], mount_root="/m")
    assert await second.last_change_seq(rw_store.id) > seq
    assert ContentCache(home / "cache").get(sha("db_password=OFFLINE")) is None
    await second.aclose()


async def test_an_uncached_read_with_the_server_down_fails(
    backend: RemoteBackend, server: LiveServer, store_engine: Engine, rw_store: MemoryStore
) -> None:
    store_engine.memories.create(rw_store.id, "/a.md", "alpha")
    (memory,) = await backend.list_memories(rw_store.id)
    server.network.down = True
    with pytest.raises(ServerUnavailable):
        await backend.read_content(memory)
    assert backend.statistics().server_state == "unreachable"


async def test_read_ahead_fetches_what_it_can_and_caches_it(
    backend: RemoteBackend, server: LiveServer, store_engine: Engine, rw_store: MemoryStore
) -> None:
    for name in "abcde":
        store_engine.memories.create(rw_store.id, f"/{name}.md", f"content {name}")
    memories = sorted(await backend.list_memories(rw_store.id), key=lambda m: m.path)
    gone = memories[-1]
    store_engine.memories.delete(rw_store.id, gone.id, mode=DeleteMode.REDACT)
    found = await backend.read_contents(memories)
    assert found == {m.blob_key: f"content {m.path[1]}".encode() for m in memories[:-1]}
    server.network.requests.clear()
    server.network.down = True
    for memory in memories[:-1]:
        assert await backend.read_content(memory) == f"content {memory.path[1]}".encode()
    assert server.network.requests == []  # every read-ahead result is in the disk cache


async def test_read_ahead_with_the_server_down_returns_nothing(
    backend: RemoteBackend, server: LiveServer, store_engine: Engine, rw_store: MemoryStore
) -> None:
    for name in "abcdefghijkl":
        store_engine.memories.create(rw_store.id, f"/{name}.md", name)
    memories = await backend.list_memories(rw_store.id)
    server.network.down = True
    assert await backend.read_contents(memories) == {}
    assert len(server.network.requests) < len(memories)  # the first failure stops the rest


# ----------------------------------------------------------------- writing


async def test_writes_go_straight_to_a_reachable_server(
    backend: RemoteBackend, store_engine: Engine, rw_store: MemoryStore
) -> None:
    created = await backend.create_memory(rw_store.id, "/a.md", "v1", metadata={"k": "v"})
    assert not created.id.startswith(PROVISIONAL_ID_PREFIX)
    updated = await backend.update_memory(
        rw_store.id, created.id, MemoryChange(content="v2", expected_sha256=sha("v1"))
    )
    assert updated.content_sha256 == sha("v2")
    moved = await backend.update_memory(rw_store.id, created.id, MemoryChange(path="/b.md"))
    assert moved.path == "/b.md"
    assert contents(store_engine, rw_store.id) == {"/b.md": "v2"}
    assert store_engine.memories.get(rw_store.id, created.id).metadata == {"k": "v"}
    stats = backend.statistics()
    assert (stats.server_state, stats.outbox_depth) == ("reachable", 0)


async def test_a_direct_conflict_is_raised_for_the_fuse_layer(
    backend: RemoteBackend, store_engine: Engine, rw_store: MemoryStore
) -> None:
    created = await backend.create_memory(rw_store.id, "/a.md", "v1")
    store_engine.memories.update(rw_store.id, created.id, content="theirs")
    with pytest.raises(PreconditionFailed):
        await backend.update_memory(
            rw_store.id, created.id, MemoryChange(content="mine", expected_sha256=sha("v1"))
        )


async def test_rename_with_replace_takes_the_place_of_the_target(
    backend: RemoteBackend, store_engine: Engine, rw_store: MemoryStore
) -> None:
    mine = await backend.create_memory(rw_store.id, "/draft.md", "new")
    await backend.create_memory(rw_store.id, "/final.md", "old")
    moved = await backend.update_memory(
        rw_store.id, mine.id, MemoryChange(path="/final.md", replace=True)
    )
    assert (moved.id, moved.path) == (mine.id, "/final.md")
    assert contents(store_engine, rw_store.id) == {"/final.md": "new"}


async def test_writes_while_down_are_queued_and_replayed_in_order(
    backend: RemoteBackend, server: LiveServer, store_engine: Engine, rw_store: MemoryStore
) -> None:
    server.network.down = True
    created = await backend.create_memory(rw_store.id, "/log.md", "1")
    assert created.id == f"{PROVISIONAL_ID_PREFIX}1"
    assert created.memory_version_id == f"{PENDING_VERSION_PREFIX}1"
    assert created.content_sha256 == sha("1")
    second = await backend.update_memory(
        rw_store.id, created.id, MemoryChange(content="2", expected_sha256=created.content_sha256)
    )
    renamed = await backend.update_memory(rw_store.id, created.id, MemoryChange(path="/final.md"))
    assert (renamed.path, renamed.content_sha256) == ("/final.md", second.content_sha256)
    assert await backend.read_content(renamed) == b"2"  # from the outbox/cache, offline
    stats = backend.statistics()
    assert (stats.server_state, stats.outbox_depth) == ("unreachable", 3)
    assert stats.last_errors

    # The server comes back; a write now still queues behind the outbox.
    server.network.down = False
    await backend.create_memory(rw_store.id, "/after.md", "later")
    assert store_engine.memories.all(rw_store.id) == []

    changes = await backend.changes_since(rw_store.id, 0)

    assert contents(store_engine, rw_store.id) == {"/final.md": "2", "/after.md": "later"}
    real = store_engine.memories.get_by_path(rw_store.id, "/final.md")
    page = store_engine.versions.list(rw_store.id, memory_id=real.id, limit=100)
    assert [v.operation for v in reversed(page.items)] == [
        Operation.CREATED,
        Operation.MODIFIED,
        Operation.MODIFIED,
    ]
    # The FUSE layer hears about the server's memory under the id it holds ...
    assert {c.memory_id for c in changes if c.kind is ChangeKind.MEMORY_WRITTEN} == {
        created.id,
        f"{PROVISIONAL_ID_PREFIX}4",
    }
    # ... and fetching that id gives the server's memory, so it re-keys its node.
    fetched = await backend.get_memory(rw_store.id, created.id)
    assert (fetched.id, fetched.path) == (real.id, "/final.md")
    # Later updates through the provisional id reach the right memory directly.
    await backend.update_memory(
        rw_store.id, created.id, MemoryChange(content="3", expected_sha256=sha("2"))
    )
    assert contents(store_engine, rw_store.id)["/final.md"] == "3"
    stats = backend.statistics()
    assert (stats.server_state, stats.outbox_depth) == ("reachable", 0)


async def test_a_replay_conflict_keeps_both_and_is_reported(
    backend: RemoteBackend, server: LiveServer, store_engine: Engine, rw_store: MemoryStore
) -> None:
    created = await backend.create_memory(rw_store.id, "/todo.md", "base")
    server.network.down = True
    await backend.update_memory(
        rw_store.id, created.id, MemoryChange(content="mine", expected_sha256=sha("base"))
    )
    store_engine.memories.update(rw_store.id, created.id, content="theirs")
    server.network.down = False

    await backend.changes_since(rw_store.id, 0)

    copies = {p: c for p, c in contents(store_engine, rw_store.id).items() if ".conflict-" in p}
    assert list(copies.values()) == ["mine"]
    assert contents(store_engine, rw_store.id)["/todo.md"] == "theirs"
    stats = backend.statistics()
    (conflict,) = stats.conflicts
    assert stats.conflict_count == 1
    assert "changed elsewhere" in conflict.message
    assert conflict.path == "/todo.md"
    assert conflict.conflict_path is not None
    assert conflict.conflict_path in copies


async def test_a_refused_queued_write_is_kept_under_rejected(
    backend: RemoteBackend,
    server: LiveServer,
    store_engine: Engine,
    rw_store: MemoryStore,
    home: Path,
) -> None:
    server.network.down = True
    await backend.create_memory(rw_store.id, "/late.md", "written before the archive")
    store_engine.stores.archive(rw_store.id)
    server.network.down = False

    await backend.changes_since(rw_store.id, 0)

    (rejected,) = backend.statistics().rejected
    assert rejected.path == "/late.md"
    assert "archived" in rejected.message
    assert isinstance(rejected.error, StoreArchived)
    kept = list((home / "rejected" / server.session.id).glob("*-late.md"))
    assert [p.read_text() for p in kept] == ["written before the archive"]


async def test_kill_9_then_remount_replays_the_outbox(
    server: LiveServer, home: Path, store_engine: Engine, rw_store: MemoryStore
) -> None:
    first = make_backend(server, home)
    await first.open_session([AttachmentSpec(rw_store.id, False)], mount_root="/m")
    server.network.down = True
    await first.create_memory(rw_store.id, "/a.md", "queued")
    # A killed daemon closes nothing; the kernel drops its lock. Here: release it by hand.
    assert first._outbox is not None
    first._outbox.close()

    server.network.down = False
    second = make_backend(server, home)
    # Opening the session replays the outbox before the mount loads its tree.
    await second.open_session([AttachmentSpec(rw_store.id, False)], mount_root="/m")
    assert second.statistics().outbox_depth == 0
    assert contents(store_engine, rw_store.id) == {"/a.md": "queued"}
    # A fresh daemon never handed out the provisional id: the change names the real one.
    (change,) = await second.changes_since(rw_store.id, 0)
    (memory,) = await second.list_memories(rw_store.id)
    assert change.memory_id == memory.id
    assert memory.path == "/a.md"
    await second.aclose()


async def test_metadata_changes_are_not_queued(
    backend: RemoteBackend, server: LiveServer, rw_store: MemoryStore
) -> None:
    created = await backend.create_memory(rw_store.id, "/a.md", "x")
    server.network.down = True
    with pytest.raises(ServerUnavailable):
        await backend.update_memory(rw_store.id, created.id, MemoryChange(metadata={"k": "v"}))


async def test_a_directory_rename_while_down_is_replayed(
    backend: RemoteBackend, server: LiveServer, store_engine: Engine, rw_store: MemoryStore
) -> None:
    await backend.create_memory(rw_store.id, "/d/a.md", "a")
    await backend.create_memory(rw_store.id, "/d/s/b.md", "b")
    server.network.down = True
    moved = await backend.rename_prefix(rw_store.id, "/d/", "/e/")
    assert [m.path for m in moved] == ["/e/a.md", "/e/s/b.md"]
    server.network.down = False
    await backend.changes_since(rw_store.id, 0)
    assert contents(store_engine, rw_store.id) == {"/e/a.md": "a", "/e/s/b.md": "b"}


async def test_queued_edits_of_content_redacted_meanwhile_are_discarded(
    backend: RemoteBackend,
    server: LiveServer,
    store_engine: Engine,
    rw_store: MemoryStore,
    home: Path,
) -> None:
    """SPEC §2: a redaction made while this mount's edits were queued wins; the edits
    were made on the redacted content, so the replay neither writes them back (nor
    re-creates the memory) nor keeps them anywhere, and says so."""
    created = await backend.create_memory(rw_store.id, "/ob.md", "header\nSECRET7")
    server.network.down = True
    await backend.update_memory(
        rw_store.id,
        created.id,
        MemoryChange(content="header\nSECRET7\nedit", expected_sha256=sha("header\nSECRET7")),
    )
    store_engine.memories.delete(rw_store.id, created.id, mode=DeleteMode.REDACT)
    server.network.down = False
    await backend.changes_since(rw_store.id, 0)
    assert store_engine.memories.all(rw_store.id) == []
    assert ContentCache(home / "cache").get(sha("header\nSECRET7\nedit")) is None
    stats = backend.statistics()
    assert stats.outbox_depth == 0
    assert stats.rejected_count == 0
    assert any("redacted elsewhere" in event.message for event in stats.conflicts)


async def test_a_delete_while_down_is_replayed(
    backend: RemoteBackend, server: LiveServer, store_engine: Engine, rw_store: MemoryStore
) -> None:
    created = await backend.create_memory(rw_store.id, "/a.md", "x")
    server.network.down = True
    await backend.delete_memory(rw_store.id, created.id, expected_sha256=sha("x"))
    assert len(store_engine.memories.all(rw_store.id)) == 1
    server.network.down = False
    await backend.changes_since(rw_store.id, 0)
    assert store_engine.memories.all(rw_store.id) == []


# ------------------------------------------------------------- change feed


async def test_changes_follow_the_feed_and_purge_redacted_bytes(
    backend: RemoteBackend,
    server: LiveServer,
    store_engine: Engine,
    rw_store: MemoryStore,
    home: Path,
) -> None:
    created = await backend.create_memory(rw_store.id, "/secret.md", "password=hunter2")
    await backend.update_memory(
        rw_store.id,
        created.id,
        MemoryChange(content="password=<removed>", expected_sha256=created.blob_key),
    )
    cache = ContentCache(home / "cache")
    assert cache.get(sha("password=hunter2")) == b"password=hunter2"
    seq = await backend.last_change_seq(rw_store.id)
    assert seq == 2

    store_engine.versions.redact(rw_store.id, created.memory_version_id)
    changes = await backend.changes_since(rw_store.id, seq)

    assert ChangeKind.BLOB_PURGED in [c.kind for c in changes]
    purged = [c.blob_key for c in changes if c.kind is ChangeKind.BLOB_PURGED]
    assert purged == [sha("password=hunter2")]
    assert cache.get(sha("password=hunter2")) is None
    for path in (home / "cache").rglob("*"):
        if path.is_file():
            assert b"hunter2" not in path.read_bytes()


def test_the_remote_package_needs_neither_the_engine_nor_the_api_nor_pyfuse3() -> None:
    """Layering: a mount daemon talks to the server only through the wire format."""
    result = script_process(
        "imported_modules", "memfs.remote.backend,memfs.remote.replay",
        "pyfuse3,memfs.store,memfs.api",
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == "[]\n"


# ------------------------------------------- long poll, replay task, startup, queued


async def test_changes_since_waits_for_the_next_change(
    backend: RemoteBackend, server: LiveServer, store_engine: Engine, rw_store: MemoryStore
) -> None:
    seq = await backend.last_change_seq(rw_store.id)
    got: list[list[str | None]] = []

    async def follow() -> None:
        changes = await backend.changes_since(rw_store.id, seq, timeout_s=10.0)
        got.append([c.path for c in changes])

    async with trio.open_nursery() as nursery:
        nursery.start_soon(follow)
        await trio.testing.wait_all_tasks_blocked()
        assert got == []  # parked on the server
        (_, path, query, _) = server.network.requests[-1]
        assert path.endswith("/changes")
        assert query["timeout_s"] == "10"
        # Written elsewhere: the server's poll of the change counter wakes the feed.
        store_engine.memories.create(rw_store.id, "/new.md", "elsewhere")
    assert got == [["/new.md"]]


async def test_maintain_replays_as_soon_as_the_server_is_back(
    backend: RemoteBackend, server: LiveServer, store_engine: Engine, rw_store: MemoryStore
) -> None:
    # Real time: the outbox works in threads, which a mock clock would jump over.
    server.network.down = True
    await backend.create_memory(rw_store.id, "/a.md", "queued")
    async with trio.open_nursery() as nursery:
        nursery.start_soon(backend.maintain)
        await wait_until_async(  # it keeps trying: pauses of 0.1, 0.2, 0.4 s …
            lambda: sum(1 for r in server.network.requests if r.method == "POST") >= 4,
            "4 tries", 5.0,
        )
        assert backend.statistics().outbox_depth == 1
        server.network.down = False
        await wait_until_async(
            lambda: backend.statistics().outbox_depth == 0, "the replay",
            REPLAY_RETRY_MAX_S + 1.0,
        )
        assert contents(store_engine, rw_store.id) == {"/a.md": "queued"}
        # Idle with an empty outbox: no request at all, while every task stays parked for
        # three retry pauses (a retry timer would wake one within that).
        server.network.requests.clear()
        await trio.testing.wait_all_tasks_blocked(cushion=3 * REPLAY_RETRY_MIN_S)
        assert server.network.requests == []
        # A new queued write wakes it.
        server.network.down = True
        await backend.create_memory(rw_store.id, "/b.md", "queued too")
        server.network.down = False
        await wait_until_async(
            lambda: backend.statistics().outbox_depth == 0, "the replay",
            REPLAY_RETRY_MAX_S + 1.0,
        )
        assert contents(store_engine, rw_store.id)["/b.md"] == "queued too"
        nursery.cancel_scope.cancel()


async def test_the_first_session_fetch_waits_for_a_server_that_is_not_up_yet(
    server: LiveServer, home: Path, rw_store: MemoryStore
) -> None:
    # Real time: the application works in threads, which a mock clock would jump over.
    client = MemfsClient(BASE_URL, server.token, transport=server.transport())
    remote = RemoteBackend(
        client, cache=ContentCache(home / "cache"), home=home, startup_wait_s=30.0
    )
    server.network.down = True

    async def come_back() -> None:
        # It kept asking.
        await wait_until_async(lambda: len(server.network.requests) >= 3, "3 tries", 25.0)
        server.network.down = False

    async with trio.open_nursery() as nursery:
        nursery.start_soon(come_back)
        session = await remote.preset_session()
    assert session.id == server.session.id
    await remote.aclose()

    server.network.down = True
    server.network.requests.clear()
    impatient = make_backend(server, home)  # startup_wait_s=0: fail at once
    with pytest.raises(ServerUnavailable):
        await impatient.preset_session()
    assert len(server.network.requests) == 1
    server.network.down = False
    await impatient.aclose()


async def test_a_memory_with_queued_writes_keeps_its_queued_state(
    backend: RemoteBackend, server: LiveServer, store_engine: Engine, rw_store: MemoryStore
) -> None:
    theirs = store_engine.memories.create(rw_store.id, "/a.md", "v1")
    other = store_engine.memories.create(rw_store.id, "/b.md", "b")
    await backend.list_memories(rw_store.id)
    server.network.down = True
    queued = await backend.update_memory(
        rw_store.id, theirs.id, MemoryChange(content="mine", expected_sha256=sha("v1"))
    )
    await backend.delete_memory(rw_store.id, other.id)
    # The server is back but this mount's writes have not been replayed yet: the
    # server's (older) state must not replace what the mount accepted.
    server.network.down = False
    assert (await backend.get_memory(rw_store.id, theirs.id)) == queued
    with pytest.raises(NotFound):
        await backend.get_memory(rw_store.id, other.id)

    await backend.replay()
    fresh = await backend.get_memory(rw_store.id, theirs.id)
    assert fresh.content_sha256 == sha("mine")
    assert not fresh.memory_version_id.startswith(PENDING_VERSION_PREFIX)


async def test_a_queued_rename_over_a_file_replaces_it(
    backend: RemoteBackend, server: LiveServer, store_engine: Engine, rw_store: MemoryStore
) -> None:
    draft = await backend.create_memory(rw_store.id, "/draft.md", "new")
    await backend.create_memory(rw_store.id, "/final.md", "old")
    server.network.down = True
    await backend.update_memory(rw_store.id, draft.id, MemoryChange(path="/final.md", replace=True))
    server.network.down = False
    await backend.replay()
    assert contents(store_engine, rw_store.id) == {"/final.md": "new"}
    assert backend.statistics().conflict_count == 0


async def test_changes_carry_the_new_head_so_a_mount_need_not_fetch_its_own_writes(
    backend: RemoteBackend, rw_store: MemoryStore
) -> None:
    created = await backend.create_memory(rw_store.id, "/a.md", "v1")
    (change,) = await backend.changes_since(rw_store.id, 0)
    assert (change.memory_id, change.memory_version_id, change.content_sha256) == (
        created.id, created.memory_version_id, sha("v1")
    )


async def _queue_then_hold_the_replay(
    backend: RemoteBackend, server: LiveServer, store_id: str, bulk: int
) -> Memory:
    """Queues ``bulk`` creates then ``/x.md`` while the server is down; returns the
    provisional memory of ``/x.md``. The server comes back slow (``gate``)."""
    server.network.down = True
    for n in range(bulk):
        await backend.create_memory(store_id, f"/bulk/{n}.md", f"{n}")
    created = await backend.create_memory(store_id, "/x.md", "line 0\n")
    server.network.down = False
    server.network.requests.clear()
    server.network.gate = trio.Semaphore(0)
    return created


async def _append(backend: RemoteBackend, memory: Memory, done: list[Memory]) -> None:
    done.append(
        await backend.update_memory(
            memory.memory_store_id,
            memory.id,
            MemoryChange(content="line 0\nline 1\n", expected_sha256=sha("line 0\n")),
        )
    )


async def _append_while_entry_1_is_sent(
    nursery: trio.Nursery,
    backend: RemoteBackend,
    server: LiveServer,
    memory: Memory,
    done: list[Memory],
) -> trio.Semaphore:
    """Starts the replay and, while its first request waits at the gate, an append to
    ``memory`` (into ``done``); returns the gate once both are blocked."""
    gate = server.network.gate
    assert gate is not None
    nursery.start_soon(backend.replay)
    await wait_until_async(lambda: len(server.network.requests) == 1, "entry 1 sent", 5.0)
    nursery.start_soon(_append, backend, memory, done)
    await trio.testing.wait_all_tasks_blocked()
    return gate


async def test_an_append_during_the_replay_of_its_files_create_updates_that_file(
    backend: RemoteBackend, server: LiveServer, store_engine: Engine, rw_store: MemoryStore
) -> None:
    """A write to a file whose create is being replayed
    right now is an update of the memory that create makes, not of a memory "never
    created" (which the FUSE layer took for "deleted elsewhere" and re-created, making
    a conflict copy of the file of itself)."""
    created = await _queue_then_hold_the_replay(backend, server, rw_store.id, bulk=0)
    appended: list[Memory] = []
    async with trio.open_nursery() as nursery:
        gate = await _append_while_entry_1_is_sent(nursery, backend, server, created, appended)
        server.network.gate = None
        gate.release()
    (memory,) = appended
    assert memory.content_sha256 == sha("line 0\nline 1\n")
    assert contents(store_engine, rw_store.id) == {"/x.md": "line 0\nline 1\n"}
    stats = backend.statistics()
    assert (stats.outbox_depth, stats.conflict_count) == (0, 0)


async def test_a_close_during_a_long_replay_waits_for_one_entry_not_the_drain(
    backend: RemoteBackend, server: LiveServer, store_engine: Engine, rw_store: MemoryStore
) -> None:
    """Closes of 7 s were seen behind a replay of 200 queued writes.
    The replay holds the write lock per entry: a close queues behind the entry being
    replayed and returns."""
    created = await _queue_then_hold_the_replay(backend, server, rw_store.id, bulk=5)
    appended: list[Memory] = []
    async with trio.open_nursery() as nursery:
        gate = await _append_while_entry_1_is_sent(nursery, backend, server, created, appended)
        gate.release()  # entry 1 only is answered
        await wait_until_async(lambda: bool(appended), "the append", 5.0)
        # Entries 2-6 and the append are still queued: the close did not wait for them.
        assert backend.statistics().outbox_depth == 6
        server.network.gate = None
        gate.release()
    await backend.replay()

    assert contents(store_engine, rw_store.id)["/x.md"] == "line 0\nline 1\n"
    assert len(contents(store_engine, rw_store.id)) == 6  # no conflict copy
    stats = backend.statistics()
    assert (stats.outbox_depth, stats.conflict_count) == (0, 0)


def _gets_of_memories(server: LiveServer) -> int:
    return sum(
        1 for r in server.network.requests
        if r.method == "GET" and "/memories/" in r.path and "rename_prefix" not in r.path
    )


async def test_a_bulk_change_batch_is_fetched_by_listing_not_one_request_each(
    backend: RemoteBackend, server: LiveServer, store_engine: Engine, rw_store: MemoryStore
) -> None:
    """5,000 imported memories took ~35 s to reach a remote mount, one
    request per changed memory. A large batch's states come from a listing of their
    directory, 100 per request."""
    for n in range(300):
        store_engine.memories.create(rw_store.id, f"/bulk/m{n:03d}.md", f"{n}")
    server.network.requests.clear()

    changes = await backend.changes_since(rw_store.id, 0)
    states = [await backend.get_memory(rw_store.id, c.memory_id or "") for c in changes]

    assert [m.path for m in states] == [f"/bulk/m{n:03d}.md" for n in range(300)]
    assert [m.content_sha256 for m in states] == [sha(f"{n}") for n in range(300)]
    assert _gets_of_memories(server) == 0
    assert len(server.network.requests) <= 1 + 4  # the feed, then 3 pages (and an end)


async def test_states_fetched_ahead_are_never_older_than_their_change(
    backend: RemoteBackend, server: LiveServer, store_engine: Engine, rw_store: MemoryStore
) -> None:
    created = [
        store_engine.memories.create(rw_store.id, f"/bulk/m{n:03d}.md", "v1")
        for n in range(60)
    ]
    changes = await backend.changes_since(rw_store.id, 0)
    for change in changes[:30]:  # the FUSE layer follows part of the batch ...
        await backend.get_memory(rw_store.id, change.memory_id or "")
    for memory in created:  # ... and everything changes again
        store_engine.memories.update(rw_store.id, memory.id, content="v2")
    seq = changes[-1].seq
    later = await backend.changes_since(rw_store.id, seq)
    assert len(later) == 60
    for change in later:
        state = await backend.get_memory(rw_store.id, change.memory_id or "")
        assert (state.content_sha256, state.memory_version_id) == (
            sha("v2"), change.memory_version_id
        )
    # A memory changed after the batch is asked for again, not answered from the listing.
    store_engine.memories.update(rw_store.id, created[0].id, content="v3")
    (last,) = await backend.changes_since(rw_store.id, later[-1].seq)
    assert (await backend.get_memory(rw_store.id, created[0].id)).content_sha256 == sha("v3")


async def test_a_revoked_token_stops_the_writes_and_keeps_them_queued(
    backend: RemoteBackend, server: LiveServer, store_engine: Engine, rw_store: MemoryStore,
    home: Path,
) -> None:
    """SPEC §3 credential lifecycle: a mount whose session token is revoked or expired
    (401) stops writing to the server, keeps every write queued, and says why."""
    created = await backend.create_memory(rw_store.id, "/a.md", "v1")
    store_engine.sessions.revoke(server.session.id)

    queued = await backend.update_memory(
        rw_store.id, created.id, MemoryChange(content="v2", expected_sha256=sha("v1"))
    )
    assert queued.memory_version_id.startswith(PENDING_VERSION_PREFIX)
    stats = backend.statistics()
    assert (stats.server_state, stats.outbox_depth) == (TOKEN_REFUSED, 1)
    (event,) = [e for e in stats.last_errors if "token" in e.message]
    assert "revoked or has expired" in event.message
    outbox = home / "outbox" / server.session.id
    assert str(outbox) in event.message
    # Nothing more is sent: the next write is queued without a request.
    server.network.requests.clear()
    await backend.create_memory(rw_store.id, "/b.md", "b")
    assert server.network.requests == []
    await backend.replay()  # refused again: still queued
    assert backend.statistics().outbox_depth == 2
    assert contents(store_engine, rw_store.id) == {"/a.md": "v1"}
    await backend.aclose()
    assert [e.write.path for e in read_pending(outbox)] == ["/a.md", "/b.md"]
