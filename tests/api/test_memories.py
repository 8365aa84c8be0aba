"""Memories through the SDK: api-contract §5.7–5.11 and SPEC §1–2 rules."""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Any

import anthropic
import pytest

if TYPE_CHECKING:
    from tests.api.conftest import Server

SHA256_EMPTY = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def versions_of(admin: anthropic.Anthropic, store_id: str, memory_id: str) -> list[Any]:
    return list(admin.beta.memory_stores.memory_versions.list(store_id, memory_id=memory_id))


# ------------------------------------------------------------------- create


def test_create_returns_basic_view_by_default(admin: anthropic.Anthropic, store: Any) -> None:
    memories = admin.beta.memory_stores.memories
    memory = memories.create(store.id, path="/projects/foo/notes.md", content="héllo\n")
    assert memory.id.startswith("mem_")
    assert memory.type == "memory"
    assert memory.memory_store_id == store.id
    assert memory.path == "/projects/foo/notes.md"
    assert memory.content is None
    assert memory.content_sha256 == sha256("héllo\n")
    assert memory.content_size_bytes == len("héllo\n".encode())
    assert memory.memory_version_id.startswith("memver_")
    [version] = versions_of(admin, store.id, memory.id)
    assert (version.id, version.operation) == (memory.memory_version_id, "created")


def test_create_full_view_and_empty_content(admin: anthropic.Anthropic, store: Any) -> None:
    memories = admin.beta.memory_stores.memories
    memory = memories.create(store.id, path="/empty.md", content="", view="full")
    assert memory.content == ""
    assert memory.content_sha256 == SHA256_EMPTY
    assert memory.content_size_bytes == 0


def test_create_null_content_is_400(admin: anthropic.Anthropic, store: Any) -> None:
    with pytest.raises(anthropic.BadRequestError) as info:
        admin.beta.memory_stores.memories.create(store.id, path="/a.md", content=None)
    assert info.value.type == "invalid_request_error"
    assert 'pass ""' in (info.value.api_message or "")
    assert list(admin.beta.memory_stores.memories.list(store.id)) == []


def test_create_never_overwrites(admin: anthropic.Anthropic, store: Any) -> None:
    memories = admin.beta.memory_stores.memories
    first = memories.create(store.id, path="/a/b.md", content="one")
    with pytest.raises(anthropic.ConflictError) as info:
        memories.create(store.id, path="/a/b.md", content="two")
    error = info.value
    assert error.type == "memory_path_conflict_error"
    assert isinstance(error.body, dict)
    assert error.body["error"]["conflicting_memory_id"] == first.id
    assert error.body["error"]["conflicting_path"] == "/a/b.md"
    # x-should-retry: false, so the SDK gave up after the first attempt.
    assert error.response.headers["x-should-retry"] == "false"
    assert error.response.request.headers["x-stainless-retry-count"] == "0"
    assert memories.retrieve(first.id, memory_store_id=store.id).content == "one"


@pytest.mark.parametrize(("existing", "new"), [("/a", "/a/b.md"), ("/a/b/c.md", "/a/b")])
def test_file_and_directory_cant_share_a_path(
    admin: anthropic.Anthropic, store: Any, existing: str, new: str
) -> None:
    memories = admin.beta.memory_stores.memories
    blocker = memories.create(store.id, path=existing, content="x")
    with pytest.raises(anthropic.ConflictError) as info:
        memories.create(store.id, path=new, content="y")
    assert info.value.type == "memory_path_conflict_error"
    assert info.value.body["error"]["conflicting_memory_id"] == blocker.id  # type: ignore[index]


@pytest.mark.parametrize(
    "path",
    [
        "relative.md",
        "/trailing/",
        "/a//b",
        "/a/./b",
        "/a/../b",
        "/ lead",
        "/bad\u200bformat",
        "/line\u2028sep",
        "/cafe\u0301",  # not NFC
        "/back\\slash",
        "/" + "/".join(["s"] * 21),
        "/" + "x" * 256,
        "/" + "/".join(["y" * 200] * 6),  # > 1,024 bytes
    ],
)
def test_invalid_paths_are_400(admin: anthropic.Anthropic, store: Any, path: str) -> None:
    with pytest.raises(anthropic.BadRequestError) as info:
        admin.beta.memory_stores.memories.create(store.id, path=path, content="x")
    assert info.value.type == "invalid_request_error"
    assert info.value.error_code in ("invalid_path", "path_too_long")


