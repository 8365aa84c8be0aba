"""History over HTTP (SPEC §10): ``at=`` on the memory list and retrieve through the
unmodified SDK (``extra_query``), and the snapshot and diff endpoints with httpx."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import anthropic
import pytest

from memfs.core.model import Actor, DeleteMode, Scope

if TYPE_CHECKING:
    from tests.api.conftest import Server


def _snapshot(server: Server, store_id: str, name: str, **body: Any) -> dict[str, Any]:
    with server.http() as http:
        response = http.post(f"/v1/memory_stores/{store_id}/snapshots", json={"name": name, **body})
    assert response.status_code == 200, response.text
    created: dict[str, Any] = response.json()
    return created


def test_the_sdk_reads_a_store_as_it_was(
    server: Server, admin: anthropic.Anthropic, store: Any
) -> None:
    memories = admin.beta.memory_stores.memories
    a = memories.create(store.id, path="/notes/a.md", content="a one")
    b = memories.create(store.id, path="/notes/b.md", content="b one")
    _snapshot(server, store.id, "before")
    memories.update(a.id, memory_store_id=store.id, content="a two")
    memories.delete(b.id, memory_store_id=store.id)
    memories.create(store.id, path="/c.md", content="c")

    then = list(memories.list(store.id, view="full", limit=1, extra_query={"at": "before"}))
    assert [(m.path, m.content) for m in then] == [
        ("/notes/a.md", "a one"),
        ("/notes/b.md", "b one"),
    ]
    assert then[0].memory_version_id == a.memory_version_id
    rolled = memories.list(store.id, depth=1, extra_query={"at": "before"})
    assert [(i.type, i.path) for i in rolled.data] == [("memory_prefix", "/notes/")]
    now = list(memories.list(store.id, extra_query={"at": "now"}))
    assert [m.path for m in now] == ["/c.md", "/notes/a.md"]

    old = memories.retrieve(a.id, memory_store_id=store.id, extra_query={"at": "before"})
    assert old.content == "a one"
    assert old.memory_version_id == a.memory_version_id
    at_version = memories.retrieve(
        a.id, memory_store_id=store.id, extra_query={"at": a.memory_version_id}
    )
    assert at_version.content == "a one"
    assert memories.retrieve(b.id, memory_store_id=store.id, extra_query={"at": "before"})
    with pytest.raises(anthropic.NotFoundError):
        memories.retrieve(b.id, memory_store_id=store.id, extra_query={"at": "now"})
    empty = memories.list(store.id, extra_query={"at": "2001-01-01T00:00:00Z"})
    assert empty.data == []
    assert empty.next_page is None


@pytest.mark.parametrize(
    ("point", "message"),
    [
        ("2999-01-01T00:00:00Z", "point '2999-01-01T00:00:00Z' is in the future"),
        ("no-such-snapshot", "point 'no-such-snapshot': memory store"),
        ("2026-02-30", "point '2026-02-30' is not a valid time"),
    ],
)
def test_a_bad_point_is_400_invalid_point(
    admin: anthropic.Anthropic, store: Any, point: str, message: str
) -> None:
    memories = admin.beta.memory_stores.memories
    memory = memories.create(store.id, path="/x.md", content="x")
    for call in (
        lambda: memories.list(store.id, extra_query={"at": point}),
        lambda: memories.retrieve(memory.id, memory_store_id=store.id, extra_query={"at": point}),
    ):
        with pytest.raises(anthropic.BadRequestError) as caught:
            call()
        assert caught.value.type == "invalid_request_error"
        assert caught.value.error_code == "invalid_point"
        assert caught.value.api_message.startswith(message), caught.value.api_message


def test_snapshot_endpoints_field_by_field(server: Server, admin: anthropic.Anthropic) -> None:
    store = admin.beta.memory_stores.create(name="snapshots")
    memory = admin.beta.memory_stores.memories.create(store.id, path="/a.md", content="a")
    base = f"/v1/memory_stores/{store.id}/snapshots"
    created = _snapshot(server, store.id, "first", description="the start")
    assert set(created) == {
        "id",
        "type",
        "memory_store_id",
        "name",
        "description",
        "memory_version_id",
        "created_at",
        "created_by",
    }
    assert created["id"].startswith("snap_")
    assert created["type"] == "memory_store_snapshot"
    assert created["memory_store_id"] == store.id
    assert created["name"] == "first"
    assert created["description"] == "the start"
    assert created["memory_version_id"] == memory.memory_version_id
    assert created["created_at"].endswith("Z")
    assert created["created_by"]["type"] == "api_actor"
    second = _snapshot(server, store.id, "second")
    assert second["description"] == ""
    with server.http() as http:
        assert http.get(f"{base}/{created['id']}").json() == created
        page = http.get(base, params={"limit": 1}).json()
        assert [s["name"] for s in page["data"]] == ["second"]
        rest = http.get(base, params={"limit": 1, "page": page["next_page"]}).json()
        assert rest == {"data": [created], "next_page": None}

        taken = http.post(base, json={"name": "first"})
        assert taken.status_code == 409
        assert taken.json()["error"]["details"]["error_code"] == "snapshot_name_taken"
        bad = http.post(base, json={"name": "now"})
        assert bad.status_code == 400
        assert bad.json()["error"]["message"] == (
            "invalid snapshot name 'now': it names the present"
        )
        assert bad.json()["error"]["details"]["error_code"] == "invalid_snapshot_name"
        automatic = http.post(base, json={"name": "auto-merge-1"})
        assert automatic.status_code == 400
        assert automatic.json()["error"]["details"]["error_code"] == "invalid_snapshot_name"
        by_id = http.post(base, json={"name": "again", "at": created["id"]})
        assert by_id.json()["memory_version_id"] == created["memory_version_id"]
        offset = http.post(base, json={"name": "f", "at": "2026-12-06T01:02:03+25:00"})
        assert offset.status_code == 400
        assert "UTC offset +25:00 is out of range" in offset.json()["error"]["message"]
        future = http.post(base, json={"name": "f", "at": "2999-01-01T00:00:00Z"})
        assert future.status_code == 400
        assert future.json()["error"]["details"]["error_code"] == "invalid_point"

        deleted = http.delete(f"{base}/{created['id']}")
        assert deleted.json() == {"id": created["id"], "type": "memory_store_snapshot_deleted"}
        assert http.get(f"{base}/{created['id']}").status_code == 404
        assert http.delete(f"{base}/{created['id']}").status_code == 404
        assert http.get("/v1/memory_stores/memstore_nope/snapshots").status_code == 404


def test_snapshot_scopes(server: Server, store: Any) -> None:
    reader = server.key(Scope.READ)
    writer = server.key(Scope.READ, Scope.WRITE)
    base = f"/v1/memory_stores/{store.id}/snapshots"
    with server.http(reader) as http:
        assert http.post(base, json={"name": "r"}).status_code == 403
        assert http.get(base).status_code == 200
    with server.http(writer) as http:
        made = http.post(base, json={"name": "w"}).json()
        assert http.delete(f"{base}/{made['id']}").status_code == 403
    with server.http() as http:
        assert http.delete(f"{base}/{made['id']}").status_code == 200


def test_diff_endpoint(server: Server, admin: anthropic.Anthropic, store: Any) -> None:
    memories = admin.beta.memory_stores.memories
    a = memories.create(store.id, path="/a.md", content="one\n")
    _snapshot(server, store.id, "base")
    memories.update(a.id, memory_store_id=store.id, content="two\n", path="/b.md")
    with server.http() as http:
        response = http.get(f"/v1/memory_stores/{store.id}/diff", params={"from": "base"})
        assert response.status_code == 200, response.text
        diff = response.json()
        assert diff["type"] == "memory_store_diff"
        assert diff["to"] == {"memory_store_id": store.id, "point": "now"}
        [entry] = diff["entries"]
        assert entry["status"] == "renamed"
        assert (entry["old_path"], entry["new_path"]) == ("/a.md", "/b.md")
        assert entry["diff"] == "--- a/a.md\n+++ b/b.md\n@@ -1 +1 @@\n-one\n+two\n"
        assert diff["stat"] == {"changed": 1, "insertions": 1, "deletions": 1}
        bad = http.get(f"/v1/memory_stores/{store.id}/diff", params={"from": "nope"})
        assert bad.status_code == 400
        assert bad.json()["error"]["details"]["error_code"] == "invalid_point"


def test_restore_endpoint(server: Server, admin: anthropic.Anthropic, store: Any) -> None:
    memories = admin.beta.memory_stores.memories
    a = memories.create(store.id, path="/a.md", content="one")
    _snapshot(server, store.id, "base")
    memories.update(a.id, memory_store_id=store.id, content="two")
    b = memories.create(store.id, path="/b.md", content="b")
    url = f"/v1/memory_stores/{store.id}/restore"
    with server.http() as http:
        dry = http.post(url, json={"to": "base", "dry_run": True}).json()
        assert dry["applied"] is False
        assert dry["snapshot"] is None
        assert [(s["action"], s["memory_id"]) for s in dry["steps"]] == [
            ("change", a.id),
            ("delete", b.id),
        ]
        assert memories.retrieve(a.id, memory_store_id=store.id).content == "two"
        done = http.post(url, json={"to": "base", "reason": "undo"}).json()
        assert done["applied"] is True
        assert done["snapshot"]["type"] == "memory_store_snapshot"
        assert memories.retrieve(a.id, memory_store_id=store.id).content == "one"
        with pytest.raises(anthropic.NotFoundError):
            memories.retrieve(b.id, memory_store_id=store.id)
        bad = http.post(url, json={"to": "nope"})
        assert bad.status_code == 400
        assert bad.json()["error"]["details"]["error_code"] == "invalid_point"
    reader = server.key(Scope.READ)
    writer = server.key(Scope.READ, Scope.WRITE)
    with server.http(reader) as http:
        assert http.post(url, json={"to": "base", "dry_run": True}).status_code == 200
        assert http.post(url, json={"to": "base"}).status_code == 403
    with server.http(writer) as http:
        assert http.post(url, json={"to": "base"}).status_code == 403  # deletes need delete


def test_fork_endpoint(server: Server, admin: anthropic.Anthropic, store: Any) -> None:
    memories = admin.beta.memory_stores.memories
    a = memories.create(store.id, path="/a.md", content="one\n")
    snapshot = _snapshot(server, store.id, "base")
    memories.update(a.id, memory_store_id=store.id, content="two\n")
    url = f"/v1/memory_stores/{store.id}/fork"
    with server.http() as http:
        response = http.post(url, json={"name": "try", "at": "base"})
        assert response.status_code == 200, response.text
        fork = response.json()
        assert fork["type"] == "memory_store"
        assert fork["forked_from"] == store.id
        assert fork["fork_base"] == a.memory_version_id
        assert fork["entry_count"] == 1
        diff = http.get(
            f"/v1/memory_stores/{fork['id']}/diff",
            params={"from": "now", "other_store": store.id},
        ).json()
        [entry] = diff["entries"]
        assert (entry["status"], entry["old_memory_id"], entry["memory_id"]) == (
            "modified",
            [m.id for m in memories.list(fork["id"])][0],
            a.id,
        )
        bad = http.post(url, json={"name": "x", "at": "nope"})
        assert bad.status_code == 400
        assert bad.json()["error"]["details"]["error_code"] == "invalid_point"
        taken = http.post(url, json={"name": "try"})
        assert taken.status_code == 409
        assert taken.json()["error"]["details"]["error_code"] == "store_name_taken"
    # The SDK reads the past at a snapshot's id as at its name.
    [then] = list(memories.list(store.id, view="full", extra_query={"at": snapshot["id"]}))
    assert then.content == "one\n"
    # The unmodified SDK reads the fork as an ordinary store (extensions ignored).
    read = admin.beta.memory_stores.retrieve(fork["id"])
    assert read.name == "try"
    [memory] = list(memories.list(fork["id"], view="full"))
    assert memory.content == "one\n"
    reader = server.key(Scope.READ)
    limited = server.key(Scope.READ, Scope.WRITE, stores=(store.id,))
    with server.http(reader) as http:
        assert http.post(url, json={"name": "r"}).status_code == 403
    with server.http(limited) as http:
        assert http.post(url, json={"name": "l"}).status_code == 403


def test_merge_endpoint(server: Server, admin: anthropic.Anthropic, store: Any) -> None:
    memories = admin.beta.memory_stores.memories
    a = memories.create(store.id, path="/a.md", content="one\n")
    with server.http() as http:
        fork = http.post(f"/v1/memory_stores/{store.id}/fork", json={"name": "merged"}).json()
        [forked] = list(memories.list(fork["id"]))
        memories.update(forked.id, memory_store_id=fork["id"], content="two\n")
        url = f"/v1/memory_stores/{fork['id']}/merge"
        dry = http.post(url, json={"into": store.id, "dry_run": True}).json()
        assert dry["type"] == "memory_store_merge"
        assert dry["applied"] is False
        assert [(s["action"], s["memory_id"], s["path"]) for s in dry["steps"]] == [
            ("update", a.id, "/a.md")
        ]
        reader = server.key(Scope.READ)
        with server.http(reader) as read_only:
            assert read_only.post(url, json={"dry_run": True}).status_code == 200
            assert read_only.post(url, json={}).status_code == 403
        done = http.post(url, json={"into": store.id, "reason": "ship it"}).json()
        assert done["applied"] is True
        assert done["snapshot"]["name"].startswith("auto-merge-")
        assert memories.retrieve(a.id, memory_store_id=store.id).content == "two\n"
        # Merging a store that is no fork: its state is at odds with the request (409).
        bad = http.post(f"/v1/memory_stores/{store.id}/merge", json={})
        assert bad.status_code == 409
        assert "is not a fork" in bad.json()["error"]["message"]


def test_revert_endpoint(server: Server, admin: anthropic.Anthropic, store: Any) -> None:
    memories = admin.beta.memory_stores.memories
    a = memories.create(store.id, path="/a.md", content="one\n")
    _snapshot(server, store.id, "base")
    two = memories.update(a.id, memory_store_id=store.id, content="two\n", path="/b.md")
    url = f"/v1/memory_stores/{store.id}/memories/{a.id}/revert"
    with server.http() as http:
        stale = {"type": "content_sha256", "content_sha256": a.content_sha256}
        refused = http.post(url, json={"to": "base", "precondition": stale})
        assert refused.status_code == 409
        fresh = {"type": "content_sha256", "content_sha256": two.content_sha256}
        response = http.post(url, json={"to": "base", "precondition": fresh, "reason": "undo"})
        assert response.status_code == 200, response.text
        reverted = response.json()
        assert (reverted["type"], reverted["path"], reverted["content"]) == (
            "memory",
            "/a.md",
            "one\n",
        )
        bad = http.post(url, json={"to": "nope"})
        assert bad.json()["error"]["details"]["error_code"] == "invalid_point"
    reader = server.key(Scope.READ)
    with server.http(reader) as http:
        assert http.post(url, json={"to": "base"}).status_code == 403
    assert memories.retrieve(a.id, memory_store_id=store.id).content == "one\n"


def test_redaction_wins_in_every_view(
    server: Server,
    admin: anthropic.Anthropic,
    memfs_cli: Callable[..., subprocess.CompletedProcess[str]],
) -> None:
    """SPEC §10: one version redacted, another memory hard-deleted; then every view of
    the past, from the CLI and over HTTP, and every operation built on it (version
    diff, revert, restore and its dry run, fork, snapshot list): none of their output
    holds either secret."""
    redacted, erased = "SECRET-REDACTED-7f3a", "SECRET-ERASED-91bc"
    memories = admin.beta.memory_stores.memories
    store = admin.beta.memory_stores.create(name="redaction wins")
    secret = memories.create(store.id, path="/secret.md", content=f"password {redacted}\n")
    gone = memories.create(store.id, path="/gone.md", content=f"token {erased}\n")
    plain = memories.create(store.id, path="/plain.md", content="plain words\n")
    _snapshot(server, store.id, "leaky")
    memories.update(secret.id, memory_store_id=store.id, content="rotated\n")
    memories.update(plain.id, memory_store_id=store.id, content="plain, changed\n")
    caller = server.engine.for_caller(actor=Actor.api_key("apikey_tests"))
    caller.versions.redact(store.id, secret.memory_version_id)
    caller.memories.delete(store.id, gone.id, mode=DeleteMode.HARD_DELETE)

    db = ("--database", server.database)
    runs = [
        ("memory", "ls", store.id, "--at", "leaky", "--json"),
        ("memory", "cat", store.id, "/secret.md", "--at", "leaky"),
        ("memory", "cat", store.id, secret.id, "--at", "leaky"),
        ("memory", "cat", store.id, gone.id, "--at", "leaky"),
        ("memory", "cat", store.id, "/plain.md", "--at", "leaky"),
        ("diff", f"{store.id}@leaky", store.id),
        ("diff", f"{store.id}@leaky", store.id, "--json"),
        ("diff", f"{store.id}@leaky", store.id, "--stat"),
        ("diff", f"{store.id}@leaky", store.id, "--name-only"),
        ("version", "diff", store.id, secret.memory_version_id),
        ("version", "diff", store.id, gone.memory_version_id),
        ("memory", "revert", store.id, secret.id, "--to", "leaky"),
        ("memory", "revert", store.id, secret.id, "--to", secret.memory_version_id),
        ("memory", "revert", store.id, gone.id, "--to", "leaky"),
        ("store", "restore", store.id, "--to", "leaky", "--dry-run", "--json"),
        ("store", "restore", store.id, "--to", "leaky"),
        ("store", "fork", f"{store.id}@leaky", "--name", "redaction wins fork", "--json"),
        ("snapshot", "ls", store.id, "--json"),
        ("memory", "ls", store.id, "--at", "leaky", "--json"),  # after the restore
    ]
    outputs: list[str] = []
    for args in runs:
        done = memfs_cli(*args, *db)
        assert "Traceback" not in done.stderr, (args, done.stderr)
        outputs.append(f"$ memfs {' '.join(args)}\n{done.stdout}{done.stderr}")
    [fork] = [s for s in admin.beta.memory_stores.list() if s.name == "redaction wins fork"]
    outputs += [m.model_dump_json() for m in memories.list(fork.id, view="full")]
    outputs += [m.model_dump_json() for m in memories.list(store.id, view="full")]
    outputs += [
        m.model_dump_json()
        for m in memories.list(store.id, view="full", extra_query={"at": "leaky"})
    ]
    for memory_id in (secret.id, gone.id):
        try:
            outputs.append(
                memories.retrieve(
                    memory_id, memory_store_id=store.id, extra_query={"at": "leaky"}
                ).model_dump_json()
            )
        except anthropic.APIStatusError as refused:
            outputs.append(refused.response.text)
    with server.http() as http:
        for params in ({"from": "leaky"}, {"from": "leaky", "to": "now"}):
            outputs.append(http.get(f"/v1/memory_stores/{store.id}/diff", params=params).text)
        outputs.append(http.get(f"/v1/memory_stores/{store.id}/snapshots").text)
        outputs.append(
            http.post(
                f"/v1/memory_stores/{store.id}/restore", json={"to": "leaky", "dry_run": True}
            ).text
        )
    everything = "\n".join(outputs)
    assert redacted not in everything
    assert erased not in everything
    # The views did run and show what they may: the plain memory, the redaction said.
    assert "plain words" in everything
    assert "redacted content: not shown" in everything
    assert "/plain.md" in everything
    assert "1 changed, 0 deleted, 0 brought back, 1 kept" in everything  # the restore ran
    assert memories.retrieve(plain.id, memory_store_id=store.id).content == "plain words\n"
