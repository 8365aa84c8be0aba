"""The remote mount's HTTP client against the real API in-process (tests/remote/live_server)."""

from __future__ import annotations

import hashlib
from http import HTTPStatus

import httpx
import pytest
import trio
import trio.testing
from live_server import BASE_URL, LiveServer

from memfs.core.errors import (
    AuthenticationFailed,
    Conflict,
    ContentTooLarge,
    HeadVersionRedaction,
    InvalidContent,
    InvalidCursor,
    InvalidInput,
    InvalidMetadata,
    InvalidPath,
    InvalidStoreField,
    MemfsError,
    NotFound,
    NotRestorable,
    PathConflict,
    PathTooLong,
    PermissionDenied,
    PreconditionFailed,
    StoreArchived,
    StoreFull,
)
from memfs.core.model import Access, ChangeKind, MemoryStore, Operation
from memfs.remote import MemfsClient, ServerUnavailable
from memfs.remote.client import LIST_PAGE_LIMIT, error_from_response
from memfs.store import Engine

ADMIN = None  # writes made "elsewhere" (by an administrator) carry no actor here


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


# ------------------------------------------------------------------ sessions


async def test_retrieve_session_returns_attachments_with_access(
    client: MemfsClient, server: LiveServer, rw_store: MemoryStore, ro_store: MemoryStore
) -> None:
    session = await client.retrieve_session()
    assert session.id == server.session.id
    assert [(r.memory_store_id, r.access) for r in session.resources] == [
        (rw_store.id, Access.READ_WRITE),
        (ro_store.id, Access.READ_ONLY),
    ]
    assert [r.mount_path for r in session.resources] == [
        "/mnt/memory/notes",
        "/mnt/memory/reference",
    ]
    method, path, _query, _body = server.network.requests[-1]
    assert (method, path) == ("GET", "/v1/sessions/current")


async def test_requests_carry_only_the_session_token(server: LiveServer) -> None:
    seen: list[httpx.Request] = []

    class Spy(httpx.AsyncBaseTransport):
        async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
            seen.append(request)
            return await server.transport().handle_async_request(request)

    async with MemfsClient(BASE_URL, server.token, transport=Spy()) as spied:
        await spied.retrieve_session()
    assert seen[0].headers["authorization"] == f"Bearer {server.token}"
    assert seen[0].headers["anthropic-beta"] == "agent-memory-2026-07-22"
    assert "x-api-key" not in seen[0].headers


async def test_a_wrong_token_raises_authentication_failed(server: LiveServer) -> None:
    async with MemfsClient(BASE_URL, "memfs_st_wrong", transport=server.transport()) as client:
        with pytest.raises(AuthenticationFailed) as info:
            await client.retrieve_session()
    assert info.value.code == "authentication_failed"


async def test_retrieve_store_reports_archival(
    client: MemfsClient, store_engine: Engine, rw_store: MemoryStore
) -> None:
    assert not (await client.retrieve_store(rw_store.id)).archived
    store_engine.stores.archive(rw_store.id)
    store = await client.retrieve_store(rw_store.id)
    assert store.archived
    assert store.name == "Notes"


# ------------------------------------------------------------------ memories


async def test_list_memories_follows_pages_to_the_end(
    client: MemfsClient, server: LiveServer, store_engine: Engine, rw_store: MemoryStore
) -> None:
    count = 2 * LIST_PAGE_LIMIT + 50
    for index in range(count):
        store_engine.memories.create(rw_store.id, f"/d{index % 3}/m{index:04d}.md", "x")
    server.network.requests.clear()

    memories = await client.list_memories(rw_store.id)

    assert len(memories) == count
    assert [m.path for m in memories] == sorted(m.path for m in memories)
    assert all(m.content is None and m.content_sha256 == sha("x") for m in memories)
    pages = [r.query for r in server.network.requests if r.path.endswith("/memories")]
    assert len(pages) == 3
    assert all(q["view"] == "basic" and q["limit"] == str(LIST_PAGE_LIMIT) for q in pages)
    assert "page" not in pages[0]
    assert pages[1]["page"]
    assert pages[2]["page"]


async def test_find_memory_by_path_lists_only_its_directory(
    client: MemfsClient, server: LiveServer, store_engine: Engine, rw_store: MemoryStore
) -> None:
    store_engine.memories.create(rw_store.id, "/a/b/c.md", "deep")
    store_engine.memories.create(rw_store.id, "/a/b.md", "shallow")
    store_engine.memories.create(rw_store.id, "/top.md", "top")

    found = await client.find_memory_by_path(rw_store.id, "/a/b.md")
    assert found is not None
    assert found.content_sha256 == sha("shallow")
    assert server.network.requests[-1][2]["path_prefix"] == "/a/"
    assert server.network.requests[-1][2]["depth"] == "1"
    top = await client.find_memory_by_path(rw_store.id, "/top.md")
    assert top is not None
    assert top.path == "/top.md"
    assert await client.find_memory_by_path(rw_store.id, "/a/missing.md") is None


