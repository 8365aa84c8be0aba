"""The change feed of a store (SPEC §4): ``GET /v1/memory_stores/{id}/changes``, a
long poll, read by the remote mount's own client (``MemfsClient``) from a real
``memfs serve``, while the SDK writes.

The tests at the end run Hypercorn in process instead, where the parked requests can be
counted: that is how a client that goes away is shown to leave nothing behind.
"""

from __future__ import annotations

import functools
import hashlib
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anthropic
import httpx
import hypercorn.trio
import pytest
import trio
import trio.testing
from _support.polling import wait_until_async
from hypercorn.config import Config

from memfs.api import create_app
from memfs.api.changes import ChangeNotifier
from memfs.api.serve import GRACEFUL_TIMEOUT_S
from memfs.core.errors import NotFound, PermissionDenied
from memfs.core.model import Access, ChangeKind, Scope
from memfs.remote import MemfsClient
from memfs.store import Engine, ResourceSpec
from memfs.wire.changes import ChangePage

if TYPE_CHECKING:
    from tests.api.conftest import Server, ServerProcess

# A change must reach a parked long poll well within SPEC §4's "about one second".
PROPAGATION_DEADLINE_S = 1.0
DEADLINE_S = 10.0
CHANGE_FIELDS = {
    "type",
    "seq",
    "memory_store_id",
    "kind",
    "memory_id",
    "path",
    "old_path",
    "content_sha256",
    "memory_version_id",
    "created_at",
}


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def mount_client(server: Server, *attachments: tuple[str, str]) -> MemfsClient:
    """What a remote mount holds: a client with a session token for ``attachments``."""
    return MemfsClient(server.url, server.session(*attachments)["token"])


@dataclass
class Poll:
    """One long poll run in the background; ``batch`` and ``returned_at`` once it ends."""

    batch: ChangePage | None = None
    returned_at: float | None = None
    done: trio.Event | None = None


async def start_poll(
    nursery: trio.Nursery, client: MemfsClient, store_id: str, after: int, timeout_s: float
) -> Poll:
    """Starts ``client.changes(...)`` and returns once the request is out, waiting on its
    answer (every task idle for a moment: the server has had the time to park it)."""
    poll = Poll(done=trio.Event())

    async def run() -> None:
        poll.batch = await client.changes(store_id, after=after, timeout_s=timeout_s)
        poll.returned_at = trio.current_time()
        assert poll.done is not None
        poll.done.set()

    nursery.start_soon(run)
    await trio.testing.wait_all_tasks_blocked(cushion=0.1)
    assert poll.batch is None, "the long poll answered before anything was written"
    return poll


async def finished(poll: Poll, within_s: float) -> ChangePage:
    assert poll.done is not None
    with trio.fail_after(within_s):
        await poll.done.wait()
    assert poll.batch is not None
    return poll.batch


# ------------------------------------------------------------------ the feed


async def test_feed_lists_every_change_oldest_first(server: Server, store: Any) -> None:
    sdk = server.client().beta.memory_stores
    memory = sdk.memories.create(store.id, path="/notes/a.md", content="one")
    updated = sdk.memories.update(memory.id, memory_store_id=store.id, content="two")
    sdk.memories.update(memory.id, memory_store_id=store.id, path="/notes/b.md")
    sdk.memories.delete(memory.id, memory_store_id=store.id)
    sdk.update(store.id, description="changed")

    with server.http() as http:
        raw = http.get(f"/v1/memory_stores/{store.id}/changes").json()
    assert raw["last_seq"] == 5
    assert [set(change) for change in raw["data"]] == [CHANGE_FIELDS] * 5
    assert {change["type"] for change in raw["data"]} == {"memory_store_change"}

    async with mount_client(server, (store.id, "read_only")) as client:
        batch = await client.changes(store.id, after=0)
        assert batch.last_seq == 5
        assert [c.seq for c in batch.data] == [1, 2, 3, 4, 5]
        assert [(c.kind, c.path, c.old_path) for c in batch.data] == [
            (ChangeKind.MEMORY_WRITTEN, "/notes/a.md", None),
            (ChangeKind.MEMORY_WRITTEN, "/notes/a.md", None),
            (ChangeKind.MEMORY_WRITTEN, "/notes/b.md", "/notes/a.md"),
            (ChangeKind.MEMORY_DELETED, "/notes/b.md", None),
            (ChangeKind.STORE_UPDATED, None, None),
        ]
        written = batch.data[1]
        assert written.memory_id == memory.id
        assert written.memory_store_id == store.id
        assert written.content_sha256 == sha("two")
        assert written.memory_version_id == updated.memory_version_id
        assert batch.data[0].memory_version_id == memory.memory_version_id
        assert written.created_at.tzinfo is not None

        later = await client.changes(store.id, after=3)
        assert [c.seq for c in later.data] == [4, 5]
        assert later.last_seq == 5
        first_two = await client.changes(store.id, after=0, limit=2)
        assert [c.seq for c in first_two.data] == [1, 2]
        assert first_two.last_seq == 5
        assert (await client.changes(store.id, after=5)).data == []