def test_content_limits(admin: anthropic.Anthropic, store: Any) -> None:
    memories = admin.beta.memory_stores.memories
    at_limit = memories.create(store.id, path="/max.md", content="é" * 51_200)
    assert at_limit.content_size_bytes == 102_400
    with pytest.raises(anthropic.ContentTooLargeError) as info:
        memories.create(store.id, path="/over.md", content="x" * 102_401)
    assert info.value.status_code == 413
    assert info.value.type == "invalid_request_error"
    assert info.value.error_code == "content_too_large"
    with pytest.raises(anthropic.BadRequestError) as bad:
        memories.create(store.id, path="/ctl.md", content="bell\x07")
    assert bad.value.error_code == "invalid_content"
    assert [m.path for m in memories.list(store.id)] == ["/max.md"]


# ------------------------------------------------------------ retrieve, update


def test_retrieve_defaults_to_full(admin: anthropic.Anthropic, store: Any) -> None:
    memories = admin.beta.memory_stores.memories
    created = memories.create(store.id, path="/r.md", content="body")
    assert memories.retrieve(created.id, memory_store_id=store.id).content == "body"
    basic = memories.retrieve(created.id, memory_store_id=store.id, view="basic")
    assert basic.content is None
    assert basic.content_sha256 == sha256("body")


def test_retrieve_from_another_store_is_404(admin: anthropic.Anthropic, store: Any) -> None:
    memories = admin.beta.memory_stores.memories
    other = admin.beta.memory_stores.create(name="other")
    memory = memories.create(store.id, path="/x.md", content="x")
    with pytest.raises(anthropic.NotFoundError):
        memories.retrieve(memory.id, memory_store_id=other.id)
    with pytest.raises(anthropic.NotFoundError):
        memories.retrieve("mem_unknown", memory_store_id=store.id)


def test_update_content_with_precondition(admin: anthropic.Anthropic, store: Any) -> None:
    memories = admin.beta.memory_stores.memories
    created = memories.create(store.id, path="/u.md", content="v1")
    updated = memories.update(
        created.id,
        memory_store_id=store.id,
        content="v2",
        precondition={"type": "content_sha256", "content_sha256": sha256("v1")},
        view="full",
    )
    assert updated.content == "v2"
    assert updated.content_sha256 == sha256("v2")
    assert updated.memory_version_id != created.memory_version_id
    assert updated.updated_at > created.updated_at
    assert [v.operation for v in versions_of(admin, store.id, created.id)] == [
        "modified",
        "created",
    ]


def test_stale_precondition_is_409_and_changes_nothing(
    admin: anthropic.Anthropic, store: Any
) -> None:
    memories = admin.beta.memory_stores.memories
    created = memories.create(store.id, path="/p.md", content="current")
    with pytest.raises(anthropic.ConflictError) as info:
        memories.update(
            created.id,
            memory_store_id=store.id,
            content="lost",
            precondition={"type": "content_sha256", "content_sha256": sha256("stale")},
        )
    assert info.value.type == "memory_precondition_failed_error"
    assert info.value.response.headers["x-should-retry"] == "false"
    assert info.value.response.request.headers["x-stainless-retry-count"] == "0"
    assert memories.retrieve(created.id, memory_store_id=store.id).content == "current"
    assert len(versions_of(admin, store.id, created.id)) == 1


def test_precondition_without_sha_is_400(admin: anthropic.Anthropic, store: Any) -> None:
    memories = admin.beta.memory_stores.memories
    created = memories.create(store.id, path="/p.md", content="x")
    with pytest.raises(anthropic.BadRequestError):
        memories.update(
            created.id,
            memory_store_id=store.id,
            content="y",
            precondition={"type": "content_sha256"},
        )
    with pytest.raises(anthropic.BadRequestError):
        memories.update(
            created.id,
            memory_store_id=store.id,
            content="y",
            precondition={"type": "content_sha256", "content_sha256": "NOT-HEX"},
        )


