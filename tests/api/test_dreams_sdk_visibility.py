"""A dream sees only what its creator may see (SPEC §6, §11), through the unmodified SDK
(``client.beta.dreams``) against ``memfs serve``: a key restricted to user alice starts
dreams of a store holding alice's and bob's private records, each with a planted
duplicate; the output, the input afterwards and what the model was sent hold nothing of
bob's, and alice can't name bob's session.

The language-model dream runs against a scripted Messages API endpoint that STANDS IN
FOR A MODEL (``tests/_support/scripted_model.py``; ``memfs serve --dream-base-url``
points at it): it replies with the tool calls the test wrote and records every request.
"""

from __future__ import annotations

import contextlib
import json
import threading
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
from _support.team_store import ALICE_TEA, BOB_SECRET, BOBS, FILES, SHARED

from memfs.core.model import Scope, UserPrincipal

if TYPE_CHECKING:
    from tests.api.conftest import Server

DREAM_TIMEOUT_S = 30.0


def seeded(admin: anthropic.Anthropic) -> str:
    store = admin.beta.memory_stores.create(name=f"team {uuid.uuid4().hex[:8]}")
    for path, content in FILES.items():
        admin.beta.memory_stores.memories.create(store.id, path=path, content=content)
    return store.id


def contents(admin: anthropic.Anthropic, store_id: str) -> dict[str, str]:
    """Every memory of the store with its content, as the admin key sees it."""
    found = {}
    for listed in admin.beta.memory_stores.memories.list(store_id):
        if listed.type == "memory":
            memory = admin.beta.memory_stores.memories.retrieve(
                listed.id, memory_store_id=store_id)
            found[memory.path] = memory.content or ""
    return found


def wait_ended(client: anthropic.Anthropic, dream_id: str) -> Any:
    def ended() -> Any:
        dream = client.beta.dreams.retrieve(dream_id)
        return dream if dream.status in ("completed", "failed", "canceled") else None

    return wait_until(ended, f"dream {dream_id} to end", timeout_s=DREAM_TIMEOUT_S)


def session_of(url: str, secret: str, store_id: str, user: str, said: str) -> str:
    """A session of ``store_id`` speaking for ``user`` (made by the admin key), whose
    transcript says ``said``."""
    headers = {"authorization": f"Bearer {secret}"}
    made = httpx.post(f"{url}/v1/sessions", headers=headers, json={
        "resources": [{"type": "memory_store", "memory_store_id": store_id,
                       "access": "read_only"}],
        "principal": {"user_id": user},
    })
    assert made.status_code == 200, made.text
    session_id: str = made.json()["id"]
    sent = httpx.post(f"{url}/v1/sessions/{session_id}/events", headers=headers, json={
        "events": [{"type": "user.message", "content": [{"type": "text", "text": said}]}]})
    assert sent.status_code == 200, sent.text
    return session_id


def error_code(exc: anthropic.APIStatusError) -> str:
    body = exc.body if isinstance(exc.body, dict) else {}
    return str(body.get("error", {}).get("details", {}).get("error_code"))


@pytest.fixture
def alice(server: Server) -> anthropic.Anthropic:
    """An SDK client whose key speaks for user alice (``memory:read``, ``memory:write``)."""
    _, secret = server.engine.api_keys.create(
        "alice", [Scope.READ, Scope.WRITE], principal=UserPrincipal(user_id="alice"))
    return server.client(secret)