@pytest.mark.parametrize(
    "query",
    [
        "after=-1",
        "after=9223372036854775808",
        "after=x",
        "timeout_s=-0.5",
        "timeout_s=30.5",
        "timeout_s=nan",
        "timeout_s=inf",
        "limit=0",
        "limit=1001",
    ],
)
def test_out_of_range_parameters_are_400(server: Server, store: Any, query: str) -> None:
    with server.http() as http:
        response = http.get(f"/v1/memory_stores/{store.id}/changes?{query}")
    assert response.status_code == 400, response.text
    assert response.json()["error"]["type"] == "invalid_request_error"


async def test_no_wait_when_nothing_is_asked_or_the_feed_was_reset(
    server: Server, store: Any
) -> None:
    server.client().beta.memory_stores.memories.create(store.id, path="/a.md", content="a")
    async with mount_client(server, (store.id, "read_write")) as client:
        with trio.fail_after(DEADLINE_S / 2):  # far below the 30 s asked
            reset = await client.changes(store.id, after=7, timeout_s=30)
        assert reset.data == []
        assert reset.last_seq == 1
        pending = await client.changes(store.id, after=0, timeout_s=30)  # answers at once
        assert [c.seq for c in pending.data] == [1]

        start = trio.current_time()
        quiet = await client.changes(store.id, after=1, timeout_s=0.3)
        assert quiet.data == []
        assert quiet.last_seq == 1
        assert trio.current_time() - start >= 0.3  # it did wait


async def test_a_write_reaches_a_parked_long_poll_in_under_a_second(
    server: Server, store: Any
) -> None:
    """SPEC §4: the SDK writes, the mount's long poll on the same server answers
    within :data:`PROPAGATION_DEADLINE_S` of the write's response (three rounds)."""
    sdk = server.client().beta.memory_stores
    async with (
        mount_client(server, (store.id, "read_write")) as client,
        trio.open_nursery() as nursery,
    ):
        after = 0
        for round_ in range(3):
            poll = await start_poll(nursery, client, store.id, after, timeout_s=5)
            memory = await trio.to_thread.run_sync(
                functools.partial(sdk.memories.create, store.id, path=f"/r{round_}.md", content="x")
            )
            written_at = trio.current_time()
            batch = await finished(poll, PROPAGATION_DEADLINE_S)
            assert poll.returned_at is not None
            assert poll.returned_at - written_at < PROPAGATION_DEADLINE_S
            assert [(c.seq, c.memory_id) for c in batch.data] == [(after + 1, memory.id)]
            after = batch.last_seq


async def test_a_write_through_another_server_reaches_the_long_poll(
    server: Server, second_url: str, store: Any
) -> None:
    """Writes this server did not make are found by its poll of the database."""
    elsewhere = server.client(base_url=second_url).beta.memory_stores
    async with (
        mount_client(server, (store.id, "read_write")) as client,
        trio.open_nursery() as nursery,
    ):
        poll = await start_poll(nursery, client, store.id, 0, timeout_s=10)
        await trio.to_thread.run_sync(
            lambda: elsewhere.memories.create(store.id, path="/far.md", content="x")
        )
        written_at = trio.current_time()
        batch = await finished(poll, PROPAGATION_DEADLINE_S)
        assert poll.returned_at is not None
        assert poll.returned_at - written_at < PROPAGATION_DEADLINE_S
        assert [c.path for c in batch.data] == ["/far.md"]


