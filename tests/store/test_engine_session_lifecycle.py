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
from memfs.store import Engine, ResourceSpec, access


def test_a_token_lives_24_hours_by_default(engine: Engine, store: MemoryStore) -> None:
    session, token = engine.create_session([ResourceSpec(store.id)])
    assert token is not None
    assert session.expires_at is not None
    assert session.expires_at - session.created_at == timedelta(hours=24)
    assert session.revoked_at is None
    assert session.archived_at is None
    assert session.api_key_id is None
    assert engine.authenticate_session(token) == session
    assert engine.get_session(session.id) == session


def test_a_ttl_sets_the_expiry(engine: Engine, store: MemoryStore) -> None:
    hour, _ = engine.create_session([ResourceSpec(store.id)], ttl_s=3600)
    assert hour.expires_at is not None
    assert hour.expires_at - hour.created_at == timedelta(hours=1)
    longest, _ = engine.create_session([ResourceSpec(store.id)], ttl_s=MAX_SESSION_TTL_S)
    assert longest.expires_at is not None
    assert longest.expires_at - longest.created_at == timedelta(days=30)


@pytest.mark.parametrize("ttl_s", [0, -1, MAX_SESSION_TTL_S + 1, 1.5, True, "60"])
def test_a_ttl_outside_one_second_to_30_days_is_refused(
    engine: Engine, store: MemoryStore, ttl_s: object
) -> None:
    with pytest.raises(InvalidTtl) as info:
        engine.create_session([ResourceSpec(store.id)], ttl_s=ttl_s)  # type: ignore[arg-type]
    assert str(info.value) == (
        "a session's ttl must be a whole number of seconds from 1 to 2592000 (30 days), "
        f"not {ttl_s!r}"
    )
    assert engine.list_sessions(include_archived=True).items == []


def test_a_session_without_a_token_has_no_expiry(engine: Engine, store: MemoryStore) -> None:
    session, token = engine.create_session([ResourceSpec(store.id)], with_token=False)
    assert token is None
    assert session.expires_at is None
    with pytest.raises(InvalidInput, match="^a session without a token does not expire"):
        engine.create_session([ResourceSpec(store.id)], with_token=False, ttl_s=60)


def test_an_expired_token_is_refused(
    engine: Engine, store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    session, token = engine.create_session([ResourceSpec(store.id)], ttl_s=60)
    assert token is not None
    assert session.expires_at is not None
    just_before = format_timestamp(session.expires_at - timedelta(microseconds=1))
    monkeypatch.setattr(access, "now", lambda: just_before)
    assert engine.authenticate_session(token).id == session.id
    at_expiry = format_timestamp(session.expires_at)
    monkeypatch.setattr(access, "now", lambda: at_expiry)
    with pytest.raises(CredentialExpired) as info:
        engine.authenticate_session(token)
    assert str(info.value) == (
        f"the token of session {session.id} expired at {format_timestamp(session.expires_at)}"
    )
    assert isinstance(info.value, AuthenticationFailed)


def test_a_revoked_session_is_refused(engine: Engine, store: MemoryStore) -> None:
    session, token = engine.create_session([ResourceSpec(store.id)])
    assert token is not None
    other, other_token = engine.create_session([ResourceSpec(store.id)])
    revoked = engine.revoke_session(session.id)
    assert revoked.revoked_at is not None
    assert engine.revoke_session(session.id) == revoked  # idempotent
    with pytest.raises(CredentialRevoked, match=f"^session {session.id} was revoked at "):
        engine.authenticate_session(token)
    assert other_token is not None
    assert engine.authenticate_session(other_token) == other
    assert engine.get_session(session.id) == revoked
    with pytest.raises(NotFound):
        engine.revoke_session("sesn_unknown")


def test_revoking_a_key_revokes_the_sessions_it_created(engine: Engine, store: MemoryStore) -> None:
    key, _ = engine.create_api_key("agent", [Scope.READ, Scope.WRITE])
    other_key, _ = engine.create_api_key("other", [Scope.READ])
    by_key, token = engine.create_session([ResourceSpec(store.id)], api_key_id=key.id)
    by_other, other_token = engine.create_session([ResourceSpec(store.id)], api_key_id=other_key.id)
    local, local_token = engine.create_session([ResourceSpec(store.id)])
    assert by_key.api_key_id == key.id
    assert token is not None
    assert other_token is not None
    assert local_token is not None

    revoked_key = engine.revoke_api_key(key.id)

    assert engine.get_session(by_key.id).revoked_at == revoked_key.revoked_at
    with pytest.raises(CredentialRevoked):
        engine.authenticate_session(token)
    assert engine.authenticate_session(other_token) == by_other
    assert engine.authenticate_session(local_token) == local
    with pytest.raises(CredentialRevoked, match=f"^API key {key.id!r} is revoked$"):
        engine.create_session([ResourceSpec(store.id)], api_key_id=key.id)
    with pytest.raises(NotFound):
        engine.create_session([ResourceSpec(store.id)], api_key_id="apikey_unknown")
    assert {s.id for s in engine.list_sessions().items} == {by_key.id, by_other.id, local.id}


def test_archiving_ends_a_session_and_hides_it(engine: Engine, store: MemoryStore) -> None:
    session, token = engine.create_session([ResourceSpec(store.id)])
    kept, _ = engine.create_session([ResourceSpec(store.id)])
    assert token is not None
    archived = engine.archive_session(session.id)
    assert archived.archived_at is not None
    assert engine.archive_session(session.id) == archived
    with pytest.raises(CredentialRevoked, match=f"^session {session.id} was archived at "):
        engine.authenticate_session(token)
    assert [s.id for s in engine.list_sessions().items] == [kept.id]
    assert [s.id for s in engine.list_sessions(include_archived=True).items] == [
        kept.id,
        session.id,
    ]


def test_deleting_a_session(engine: Engine, store: MemoryStore) -> None:
    session, token = engine.create_session([ResourceSpec(store.id)])
    assert token is not None
    engine.delete_session(session.id)
    with pytest.raises(NotFound):
        engine.get_session(session.id)
    with pytest.raises(AuthenticationFailed) as info:
        engine.authenticate_session(token)
    assert type(info.value) is AuthenticationFailed
    with pytest.raises(NotFound):
        engine.delete_session(session.id)
    assert engine.list_sessions(include_archived=True).items == []


def test_listing_sessions_by_store_pages_newest_first(engine: Engine) -> None:
    a, b = engine.create_store("a"), engine.create_store("b")
    of_a = [engine.create_session([ResourceSpec(a.id)])[0].id for _ in range(5)]
    both = engine.create_session([ResourceSpec(b.id), ResourceSpec(a.id)])[0].id
    of_b = engine.create_session([ResourceSpec(b.id)])[0].id
    listed = collect(engine.list_sessions, store_id=a.id, limit=2)
    assert [s.id for s in listed] == [both, *reversed(of_a)]
    assert [s.id for s in collect(engine.list_sessions, store_id=b.id, limit=1)] == [of_b, both]
    assert len(collect(engine.list_sessions, limit=3)) == 7
    assert engine.list_sessions("memstore_unknown").items == []
