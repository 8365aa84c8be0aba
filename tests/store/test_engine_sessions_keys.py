"""Sessions (attachments of 1–8 stores, mount paths, tokens) and API keys (scopes, store
restriction, revocation, hashed secrets) — SPEC §1, §3, api-contract §7.1–7.2."""

from __future__ import annotations

from pathlib import Path

import pytest

from memfs.core.errors import (
    AuthenticationFailed,
    CredentialRevoked,
    InvalidInput,
    NotFound,
    StoreArchived,
)
from memfs.core.model import Access, ApiKey, Scope, utcnow
from memfs.store import API_KEY_SECRET_PREFIX, SESSION_TOKEN_PREFIX, Engine, ResourceSpec

# -------------------------------------------------------------------- sessions


def test_create_session(engine: Engine) -> None:
    prefs = engine.stores.create("User Preferences", description="what the user likes")
    notes = engine.stores.create("notes")
    session, token = engine.sessions.create(
        [
            ResourceSpec(prefs.id, Access.READ_ONLY, instructions="read me first"),
            ResourceSpec(notes.id),
        ],
        title="agent run",
    )
    assert session.id.startswith("sesn_")
    assert session.title == "agent run"
    assert token is not None
    assert token.startswith(SESSION_TOKEN_PREFIX)
    assert [r.to_wire() for r in session.resources] == [
        {
            "type": "memory_store",
            "memory_store_id": prefs.id,
            "access": "read_only",
            "instructions": "read me first",
            "name": "User Preferences",
            "description": "what the user likes",
            "mount_path": "/mnt/memory/user-preferences",
        },
        {
            "type": "memory_store",
            "memory_store_id": notes.id,
            "access": "read_write",
            "instructions": None,
            "name": "notes",
            "description": "",
            "mount_path": "/mnt/memory/notes",
        },
    ]
    assert engine.sessions.get(session.id) == session
    assert engine.sessions.authenticate(token) == session
    # The resource is a snapshot: renaming the store later changes nothing.
    engine.stores.update(prefs.id, name="Renamed")
    assert engine.sessions.get(session.id).resources[0].name == "User Preferences"


def test_mount_paths_get_stable_collision_suffixes(engine: Engine) -> None:
    stores = [engine.stores.create(name) for name in ("Notes", "notes", "NOTES!", "Other")]
    session, _ = engine.sessions.create(
        [ResourceSpec(s.id) for s in stores], mount_root="/data/memory/"
    )
    assert [r.mount_path for r in session.resources] == [
        "/data/memory/notes",
        "/data/memory/notes-2",
        "/data/memory/notes-3",
        "/data/memory/other",
    ]
    again, _ = engine.sessions.create(
        [ResourceSpec(s.id) for s in stores], mount_root="/data/memory"
    )
    assert [r.mount_path for r in again.resources] == [r.mount_path for r in session.resources]


def test_session_refusals_change_nothing(engine: Engine) -> None:
    live = engine.stores.create("live")
    archived = engine.stores.create("archived")
    engine.stores.archive(archived.id)
    _, token = engine.sessions.create([ResourceSpec(live.id)])
    assert token is not None
    cases = [
        (InvalidInput, [ResourceSpec(live.id), ResourceSpec(live.id)]),
        (StoreArchived, [ResourceSpec(live.id), ResourceSpec(archived.id)]),
        (NotFound, [ResourceSpec(live.id), ResourceSpec("memstore_nope")]),
        (InvalidInput, [ResourceSpec(live.id, access="write_only")]),  # type: ignore[arg-type]
        (InvalidInput, [ResourceSpec(live.id, instructions="i" * 4097)]),
    ]
    for error, resources in cases:
        with pytest.raises(error):
            engine.sessions.create(resources)
    with pytest.raises(StoreArchived, match="is archived and can't be attached to a session"):
        engine.sessions.create([ResourceSpec(archived.id)])
    with pytest.raises(InvalidInput, match="only once"):
        engine.sessions.create([ResourceSpec(live.id), ResourceSpec(live.id)])
    # Only the first session exists.
    assert engine.sessions.authenticate(token).resources[0].memory_store_id == live.id
    # 1 to 8 stores.
    stores = [engine.stores.create(f"s{i}") for i in range(9)]
    session, _ = engine.sessions.create([ResourceSpec(s.id) for s in stores[:8]])
    assert len(session.resources) == 8
    with pytest.raises(InvalidInput, match="^a session can attach at most 8 memory stores$"):
        engine.sessions.create([ResourceSpec(s.id) for s in stores])
    with pytest.raises(InvalidInput, match="^a session needs at least one memory store$"):
        engine.sessions.create([])