def test_alices_dream_of_a_shared_store_holds_none_of_bobs_records(
    server: Server, admin: anthropic.Anthropic, alice: anthropic.Anthropic
) -> None:
    store_id = seeded(admin)
    alices = session_of(server.url, server.admin_secret, store_id, "alice",
                        "I prefer green tea.")
    dream = alice.beta.dreams.create(
        inputs=[{"type": "memory_store", "memory_store_id": store_id},
                {"type": "sessions", "session_ids": [alices]}],
        model="memfs-consolidate",
    )
    ended = wait_ended(alice, dream.id)
    assert ended.status == "completed", ended.error
    [output] = ended.outputs
    assert output.memory_store_id != store_id
    # Read back by the admin key, which sees everything: bob's records were not copied.
    assert contents(admin, output.memory_store_id) == {
        "/alice/tea.md": ALICE_TEA, "/shared/hours.md": SHARED}
    # The input is as it was, bob's duplicates included.
    assert contents(admin, store_id) == FILES
    # Its result names alice's paths: shown to alice and the admin, not to bob.
    assert (ended.model_extra or {})["result"]["merged_into"] == {
        "/alice/tea-copy.md": "/alice/tea.md"}
    assert (admin.beta.dreams.retrieve(dream.id).model_extra or {})["result"] is not None
    _, bob_secret = server.engine.api_keys.create(
        "bob", [Scope.READ, Scope.WRITE], principal=UserPrincipal(user_id="bob"))
    bob = server.client(bob_secret)
    seen_by_bob = bob.beta.dreams.retrieve(dream.id)
    assert seen_by_bob.status == "completed"
    assert (seen_by_bob.model_extra or {})["result"] is None
    [listed] = [d for d in bob.beta.dreams.list(limit=100) if d.id == dream.id]
    assert (listed.model_extra or {})["result"] is None
    assert "tea-copy" not in json.dumps(seen_by_bob.model_dump(mode="json"))
    # What the dream says it did names nothing of bob's.
    events = list(admin.beta.sessions.events.list(ended.session_id, limit=100))
    assert events
    assert not any("/bob/" in json.dumps(e.model_dump(mode="json")) for e in events)


def test_alices_update_existing_dream_leaves_bobs_records_as_they_were(
    server: Server, admin: anthropic.Anthropic, alice: anthropic.Anthropic
) -> None:
    store_id = seeded(admin)
    bob_versions = [
        v.id for v in admin.beta.memory_stores.memory_versions.list(store_id)
        if v.path in BOBS]
    dream = alice.beta.dreams.create(
        inputs=[{"type": "memory_store", "memory_store_id": store_id}],
        model="memfs-consolidate",
        output_behavior={"type": "update_existing", "memory_store_id": store_id},
    )
    ended = wait_ended(alice, dream.id)
    assert ended.status == "completed", ended.error
    after = contents(admin, store_id)
    assert "/alice/tea-copy.md" not in after
    assert {p: after[p] for p in BOBS} == {p: FILES[p] for p in BOBS}
    assert sorted(
        v.id for v in admin.beta.memory_stores.memory_versions.list(store_id)
        if v.path in BOBS) == sorted(bob_versions)


def test_alice_can_not_name_bobs_session(
    server: Server, admin: anthropic.Anthropic, alice: anthropic.Anthropic
) -> None:
    store_id = seeded(admin)
    bobs = session_of(server.url, server.admin_secret, store_id, "bob", BOB_SECRET)
    with pytest.raises(anthropic.NotFoundError) as refused:
        alice.beta.dreams.create(
            inputs=[{"type": "memory_store", "memory_store_id": store_id},
                    {"type": "sessions", "session_ids": [bobs]}],
            model="memfs-consolidate",
        )
    assert error_code(refused.value) == "session_not_found"
    # The same words as for a session that does not exist.
    with pytest.raises(anthropic.NotFoundError) as unknown:
        alice.beta.dreams.create(
            inputs=[{"type": "memory_store", "memory_store_id": store_id},
                    {"type": "sessions", "session_ids": ["sesn_nope"]}],
            model="memfs-consolidate",
        )
    assert error_code(unknown.value) == "session_not_found"
    assert not [d for d in admin.beta.dreams.list() if d.inputs and any(
        getattr(i, "memory_store_id", None) == store_id for i in d.inputs)]