async def test_create_retrieve_update_delete_round_trip(
    client: MemfsClient, rw_store: MemoryStore
) -> None:
    created = await client.create_memory(rw_store.id, "/notes/a.md", "one")
    assert created.content is None
    assert created.content_sha256 == sha("one")
    assert created.content_size_bytes == 3

    fetched = await client.retrieve_memory(rw_store.id, created.id)
    assert fetched.content == "one"

    updated = await client.update_memory(
        rw_store.id, created.id, content="two", expected_sha256=sha("one")
    )
    assert updated.content_sha256 == sha("two")
    assert updated.memory_version_id != created.memory_version_id

    old = await client.retrieve_version(rw_store.id, created.memory_version_id)
    assert old.operation is Operation.CREATED
    assert old.content == "one"

    renamed = await client.update_memory(rw_store.id, created.id, path="/notes/b.md")
    assert (renamed.id, renamed.path) == (created.id, "/notes/b.md")

    await client.delete_memory(rw_store.id, created.id, expected_sha256=sha("two"))
    with pytest.raises(NotFound):
        await client.retrieve_memory(rw_store.id, created.id)


async def test_update_sends_the_precondition_of_the_contract(
    client: MemfsClient, server: LiveServer, rw_store: MemoryStore
) -> None:
    memory = await client.create_memory(rw_store.id, "/p.md", "v1")
    await client.update_memory(rw_store.id, memory.id, content="v2", expected_sha256=sha("v1"))
    method, path, query, body = server.network.requests[-1]
    assert (method, path) == ("POST", f"/v1/memory_stores/{rw_store.id}/memories/{memory.id}")
    assert body == {
        "content": "v2",
        "precondition": {"type": "content_sha256", "content_sha256": sha("v1")},
    }
    assert query == {"view": "basic"}


async def test_precondition_mismatch_raises_precondition_failed(
    client: MemfsClient, store_engine: Engine, rw_store: MemoryStore
) -> None:
    memory = await client.create_memory(rw_store.id, "/p.md", "v1")
    store_engine.for_caller(actor=ADMIN).memories.update(rw_store.id, memory.id, content="theirs")
    with pytest.raises(PreconditionFailed):
        await client.update_memory(
            rw_store.id, memory.id, content="mine", expected_sha256=sha("v1")
        )
    with pytest.raises(PreconditionFailed):
        await client.delete_memory(rw_store.id, memory.id, expected_sha256=sha("v1"))
    assert (await client.retrieve_memory(rw_store.id, memory.id)).content == "theirs"


async def test_path_conflict_names_the_blocker(client: MemfsClient, rw_store: MemoryStore) -> None:
    blocker = await client.create_memory(rw_store.id, "/a", "file")
    with pytest.raises(PathConflict) as info:
        await client.create_memory(rw_store.id, "/a/b.md", "below a file")
    assert info.value.conflicting_memory_id == blocker.id
    assert info.value.conflicting_path == "/a"
    assert info.value.code == "memory_path_conflict"


async def test_read_only_attachment_raises_permission_denied(
    client: MemfsClient, ro_store: MemoryStore
) -> None:
    with pytest.raises(PermissionDenied) as info:
        await client.create_memory(ro_store.id, "/x.md", "x")
    assert info.value.code == "read_only_attachment"


async def test_archived_store_raises_store_archived(
    client: MemfsClient, store_engine: Engine, rw_store: MemoryStore
) -> None:
    store_engine.stores.archive(rw_store.id)
    with pytest.raises(StoreArchived):
        await client.create_memory(rw_store.id, "/x.md", "x")


@pytest.mark.parametrize(
    ("path", "content", "error"),
    [
        ("no-slash", "x", InvalidPath),
        ("/" + "a" * 256, "x", PathTooLong),
        ("/bad.md", "bell\x07", InvalidContent),
        ("/big.md", "x" * 102_401, ContentTooLarge),
    ],
)
async def test_validation_errors_come_back_typed(
    client: MemfsClient, rw_store: MemoryStore, path: str, content: str, error: type[MemfsError]
) -> None:
    with pytest.raises(error) as info:
        await client.create_memory(rw_store.id, path, content)
    assert type(info.value) is error


