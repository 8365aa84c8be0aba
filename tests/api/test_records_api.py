"""Records over the API (SPEC §6) through the real SDK and raw HTTP: a bad
header is 400 ``invalid_record`` and changes nothing; the ``record`` object on
memories; the ``record_type``/``tag``/``min_importance``/``user_id`` list filters; a
full retrieve moves ``last_accessed`` without a version."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import anthropic
import pytest
from _support.polling import wait_until

if TYPE_CHECKING:
    from tests.api.conftest import Server

# The access log writes within ACCESS_FLUSH_INTERVAL_S (2 s); slack for a busy CI box.
ACCESS_TIMEOUT_S = 20.0

TONE = """---
type: preference
scope: private
user_id: user_id_xxx
importance: 0.92
tags: [preference, tone]
relations:
  - {type: related_to, target: /prefs/older.md}
x-unknown: kept
---
簡潔かつユーモラスな口調で話してください。
"""


def record_of(memory: Any) -> dict[str, Any] | None:
    """The ``record`` extension object of an SDK memory (the SDK keeps unknown fields)."""
    extra = memory.model_extra or {}
    return extra.get("record")


def test_a_bad_record_is_400_invalid_record_and_nothing_changes(
    admin: anthropic.Anthropic, store: Any
) -> None:
    memories = admin.beta.memory_stores.memories
    with pytest.raises(anthropic.BadRequestError) as info:
        memories.create(
            store.id, path="/bad.md", content="---\ntype: profile\nimportance: 3\n---\n"
        )
    assert info.value.type == "invalid_request_error"
    assert info.value.error_code == "invalid_record"
    assert info.value.api_message == (
        "invalid record header: importance: must be a number from 0 to 1"
    )
    assert list(memories.list(store.id)) == []
    good = memories.create(store.id, path="/good.md", content=TONE)
    with pytest.raises(anthropic.BadRequestError) as info:
        memories.update(good.id, memory_store_id=store.id, content=TONE.replace("0.92", "9"))
    assert info.value.error_code == "invalid_record"
    assert memories.retrieve(good.id, memory_store_id=store.id).content == TONE


def test_the_record_object_and_byte_for_byte_content(
    admin: anthropic.Anthropic, store: Any
) -> None:
    memories = admin.beta.memory_stores.memories
    created = memories.create(store.id, path="/prefs/tone.md", content=TONE)
    record = record_of(created)
    assert record is not None
    assert record["type"] == "preference"
    assert (record["importance"], record["tags"], record["user_id"]) == (
        0.92,
        ["preference", "tone"],
        "user_id_xxx",
    )
    assert record["version"] == 1
    assert record["decay_score"] == pytest.approx(0.92, abs=1e-3)
    assert record["relations"] == [
        {
            "type": "related_to",
            "target": "/prefs/older.md",
            "target_memory_id": None,
            "target_path": None,
            "dangling": True,
        }
    ]
    older = memories.create(store.id, path="/prefs/older.md", content="plain")
    assert record_of(older) is None
    fetched = memories.retrieve(created.id, memory_store_id=store.id)
    assert fetched.content == TONE
    assert record_of(fetched)["relations"][0]["target_memory_id"] == older.id  # type: ignore[index]
    # A plain post with front matter is no record, and untouched.
    post = "---\ntype: post\ntitle: hello\n---\nbody\n"
    plain = memories.create(store.id, path="/blog/post.md", content=post, view="full")
    assert (plain.content, record_of(plain)) == (post, None)


def test_list_filters(server: Server, admin: anthropic.Anthropic, store: Any) -> None:
    memories = admin.beta.memory_stores.memories
    memories.create(store.id, path="/a.md", content=TONE)
    memories.create(
        store.id, path="/b.md", content="---\ntype: episodic\nimportance: 0.2\ntags: [trip]\n---\n"
    )
    memories.create(store.id, path="/c.md", content="---\ntype: profile\nuser_id: u2\n---\n")
    memories.create(store.id, path="/d.md", content="not a record")

    def paths(**params: Any) -> list[str]:
        with server.http() as http:
            response = http.get(f"/v1/memory_stores/{store.id}/memories", params=params)
        assert response.status_code == 200, response.text
        return [item["path"] for item in response.json()["data"]]

    assert paths() == ["/a.md", "/b.md", "/c.md", "/d.md"]
    assert paths(record_type="preference") == ["/a.md"]
    assert paths(tag="trip") == ["/b.md"]
    assert paths(min_importance=0.5) == ["/a.md"]
    assert paths(user_id="u2") == ["/c.md"]
    assert paths(record_type="episodic", tag="tone") == []
    # The SDK passes the extension through extra_query; records carry their object.
    page = memories.list(store.id, extra_query={"tag": "tone"})
    (only,) = list(page)
    assert record_of(only)["tags"] == ["preference", "tone"]  # type: ignore[index]
    with server.http() as http:
        bad = http.get(f"/v1/memory_stores/{store.id}/memories", params={"record_type": "post"})
    assert bad.status_code == 400
    assert bad.json()["error"]["type"] == "invalid_request_error"
    assert "record_type" in bad.json()["error"]["message"]


def test_a_full_retrieve_moves_last_accessed_without_a_version(
    admin: anthropic.Anthropic, store: Any
) -> None:
    memories = admin.beta.memory_stores.memories
    created = memories.create(store.id, path="/r.md", content=TONE)
    first = record_of(created)["last_accessed"]  # type: ignore[index]
    basic = memories.retrieve(created.id, memory_store_id=store.id, view="basic")
    memories.retrieve(created.id, memory_store_id=store.id)  # full: a read

    def moved() -> str | None:
        now = record_of(memories.retrieve(created.id, memory_store_id=store.id, view="basic"))
        assert now is not None
        return now["last_accessed"] if now["last_accessed"] > first else None

    wait_until(moved, "last_accessed to move after a full retrieve", ACCESS_TIMEOUT_S)
    after = memories.retrieve(created.id, memory_store_id=store.id, view="basic")
    assert after.memory_version_id == basic.memory_version_id == created.memory_version_id
    assert len(list(admin.beta.memory_stores.memory_versions.list(store.id))) == 1


def test_search_filters(server: Server, admin: anthropic.Anthropic, store: Any) -> None:
    memories = admin.beta.memory_stores.memories
    memories.create(store.id, path="/a.md", content=TONE.replace("---\n簡", "---\nkernel 簡"))
    memories.create(
        store.id, path="/b.md", content="---\ntype: episodic\nimportance: 0.1\n---\nkernel\n"
    )
    memories.create(store.id, path="/c.md", content="kernel\n")
    with server.http() as http:

        def paths(**params: Any) -> list[str]:
            response = http.get(
                f"/v1/memory_stores/{store.id}/search", params={"q": "kernel", **params}
            )
            assert response.status_code == 200, response.text
            return sorted(hit["path"] for hit in response.json()["data"])

        assert paths() == ["/a.md", "/b.md", "/c.md"]
        assert paths(record_type="episodic") == ["/b.md"]
        assert paths(tag="tone", min_importance=0.5) == ["/a.md"]
        response = http.post(
            "/v1/search",
            json={"query": "kernel", "memory_store_ids": [store.id], "min_importance": 0.05},
        )
        assert sorted(h["path"] for h in response.json()["data"]) == ["/a.md", "/b.md"]
