"""Dreams and transcripts through the unmodified SDK (``client.beta.dreams``,
``client.beta.sessions.events``) against ``memfs serve`` (SPEC §11, api-contract §7.4).

The language-model dream here runs against a scripted Messages API endpoint that STANDS
IN FOR A MODEL (``tests/_support/scripted_model.py``): ``memfs serve
--dream-base-url`` points at it; everything on memfs's side is real."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anthropic
import httpx
import pytest
from _support.cli import memfs_env, run_memfs
from _support.polling import wait_until
from _support.scripted_model import ScriptedModel, text, tool, turn
from _support.serve import ServeProcess

if TYPE_CHECKING:
    from tests.api.conftest import Server

# A dream ends within this many seconds on a busy CI box (a few steps, each a write).
DREAM_TIMEOUT_S = 30.0


def wait_ended(client: anthropic.Anthropic, dream_id: str) -> Any:
    """The dream, once it ended (polled with a deadline)."""

    def ended() -> Any:
        dream = client.beta.dreams.retrieve(dream_id)
        return dream if dream.status in ("completed", "failed", "canceled") else None

    return wait_until(ended, f"dream {dream_id} to end", timeout_s=DREAM_TIMEOUT_S)


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


def test_events_stream_follows_new_events(server: Server, admin: anthropic.Anthropic,
                                          store: Any) -> None:
    """``client.beta.sessions.events.stream``: the stored events, then each new one as
    it is sent; a session that is no dream's stream ends after ``timeout_s`` quiet."""
    session = server.session((store.id, "read_write"))
    said = {"type": "text", "text": "first"}
    admin.beta.sessions.events.send(session["id"], events=[{"type": "user.message",
                                                            "content": [said]}])
    with admin.beta.sessions.events.stream(session["id"],
                                           extra_query={"timeout_s": 20}) as stream:
        events = iter(stream)
        first = next(events)
        assert first.type == "user.message"
        assert first.content[0].text == "first"  # type: ignore[union-attr]
        later = {"type": "text", "text": "second"}
        admin.beta.sessions.events.send(session["id"], events=[{"type": "user.message",
                                                                "content": [later]}])
        second = next(events)
        assert second.content[0].text == "second"  # type: ignore[union-attr]
    # timeout_s=0: what is stored, then the end.
    with admin.beta.sessions.events.stream(session["id"], extra_query={"timeout_s": 0}) as s:
        assert [e.content[0].text for e in s] == ["first", "second"]  # type: ignore[union-attr]
    with pytest.raises(anthropic.NotFoundError):
        admin.beta.sessions.events.stream("sesn_nope")


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


