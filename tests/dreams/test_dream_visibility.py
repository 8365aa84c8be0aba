"""A dream sees only what its creator may see (SPEC §6 record visibility, §11), on the
engine over SQLite and PostgreSQL: a store holds private records of users alice and bob,
each with a planted exact duplicate; a dream created by a caller restricted to alice
reads, copies, writes and shows the model none of bob's, and may not name bob's session.

The language-model dream runs against a scripted Messages API endpoint that STANDS IN
FOR A MODEL (``tests/_support/scripted_model.py``): it replies with the tool calls the
test wrote and records every request, which is what is checked for bob's text."""

from __future__ import annotations

import json

import pytest
from _support.scripted_model import ScriptedModel, text, tool, turn
from _support.team_store import ALICE_TEA, BOB_SECRET, BOBS, FILES, SHARED, record

from memfs.core import config
from memfs.core.dreams import Dream, DreamStatus, OutputBehavior
from memfs.core.errors import NotFound
from memfs.core.model import Actor, UserPrincipal
from memfs.core.visibility import Viewer
from memfs.dreams import run_dream
from memfs.dreams.apply import apply_dream
from memfs.memory_tool.dreamer import MessagesDreamer
from memfs.store import Engine, ResourceSpec

ALICE = Viewer(user_id="alice")
ACTOR = Actor.api_key("apikey_tests")
MODEL = "claude-opus-4-7"
KEY = "sk-ant-test-scripted"


def seeded(engine: Engine) -> str:
    store = engine.stores.create("team")
    for path, content in FILES.items():
        engine.for_caller(actor=ACTOR).memories.create(store.id, path, content)
    return store.id


def contents(engine: Engine, store_id: str) -> dict[str, str]:
    """Every live memory of the store, as an unrestricted caller sees it."""
    return {
        m.path: engine.memories.get(store_id, m.id).content or ""
        for m in engine.memories.all(store_id)
    }


def versions_of(engine: Engine, store_id: str, paths: set[str]) -> list[str]:
    """The ids of every version of the memories at ``paths`` (a write adds one)."""
    ids = []
    for memory in engine.memories.all(store_id):
        if memory.path in paths:
            ids += [v.id for v in engine.versions.list(store_id, memory_id=memory.id).items]
    return sorted(ids)


def transcript(engine: Engine, store_id: str, user: str, said: str) -> str:
    """A session of ``store_id`` speaking for ``user`` whose transcript says ``said``."""
    session, _ = engine.sessions.create(
        [ResourceSpec(store_id, "read_only")], with_token=False,
        principal=UserPrincipal(user_id=user),
    )
    engine.transcripts.append(
        session.id, [{"type": "user.message", "content": [{"type": "text", "text": said}]}]
    )
    return session.id


def run_claimed(engine: Engine, dreamer: MessagesDreamer | None = None) -> Dream:
    claimed = engine.dreams.claim("test-runner")
    assert claimed is not None
    return run_dream(engine, claimed, language_model=dreamer)