def test_rename_keeps_id_and_writes_one_version(admin: anthropic.Anthropic, store: Any) -> None:
    memories = admin.beta.memory_stores.memories
    created = memories.create(store.id, path="/old/name.md", content="same")
    renamed = memories.update(created.id, memory_store_id=store.id, path="/new/name.md")
    assert (renamed.id, renamed.path) == (created.id, "/new/name.md")
    assert renamed.content_sha256 == created.content_sha256
    [latest, _] = versions_of(admin, store.id, created.id)
    assert (latest.operation, latest.path) == ("modified", "/new/name.md")


def test_rename_onto_occupied_path_is_409(admin: anthropic.Anthropic, store: Any) -> None:
    memories = admin.beta.memory_stores.memories
    a = memories.create(store.id, path="/a.md", content="a")
    b = memories.create(store.id, path="/b.md", content="b")
    with pytest.raises(anthropic.ConflictError) as info:
        memories.update(a.id, memory_store_id=store.id, path="/b.md")
    assert info.value.type == "memory_path_conflict_error"
    assert info.value.body["error"]["conflicting_memory_id"] == b.id  # type: ignore[index]
    assert memories.retrieve(a.id, memory_store_id=store.id).path == "/a.md"


def test_noop_update_writes_no_version(admin: anthropic.Anthropic, store: Any) -> None:
    memories = admin.beta.memory_stores.memories
    created = memories.create(store.id, path="/n.md", content="same")
    same = memories.update(created.id, memory_store_id=store.id, content="same", path="/n.md")
    assert same.memory_version_id == created.memory_version_id
    nulls = memories.update(created.id, memory_store_id=store.id, content=None, path=None)
    assert nulls.memory_version_id == created.memory_version_id
    assert len(versions_of(admin, store.id, created.id)) == 1


def test_memory_metadata_extension(admin: anthropic.Anthropic, store: Any) -> None:
    memories = admin.beta.memory_stores.memories
    created = memories.create(
        store.id, path="/m.md", content="x", extra_body={"metadata": {"type": "semantic"}}
    )
    assert created.metadata == {"type": "semantic"}  # type: ignore[attr-defined]


# --------------------------------------------------------------------- list


def test_list_rolls_up_by_depth(admin: anthropic.Anthropic, store: Any) -> None:
    memories = admin.beta.memory_stores.memories
    for path in ("/notes/a.md", "/notes/b/c.md", "/top.md", "/notes-archive/x.md"):
        memories.create(store.id, path=path, content=path)
    items = list(memories.list(store.id, depth=1))
    assert [(i.type, i.path) for i in items] == [
        ("memory_prefix", "/notes-archive/"),
        ("memory_prefix", "/notes/"),
        ("memory", "/top.md"),
    ]
    under = list(memories.list(store.id, path_prefix="/notes/", depth=1))
    assert [(i.type, i.path) for i in under] == [
        ("memory", "/notes/a.md"),
        ("memory_prefix", "/notes/b/"),
    ]
    everything = [i.path for i in memories.list(store.id, path_prefix="/notes/")]
    assert everything == ["/notes/a.md", "/notes/b/c.md"]


def test_list_pages_until_next_page_null(admin: anthropic.Anthropic, store: Any) -> None:
    memories = admin.beta.memory_stores.memories
    paths = sorted(f"/d{i % 3}/f{i:02}.md" for i in range(25))
    for path in paths:
        memories.create(store.id, path=path, content="x")
    first = memories.list(store.id, limit=10)
    assert [m.path for m in first.data] == paths[:10]
    assert first.next_page is not None
    assert [m.path for m in memories.list(store.id, limit=10)] == paths
    prefixes = memories.list(store.id, depth=1, limit=2)
    assert [p.path for p in prefixes.data] == ["/d0/", "/d1/"]
    assert [p.path for p in prefixes.get_next_page().data] == ["/d2/"]
    assert prefixes.get_next_page().next_page is None


def test_list_full_view_holds_at_most_20(admin: anthropic.Anthropic, store: Any) -> None:
    memories = admin.beta.memory_stores.memories
    for i in range(22):
        memories.create(store.id, path=f"/f{i:02}.md", content=f"c{i}")
    page = memories.list(store.id, view="full", limit=100)
    assert len(page.data) == 20
    assert page.next_page is not None
    assert page.data[0].content == "c0"
    basic = memories.list(store.id, limit=100)
    assert len(basic.data) == 22
    assert basic.next_page is None
    assert all(m.content is None for m in basic.data)