def test_session_tokens(engine: Engine) -> None:
    store = engine.stores.create("s")
    session, token = engine.sessions.create([ResourceSpec(store.id)])
    assert token is not None
    for wrong in ("", token + "x", token[:-1], SESSION_TOKEN_PREFIX, "memfs_sk_whatever"):
        with pytest.raises(AuthenticationFailed, match="^invalid session token$"):
            engine.sessions.authenticate(wrong)
    embedded, no_token = engine.sessions.create([ResourceSpec(store.id)], with_token=False)
    assert no_token is None
    assert engine.sessions.get(embedded.id).resources[0].memory_store_id == store.id
    with pytest.raises(NotFound):
        engine.sessions.get("sesn_nope")


def test_session_token_is_not_stored(tmp_path: Path) -> None:
    db = tmp_path / "store.db"
    with Engine(f"sqlite:///{db}") as eng:
        store = eng.stores.create("s")
        _, token = eng.sessions.create([ResourceSpec(store.id)])
        _, secret = eng.api_keys.create("k", [Scope.READ])
    assert token is not None
    stored = b"".join(p.read_bytes() for p in tmp_path.iterdir())
    assert token.encode() not in stored
    assert secret.encode() not in stored
    assert token.removeprefix(SESSION_TOKEN_PREFIX).encode() not in stored
    assert secret.removeprefix(API_KEY_SECRET_PREFIX).encode() not in stored


# -------------------------------------------------------------------- API keys


def test_api_key_lifecycle(engine: Engine) -> None:
    store = engine.stores.create("s")
    key, secret = engine.api_keys.create(
        "ci", [Scope.WRITE, Scope.READ, Scope.READ], store_ids=[store.id, store.id]
    )
    assert key.id.startswith("apikey_")
    assert secret.startswith(API_KEY_SECRET_PREFIX)
    assert key.name == "ci"
    assert key.scopes == [Scope.READ, Scope.WRITE]
    assert key.store_ids == [store.id]
    assert key.revoked_at is None
    assert engine.api_keys.authenticate(secret) == key
    other, other_secret = engine.api_keys.create("admin", ["admin"])  # type: ignore[list-item]
    assert other.scopes == [Scope.ADMIN]
    assert other.store_ids == []
    assert [k.id for k in engine.api_keys.list()] == [other.id, key.id]
    for wrong in ("", secret + "x", other_secret[:-1]):
        with pytest.raises(AuthenticationFailed, match="^invalid API key$"):
            engine.api_keys.authenticate(wrong)

    revoked = engine.api_keys.revoke(key.id)
    assert revoked.revoked_at is not None
    assert engine.api_keys.revoke(key.id) == revoked  # idempotent
    with pytest.raises(CredentialRevoked, match=f"^API key {key.id} was revoked at "):
        engine.api_keys.authenticate(secret)
    assert engine.api_keys.authenticate(other_secret) == other
    with pytest.raises(NotFound):
        engine.api_keys.revoke("apikey_nope")
    # Refusals create nothing.
    with pytest.raises(InvalidInput, match="^an API key needs at least one scope$"):
        engine.api_keys.create("k", [])
    with pytest.raises(InvalidInput, match="^scopes are memory:read"):
        engine.api_keys.create("k", ["memory:everything"])  # type: ignore[list-item]
    with pytest.raises(NotFound):
        engine.api_keys.create("k", [Scope.READ], store_ids=["memstore_nope"])
    assert len(engine.api_keys.list()) == 2


def _key(scopes: list[Scope], store_ids: tuple[str, ...] = (), revoked: bool = False) -> ApiKey:
    now = utcnow()
    return ApiKey(
        id="apikey_x",
        name="k",
        scopes=scopes,
        store_ids=list(store_ids),
        created_at=now,
        revoked_at=now if revoked else None,
    )


def test_api_key_allows() -> None:
    reader = _key([Scope.READ])
    assert reader.allows(Scope.READ)
    assert reader.allows(Scope.READ, "memstore_any")
    assert not reader.allows(Scope.WRITE)
    assert not reader.allows(Scope.HARD_DELETE)
    deleter = _key([Scope.DELETE])
    assert deleter.allows(Scope.DELETE)
    assert not deleter.allows(Scope.HARD_DELETE)
    admin = _key([Scope.ADMIN])
    assert all(admin.allows(scope, "memstore_any") for scope in Scope)
    scoped = _key([Scope.READ, Scope.WRITE], store_ids=("memstore_a",))
    assert scoped.allows(Scope.WRITE, "memstore_a")
    assert not scoped.allows(Scope.WRITE, "memstore_b")
    assert scoped.allows(Scope.WRITE)  # no store named: the scope alone decides
    scoped_admin = _key([Scope.ADMIN], store_ids=("memstore_a",))
    assert scoped_admin.allows(Scope.HARD_DELETE, "memstore_a")
    assert not scoped_admin.allows(Scope.READ, "memstore_b")
    revoked = _key([Scope.ADMIN], revoked=True)
    assert not any(revoked.allows(scope) for scope in Scope)
