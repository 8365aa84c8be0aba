"""Principals on API keys and sessions (SPEC §6, §3): set at creation
(engine, CLI, API with the real SDK), shown in listings, never changed afterwards, and
handed to a session only by a caller that holds them."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import anthropic
import httpx
import pytest
from _support.cli import Cli
from _support.serve import ServeProcess

from memfs.core.model import Scope
from memfs.core.visibility import UserPrincipal
from memfs.store import Engine, ResourceSpec

ALICE = UserPrincipal(user_id="alice", roles=("support", "team-a"))


def test_the_engine_keeps_a_principal_for_the_life_of_a_key_and_a_session(
    engine: Engine,
) -> None:
    store = engine.stores.create("Notes")
    key, secret = engine.api_keys.create("k", [Scope.READ], principal=ALICE)
    plain, plain_secret = engine.api_keys.create("plain", [Scope.READ])
    assert key.principal == ALICE
    assert plain.principal is None
    assert engine.api_keys.authenticate(secret).principal == ALICE
    assert engine.api_keys.authenticate(plain_secret).principal is None
    assert {k.id: k.principal for k in engine.api_keys.list()} == {key.id: ALICE, plain.id: None}

    session, token = engine.sessions.create(
        [ResourceSpec(store.id)], principal=ALICE, api_key_id=key.id
    )
    assert token is not None
    assert session.principal == ALICE
    assert engine.sessions.authenticate(token).principal == ALICE
    listed = engine.sessions.list(store.id).items
    assert [s.principal for s in listed] == [ALICE]
    # Nothing that changes a key or a session touches its principal.
    assert engine.sessions.revoke(session.id).principal == ALICE
    assert engine.sessions.archive(session.id).principal == ALICE
    assert engine.api_keys.revoke(key.id).principal == ALICE
    assert engine.sessions.get(session.id).principal == ALICE


def _session(
    client: anthropic.Anthropic, store_id: str, **extra: object
) -> dict[str, object]:
    session = client.beta.sessions.create(
        agent="agent_ignored",
        environment_id="env_ignored",
        resources=[{"type": "memory_store", "memory_store_id": store_id}],
        extra_body=extra or None,
    )
    return session.model_dump()


def test_the_api_sets_a_sessions_principal_from_what_the_caller_holds(
    server: ServeProcess,
    store_engine: Engine,
    sdk: Callable[[str], anthropic.Anthropic],
) -> None:
    store = store_engine.stores.create("Notes")
    _, admin_secret = store_engine.api_keys.create("admin", [Scope.ADMIN])
    _, alice_secret = store_engine.api_keys.create(
        "alice", [Scope.READ, Scope.WRITE], principal=ALICE
    )
    _, plain_secret = store_engine.api_keys.create("plain", [Scope.READ, Scope.WRITE])
    admin, alice, plain = sdk(admin_secret), sdk(alice_secret), sdk(plain_secret)

    # An admin key hands any principal, as one object or as the two flat fields.
    bob = _session(admin, store.id, principal={"user_id": "bob", "roles": ["x"]})
    assert bob["principal"] == {"user_id": "bob", "roles": ["x"]}
    flat = _session(admin, store.id, user_id="bob", roles=["y", "x"])
    assert flat["principal"] == {"user_id": "bob", "roles": ["x", "y"]}
    assert _session(admin, store.id)["principal"] is None
    # A key with a principal hands its own by default, or fewer of its roles.
    inherited = _session(alice, store.id)
    assert inherited["principal"] == {"user_id": "alice", "roles": ["support", "team-a"]}
    fewer = _session(alice, store.id, user_id="alice", roles=["support"])
    assert fewer["principal"] == {"user_id": "alice", "roles": ["support"]}
    # Nothing beyond what it holds; a key without a principal hands none.
    for client, extra in (
        (alice, {"user_id": "bob"}),
        (alice, {"user_id": "alice", "roles": ["root"]}),
        (plain, {"user_id": "alice"}),
    ):
        with pytest.raises(anthropic.PermissionDeniedError) as refused:
            _session(client, store.id, **extra)
        assert refused.value.error_code == "principal_not_allowed"  # type: ignore[attr-defined]
    assert _session(plain, store.id)["principal"] is None
    # Bad values and both forms at once: 400, nothing created.
    before = len(store_engine.sessions.list(store.id).items)
    for extra in (
        {"user_id": ""},
        {"roles": ["support"]},
        {"principal": {"user_id": "a"}, "user_id": "a"},
    ):
        with pytest.raises(anthropic.BadRequestError):
            _session(admin, store.id, **extra)
    assert len(store_engine.sessions.list(store.id).items) == before

    # Shown when retrieved, listed, and to the session itself.
    retrieved = admin.beta.sessions.retrieve(str(inherited["id"])).model_dump()
    assert retrieved["principal"] == inherited["principal"]
    listed = {s.id: s.model_dump() for s in admin.beta.sessions.list(memory_store_id=store.id)}
    assert listed[str(bob["id"])]["principal"] == {"user_id": "bob", "roles": ["x"]}
    token = str(inherited["token"])
    with httpx.Client(base_url=server.url, headers={"authorization": f"Bearer {token}"}) as http:
        current = http.get("/v1/sessions/current").json()
    assert current["principal"] == inherited["principal"]


def test_the_cli_creates_and_lists_keys_and_sessions_with_a_principal(memfs_home: Path) -> None:
    cli = Cli(memfs_home)
    created = cli.run(
        "key", "create", "--scope", "memory:read", "--user-id", "alice",
        "--role", "support", "--role", "team-a", "--json",
    ).json()
    assert created["principal"] == {"user_id": "alice", "roles": ["support", "team-a"]}
    human = cli.run("key", "create", "--scope", "memory:read", "--user-id", "bob")
    assert "user:    bob\n" in human.stdout
    listed = {k["id"]: k for k in cli.run("key", "list", "--json").json()["data"]}
    assert listed[created["id"]]["principal"] == created["principal"]
    table = cli.run("key", "list").lines
    assert table[0].split()[-1] == "USER"
    assert any(line.startswith(created["id"]) and line.endswith("alice (support, team-a)")
               for line in table)
    assert "roles need a user_id" in cli.error("key", "create", "--scope", "admin", "--role", "x")

    cli.run("store", "create", "Notes")
    session = cli.run(
        "session", "create", "--store", "Notes", "--user-id", "carol", "--role", "ops", "--json"
    ).json()
    assert session["principal"] == {"user_id": "carol", "roles": ["ops"]}
    shown = cli.run("session", "show", session["id"])
    assert "user:    carol (ops)\n" in shown.stdout
    sessions = cli.run("session", "list", "--json").json()["data"]
    assert [s["principal"] for s in sessions] == [session["principal"]]
