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
    prefs = engine.create_store("User Preferences", description="what the user likes")
    notes = engine.create_store("notes")
    session, token = engine.create_session(
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
    assert engine.get_session(session.id) == session
    assert engine.authenticate_session(token) == session
    # The resource is a snapshot: renaming the store later changes nothing.
    engine.update_store(prefs.id, name="Renamed")
    assert engine.get_session(session.id).resources[0].name == "User Preferences"


def test_mount_paths_get_stable_collision_suffixes(engine: Engine) -> None:
    stores = [engine.create_store(name) for name in ("Notes", "notes", "NOTES!", "Other")]
    session, _ = engine.create_session(
        [ResourceSpec(s.id) for s in stores], mount_root="/data/memory/"
    )
    assert [r.mount_path for r in session.resources] == [
        "/data/memory/notes",
        "/data/memory/notes-2",
        "/data/memory/notes-3",
        "/data/memory/other",
    ]
    again, _ = engine.create_session(
        [ResourceSpec(s.id) for s in stores], mount_root="/data/memory"
    )
    assert [r.mount_path for r in again.resources] == [r.mount_path for r in session.resources]


def test_session_refusals_change_nothing(engine: Engine) -> None:
    live = engine.create_store("live")
    archived = engine.create_store("archived")
    engine.archive_store(archived.id)
    _, token = engine.create_session([ResourceSpec(live.id)])
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
            engine.create_session(resources)
    with pytest.raises(StoreArchived, match="is archived and can't be attached to a session"):
        engine.create_session([ResourceSpec(archived.id)])
    with pytest.raises(InvalidInput, match="only once"):
        engine.create_session([ResourceSpec(live.id), ResourceSpec(live.id)])
    # Only the first session exists.
    assert engine.authenticate_session(token).resources[0].memory_store_id == live.id
    # 1 to 8 stores.
    stores = [engine.create_store(f"s{i}") for i in range(9)]
    session, _ = engine.create_session([ResourceSpec(s.id) for s in stores[:8]])
    assert len(session.resources) == 8
    with pytest.raises(InvalidInput, match="^a session can attach at most 8 memory stores$"):
        engine.create_session([ResourceSpec(s.id) for s in stores])
    with pytest.raises(InvalidInput, match="^a session needs at least one memory store$"):
        engine.create_session([])


def test_session_tokens(engine: Engine) -> None:
    store = engine.create_store("s")
    session, token = engine.create_session([ResourceSpec(store.id)])
    assert token is not None
    for wrong in ("", token + "x", token[:-1], SESSION_TOKEN_PREFIX, "memfs_sk_whatever"):
        with pytest.raises(AuthenticationFailed, match="^invalid session token$"):
            engine.authenticate_session(wrong)
    embedded, no_token = engine.create_session([ResourceSpec(store.id)], with_token=False)
    assert no_token is None
    assert engine.get_session(embedded.id).resources[0].memory_store_id == store.id
    with pytest.raises(NotFound):
        engine.get_session("sesn_nope")


def test_session_token_is_not_stored(tmp_path: Path) -> None:
    db = tmp_path / "store.db"
    with Engine(f"sqlite:///{db}") as eng:
        store = eng.create_store("s")
        _, token = eng.create_session([ResourceSpec(store.id)])
        _, secret = eng.create_api_key("k", [Scope.READ])
    assert token is not None
    stored = b"".join(p.read_bytes() for p in tmp_path.iterdir())
    assert token.encode() not in stored
    assert secret.encode() not in stored
    assert token.removeprefix(SESSION_TOKEN_PREFIX).encode() not in stored
    assert secret.removeprefix(API_KEY_SECRET_PREFIX).encode() not in stored


# -------------------------------------------------------------------- API keys


def test_api_key_lifecycle(engine: Engine) -> None:
    store = engine.create_store("s")
    key, secret = engine.create_api_key(
        "ci", [Scope.WRITE, Scope.READ, Scope.READ], store_ids=[store.id, store.id]
    )
    assert key.id.startswith("apikey_")
    assert secret.startswith(API_KEY_SECRET_PREFIX)
    assert key.name == "ci"
    assert key.scopes == [Scope.READ, Scope.WRITE]
    assert key.store_ids == [store.id]
    assert key.revoked_at is None
    assert engine.authenticate_api_key(secret) == key
    other, other_secret = engine.create_api_key("admin", ["admin"])  # type: ignore[list-item]
    assert other.scopes == [Scope.ADMIN]
    assert other.store_ids == []
    assert [k.id for k in engine.list_api_keys()] == [other.id, key.id]
    for wrong in ("", secret + "x", other_secret[:-1]):
        with pytest.raises(AuthenticationFailed, match="^invalid API key$"):
            engine.authenticate_api_key(wrong)

    revoked = engine.revoke_api_key(key.id)
    assert revoked.revoked_at is not None
    assert engine.revoke_api_key(key.id) == revoked  # idempotent
    with pytest.raises(CredentialRevoked, match=f"^API key {key.id} was revoked at "):
        engine.authenticate_api_key(secret)
    assert engine.authenticate_api_key(other_secret) == other
    with pytest.raises(NotFound):
        engine.revoke_api_key("apikey_nope")
    # Refusals create nothing.
    with pytest.raises(InvalidInput, match="^an API key needs at least one scope$"):
        engine.create_api_key("k", [])
    with pytest.raises(InvalidInput, match="^scopes are memory:read"):
        engine.create_api_key("k", ["memory:everything"])  # type: ignore[list-item]
    with pytest.raises(NotFound):
        engine.create_api_key("k", [Scope.READ], store_ids=["memstore_nope"])
    assert len(engine.list_api_keys()) == 2


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
