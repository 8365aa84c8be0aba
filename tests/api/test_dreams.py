"""Dreams and transcripts through the unmodified SDK (``client.beta.dreams``,
``client.beta.sessions.events``) against ``memfs serve`` (SPEC §11, api-contract §7.4)."""

from __future__ import annotations

import time
import uuid
from typing import TYPE_CHECKING, Any

import anthropic
import pytest

if TYPE_CHECKING:
    from tests.api.conftest import Server


def wait_ended(client: anthropic.Anthropic, dream_id: str, timeout_s: float = 30.0) -> Any:
    """Polls the dream until it ends (a condition, with a deadline)."""
    deadline = time.monotonic() + timeout_s
    while True:
        dream = client.beta.dreams.retrieve(dream_id)
        if dream.status in ("completed", "failed", "canceled"):
            return dream
        assert time.monotonic() < deadline, f"dream {dream_id} still {dream.status}"
        time.sleep(0.05)


def test_events_send_and_list_through_the_sdk(server: Server, admin: anthropic.Anthropic,
                                               store: Any) -> None:
    session = server.session((store.id, "read_write"))
    sent = admin.beta.sessions.events.send(
        session["id"],
        events=[
            {"type": "user.message", "content": [{"type": "text", "text": "I moved to Paris."}]},
            {"type": "agent.message",  # the agent's own (memfs extension)
             "content": [{"type": "text", "text": "Noted."}]},  # type: ignore[list-item]
        ],
    )
    assert sent.data is not None
    assert [e.type for e in sent.data] == ["user.message", "agent.message"]
    listed = list(admin.beta.sessions.events.list(session["id"], limit=1))
    assert [e.type for e in listed] == ["user.message", "agent.message"]
    assert listed[0].content[0].text == "I moved to Paris."  # type: ignore[union-attr]
    only_agent = list(admin.beta.sessions.events.list(session["id"], types=["agent.message"]))
    assert [e.id for e in only_agent] == [listed[1].id]
    newest = list(admin.beta.sessions.events.list(session["id"], order="desc"))
    assert [e.id for e in newest] == [listed[1].id, listed[0].id]
    # Deleting the session erases its transcript.
    admin.beta.sessions.delete(session["id"])
    with pytest.raises(anthropic.NotFoundError):
        list(admin.beta.sessions.events.list(session["id"]))


def test_a_dream_through_the_sdk_update_existing(server: Server, admin: anthropic.Anthropic,
                                                 store: Any) -> None:
    for path in ("/a.md", "/b.md", "/c.md"):
        admin.beta.memory_stores.memories.create(store.id, path=path, content="same note\n")
    admin.beta.memory_stores.memories.create(store.id, path="/d.md", content="other\n")
    session = server.session((store.id, "read_only"))
    admin.beta.sessions.events.send(
        session["id"], events=[{"type": "user.message",
                                "content": [{"type": "text", "text": "hello"}]}]
    )
    dream = admin.beta.dreams.create(
        inputs=[
            {"type": "memory_store", "memory_store_id": store.id},
            {"type": "sessions", "session_ids": [session["id"]]},
        ],
        model="memfs-consolidate",
        instructions="merge duplicates",
        output_behavior={"type": "update_existing", "memory_store_id": store.id},
    )
    assert dream.id.startswith("drm_")
    assert dream.status in ("pending", "running", "completed")
    assert dream.model.id == "memfs-consolidate"
    assert dream.model.speed == "standard"
    ended = wait_ended(admin, dream.id)
    assert ended.status == "completed", ended.error
    assert ended.outputs[0].memory_store_id == store.id
    assert ended.ended_at is not None
    assert ended.session_id is not None
    paths = sorted(m.path for m in admin.beta.memory_stores.memories.list(store.id)
                   if m.type == "memory")
    assert paths == ["/a.md", "/d.md"]
    events = list(admin.beta.sessions.events.list(ended.session_id))
    assert any("remove /b.md" in e.content[0].text for e in events)  # type: ignore[union-attr]
    # Listing, filters, archive.
    listed = [d.id for d in admin.beta.dreams.list(statuses=["completed"], limit=100)]
    assert dream.id in listed
    archived = admin.beta.dreams.archive(dream.id)
    assert archived.archived_at is not None
    assert dream.id not in [d.id for d in admin.beta.dreams.list(limit=100)]
    assert dream.id in [d.id for d in admin.beta.dreams.list(include_archived=True, limit=100)]
    with pytest.raises(anthropic.ConflictError):
        admin.beta.dreams.cancel(dream.id)