async def test_a_deleted_store_answers_until_its_end_was_read(server: Server) -> None:
    sdk = server.client().beta.memory_stores
    store = sdk.create(name="doomed")
    contents = [f"{name} {uuid.uuid4()}" for name in "abc"]  # held by no other store
    for content in contents:
        sdk.memories.create(store.id, path=f"/{content[0]}.md", content=content)
    async with (
        mount_client(server, (store.id, "read_write")) as client,
        trio.open_nursery() as nursery,
    ):
        poll = await start_poll(nursery, client, store.id, 3, timeout_s=10)
        await trio.to_thread.run_sync(sdk.delete, store.id)
        woken = await finished(poll, PROPAGATION_DEADLINE_S)
        # The contents it held are purged (one entry per distinct content), then the end.
        assert [c.kind for c in woken.data] == [ChangeKind.BLOB_PURGED] * 3 + [
            ChangeKind.STORE_DELETED
        ]
        assert {c.content_sha256 for c in woken.data[:3]} == {sha(c) for c in contents}
        end = woken.last_seq
        assert [c.seq for c in woken.data] == [4, 5, 6, end]

        first = await client.changes(store.id, after=0, limit=1)  # last_seq is the end
        assert [c.seq for c in first.data] == [1]
        assert first.last_seq == end
        with trio.fail_after(DEADLINE_S / 2):  # no wait on a deleted store
            rest = await client.changes(store.id, after=end - 1, timeout_s=30)
        assert [c.kind for c in rest.data] == [ChangeKind.STORE_DELETED]
        with pytest.raises(NotFound):
            await client.changes(store.id, after=end, timeout_s=30)
    with server.http() as http:
        gone = http.get(f"/v1/memory_stores/{store.id}/changes?after={end}")
    assert gone.status_code == 404
    assert gone.json()["error"]["type"] == "not_found_error"


async def test_shutdown_answers_parked_long_polls(
    server: Server, store: Any, spawn_server: Callable[[], ServerProcess]
) -> None:
    """SIGTERM: a parked poll answers (empty) at once, so neither it nor the shutdown
    waits out the graceful timeout."""
    process = spawn_server()
    token = server.session((store.id, "read_only"))["token"]
    async with MemfsClient(process.url, token) as client, trio.open_nursery() as nursery:
        last = (await client.changes(store.id, after=0)).last_seq  # connection kept alive
        poll = await start_poll(nursery, client, store.id, last, timeout_s=30)
        start = trio.current_time()
        assert await trio.to_thread.run_sync(process.stop) == 0
        assert trio.current_time() - start < GRACEFUL_TIMEOUT_S / 2
        batch = await finished(poll, within_s=1.0)
        assert batch.data == []
        assert batch.last_seq == last


# ------------------------------------------------------------------- access


async def test_who_may_read_the_feed(server: Server, admin: anthropic.Anthropic) -> None:
    mine = admin.beta.memory_stores.create(name="mine")
    other = admin.beta.memory_stores.create(name="other")
    admin.beta.memory_stores.memories.create(mine.id, path="/a.md", content="a")
    async with mount_client(server, (mine.id, "read_only")) as session:
        assert (await session.changes(mine.id, after=0)).last_seq == 1
        with pytest.raises(NotFound):  # not attached: as if it did not exist
            await session.changes(other.id, after=0, timeout_s=5)

    readers = {
        "reader": (server.key(Scope.READ), None),
        "limited to mine": (server.key(Scope.READ, stores=(mine.id,)), None),
        "writer without read": (server.key(Scope.WRITE), "api_key_scope_missing"),
        "limited to other": (server.key(Scope.READ, stores=(other.id,)), "not_found"),
    }
    for name, (secret, refusal) in readers.items():
        async with MemfsClient(server.url, secret) as client:
            if refusal is None:
                assert (await client.changes(mine.id, after=0)).last_seq == 1, name
            elif refusal == "not_found":
                with pytest.raises(NotFound):
                    await client.changes(mine.id, after=0)
            else:
                with pytest.raises(PermissionDenied) as refused:
                    await client.changes(mine.id, after=0)
                assert refused.value.code == refusal, name

    async with MemfsClient(server.url, server.admin_secret) as client:
        with pytest.raises(NotFound):
            await client.changes("memstore_unknown", after=0, timeout_s=5)