def test_create_new_by_alice_forks_and_consolidates_only_what_alice_sees(
    engine: Engine,
) -> None:
    store_id = seeded(engine)
    made = engine.for_caller(viewer=ALICE).dreams.create(
        store_id, session_ids=None, model_id=config.CONSOLIDATE_MODEL,
        output_behavior=OutputBehavior.CREATE_NEW,
    )
    assert made.viewer == ALICE
    ended = run_claimed(engine)
    assert ended.status is DreamStatus.COMPLETED, ended.error_message
    assert ended.output_store_id is not None
    # The output holds what alice sees, consolidated; none of bob's records.
    assert contents(engine, ended.output_store_id) == {
        "/alice/tea.md": ALICE_TEA,
        "/shared/hours.md": SHARED,
    }
    # Bob's duplicates were neither copied nor touched; the input is as it was.
    assert contents(engine, store_id) == FILES
    # The dream's diff (memfs dream diff, the console's review) is what it did; a plain
    # diff of the two stores also shows what the output was never given.
    output = ended.output_store_id
    dreamt = engine.history.diff(store_id, "now", output, "now", forked_only=True)
    assert [(e.path, e.status.value) for e in dreamt.entries] == [
        ("/alice/tea-copy.md", "removed")]
    plain = engine.history.diff(store_id, "now", output, "now")
    assert sorted(e.path for e in plain.entries) == ["/alice/tea-copy.md", *sorted(BOBS)]
    # Applying it (an unrestricted merge, as memfs dream apply) removes alice's duplicate
    # and leaves bob's records alone.
    plan, _ = apply_dream(engine, ended, actor=ACTOR, dry_run=True)
    assert [(s.action.value, s.path_before) for s in plan.steps] == [
        ("delete", "/alice/tea-copy.md")]
    # Applied by alice (her viewer): the same, for real.
    applied, _ = apply_dream(engine, ended, actor=ACTOR, viewer=ALICE)
    assert [(s.action.value, s.path_before) for s in applied.steps] == [
        ("delete", "/alice/tea-copy.md")]
    assert contents(engine, store_id) == {
        p: c for p, c in FILES.items() if p != "/alice/tea-copy.md"}
    assert BOB_SECRET not in json.dumps(ended.result)
    # The dream's session speaks for alice.
    assert ended.session_id is not None
    session = engine.sessions.get(ended.session_id)
    assert session.principal == UserPrincipal(user_id="alice")


def test_update_existing_by_alice_leaves_bobs_records_as_they_were(engine: Engine) -> None:
    store_id = seeded(engine)
    bobs_versions = versions_of(engine, store_id, BOBS)
    engine.for_caller(viewer=ALICE).dreams.create(
        store_id, session_ids=None, model_id=config.CONSOLIDATE_MODEL,
        output_behavior=OutputBehavior.UPDATE_EXISTING,
    )
    ended = run_claimed(engine)
    assert ended.status is DreamStatus.COMPLETED, ended.error_message
    after = contents(engine, store_id)
    assert "/alice/tea-copy.md" not in after  # alice's duplicate merged
    assert {path: after[path] for path in BOBS} == {path: FILES[path] for path in BOBS}
    assert versions_of(engine, store_id, BOBS) == bobs_versions  # not one write to them
    assert ended.result is not None
    assert ended.result["memories_read"] == 3  # alice's two and the shared one
    assert ended.result["merged_into"] == {"/alice/tea-copy.md": "/alice/tea.md"}


def test_an_unrestricted_dream_does_merge_bobs_duplicate(engine: Engine) -> None:
    """The control of the two tests above: the same store, dreamt by an unrestricted
    caller, loses bob's duplicate too (so they would fail if visibility were ignored)."""
    store_id = seeded(engine)
    engine.dreams.create(
        store_id, session_ids=None, model_id=config.CONSOLIDATE_MODEL,
        output_behavior=OutputBehavior.CREATE_NEW,
    )
    ended = run_claimed(engine)
    assert ended.status is DreamStatus.COMPLETED, ended.error_message
    assert ended.output_store_id is not None
    assert set(contents(engine, ended.output_store_id)) == {
        "/alice/tea.md", "/bob/coffee.md", "/shared/hours.md"}


def test_a_session_of_bob_named_by_alice_is_refused(engine: Engine) -> None:
    store_id = seeded(engine)
    bobs = transcript(engine, store_id, "bob", f"remember {BOB_SECRET}")
    alices = transcript(engine, store_id, "alice", "I prefer green tea.")
    with pytest.raises(NotFound) as refused:
        engine.for_caller(viewer=ALICE).dreams.create(
            store_id, session_ids=[alices, bobs], model_id=config.CONSOLIDATE_MODEL,
        )
    assert refused.value.code == "session_not_found"
    assert bobs in refused.value.message
    # Alice's own session is accepted; nothing was made by the refused create.
    assert engine.dreams.list().items == []
    made = engine.for_caller(viewer=ALICE).dreams.create(
        store_id, session_ids=[alices], model_id=config.CONSOLIDATE_MODEL,
    )
    assert made.session_ids == (alices,)