def test_list_prefix_must_end_with_slash(admin: anthropic.Anthropic, store: Any) -> None:
    with pytest.raises(anthropic.BadRequestError) as info:
        admin.beta.memory_stores.memories.list(store.id, path_prefix="/notes")
    assert info.value.error_code == "invalid_path"


def test_list_bad_cursor_is_400(admin: anthropic.Anthropic, store: Any) -> None:
    with pytest.raises(anthropic.BadRequestError) as info:
        admin.beta.memory_stores.memories.list(store.id, page="not-a-cursor")
    assert info.value.error_code == "invalid_cursor"
    other = admin.beta.memory_stores.memories
    for i in range(3):
        other.create(store.id, path=f"/c{i}.md", content="x")
    cursor = other.list(store.id, limit=1).next_page
    assert cursor is not None
    with pytest.raises(anthropic.BadRequestError):  # issued for another filter set
        other.list(store.id, limit=1, page=cursor, depth=1)


# ------------------------------------------------------------------- delete


def test_delete_conditionally(admin: anthropic.Anthropic, store: Any) -> None:
    memories = admin.beta.memory_stores.memories
    created = memories.create(store.id, path="/del.md", content="bytes")
    with pytest.raises(anthropic.ConflictError) as info:
        memories.delete(created.id, memory_store_id=store.id, expected_content_sha256=sha256("no"))
    assert info.value.type == "memory_precondition_failed_error"
    assert memories.retrieve(created.id, memory_store_id=store.id).content == "bytes"
    deleted = memories.delete(
        created.id, memory_store_id=store.id, expected_content_sha256=sha256("bytes")
    )
    assert (deleted.id, deleted.type) == (created.id, "memory_deleted")
    with pytest.raises(anthropic.NotFoundError):
        memories.retrieve(created.id, memory_store_id=store.id)
    with pytest.raises(anthropic.NotFoundError):
        memories.delete(created.id, memory_store_id=store.id)
    latest = versions_of(admin, store.id, created.id)[0]
    assert (latest.operation, latest.path) == ("deleted", "/del.md")
    assert latest.content_sha256 is None
    assert latest.content_size_bytes is None
    assert list(memories.list(store.id)) == []


def test_delete_frees_the_path(admin: anthropic.Anthropic, store: Any) -> None:
    memories = admin.beta.memory_stores.memories
    first = memories.create(store.id, path="/again.md", content="1")
    memories.delete(first.id, memory_store_id=store.id)
    second = memories.create(store.id, path="/again.md", content="2")
    assert second.id != first.id


# ----------------------------------------------------------------- archived


def test_archived_store_reads_and_deletes_but_refuses_writes(
    admin: anthropic.Anthropic, store: Any
) -> None:
    memories = admin.beta.memory_stores.memories
    kept = memories.create(store.id, path="/kept.md", content="k")
    gone = memories.create(store.id, path="/gone.md", content="g")
    admin.beta.memory_stores.archive(store.id)
    for write in (
        lambda: memories.create(store.id, path="/new.md", content="n"),
        lambda: memories.update(kept.id, memory_store_id=store.id, content="changed"),
    ):
        with pytest.raises(anthropic.BadRequestError) as info:
            write()
        assert info.value.type == "invalid_request_error"
        assert info.value.error_code == "store_archived"
    assert memories.retrieve(kept.id, memory_store_id=store.id).content == "k"
    assert memories.delete(gone.id, memory_store_id=store.id).type == "memory_deleted"
    assert [m.path for m in memories.list(store.id)] == ["/kept.md"]


# ------------------------------------------------- SPEC §2 deletion modes


def test_soft_delete_and_restore_with_reasons(server: Server, store: Any) -> None:
    admin = server.client()
    memories = admin.beta.memory_stores.memories
    created = memories.create(store.id, path="/r/estore.md", content="keep me")
    with server.http() as http:
        response = http.delete(
            f"/v1/memory_stores/{store.id}/memories/{created.id}",
            params={"mode": "soft_delete", "reason": "user-requested"},
        )
        assert response.status_code == 200
        assert response.json() == {
            "id": created.id,
            "type": "memory_deleted",
            "mode": "soft_delete",
        }
        restored = http.post(
            f"/v1/memory_stores/{store.id}/memories/{created.id}/restore",
            params={"view": "full"},
            json={"reason": "owner-confirmed recovery"},
        )
        assert restored.status_code == 200, restored.text
        assert restored.json()["content"] == "keep me"
        assert restored.json()["id"] == created.id
        assert restored.json()["path"] == "/r/estore.md"
        again = http.post(f"/v1/memory_stores/{store.id}/memories/{created.id}/restore")
        assert again.status_code == 409
        assert again.json()["error"]["type"] == "conflict_error"
        events = http.get(f"/v1/memory_stores/{store.id}/audit_events").json()["data"]
    actions = [(e["action"], e["reason"], e["memory_id"]) for e in events[:2]]
    assert actions == [
        ("restore", "owner-confirmed recovery", created.id),
        ("soft_delete", "user-requested", created.id),
    ]
    assert {e["actor_type"] for e in events[:2]} == {"api_actor"}