async def test_rename_prefix_moves_a_directory(
    client: MemfsClient, server: LiveServer, rw_store: MemoryStore
) -> None:
    first = await client.create_memory(rw_store.id, "/old/a.md", "a")
    await client.create_memory(rw_store.id, "/old/sub/b.md", "b")

    moved = await client.rename_prefix(rw_store.id, "/old/", "/new/")

    assert [m.path for m in moved] == ["/new/a.md", "/new/sub/b.md"]
    assert moved[0].id == first.id
    method, path, _query, body = server.network.requests[-1]
    assert (method, path) == ("POST", f"/v1/memory_stores/{rw_store.id}/memories/rename_prefix")
    assert body == {"old_prefix": "/old/", "new_prefix": "/new/"}
    assert await client.rename_prefix(rw_store.id, "/old/", "/new/") == []


# --------------------------------------------------------------- change feed


async def test_changes_returns_the_feed_after_a_seq(
    client: MemfsClient, rw_store: MemoryStore
) -> None:
    memory = await client.create_memory(rw_store.id, "/a.md", "1")
    await client.update_memory(rw_store.id, memory.id, path="/b.md")
    await client.delete_memory(rw_store.id, memory.id)

    batch = await client.changes(rw_store.id, after=0)
    assert [c.kind for c in batch.data] == [
        ChangeKind.MEMORY_WRITTEN,
        ChangeKind.MEMORY_WRITTEN,
        ChangeKind.MEMORY_DELETED,
    ]
    assert [c.seq for c in batch.data] == [1, 2, 3]
    assert batch.last_seq == 3
    assert (batch.data[1].old_path, batch.data[1].path) == ("/a.md", "/b.md")

    later = await client.changes(rw_store.id, after=2)
    assert [c.seq for c in later.data] == [3]
    assert (await client.changes(rw_store.id, after=3)).data == []


async def test_long_poll_returns_when_a_change_arrives(
    client: MemfsClient, server: LiveServer, rw_store: MemoryStore
) -> None:
    results = []

    async def poll() -> None:
        results.append(await client.changes(rw_store.id, after=0, timeout_s=25))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(poll)
        await trio.testing.wait_all_tasks_blocked()
        assert results == []  # the poll is waiting
        assert server.network.requests[-1][2] == {"after": "0", "timeout_s": "25"}
        await client.create_memory(rw_store.id, "/new.md", "hello")

    (batch,) = results
    assert [(c.kind, c.path) for c in batch.data] == [(ChangeKind.MEMORY_WRITTEN, "/new.md")]


async def test_long_poll_times_out_empty(
    client: MemfsClient, rw_store: MemoryStore, autojump_clock: trio.testing.MockClock
) -> None:
    batch = await client.changes(rw_store.id, after=0, timeout_s=5)
    assert batch.data == []
    assert batch.last_seq == 0


async def test_redaction_announces_the_purged_digest(
    client: MemfsClient, server: LiveServer, store_engine: Engine, rw_store: MemoryStore
) -> None:
    memory = await client.create_memory(rw_store.id, "/secret.md", "password=hunter2")
    first_version = memory.memory_version_id
    await client.update_memory(rw_store.id, memory.id, content="password=<removed>")
    seen = (await client.changes(rw_store.id, after=0)).last_seq

    store_engine.for_caller(actor=ADMIN).versions.redact(rw_store.id, first_version)

    batch = await client.changes(rw_store.id, after=seen)
    purged = [c for c in batch.data if c.kind is ChangeKind.BLOB_PURGED]
    assert [c.content_sha256 for c in purged] == [sha("password=hunter2")]


# ------------------------------------------------------------- unavailability


async def test_unreachable_server_raises_server_unavailable(
    client: MemfsClient, server: LiveServer, rw_store: MemoryStore
) -> None:
    server.network.down = True
    with pytest.raises(ServerUnavailable) as info:
        await client.create_memory(rw_store.id, "/a.md", "x")
    assert info.value.status is None
    assert server.network.applied == 0


@pytest.mark.parametrize("status", [500, 502, 503, 504, 408, 429])
def test_transient_statuses_raise_server_unavailable(status: int) -> None:
    """What a proxy in front of the server answers (no memfs envelope) is transient."""
    exc = error_from_response(_response(status, None))
    assert isinstance(exc, ServerUnavailable)
    assert exc.status == status


async def test_a_lost_response_raises_server_unavailable_after_applying(
    client: MemfsClient, server: LiveServer, rw_store: MemoryStore
) -> None:
    server.network.lose_responses = 1
    with pytest.raises(ServerUnavailable):
        await client.create_memory(rw_store.id, "/a.md", "x")
    assert [m.path for m in await client.list_memories(rw_store.id)] == ["/a.md"]


async def test_a_success_that_is_not_json_raises_server_unavailable() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, text="<html>proxy login</html>")

    async with MemfsClient(BASE_URL, "t", transport=httpx.MockTransport(handler)) as client:
        with pytest.raises(ServerUnavailable, match="not JSON"):
            await client.retrieve_session()


# ----------------------------------------------------------- the error table