def test_the_model_sees_none_of_bobs_records(engine: Engine) -> None:
    store_id = seeded(engine)
    alices = transcript(engine, store_id, "alice", "I prefer green tea.")
    script = [
        turn(tool("view", path="/memories")),
        turn(tool("view", path="/memories/bob/coffee.md")),
        # A private record of bob's: alice could not see it, so it is refused.
        turn(tool("create", path="/memories/bob/new.md",
                  file_text=record("bob", "Bob moved to Rome.\n"))),
        turn(tool("delete", path="/memories/alice/tea-copy.md")),
        turn(text("Removed alice's duplicate.")),
    ]
    engine.for_caller(viewer=ALICE).dreams.create(
        store_id, session_ids=[alices], model_id=MODEL,
        output_behavior=OutputBehavior.CREATE_NEW,
    )
    with ScriptedModel(script) as model:
        ended = run_claimed(engine, MessagesDreamer((KEY, model.url), max_retries=0))
    assert ended.status is DreamStatus.COMPLETED, ended.error_message
    sent = [json.dumps(r.body) for r in model.requests]
    assert len(sent) == 5
    assert "I prefer green tea." in sent[0]  # alice's transcript is in its context
    assert "/memories/alice/tea.md" in sent[0]  # and her files in the layout
    for body in sent:
        assert BOB_SECRET not in body
        assert "coffee-copy" not in body
    # Bob's file does not exist for the tool, and the record for bob was refused.
    assert model.requests[2].body["messages"][-1]["content"][-1]["is_error"] is True
    refused = model.requests[3].body["messages"][-1]["content"][-1]
    assert refused["is_error"] is True
    assert "invisible to its writer" in refused["content"]
    assert ended.result is not None
    assert ended.result["tool_errors"] == 2
    assert ended.output_store_id is not None
    assert contents(engine, ended.output_store_id) == {
        "/alice/tea.md": ALICE_TEA, "/shared/hours.md": SHARED}
    assert contents(engine, store_id) == FILES


def test_a_pending_dream_keeps_alices_view_across_a_restart(database: str) -> None:
    """The dream is created by one engine (a server), which stops; another engine (the
    restarted server) claims and runs it, with the viewer the dream kept."""
    with Engine(database) as first:
        store_id = seeded(first)
        made = first.for_caller(viewer=ALICE).dreams.create(
            store_id, session_ids=None, model_id=config.CONSOLIDATE_MODEL,
        )
        assert made.status is DreamStatus.PENDING
    with Engine(database) as restarted:
        assert restarted.dreams.get(made.id).viewer == ALICE
        ended = run_claimed(restarted)
        assert ended.status is DreamStatus.COMPLETED, ended.error_message
        assert ended.output_store_id is not None
        assert contents(restarted, ended.output_store_id) == {
            "/alice/tea.md": ALICE_TEA, "/shared/hours.md": SHARED}
        assert list(restarted.iter_fsck_findings()) == []


def test_viewer_without_a_principal_and_roles_round_trip(engine: Engine) -> None:
    """What the dream keeps is exactly the viewer: none (no private record), or a
    user with roles."""
    first = seeded(engine)
    second = engine.stores.create("other").id
    nobody = engine.for_caller(viewer=Viewer()).dreams.create(
        first, session_ids=None, model_id=config.CONSOLIDATE_MODEL)
    support = Viewer(user_id="carol", roles=frozenset({"support", "ops"}))
    carol = engine.for_caller(viewer=support).dreams.create(
        second, session_ids=None, model_id=config.CONSOLIDATE_MODEL)
    unrestricted = engine.dreams.get(nobody.id)
    assert unrestricted.viewer == Viewer()
    assert engine.dreams.get(carol.id).viewer == support
    # A caller without a principal sees no private record: its fork has only the
    # shared one.
    ended = run_claimed(engine)
    assert ended.id == nobody.id
    assert ended.output_store_id is not None
    assert contents(engine, ended.output_store_id) == {"/shared/hours.md": SHARED}
    engine.dreams.cancel(carol.id)