def test_a_language_model_dream_through_the_sdk(tmp_path: Path) -> None:
    """``client.beta.dreams.create(model="claude-…")`` against ``memfs serve
    --dream-base-url URL --dream-api-key-file FILE``: the scripted model views, edits,
    creates, renames and deletes; the output store, usage and the dream session's
    events (``client.beta.sessions.events.list``) are read back through the SDK."""
    database = tmp_path / "store.db"
    env = {k: v for k, v in memfs_env(tmp_path).items() if not k.startswith("ANTHROPIC_")}
    made = run_memfs("key", "create", "--scope", "admin", "--database", str(database),
                     "--json", env=env, timeout_s=60)
    assert made.returncode == 0, made.stderr
    secret = json.loads(made.stdout)["secret"]
    key_file = tmp_path / "dream-key"
    key_file.write_text("sk-ant-scripted-key\n")
    key_file.chmod(0o600)
    script = [
        turn(tool("view", path="/memories"), input_tokens=500, output_tokens=20),
        turn(tool("str_replace", path="/memories/city.md", old_str="Lyon", new_str="Paris"),
             tool("delete", path="/memories/city-copy.md"), input_tokens=600, output_tokens=30),
        turn(tool("create", path="/memories/alice.md", file_text="Alice lives in Paris.\n"),
             tool("rename", old_path="/memories/todo.md", new_path="/memories/tasks.md"),
             input_tokens=700, output_tokens=40),
        turn(text("Alice moved to Paris; one copy removed."), input_tokens=800,
             output_tokens=10),
    ]
    with ScriptedModel(script) as model:
        server = ServeProcess(database, tmp_path, "--dream-base-url", model.url,
                              "--dream-api-key-file", str(key_file), env=env)
        client = anthropic.Anthropic(api_key=secret, base_url=server.url, timeout=30.0)
        try:
            store = client.beta.memory_stores.create(name="alice")
            for path, content in (("/city.md", "Alice lives in Lyon.\n"),
                                  ("/city-copy.md", "Alice lives in Lyon.\n"),
                                  ("/todo.md", "buy milk\n")):
                client.beta.memory_stores.memories.create(store.id, path=path, content=content)
            made_session = httpx.post(
                f"{server.url}/v1/sessions", headers={"authorization": f"Bearer {secret}"},
                json={"resources": [{"type": "memory_store", "memory_store_id": store.id,
                                     "access": "read_only"}]},
            )
            assert made_session.status_code == 200, made_session.text
            session_id = made_session.json()["id"]
            said = {"type": "text", "text": "I live in Paris now."}
            client.beta.sessions.events.send(
                session_id, events=[{"type": "user.message", "content": [said]}]
            )
            dream = client.beta.dreams.create(
                inputs=[{"type": "memory_store", "memory_store_id": store.id},
                        {"type": "sessions", "session_ids": [session_id]}],
                model="claude-opus-4-7",
                instructions="Keep one file per fact.",
            )
            ended = wait_ended(client, dream.id)
            assert ended.status == "completed", ended.error
            [output] = ended.outputs
            assert output.memory_store_id != store.id
            listed = {m.path: m for m in client.beta.memory_stores.memories.list(
                output.memory_store_id) if m.type == "memory"}
            assert sorted(listed) == ["/alice.md", "/city.md", "/tasks.md"]
            city = client.beta.memory_stores.memories.retrieve(
                listed["/city.md"].id, memory_store_id=output.memory_store_id)
            assert city.content == "Alice lives in Paris.\n"
            # The input is untouched (create_new).
            assert sorted(m.path for m in client.beta.memory_stores.memories.list(store.id)
                          if m.type == "memory") == ["/city-copy.md", "/city.md", "/todo.md"]
            assert ended.usage.input_tokens == 2600
            assert ended.usage.output_tokens == 100
            # The dream's session: what it read and wrote, as events the SDK parses.
            assert ended.session_id is not None
            events = list(client.beta.sessions.events.list(ended.session_id, limit=100))
            kinds = [e.type for e in events]
            assert kinds.count("agent.tool_use") == 5
            assert kinds.count("agent.tool_result") == 5
            uses = [e for e in events if e.type == "agent.tool_use"]
            assert [u.input["command"] for u in uses] == [  # type: ignore[union-attr]
                "view", "str_replace", "delete", "create", "rename"]
            assert uses[0].name == "memory"  # type: ignore[union-attr]
            results = [e for e in events if e.type == "agent.tool_result"]
            assert [r.tool_use_id for r in results] == [u.id for u in uses]  # type: ignore[union-attr]
            # The same events streamed (SSE); the stream ends by itself: the dream ended.
            with client.beta.sessions.events.stream(ended.session_id) as stream:
                streamed = list(stream)
            assert [e.id for e in streamed] == [e.id for e in events]
            assert streamed[-1].content[0].text == "completed: 5 tool calls in 4 turns"  # type: ignore[union-attr]
        finally:
            client.close()
            status = server.stop()
    assert status == 0
    assert "Traceback" not in server.log_text()
    # The endpoint got the key of the file, the instructions and the transcript.
    first = model.requests[0]
    assert "sk-ant-scripted-key" in (first.headers.get("x-api-key"),
                                     first.headers.get("authorization", "")[7:])
    assert first.body["system"].endswith("Keep one file per fact.")
    assert "I live in Paris now." in first.body["messages"][0]["content"]
    assert len(model.requests) == 4
    fsck = run_memfs("fsck", "--database", str(database), env=env, timeout_s=60)
    assert fsck.returncode == 0, fsck.stdout + fsck.stderr