def _response(status: int, error: dict[str, object] | None) -> httpx.Response:
    body = None if error is None else {"type": "error", "error": error}
    request = httpx.Request("POST", f"{BASE_URL}/v1/memory_stores/s/memories")
    return httpx.Response(status, json=body, request=request, headers={"request-id": "req_123"})


def _error(error_type: str, code: str | None = None, **extra: object) -> dict[str, object]:
    error: dict[str, object] = {"type": error_type, "message": "the server's words"}
    if code is not None:
        error["details"] = {"error_code": code}
    return {**error, **extra}


@pytest.mark.parametrize(
    ("status", "error", "expected"),
    [
        (400, _error("invalid_request_error"), InvalidInput),
        (400, _error("invalid_request_error", "invalid_input"), InvalidInput),
        (400, _error("invalid_request_error", "invalid_path"), InvalidPath),
        (400, _error("invalid_request_error", "path_too_long"), PathTooLong),
        (400, _error("invalid_request_error", "invalid_content"), InvalidContent),
        (400, _error("invalid_request_error", "content_too_large"), ContentTooLarge),
        (413, _error("invalid_request_error", "content_too_large"), ContentTooLarge),
        (413, _error("invalid_request_error", "request_too_large"), ContentTooLarge),
        (400, _error("invalid_request_error", "invalid_metadata"), InvalidMetadata),
        (400, _error("invalid_request_error", "invalid_store_field"), InvalidStoreField),
        (400, _error("invalid_request_error", "invalid_cursor"), InvalidCursor),
        (400, _error("invalid_request_error", "store_archived"), StoreArchived),
        (400, _error("invalid_request_error", "store_full"), StoreFull),
        (401, _error("authentication_error"), AuthenticationFailed),
        (403, _error("permission_error", "read_only_attachment"), PermissionDenied),
        (404, _error("not_found_error"), NotFound),
        (409, _error("memory_path_conflict_error"), PathConflict),
        (409, _error("memory_precondition_failed_error"), PreconditionFailed),
        (409, _error("conflict_error", "head_version_redaction"), HeadVersionRedaction),
        (409, _error("conflict_error", "not_restorable"), NotRestorable),
        (409, _error("conflict_error"), Conflict),
        (412, _error("memory_precondition_failed_error"), PreconditionFailed),
        (402, _error("billing_error"), MemfsError),
        (405, _error("invalid_request_error", "method_not_allowed"), InvalidInput),
        (404, _error("not_found_error", "route_not_found"), NotFound),
        (404, None, NotFound),
    ],
)
def test_error_table_picks_the_most_specific_class(
    status: int, error: dict[str, object] | None, expected: type[MemfsError]
) -> None:
    exc = error_from_response(_response(status, error))
    assert type(exc) is expected
    if error is not None:
        assert exc.message == "the server's words"
        details = error.get("details")
        if isinstance(details, dict):
            assert exc.code == details["error_code"]
    assert "request-id: req_123" in exc.__notes__


def test_error_table_reads_the_conflict_fields() -> None:
    exc = error_from_response(
        _response(
            409,
            _error(
                "memory_path_conflict_error",
                "memory_path_conflict",
                conflicting_memory_id="mem_1",
                conflicting_path="/a",
            ),
        )
    )
    assert isinstance(exc, PathConflict)
    assert (exc.conflicting_memory_id, exc.conflicting_path) == ("mem_1", "/a")


def test_error_table_inverts_the_api_table() -> None:
    """Every domain error the API can send comes back as the same class and code."""
    api_errors = pytest.importorskip("memfs.api.errors")
    samples: list[MemfsError] = [
        InvalidInput("x"),
        InvalidPath("x"),
        PathTooLong("x"),
        InvalidContent("x"),
        ContentTooLarge("x"),
        InvalidMetadata(["x"]),
        InvalidStoreField("x"),
        InvalidCursor("x"),
        StoreArchived("x"),
        StoreFull("x"),
        NotFound("x"),
        PathConflict("x", conflicting_memory_id="mem_1", conflicting_path="/a"),
        PreconditionFailed("x", actual_sha256="0" * 64),
        HeadVersionRedaction("x"),
        NotRestorable("x"),
        PermissionDenied("x", code="read_only_attachment"),
        AuthenticationFailed("x"),
    ]
    for sample in samples:
        status, body = api_errors.error_body(sample, "req_1")
        exc = error_from_response(_response(int(status), body["error"]))
        assert type(exc) is type(sample), (sample, status, body)
        assert exc.code == sample.code
    status, body = api_errors.error_body(MemfsError("boom"), "req_1")
    assert status == HTTPStatus.INTERNAL_SERVER_ERROR
    assert isinstance(error_from_response(_response(int(status), body["error"])), ServerUnavailable)