# -------------------------------------------------- in process (Hypercorn)


@dataclass
class LocalServer:
    url: str
    engine: Engine
    app: Any
    secret: str

    @property
    def notifier(self) -> ChangeNotifier:
        notifier: ChangeNotifier = self.app.state.change_notifier
        return notifier


@pytest.fixture
async def local_server(tmp_path: Path) -> AsyncIterator[LocalServer]:
    """The API on Hypercorn in this test's trio loop (SQLite in tmp_path)."""
    engine = Engine(f"sqlite:///{tmp_path / 'local.db'}")
    _, secret = engine.api_keys.create("t", [Scope.ADMIN])
    app = create_app(engine)
    config = Config()
    config.bind = ["127.0.0.1:0"]
    config.accesslog = None
    stop = trio.Event()
    try:
        async with trio.open_nursery() as nursery:
            asgi: Any = app
            serve = functools.partial(hypercorn.trio.serve, asgi, config)
            binds = await nursery.start(functools.partial(serve, shutdown_trigger=stop.wait))
            yield LocalServer(binds[0], engine, app, secret)
            stop.set()
    finally:
        engine.close()


async def test_a_client_that_goes_away_leaves_no_parked_request(
    local_server: LocalServer,
) -> None:
    store = local_server.engine.stores.create("s")
    headers = {"authorization": f"Bearer {local_server.secret}"}
    async with (
        httpx.AsyncClient(base_url=local_server.url, headers=headers, timeout=60) as http,
        trio.open_nursery() as nursery,
    ):
        for _ in range(3):
            nursery.start_soon(http.get, f"/v1/memory_stores/{store.id}/changes?timeout_s=30")
        await wait_until_async(
            lambda: local_server.notifier.waiting(store.id) == 3, "3 parked polls", DEADLINE_S
        )
        nursery.cancel_scope.cancel()  # the client hangs up on all three
    await wait_until_async(
        lambda: local_server.notifier.waiting(store.id) == 0, "no parked polls", timeout_s=2
    )


async def test_this_servers_own_writes_wake_parked_polls_at_once(
    local_server: LocalServer,
) -> None:
    engine = local_server.engine
    # Polls of the database a minute apart: only the write itself can wake them in time.
    local_server.app.state.change_notifier = ChangeNotifier(
        engine.feed.last_seq, poll_interval_s=60
    )
    store = engine.stores.create("s")
    _, token = engine.sessions.create([ResourceSpec(store.id, Access.READ_WRITE, None)])
    assert token is not None
    sdk = anthropic.AsyncAnthropic(api_key=local_server.secret, base_url=local_server.url)
    async with MemfsClient(local_server.url, token) as client, sdk, trio.open_nursery() as nursery:
        polls = [Poll(done=trio.Event()) for _ in range(3)]
        for poll in polls:
            nursery.start_soon(_poll_into, poll, client, store.id)
        await wait_until_async(
            lambda: local_server.notifier.waiting(store.id) == 3, "3 parked polls", DEADLINE_S
        )
        created = await sdk.beta.memory_stores.memories.create(store.id, path="/a", content="")
        written_at = trio.current_time()
        for poll in polls:
            batch = await finished(poll, PROPAGATION_DEADLINE_S)
            assert [c.memory_id for c in batch.data] == [created.id]
            assert poll.returned_at is not None
            assert poll.returned_at - written_at < PROPAGATION_DEADLINE_S


async def _poll_into(poll: Poll, client: MemfsClient, store_id: str) -> None:
    poll.batch = await client.changes(store_id, after=0, timeout_s=10)
    poll.returned_at = trio.current_time()
    assert poll.done is not None
    poll.done.set()