def test_a_pending_model_dream_keeps_alices_view_across_a_server_restart(
    tmp_path: Path,
) -> None:
    """Alice's language-model dream waits behind another dream; the server is killed;
    the restarted server runs it with alice's view: the model's context and tool see
    none of bob's records, and its output holds none."""
    database = tmp_path / "store.db"
    env = {k: v for k, v in memfs_env(tmp_path).items() if not k.startswith("ANTHROPIC_")}

    def key(*args: str) -> str:
        made = run_memfs("key", "create", *args, "--database", str(database), "--json",
                         env=env, timeout_s=60)
        assert made.returncode == 0, made.stderr
        return str(json.loads(made.stdout)["secret"])

    admin_secret = key("--scope", "admin")
    alice_secret = key("--scope", "memory:read", "--scope", "memory:write",
                       "--user-id", "alice")
    key_file = tmp_path / "dream-key"
    key_file.write_text("sk-ant-scripted-key\n")
    key_file.chmod(0o600)
    gate = threading.Event()
    script = [
        # The first dream's only turn: held until the first server is gone.
        turn(text("never seen"), before=lambda: gate.wait(DREAM_TIMEOUT_S)),
        # Alice's dream, on the restarted server.
        turn(tool("view", path="/memories")),
        turn(tool("view", path="/memories/bob/coffee.md")),
        turn(tool("delete", path="/memories/alice/tea-copy.md")),
        turn(text("Removed alice's duplicate.")),
    ]
    args = ("--dream-base-url", "", "--dream-api-key-file", str(key_file))
    with ScriptedModel(script) as model:
        args = ("--dream-base-url", model.url, *args[2:])
        first = ServeProcess(database, tmp_path, *args, env=env)
        admin = anthropic.Anthropic(api_key=admin_secret, base_url=first.url, timeout=30.0)
        alice = anthropic.Anthropic(api_key=alice_secret, base_url=first.url, timeout=30.0)
        second: ServeProcess | None = None
        try:
            store_id = seeded(admin)
            alices = session_of(first.url, admin_secret, store_id, "alice",
                                "I prefer green tea.")
            blocker = admin.beta.memory_stores.create(name="blocker")
            admin.beta.memory_stores.memories.create(blocker.id, path="/x.md", content="x\n")
            busy = admin.beta.dreams.create(
                inputs=[{"type": "memory_store", "memory_store_id": blocker.id}],
                model="claude-opus-4-7")
            wait_until(lambda: len(model.requests) == 1, "the first dream to ask the model",
                       timeout_s=DREAM_TIMEOUT_S)
            dream = alice.beta.dreams.create(
                inputs=[{"type": "memory_store", "memory_store_id": store_id},
                        {"type": "sessions", "session_ids": [alices]}],
                model="claude-opus-4-7",
            )
            assert alice.beta.dreams.retrieve(dream.id).status == "pending"
            first.kill()
            gate.set()
            second = ServeProcess(database, tmp_path, *args, env=env)
            alice = anthropic.Anthropic(api_key=alice_secret, base_url=second.url,
                                        timeout=30.0)
            admin = anthropic.Anthropic(api_key=admin_secret, base_url=second.url,
                                        timeout=30.0)
            ended = wait_ended(alice, dream.id)
            assert ended.status == "completed", ended.error
            [output] = ended.outputs
            assert contents(admin, output.memory_store_id) == {
                "/alice/tea.md": ALICE_TEA, "/shared/hours.md": SHARED}
            assert contents(admin, store_id) == FILES
            # The first dream was cut off by the kill: not resumed. Ended here, so that
            # fsck (below) does not report it running with a stale heartbeat, however
            # slow this machine is (the server fails it by itself after 30 s).
            with contextlib.suppress(anthropic.ConflictError):  # failed by then already
                admin.beta.dreams.cancel(busy.id)
            assert admin.beta.dreams.retrieve(busy.id).status in ("canceled", "failed")
        finally:
            gate.set()
            if second is not None:
                assert second.stop() == 0
                assert "Traceback" not in second.log_text()
            first.stop()
    mine = [json.dumps(r.body) for r in model.requests[1:]]
    assert len(mine) == 4
    assert "I prefer green tea." in mine[0]
    assert "/memories/alice/tea.md" in mine[0]
    for body in mine:
        assert BOB_SECRET not in body
        assert "coffee-copy" not in body
    # memfs dream diff shows what the dream did, not what alice was never given.
    diff = run_memfs("dream", "diff", dream.id, "--name-only", "--database", str(database),
                     env=env, timeout_s=60)
    assert (diff.returncode, diff.stdout) == (1, "/alice/tea-copy.md\n"), diff.stderr
    shown = run_memfs("dream", "show", dream.id, "--database", str(database), env=env,
                      timeout_s=60)
    assert "sees      what user 'alice' sees" in shown.stdout
    fsck = run_memfs("fsck", "--database", str(database), env=env, timeout_s=60)
    assert fsck.returncode == 0, fsck.stdout + fsck.stderr
