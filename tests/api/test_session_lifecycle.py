"""Session lifecycle over HTTP (SPEC §3 credential lifecycle): the
unmodified SDK lists, retrieves, archives and deletes sessions
(``client.beta.sessions``); tokens expire (``expires_at``: 24 h by default, ``ttl_s``
at creation, at most 30 days) and can be revoked (``POST /v1/sessions/{id}/revoke``);
revoking an API key revokes the sessions it created. A token that stopped working
gets 401, with ``credential_expired`` or ``credential_revoked``.
"""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING, Any

import anthropic
import pytest
from _support.polling import wait_until

from memfs.core.model import Scope

if TYPE_CHECKING:
    from tests.api.conftest import Server

EXPIRY_DEADLINE_S = 30.0


def _create(server: Server, store_id: str, secret: str | None = None, **extra: Any) -> Any:
    return server.client(secret).beta.sessions.create(
        agent="agent_ignored",
        environment_id="env_ignored",
        resources=[{"type": "memory_store", "memory_store_id": store_id}],
        extra_body=extra or None,
    )


def _token(session: Any) -> str:
    token: str = (session.model_extra or {})["token"]
    return token


def _assert_token_refused(server: Server, token: str, store_id: str, code: str) -> None:
    with pytest.raises(anthropic.AuthenticationError) as refused:
        server.client(token).beta.memory_stores.retrieve(store_id)
    assert refused.value.body["error"]["details"]["error_code"] == code  # type: ignore[index]


def test_expires_at_defaults_to_a_day_and_takes_a_ttl(server: Server, store: Any) -> None:
    default = _create(server, store.id)
    expires_at = (default.model_extra or {})["expires_at"]
    assert expires_at is not None
    retrieved = server.client().beta.sessions.retrieve(default.id)
    extra = retrieved.model_extra or {}
    assert extra["expires_at"] == expires_at
    assert (extra["revoked_at"], retrieved.archived_at) == (None, None)
    lifetime = _lifetime(retrieved)
    assert lifetime == timedelta(hours=24)
    hour = server.client().beta.sessions.retrieve(_create(server, store.id, ttl_s=3600).id)
    assert _lifetime(hour) == timedelta(hours=1)
    month = _create(server, store.id, ttl_s=30 * 24 * 3600)
    assert _lifetime(server.client().beta.sessions.retrieve(month.id)) == timedelta(days=30)


def _lifetime(session: Any) -> timedelta:
    from datetime import datetime

    expires = datetime.fromisoformat((session.model_extra or {})["expires_at"])
    return expires - session.created_at  # type: ignore[no-any-return]


@pytest.mark.parametrize("ttl_s", [0, -5, 30 * 24 * 3600 + 1, "3600"])
def test_ttl_beyond_thirty_days_is_refused(server: Server, store: Any, ttl_s: Any) -> None:
    with pytest.raises(anthropic.BadRequestError):
        _create(server, store.id, ttl_s=ttl_s)


def test_an_expired_token_gets_401(server: Server, store: Any) -> None:
    session = _create(server, store.id, ttl_s=1)
    token = _token(session)
    wait_until(lambda: not _token_works(server, token, store.id), "the token to expire",
               EXPIRY_DEADLINE_S)
    _assert_token_refused(server, token, store.id, "credential_expired")


def _token_works(server: Server, token: str, store_id: str) -> bool:
    try:
        server.client(token).beta.memory_stores.retrieve(store_id)
    except anthropic.AuthenticationError:
        return False
    return True


def test_sdk_lists_sessions_of_a_store(server: Server, admin: anthropic.Anthropic) -> None:
    store = admin.beta.memory_stores.create(name="listed")
    other = admin.beta.memory_stores.create(name="elsewhere")
    first, second = _create(server, store.id), _create(server, store.id)
    _create(server, other.id)
    listed = [s.id for s in admin.beta.sessions.list(memory_store_id=store.id)]
    assert listed == [second.id, first.id]  # newest first
    page = admin.beta.sessions.list(memory_store_id=store.id, limit=1)
    assert [s.id for s in page.data] == [second.id]
    assert [s.id for s in page.get_next_page().data] == [first.id]
    [item] = admin.beta.sessions.list(memory_store_id=store.id, limit=1).data
    assert item.resources[0].memory_store_id == store.id  # type: ignore[union-attr]
    assert "token" not in (item.model_extra or {})


def test_sdk_archive_ends_a_session(server: Server, admin: anthropic.Anthropic) -> None:
    store = admin.beta.memory_stores.create(name="archived sessions")
    session = _create(server, store.id)
    archived = admin.beta.sessions.archive(session.id)
    assert archived.archived_at is not None
    _assert_token_refused(server, _token(session), store.id, "credential_revoked")
    assert list(admin.beta.sessions.list(memory_store_id=store.id)) == []
    everything = admin.beta.sessions.list(memory_store_id=store.id, include_archived=True)
    assert [s.id for s in everything] == [session.id]
    assert admin.beta.sessions.archive(session.id).archived_at == archived.archived_at