def test_restore_onto_a_taken_path_is_409(server: Server, store: Any) -> None:
    memories = server.client().beta.memory_stores.memories
    first = memories.create(store.id, path="/taken.md", content="1")
    memories.delete(first.id, memory_store_id=store.id)
    memories.create(store.id, path="/taken.md", content="2")
    with server.http() as http:
        response = http.post(f"/v1/memory_stores/{store.id}/memories/{first.id}/restore")
    assert response.status_code == 409
    assert response.json()["error"]["type"] == "memory_path_conflict_error"
    assert response.headers["x-should-retry"] == "false"


def test_forget_redact_replaces_content_and_scrubs_history(server: Server, store: Any) -> None:
    admin = server.client()
    memories = admin.beta.memory_stores.memories
    created = memories.create(store.id, path="/secret.md", content="password=hunter2")
    memories.update(created.id, memory_store_id=store.id, content="password=hunter3")
    with server.http() as http:
        response = http.post(
            f"/v1/memory_stores/{store.id}/memories/{created.id}/forget",
            json={"mode": "redact", "reason": "leaked secret"},
        )
        assert response.status_code == 200, response.text
        assert response.json()["mode"] == "redact"
        restore = http.post(f"/v1/memory_stores/{store.id}/memories/{created.id}/restore")
        assert restore.status_code == 409
        events = http.get(
            f"/v1/memory_stores/{store.id}/audit_events", params={"memory_id": created.id}
        ).json()["data"]
    assert (events[0]["action"], events[0]["reason"]) == ("redact", "leaked secret")
    history = list(
        admin.beta.memory_stores.memory_versions.list(
            store.id, memory_id=created.id, view="full", limit=20
        )
    )
    assert history[0].operation == "deleted"
    assert all(v.redacted_at is not None for v in history[1:])
    assert all(v.content is None and v.path is None for v in history[1:])
    with pytest.raises(anthropic.NotFoundError):
        memories.retrieve(created.id, memory_store_id=store.id)


def test_hard_delete_erases_versions(server: Server, store: Any) -> None:
    admin = server.client()
    created = admin.beta.memory_stores.memories.create(store.id, path="/h.md", content="x")
    with server.http() as http:
        response = http.delete(
            f"/v1/memory_stores/{store.id}/memories/{created.id}",
            params={"mode": "hard_delete", "reason": "gdpr"},
        )
        assert response.status_code == 200
        events = http.get(f"/v1/memory_stores/{store.id}/audit_events").json()["data"]
    assert (events[0]["action"], events[0]["reason"]) == ("hard_delete", "gdpr")
    assert versions_of(admin, store.id, created.id) == []


def _forget_audit(http: Any, store_id: str, memory_id: str) -> tuple[str, str | None]:
    events = http.get(
        f"/v1/memory_stores/{store_id}/audit_events", params={"memory_id": memory_id}
    ).json()["data"]
    return events[0]["action"], events[0]["reason"]


def test_forget_with_empty_body_redacts(server: Server, store: Any) -> None:
    # Forget = the user wants it gone (SPEC §2): redact, not a restorable soft delete.
    admin = server.client()
    created = admin.beta.memory_stores.memories.create(store.id, path="/f.md", content="pii")
    with server.http() as http:
        response = http.post(
            f"/v1/memory_stores/{store.id}/memories/{created.id}/forget",
            headers={"content-type": "application/json"},
        )
        assert response.status_code == 200, response.text
        assert response.json()["mode"] == "redact"
        restore = http.post(f"/v1/memory_stores/{store.id}/memories/{created.id}/restore")
        assert restore.status_code == 409
        assert _forget_audit(http, store.id, created.id) == ("redact", None)
    history = list(
        admin.beta.memory_stores.memory_versions.list(
            store.id, memory_id=created.id, view="full", limit=20
        )
    )
    assert all(v.content != "pii" for v in history)


