"""Session lifecycle (SPEC §3 credential lifecycle): tokens expire
(default 24 h, a ttl at creation, at most 30 days), sessions can be revoked, archived,
deleted and listed, and revoking an API key revokes the sessions it created."""

from __future__ import annotations

from datetime import timedelta

import pytest
from store_helpers import collect

from memfs.core.config import MAX_SESSION_TTL_S
from memfs.core.errors import (
    AuthenticationFailed,
    CredentialExpired,
    CredentialRevoked,
    InvalidInput,
    InvalidTtl,
    NotFound,
)
from memfs.core.model import MemoryStore, Scope, format_timestamp
from memfs.store import Engine, ResourceSpec, credentials


def test_a_token_lives_24_hours_by_default(engine: Engine, store: MemoryStore) -> None:
    session, token = engine.sessions.create([ResourceSpec(store.id)])
    assert token is not None
    assert session.expires_at is not None
    assert session.expires_at - session.created_at == timedelta(hours=24)
    assert session.revoked_at is None
    assert session.archived_at is None
    assert session.api_key_id is None
    assert engine.sessions.authenticate(token) == session
    assert engine.sessions.get(session.id) == session


def test_a_ttl_sets_the_expiry(engine: Engine, store: MemoryStore) -> None:
    hour, _ = engine.sessions.create([ResourceSpec(store.id)], ttl_s=3600)
    assert hour.expires_at is not None
    assert hour.expires_at - hour.created_at == timedelta(hours=1)
    longest, _ = engine.sessions.create([ResourceSpec(store.id)], ttl_s=MAX_SESSION_TTL_S)
    assert longest.expires_at is not None
    assert longest.expires_at - longest.created_at == timedelta(days=30)


@pytest.mark.parametrize("ttl_s", [0, -1, MAX_SESSION_TTL_S + 1, 1.5, True, "60"])
def test_a_ttl_outside_one_second_to_30_days_is_refused(
    engine: Engine, store: MemoryStore, ttl_s: object
) -> None:
    with pytest.raises(InvalidTtl) as info:
        engine.sessions.create([ResourceSpec(store.id)], ttl_s=ttl_s)  # type: ignore[arg-type]
    assert str(info.value) == (
        "a session's ttl must be a whole number of seconds from 1 to 2592000 (30 days), "
        f"not {ttl_s!r}"
    )
    assert engine.sessions.list(include_archived=True).items == []


def test_a_session_without_a_token_has_no_expiry(engine: Engine, store: MemoryStore) -> None:
    session, token = engine.sessions.create([ResourceSpec(store.id)], with_token=False)
    assert token is None
    assert session.expires_at is None
    with pytest.raises(InvalidInput, match="^a session without a token does not expire"):
        engine.sessions.create([ResourceSpec(store.id)], with_token=False, ttl_s=60)


