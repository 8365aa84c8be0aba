"""The language-model dreamer (SPEC §11) on the engine, against a scripted Messages API
endpoint that STANDS IN FOR A MODEL (``tests/_support/scripted_model.py``: it replies
with the tool calls the test wrote, and records what it was sent). What is real: the
anthropic SDK's requests, memfs's memory tool on the output store, the versions and
their attribution, usage, failure and cancel."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from _support.scripted_model import Error, ScriptedModel, text, tool, turn

from memfs.core.dreams import Dream, DreamStatus, OutputBehavior
from memfs.core.model import ActorType
from memfs.dreams import run_dream
from memfs.memory_tool.dreamer import MEMORY_TOOL_BETA, MessagesDreamer
from memfs.store import Engine, ResourceSpec

MODEL = "claude-opus-4-7"
KEY = "sk-ant-test-scripted"


def seeded(engine: Engine) -> tuple[str, str]:
    """A store with a duplicate, a stale fact and a loose note, and a session whose
    transcript says the fact changed; returns (store id, session id)."""
    store = engine.stores.create("alice")
    engine.memories.create(store.id, "/notes/coffee.md", "Alice takes her coffee black.\n")
    engine.memories.create(store.id, "/notes/coffee-copy.md", "Alice takes her coffee black.\n")
    engine.memories.create(store.id, "/facts/city.md", "Alice lives in Lyon.\n")
    engine.memories.create(store.id, "/todo.md", "buy milk\n")
    session, _ = engine.sessions.create([ResourceSpec(store.id, "read_only")], with_token=False)
    engine.transcripts.append(session.id, [
        {"type": "user.message", "content": [{"type": "text", "text": "I moved to Paris."}]},
        {"type": "agent.message", "content": [{"type": "text", "text": "Noted: Paris."}]},
    ])
    return store.id, session.id


def dream(
    engine: Engine, store_id: str, url: str, *, sessions: Sequence[str] | None = None,
    max_turns: int = 40, instructions: str | None = None,
) -> Dream:
    engine.dreams.create(
        store_id, session_ids=sessions, model_id=MODEL, instructions=instructions,
        output_behavior=OutputBehavior.CREATE_NEW,
    )
    claimed = engine.dreams.claim("test-runner")
    assert claimed is not None
    dreamer = MessagesDreamer((KEY, url), max_turns=max_turns, max_retries=0)
    return run_dream(engine, claimed, language_model=dreamer)


def contents(engine: Engine, store_id: str) -> dict[str, str]:
    return {
        m.path: engine.memories.get(store_id, m.id).content or ""
        for m in engine.memories.all(store_id)
    }


def test_a_tool_loop_consolidates_the_output_store(engine: Engine) -> None:
    store_id, session_id = seeded(engine)
    before = contents(engine, store_id)
    script = [
        turn(text("Let me look at the store."), tool("view", path="/memories"),
             input_tokens=1000, output_tokens=30, cache_read=7),
        turn(tool("str_replace", path="/memories/facts/city.md",
                  old_str="Lyon", new_str="Paris"),
             tool("delete", path="/memories/notes/coffee-copy.md"),
             input_tokens=1200, output_tokens=40, cache_creation=5),
        turn(tool("create", path="/memories/people/alice.md",
                  file_text="Alice: lives in Paris, takes her coffee black.\n"),
             tool("rename", old_path="/memories/todo.md", new_path="/memories/tasks/todo.md"),
             tool("str_replace", path="/memories/nope.md", old_str="a", new_str="b"),
             input_tokens=1300, output_tokens=50),
        turn(text("Merged the coffee duplicate; Alice lives in Paris now."),
             input_tokens=1400, output_tokens=15),
    ]
    with ScriptedModel(script) as model:
        ended = dream(engine, store_id, model.url, sessions=[session_id],
                      instructions="Prefer one file per person.")
    assert ended.status is DreamStatus.COMPLETED, ended.error_message
    output = ended.output_store_id
    assert output is not None
    assert output != store_id
    # The exact output store; the input untouched (create_new writes into a fork).
    assert contents(engine, output) == {
        "/facts/city.md": "Alice lives in Paris.\n",
        "/notes/coffee.md": "Alice takes her coffee black.\n",
        "/people/alice.md": "Alice: lives in Paris, takes her coffee black.\n",
        "/tasks/todo.md": "buy milk\n",
    }
    assert contents(engine, store_id) == before
    # Every version of the output names the dream's session: the fork's four copies,
    # then the edit, the delete, the create and the rename.
    written = engine.versions.list(output, limit=100).items
    assert sorted(v.operation.value for v in written) == [
        "created"] * 5 + ["deleted", "modified", "modified"]
    assert {(v.created_by.type, v.created_by.id) for v in written if v.created_by} == {
        (ActorType.SESSION, ended.session_id)}
    assert all(v.created_by is not None for v in written)
    assert ended.usage == {"input_tokens": 4900, "output_tokens": 135,
                           "cache_read_input_tokens": 7, "cache_creation_input_tokens": 5}
    assert ended.result is not None
    assert ended.result["turns"] == 4
    assert ended.result["tool_calls"] == 6
    assert ended.result["tool_errors"] == 1  # the str_replace of a file that is not there
    assert ended.result["summary"] == "Merged the coffee duplicate; Alice lives in Paris now."
    assert ended.result["changes"] == [
        {"command": "str_replace", "path": "/memories/facts/city.md"},
        {"command": "delete", "path": "/memories/notes/coffee-copy.md"},
        {"command": "create", "path": "/memories/people/alice.md"},
        {"command": "rename", "old_path": "/memories/todo.md",
         "new_path": "/memories/tasks/todo.md"},
    ]
    # What the model was sent: the system prompt memfs owns and the instructions, the
    # transcripts and the store's layout, the memory tool as the only tool.
    first = model.requests[0]
    assert first.path == "/v1/messages"
    # The key as this SDK sends it (a bearer token; x-api-key in older SDKs).
    assert KEY in (first.headers.get("x-api-key"), first.headers.get("authorization", "")[7:])
    assert MEMORY_TOOL_BETA in first.headers["anthropic-beta"]
    body = first.body
    assert body["model"] == MODEL
    assert body["tools"] == [{"type": "memory_20250818", "name": "memory"}]
    assert "Replace stale and contradicted entries with the newest value" in body["system"]
    assert "Keep record headers valid" in body["system"]
    assert "invent anything" in body["system"]
    assert body["system"].endswith("Prefer one file per person.")
    [context] = body["messages"]
    assert "I moved to Paris." in context["content"]
    assert "Noted: Paris." in context["content"]
    assert "- /memories/facts/city.md (21B)" in context["content"]
    # The tool results went back to the model, the refusal as an error.
    second = model.requests[1].body["messages"]
    [viewed] = second[-1]["content"]
    assert viewed["type"] == "tool_result"
    assert viewed["is_error"] is False
    assert "/memories/notes/coffee-copy.md" in viewed["content"]
    refused = model.requests[3].body["messages"][-1]["content"][-1]
    assert refused["is_error"] is True
    assert len(model.requests) == 4
    # The dream session's events: what it read and wrote, as the SDK's event types.
    events = engine.transcripts.all(ended.session_id or "")
    uses = [e for e in events if e.type == "agent.tool_use"]
    results = [e for e in events if e.type == "agent.tool_result"]
    assert [u.body["input"]["command"] for u in uses] == [
        "view", "str_replace", "delete", "create", "rename", "str_replace"]
    assert [r.body["tool_use_id"] for r in results] == [u.id for u in uses]
    assert [r.body["is_error"] for r in results] == [False] * 5 + [True]
    texts = [e.text() for e in events if e.type == "agent.message"]
    assert f"read the transcript of {session_id}: 2 events" in texts
    assert "Merged the coffee duplicate; Alice lives in Paris now." in texts
    assert texts[-1] == "completed: 6 tool calls in 4 turns"


def test_an_api_error_fails_the_dream_with_its_type_and_message(engine: Engine) -> None:
    store_id, _ = seeded(engine)
    script: list[Any] = [
        turn(tool("create", path="/memories/summary.md", file_text="Alice.\n"),
             input_tokens=10, output_tokens=5),
        Error(400, "invalid_request_error", "prompt is too long: 210000 tokens > 200000"),
    ]
    with ScriptedModel(script) as model:
        ended = dream(engine, store_id, model.url)
    assert ended.status is DreamStatus.FAILED
    assert ended.error_type == "invalid_request_error"
    assert ended.error_message == "prompt is too long: 210000 tokens > 200000"
    assert ended.output_store_id is not None
    # The output as far as it got; the usage of the turn that was answered.
    assert "/summary.md" in contents(engine, ended.output_store_id)
    assert ended.usage["input_tokens"] == 10
    texts = [e.text() for e in engine.transcripts.all(ended.session_id or "")]
    assert texts[-1] == ("failed: invalid_request_error: prompt is too long: "
                         "210000 tokens > 200000")


def test_an_unreachable_endpoint_fails_naming_the_sdk_error(engine: Engine) -> None:
    store_id, _ = seeded(engine)
    with ScriptedModel([]) as model:
        url = model.url
    ended = dream(engine, store_id, url)  # the endpoint is gone: connection refused
    assert ended.status is DreamStatus.FAILED
    assert ended.error_type == "APIConnectionError"


def test_a_cancel_while_the_model_thinks_stops_the_dream(engine: Engine) -> None:
    store_id, _ = seeded(engine)
    holder: dict[str, str] = {}

    def cancel() -> None:
        engine.dreams.cancel(holder["id"])

    script = [
        turn(tool("create", path="/memories/a.md", file_text="kept\n")),
        turn(tool("create", path="/memories/b.md", file_text="never written\n"),
             before=cancel),
    ]
    engine.dreams.create(store_id, session_ids=None, model_id=MODEL)
    claimed = engine.dreams.claim("test-runner")
    assert claimed is not None
    holder["id"] = claimed.id
    with ScriptedModel(script) as model:
        ended = run_dream(engine, claimed, language_model=MessagesDreamer(
            (KEY, model.url), max_retries=0))
    assert ended.status is DreamStatus.CANCELED
    assert ended.output_store_id is not None
    output = contents(engine, ended.output_store_id)
    assert "/a.md" in output
    assert "/b.md" not in output
    assert len(model.requests) == 2
    # Its usage counts the turn it was canceled in too (BetaDreamUsage: counts can
    # change after a cancel).
    assert engine.dreams.get(claimed.id).usage["input_tokens"] == 200


def test_the_turn_limit_fails_the_dream(engine: Engine) -> None:
    store_id, _ = seeded(engine)
    script = [turn(tool("view", path="/memories")) for _ in range(3)]
    with ScriptedModel(script) as model:
        ended = dream(engine, store_id, model.url, max_turns=2)
    assert ended.status is DreamStatus.FAILED
    assert ended.error_type == "dream_turn_limit"
    assert len(model.requests) == 2


def test_the_time_limit_fails_the_dream(engine: Engine) -> None:
    store_id, _ = seeded(engine)
    ticks = iter(range(0, 10_000, 100))  # each look at the clock is 100 s later
    script = [turn(tool("create", path="/memories/late.md", file_text="never\n"))]
    engine.dreams.create(store_id, session_ids=None, model_id=MODEL)
    claimed = engine.dreams.claim("test-runner")
    assert claimed is not None
    with ScriptedModel(script) as model:
        dreamer = MessagesDreamer((KEY, model.url), time_limit_s=150, max_retries=0,
                                  clock=lambda: float(next(ticks)))
        ended = run_dream(engine, claimed, language_model=dreamer)
    assert ended.status is DreamStatus.FAILED
    assert ended.error_type == "dream_time_limit"
    assert ended.output_store_id is not None
    assert "/late.md" not in contents(engine, ended.output_store_id)
    assert len(model.requests) == 1


def test_without_an_endpoint_it_fails_before_making_anything(engine: Engine) -> None:
    store_id, _ = seeded(engine)
    stores_before = len(engine.stores.list(limit=100).items)
    engine.dreams.create(store_id, session_ids=None, model_id=MODEL)
    claimed = engine.dreams.claim("r")
    assert claimed is not None
    ended = run_dream(engine, claimed, language_model=MessagesDreamer(None))
    assert ended.status is DreamStatus.FAILED
    assert ended.error_type == "model_endpoint_not_configured"
    assert "--dream-api-key-file" in (ended.error_message or "")
    assert ended.session_id is None
    assert len(engine.stores.list(limit=100).items) == stores_before