def test_forget_takes_its_options_as_query_parameters(server: Server, store: Any) -> None:
    memories = server.client().beta.memory_stores.memories
    redacted = memories.create(store.id, path="/q1.md", content="x")
    soft = memories.create(store.id, path="/q2.md", content="y")
    with server.http() as http:
        response = http.post(
            f"/v1/memory_stores/{store.id}/memories/{redacted.id}/forget",
            params={"reason": "pii"},
        )
        assert (response.status_code, response.json()["mode"]) == (200, "redact")
        assert _forget_audit(http, store.id, redacted.id) == ("redact", "pii")
        response = http.post(
            f"/v1/memory_stores/{store.id}/memories/{soft.id}/forget",
            params={"mode": "soft_delete", "reason": "tidy up"},
        )
        assert (response.status_code, response.json()["mode"]) == (200, "soft_delete")
        assert _forget_audit(http, store.id, soft.id) == ("soft_delete", "tidy up")
        restore = http.post(f"/v1/memory_stores/{store.id}/memories/{soft.id}/restore")
        assert restore.status_code == 200, restore.text


@pytest.mark.parametrize(
    ("params", "body"),
    [
        ({"resaon": "pii"}, None),  # a misspelt query parameter is not silently ignored
        ({}, {"resaon": "pii"}),  # nor a misspelt body field
        ({"mode": "erase"}, None),
        ({"mode": "redact"}, {"mode": "soft_delete"}),  # the two places disagree
    ],
)
def test_forget_refuses_unknown_or_contradictory_options(
    server: Server, store: Any, params: dict[str, str], body: dict[str, str] | None
) -> None:
    created = server.client().beta.memory_stores.memories.create(
        store.id, path="/kept.md", content="x"
    )
    with server.http() as http:
        response = http.post(
            f"/v1/memory_stores/{store.id}/memories/{created.id}/forget", params=params, json=body
        )
    assert response.status_code == 400, response.text
    assert response.json()["error"]["type"] == "invalid_request_error"
    assert (
        server.client()
        .beta.memory_stores.memories.retrieve(created.id, memory_store_id=store.id)
        .content
        == "x"
    )


def test_forget_is_documented_as_redact_by_default(server: Server) -> None:
    with server.http() as http:
        operation = http.get("/openapi.json").json()["paths"][
            "/v1/memory_stores/{memory_store_id}/memories/{memory_id}/forget"
        ]["post"]
    assert "Default mode ``redact``" in operation["description"]
    assert {p["name"] for p in operation["parameters"] if p["in"] == "query"} == {
        "mode",
        "reason",
        "replacement_content",
        "expected_content_sha256",
    }


def test_replacement_only_with_redact_mode(server: Server, store: Any) -> None:
    created = server.client().beta.memory_stores.memories.create(
        store.id, path="/f.md", content="x"
    )
    with server.http() as http:
        response = http.post(
            f"/v1/memory_stores/{store.id}/memories/{created.id}/forget",
            json={"mode": "soft_delete", "replacement_content": "gone"},
        )
        assert response.status_code == 400
        redacted = http.post(
            f"/v1/memory_stores/{store.id}/memories/{created.id}/forget",
            json={"mode": "redact", "replacement_content": "[removed by request]"},
        )
        assert redacted.status_code == 200


def test_full_store_is_400(server: Server, start_server: Any, store: Any) -> None:
    limited = server.client(base_url=start_server(MEMFS_MEMORY_LIMIT="2"))
    memories = limited.beta.memory_stores.memories
    memories.create(store.id, path="/1.md", content="1")
    second = memories.create(store.id, path="/2.md", content="2")
    with pytest.raises(anthropic.BadRequestError) as info:
        memories.create(store.id, path="/3.md", content="3")
    assert info.value.type == "invalid_request_error"
    assert info.value.error_code == "store_full"
    assert info.value.response.request.headers["x-stainless-retry-count"] == "0"
    memories.delete(second.id, memory_store_id=store.id)
    assert memories.create(store.id, path="/3.md", content="3").path == "/3.md"
    limited.close()
