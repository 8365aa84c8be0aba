"""What a remote mount asks of the API besides the change feed (SPEC §4, §5): its own
session, directory rename, rename over an existing memory, and the head's digest when
a precondition fails. Driven by the mount's client (``MemfsClient``, holding a session
token) and the SDK, against a real ``memfs serve``."""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Any

import anthropic
import pytest

from memfs.core.errors import (
    InvalidInput,
    InvalidPath,
    MemfsError,
    NotFound,
    PathConflict,
    PermissionDenied,
    PreconditionFailed,
    StoreArchived,
)
from memfs.core.model import Access, Scope
from memfs.remote import MemfsClient

if TYPE_CHECKING:
    from tests.api.conftest import Server


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def mount_client(server: Server, *attachments: tuple[str, str]) -> tuple[MemfsClient, str]:
    """A client holding a new session's token, and that session's id."""
    session = server.session(*attachments)
    return MemfsClient(server.url, session["token"]), session["id"]


# ------------------------------------------------------------ current session


async def test_current_session_is_the_tokens_own(
    server: Server, admin: anthropic.Anthropic
) -> None:
    notes = admin.beta.memory_stores.create(name="Team Notes")
    facts = admin.beta.memory_stores.create(name="facts")
    client, session_id = mount_client(server, (notes.id, "read_write"), (facts.id, "read_only"))
    other, other_id = mount_client(server, (notes.id, "read_only"))
    async with client, other:
        session = await client.retrieve_session()
        assert (await other.retrieve_session()).id == other_id != session_id
    assert session.id == session_id
    assert [(r.memory_store_id, r.access, r.mount_path) for r in session.resources] == [
        (notes.id, Access.READ_WRITE, "/mnt/memory/team-notes"),
        (facts.id, Access.READ_ONLY, "/mnt/memory/facts"),
    ]


def test_current_session_wire_shape_matches_retrieve_by_id(server: Server, store: Any) -> None:
    session = server.session((store.id, "read_write"))
    with server.http(session["token"]) as http:
        current = http.get("/v1/sessions/current")
        by_id = http.get(f"/v1/sessions/{session['id']}")
    assert current.status_code == 200, current.text
    assert current.json() == by_id.json()
    assert "token" not in current.json()


@pytest.mark.parametrize("scopes", [(Scope.ADMIN,), (Scope.READ,)])
async def test_an_api_key_has_no_current_session(server: Server, scopes: tuple[Scope, ...]) -> None:
    async with MemfsClient(server.url, server.key(*scopes)) as client:
        with pytest.raises(PermissionDenied) as refused:
            await client.retrieve_session()
    assert refused.value.code == "session_not_allowed"


# ------------------------------------------------------------ rename_prefix


async def test_rename_prefix_moves_a_directory_in_one_step(
    server: Server, admin: anthropic.Anthropic, store: Any
) -> None:
    sdk = admin.beta.memory_stores
    x = sdk.memories.create(store.id, path="/old/x.md", content="x")
    y = sdk.memories.create(store.id, path="/old/deep/y.md", content="y")
    sdk.memories.create(store.id, path="/older.md", content="not below /old/")
    client, session_id = mount_client(server, (store.id, "read_write"))
    async with client:
        moved = await client.rename_prefix(store.id, "/old/", "/new/sub/")
        assert [(m.id, m.path) for m in moved] == [
            (y.id, "/new/sub/deep/y.md"),
            (x.id, "/new/sub/x.md"),
        ]
        assert all(m.content is None and m.content_sha256 for m in moved)
        assert moved[1].content_sha256 == sha("x")
        assert await client.rename_prefix(store.id, "/old/", "/new/sub/") == []  # replayed
        batch = await client.changes(store.id, after=3)
    assert sorted(m.path for m in sdk.memories.list(store.id)) == [
        "/new/sub/deep/y.md",
        "/new/sub/x.md",
        "/older.md",
    ]
    [version] = list(sdk.memory_versions.list(store.id, memory_id=x.id, operation="modified"))
    assert version.path == "/new/sub/x.md"
    assert version.created_by is not None
    assert version.created_by.model_dump() == {"type": "session_actor", "session_id": session_id}
    assert {(c.memory_id, c.old_path) for c in batch.data} == {
        (x.id, "/old/x.md"),
        (y.id, "/old/deep/y.md"),
    }
    assert all(c.memory_version_id for c in batch.data)