def test_sdk_delete_removes_a_session(server: Server, admin: anthropic.Anthropic) -> None:
    store = admin.beta.memory_stores.create(name="deleted sessions")
    session = _create(server, store.id)
    deleted = admin.beta.sessions.delete(session.id)
    assert (deleted.id, deleted.type) == (session.id, "session_deleted")
    with pytest.raises(anthropic.NotFoundError):
        admin.beta.sessions.retrieve(session.id)
    with pytest.raises(anthropic.AuthenticationError):
        server.client(_token(session)).beta.memory_stores.retrieve(store.id)
    with pytest.raises(anthropic.NotFoundError):
        admin.beta.sessions.delete(session.id)


def test_revoke_route_revokes_the_token(server: Server, store: Any) -> None:
    session = _create(server, store.id)
    token = _token(session)
    assert server.client(token).beta.memory_stores.retrieve(store.id).id == store.id
    with server.http() as http:
        revoked = http.post(f"/v1/sessions/{session.id}/revoke")
    assert revoked.status_code == 200, revoked.text
    assert revoked.json()["revoked_at"] is not None
    _assert_token_refused(server, token, store.id, "credential_revoked")
    # Still listed (revoked, not archived), and revoking again changes nothing.
    assert session.id in [
        s.id for s in server.client().beta.sessions.list(memory_store_id=store.id)
    ]
    with server.http() as http:
        again = http.post(f"/v1/sessions/{session.id}/revoke").json()
    assert again["revoked_at"] == revoked.json()["revoked_at"]


def test_a_session_token_may_revoke_itself_only(server: Server, store: Any) -> None:
    mine, other = _create(server, store.id), _create(server, store.id)
    with server.http(_token(mine)) as http:
        assert http.post(f"/v1/sessions/{other.id}/revoke").status_code == 403
        assert http.delete(f"/v1/sessions/{mine.id}").status_code == 403
        assert http.post(f"/v1/sessions/{mine.id}/archive").status_code == 403
        assert [s["id"] for s in http.get("/v1/sessions").json()["data"]] == [mine.id]
        assert http.post(f"/v1/sessions/{mine.id}/revoke").status_code == 200
    _assert_token_refused(server, _token(mine), store.id, "credential_revoked")
    assert server.client(_token(other)).beta.memory_stores.retrieve(store.id).id == store.id


def test_revoking_a_key_revokes_its_sessions(server: Server, store: Any) -> None:
    key_id, secret = server.key_with_id(Scope.READ, Scope.WRITE)
    session = _create(server, store.id, secret)
    token = _token(session)
    bystander = _create(server, store.id)  # made by the admin key: not affected
    assert server.client(token).beta.memory_stores.retrieve(store.id).id == store.id
    server.engine.api_keys.revoke(key_id)
    _assert_token_refused(server, token, store.id, "credential_revoked")
    assert server.client(_token(bystander)).beta.memory_stores.retrieve(store.id).id == store.id
    retrieved = server.client().beta.sessions.retrieve(session.id)
    assert (retrieved.model_extra or {})["revoked_at"] is not None


@pytest.mark.parametrize("action", ["delete", "archive", "revoke"])
def test_ending_a_session_needs_what_creating_it_needed(
    server: Server, store: Any, action: str
) -> None:
    session = _create(server, store.id)  # read_write
    reader = server.key(Scope.READ)
    with server.http(reader) as http:
        if action == "delete":
            response = http.delete(f"/v1/sessions/{session.id}")
        else:
            response = http.post(f"/v1/sessions/{session.id}/{action}")
    assert response.status_code == 403, response.text
    assert response.json()["error"]["details"]["error_code"] == "api_key_scope_missing"
    assert server.client(_token(session)).beta.memory_stores.retrieve(store.id).id == store.id


def test_a_key_limited_to_other_stores_sees_no_session(
    server: Server, admin: anthropic.Anthropic
) -> None:
    mine = admin.beta.memory_stores.create(name="mine")
    theirs = admin.beta.memory_stores.create(name="theirs")
    hidden = _create(server, theirs.id)
    limited = server.key(Scope.READ, Scope.WRITE, Scope.DELETE, stores=(mine.id,))
    client = server.client(limited).beta.sessions
    with pytest.raises(anthropic.NotFoundError):
        client.retrieve(hidden.id)
    with pytest.raises(anthropic.NotFoundError):
        client.delete(hidden.id)
    assert hidden.id not in [s.id for s in client.list()]
    with pytest.raises(anthropic.NotFoundError):
        client.list(memory_store_id=theirs.id)