def test_dream_refusals_are_named(server: Server, admin: anthropic.Anthropic,
                                  store: Any) -> None:
    empty = server.session((store.id, "read_only"))

    def create(**changes: Any) -> Any:
        body: dict[str, Any] = {
            "inputs": [{"type": "memory_store", "memory_store_id": store.id}],
            "model": "memfs-consolidate",
        } | changes
        return admin.beta.dreams.create(**body)

    def code(exc: anthropic.APIStatusError) -> str:
        body = exc.body if isinstance(exc.body, dict) else {}
        return str(body.get("error", {}).get("details", {}).get("error_code"))

    with pytest.raises(anthropic.BadRequestError) as long_text:
        create(instructions="x" * 4097)
    assert code(long_text.value) == "instructions_too_long"
    with pytest.raises(anthropic.BadRequestError) as no_transcript:
        create(inputs=[{"type": "memory_store", "memory_store_id": store.id},
                       {"type": "sessions", "session_ids": [empty["id"]]}])
    assert code(no_transcript.value) == "session_without_transcript"
    with pytest.raises(anthropic.NotFoundError) as unknown:
        create(inputs=[{"type": "memory_store", "memory_store_id": store.id},
                       {"type": "sessions", "session_ids": ["sesn_nope"]}])
    assert code(unknown.value) == "session_not_found"
    with pytest.raises(anthropic.BadRequestError) as many:
        create(inputs=[{"type": "memory_store", "memory_store_id": store.id},
                       {"type": "sessions",
                        "session_ids": [f"sesn_{i}" for i in range(101)]}])
    assert code(many.value) == "too_many_sessions"
    other = admin.beta.memory_stores.create(name=f"archived {uuid.uuid4().hex[:6]}")
    admin.beta.memory_stores.archive(other.id)
    with pytest.raises(anthropic.BadRequestError) as archived:
        create(inputs=[{"type": "memory_store", "memory_store_id": other.id}])
    assert code(archived.value) == "store_archived"
    # A session token can't start a dream.
    token = server.session((store.id, "read_write"))["token"]
    with pytest.raises(anthropic.PermissionDeniedError):
        server.client(token).beta.dreams.create(
            inputs=[{"type": "memory_store", "memory_store_id": store.id}],
            model="memfs-consolidate",
        )


def test_a_language_model_dream_fails_naming_the_setting(admin: anthropic.Anthropic,
                                                         store: Any) -> None:
    dream = admin.beta.dreams.create(
        inputs=[{"type": "memory_store", "memory_store_id": store.id}],
        model={"id": "claude-opus-4-7", "speed": "standard"},
    )
    ended = wait_ended(admin, dream.id)
    assert ended.status == "failed"
    assert ended.error is not None
    assert ended.error.type == "model_endpoint_not_configured"


def test_one_active_dream_per_store_and_cancel(server: Server, admin: anthropic.Anthropic,
                                               store: Any) -> None:
    """A running dream blocks a second one (409 dream_already_active); cancel makes it
    canceled at once, and the store is free again. The running dream is claimed here
    through the engine (as a job of another server would), so no job of this server's
    races the test."""
    running = server.engine.dreams.create(
        store.id, session_ids=None, model_id="memfs-consolidate"
    )
    claimed = server.engine.dreams.claim("a-test-runner")
    assert claimed is not None
    assert claimed.id == running.id
    inputs: Any = [{"type": "memory_store", "memory_store_id": store.id}]
    with pytest.raises(anthropic.ConflictError) as active:
        admin.beta.dreams.create(inputs=inputs, model="memfs-consolidate")
    body: Any = active.value.body
    assert body["error"]["details"]["error_code"] == "dream_already_active"
    canceled = admin.beta.dreams.cancel(running.id)
    assert canceled.status == "canceled"
    assert canceled.ended_at is not None
    assert admin.beta.dreams.cancel(running.id).status == "canceled"  # idempotent
    # The job, at its next step, finds it canceled and stops.
    assert server.engine.dreams.record(running.id) is False
    again = admin.beta.dreams.create(inputs=inputs, model="memfs-consolidate")
    ended = wait_ended(admin, again.id)
    # create_new (the default) writes into a fork of the store (SPEC §10, §11).
    assert ended.status == "completed"
    assert ended.error is None
    [output] = ended.outputs
    assert output.memory_store_id != store.id
    assert admin.beta.memory_stores.retrieve(store.id).archived_at is None