async def test_rename_prefix_refusals_change_nothing(
    server: Server, admin: anthropic.Anthropic, store: Any
) -> None:
    sdk = admin.beta.memory_stores
    sdk.memories.create(store.id, path="/a/one.md", content="1")
    blocker = sdk.memories.create(store.id, path="/b/one.md", content="taken")
    client, _ = mount_client(server, (store.id, "read_write"))
    async with client:
        with pytest.raises(PathConflict) as conflict:
            await client.rename_prefix(store.id, "/a/", "/b/")
        assert conflict.value.conflicting_memory_id == blocker.id
        assert conflict.value.conflicting_path == "/b/one.md"
        refusals: list[tuple[str, str, type[MemfsError], str]] = [
            ("/a", "/c/", InvalidPath, "invalid_path"),
            ("/a/", "c/", InvalidPath, "invalid_path"),
            ("/a/", "/c /", InvalidPath, "invalid_path"),
            ("/", "/c/", InvalidInput, "invalid_input"),
            ("/a/", "/", InvalidInput, "invalid_input"),
            ("/a/", "/a/inner/", InvalidInput, "invalid_input"),
        ]
        for old, new, error, code in refusals:
            with pytest.raises(error) as refused:
                await client.rename_prefix(store.id, old, new)
            assert refused.value.code == code, (old, new)
        # A file where the new directory would go.
        sdk.memories.create(store.id, path="/file", content="f")
        with pytest.raises(PathConflict) as under_file:
            await client.rename_prefix(store.id, "/a/", "/file/")
        assert under_file.value.conflicting_path == "/file"
    assert sorted(m.path for m in sdk.memories.list(store.id)) == [
        "/a/one.md",
        "/b/one.md",
        "/file",
    ]


async def test_rename_prefix_access(server: Server, admin: anthropic.Anthropic) -> None:
    sdk = admin.beta.memory_stores
    store = sdk.create(name="rename access")
    sdk.memories.create(store.id, path="/a/x.md", content="x")
    read_only, _ = mount_client(server, (store.id, "read_only"))
    async with read_only:
        with pytest.raises(PermissionDenied) as refused:
            await read_only.rename_prefix(store.id, "/a/", "/b/")
        assert refused.value.code == "read_only_attachment"
    async with MemfsClient(server.url, server.key(Scope.READ)) as reader:
        with pytest.raises(PermissionDenied) as refused:
            await reader.rename_prefix(store.id, "/a/", "/b/")
        assert refused.value.code == "api_key_scope_missing"
    async with MemfsClient(server.url, server.key(Scope.WRITE)) as writer:
        assert [m.path for m in await writer.rename_prefix(store.id, "/a/", "/b/")] == ["/b/x.md"]
        with pytest.raises(NotFound):
            await writer.rename_prefix("memstore_unknown", "/a/", "/b/")
        sdk.archive(store.id)
        with pytest.raises(StoreArchived):
            await writer.rename_prefix(store.id, "/b/", "/c/")
    assert [m.path for m in sdk.memories.list(store.id)] == ["/b/x.md"]


def test_rename_prefix_body_is_strict(server: Server, store: Any) -> None:
    url = f"/v1/memory_stores/{store.id}/memories/rename_prefix"
    with server.http() as http:
        for body in (
            {"old_prefix": "/a/"},
            {"old_prefix": "/a/", "new_prefix": "/b/", "extra": 1},
            {"old_prefix": "/a/", "new_prefix": 5},
            {"old_prefix": "/a\x00/", "new_prefix": "/b/"},
        ):
            response = http.post(url, json=body)
            assert response.status_code == 400, (body, response.text)
            assert response.json()["error"]["type"] == "invalid_request_error"
        # Not taken for a memory id by the update route.
        assert http.post(url, json={"old_prefix": "/a/", "new_prefix": "/b/"}).json() == {
            "data": [],
            "next_page": None,
        }