def test_an_expired_token_is_refused(
    engine: Engine, store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    session, token = engine.sessions.create([ResourceSpec(store.id)], ttl_s=60)
    assert token is not None
    assert session.expires_at is not None
    just_before = format_timestamp(session.expires_at - timedelta(microseconds=1))
    monkeypatch.setattr(credentials, "now", lambda: just_before)
    assert engine.sessions.authenticate(token).id == session.id
    at_expiry = format_timestamp(session.expires_at)
    monkeypatch.setattr(credentials, "now", lambda: at_expiry)
    with pytest.raises(CredentialExpired) as info:
        engine.sessions.authenticate(token)
    assert str(info.value) == (
        f"the token of session {session.id} expired at {format_timestamp(session.expires_at)}"
    )
    assert isinstance(info.value, AuthenticationFailed)


def test_a_revoked_session_is_refused(engine: Engine, store: MemoryStore) -> None:
    session, token = engine.sessions.create([ResourceSpec(store.id)])
    assert token is not None
    other, other_token = engine.sessions.create([ResourceSpec(store.id)])
    revoked = engine.sessions.revoke(session.id)
    assert revoked.revoked_at is not None
    assert engine.sessions.revoke(session.id) == revoked  # idempotent
    with pytest.raises(CredentialRevoked, match=f"^session {session.id} was revoked at "):
        engine.sessions.authenticate(token)
    assert other_token is not None
    assert engine.sessions.authenticate(other_token) == other
    assert engine.sessions.get(session.id) == revoked
    with pytest.raises(NotFound):
        engine.sessions.revoke("sesn_unknown")


def test_revoking_a_key_revokes_the_sessions_it_created(engine: Engine, store: MemoryStore) -> None:
    key, _ = engine.api_keys.create("agent", [Scope.READ, Scope.WRITE])
    other_key, _ = engine.api_keys.create("other", [Scope.READ])
    by_key, token = engine.sessions.create([ResourceSpec(store.id)], api_key_id=key.id)
    by_other, other_token = engine.sessions.create(
        [ResourceSpec(store.id)], api_key_id=other_key.id
    )
    local, local_token = engine.sessions.create([ResourceSpec(store.id)])
    assert by_key.api_key_id == key.id
    assert token is not None
    assert other_token is not None
    assert local_token is not None

    revoked_key = engine.api_keys.revoke(key.id)

    assert engine.sessions.get(by_key.id).revoked_at == revoked_key.revoked_at
    with pytest.raises(CredentialRevoked):
        engine.sessions.authenticate(token)
    assert engine.sessions.authenticate(other_token) == by_other
    assert engine.sessions.authenticate(local_token) == local
    with pytest.raises(CredentialRevoked, match=f"^API key {key.id!r} is revoked$"):
        engine.sessions.create([ResourceSpec(store.id)], api_key_id=key.id)
    with pytest.raises(NotFound):
        engine.sessions.create([ResourceSpec(store.id)], api_key_id="apikey_unknown")
    assert {s.id for s in engine.sessions.list().items} == {by_key.id, by_other.id, local.id}


def test_archiving_ends_a_session_and_hides_it(engine: Engine, store: MemoryStore) -> None:
    session, token = engine.sessions.create([ResourceSpec(store.id)])
    kept, _ = engine.sessions.create([ResourceSpec(store.id)])
    assert token is not None
    archived = engine.sessions.archive(session.id)
    assert archived.archived_at is not None
    assert engine.sessions.archive(session.id) == archived
    with pytest.raises(CredentialRevoked, match=f"^session {session.id} was archived at "):
        engine.sessions.authenticate(token)
    assert [s.id for s in engine.sessions.list().items] == [kept.id]
    assert [s.id for s in engine.sessions.list(include_archived=True).items] == [
        kept.id,
        session.id,
    ]


def test_deleting_a_session(engine: Engine, store: MemoryStore) -> None:
    session, token = engine.sessions.create([ResourceSpec(store.id)])
    assert token is not None
    engine.sessions.delete(session.id)
    with pytest.raises(NotFound):
        engine.sessions.get(session.id)
    with pytest.raises(AuthenticationFailed) as info:
        engine.sessions.authenticate(token)
    assert type(info.value) is AuthenticationFailed
    with pytest.raises(NotFound):
        engine.sessions.delete(session.id)
    assert engine.sessions.list(include_archived=True).items == []


def test_listing_sessions_by_store_pages_newest_first(engine: Engine) -> None:
    a, b = engine.stores.create("a"), engine.stores.create("b")
    of_a = [engine.sessions.create([ResourceSpec(a.id)])[0].id for _ in range(5)]
    both = engine.sessions.create([ResourceSpec(b.id), ResourceSpec(a.id)])[0].id
    of_b = engine.sessions.create([ResourceSpec(b.id)])[0].id
    listed = collect(engine.sessions.list, store_id=a.id, limit=2)
    assert [s.id for s in listed] == [both, *reversed(of_a)]
    assert [s.id for s in collect(engine.sessions.list, store_id=b.id, limit=1)] == [of_b, both]
    assert len(collect(engine.sessions.list, limit=3)) == 7
    assert engine.sessions.list("memstore_unknown").items == []