# -------------------------------------------------------- rename with replace


async def test_update_with_replace_renames_over_an_existing_memory(
    server: Server, admin: anthropic.Anthropic, store: Any
) -> None:
    sdk = admin.beta.memory_stores
    draft = sdk.memories.create(store.id, path="/notes.md.tmp", content="new text")
    target = sdk.memories.create(store.id, path="/notes.md", content="old text")
    with pytest.raises(anthropic.ConflictError) as taken:
        sdk.memories.update(draft.id, memory_store_id=store.id, path="/notes.md")
    assert taken.value.type == "memory_path_conflict_error"

    saved = sdk.memories.update(
        draft.id, memory_store_id=store.id, path="/notes.md", extra_body={"replace": True}
    )
    assert saved.id == draft.id
    assert saved.path == "/notes.md"
    assert [(getattr(m, "id", None), m.path) for m in sdk.memories.list(store.id)] == [
        (draft.id, "/notes.md")
    ]
    with pytest.raises(anthropic.NotFoundError):
        sdk.memories.retrieve(target.id, memory_store_id=store.id)
    [deleted] = list(sdk.memory_versions.list(store.id, memory_id=target.id, operation="deleted"))
    assert deleted.path == "/notes.md"
    # Soft-deleted, so it can come back once the path is free again.
    sdk.memories.update(draft.id, memory_store_id=store.id, path="/elsewhere.md")
    with server.http() as http:
        restored = http.post(f"/v1/memory_stores/{store.id}/memories/{target.id}/restore")
    assert restored.status_code == 200, restored.text

    # The mount's client sends it too; a directory in the way is still a conflict.
    sdk.memories.create(store.id, path="/dir/inside.md", content="i")
    client, _ = mount_client(server, (store.id, "read_write"))
    async with client:
        moved = await client.update_memory(store.id, draft.id, path="/notes.md", replace=True)
        assert moved.path == "/notes.md"
        with pytest.raises(PathConflict) as directory:
            await client.update_memory(store.id, draft.id, path="/dir", replace=True)
        assert directory.value.conflicting_path == "/dir/inside.md"
    with server.http() as http:
        not_bool = http.post(
            f"/v1/memory_stores/{store.id}/memories/{draft.id}",
            json={"path": "/x.md", "replace": "yes"},
        )
    assert not_bool.status_code == 400


async def test_precondition_failure_names_the_heads_digest(
    server: Server, admin: anthropic.Anthropic, store: Any
) -> None:
    memory = admin.beta.memory_stores.memories.create(store.id, path="/a.md", content="theirs")
    with server.http() as http:
        response = http.post(
            f"/v1/memory_stores/{store.id}/memories/{memory.id}",
            json={
                "content": "mine",
                "precondition": {"type": "content_sha256", "content_sha256": sha("base")},
            },
        )
    assert response.status_code == 409
    error = response.json()["error"]
    assert error["type"] == "memory_precondition_failed_error"
    assert error["actual_content_sha256"] == sha("theirs")
    client, _ = mount_client(server, (store.id, "read_write"))
    async with client:
        with pytest.raises(PreconditionFailed) as failed:
            await client.update_memory(
                store.id, memory.id, content="mine", expected_sha256=sha("base")
            )
        assert failed.value.actual_sha256 == sha("theirs")
    with server.http() as http:
        deleted = http.delete(
            f"/v1/memory_stores/{store.id}/memories/{memory.id}",
            params={"expected_content_sha256": sha("base")},
        )
    assert deleted.json()["error"]["actual_content_sha256"] == sha("theirs")
