"""A caller can hand a session only what it holds itself (SPEC §3).

Every route that mints or widens a credential is checked here through the real SDK:
``POST /v1/sessions`` (``client.beta.sessions.create``) is the only one; API keys are
made by ``memfs key create`` on the server's machine, never over HTTP, and a session's
attachments are fixed at creation (``sessions.resources.add`` takes only files,
api-contract §7.1). A ``read_write`` attachment needs ``memory:read`` and
``memory:write`` on its store, a ``read_only`` one ``memory:read``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import anthropic
import pytest

from memfs.core.model import Scope

if TYPE_CHECKING:
    from tests.api.conftest import Server


def _create(server: Server, secret: str, *attachments: tuple[str, str]) -> Any:
    return server.client(secret).beta.sessions.create(
        agent="agent_ignored",
        environment_id="env_ignored",
        resources=[
            {"type": "memory_store", "memory_store_id": store_id, "access": access}  # type: ignore[typeddict-item]
            for store_id, access in attachments
        ],
    )


@pytest.mark.parametrize(
    ("scopes", "access"),
    [
        ((Scope.WRITE,), "read_write"),  # the escalation SPEC §3 forbids
        ((Scope.WRITE,), "read_only"),
        ((Scope.READ,), "read_write"),
        ((Scope.WRITE, Scope.DELETE), "read_write"),
        ((Scope.DELETE, Scope.HARD_DELETE), "read_only"),
    ],
)
def test_a_key_cannot_hand_a_session_more_than_it_holds(
    server: Server, store: Any, scopes: tuple[Scope, ...], access: str
) -> None:
    secret = server.key(*scopes)
    with pytest.raises(anthropic.PermissionDeniedError) as refused:
        _create(server, secret, (store.id, access))
    assert refused.value.error_code == "api_key_scope_missing"


def test_write_only_key_gets_no_token_that_reads_or_deletes(
    server: Server, admin: anthropic.Anthropic, store: Any
) -> None:
    memory = admin.beta.memory_stores.memories.create(store.id, path="/secret.md", content="s")
    writer = server.key(Scope.WRITE)
    with pytest.raises(anthropic.PermissionDeniedError):
        _create(server, writer, (store.id, "read_write"))
    # The key itself can't read, and the memory is untouched.
    with pytest.raises(anthropic.PermissionDeniedError):
        server.client(writer).beta.memory_stores.memories.retrieve(
            memory.id, memory_store_id=store.id
        )
    kept = admin.beta.memory_stores.memories.retrieve(memory.id, memory_store_id=store.id)
    assert kept.content == "s"


@pytest.mark.parametrize(
    ("scopes", "access"),
    [
        ((Scope.READ, Scope.WRITE), "read_write"),
        ((Scope.READ,), "read_only"),
        ((Scope.ADMIN,), "read_write"),
    ],
)
def test_a_key_hands_what_it_holds(
    server: Server, store: Any, scopes: tuple[Scope, ...], access: str
) -> None:
    session = _create(server, server.key(*scopes), (store.id, access))
    assert [(r.memory_store_id, r.access) for r in session.resources] == [(store.id, access)]


def test_one_attachment_beyond_the_key_refuses_the_whole_session(
    server: Server, admin: anthropic.Anthropic
) -> None:
    readable = admin.beta.memory_stores.create(name="readable")
    writable = admin.beta.memory_stores.create(name="writable")
    secret = server.key(Scope.READ, Scope.WRITE, stores=(writable.id,))
    assert _create(server, secret, (writable.id, "read_write")).resources[0].access == "read_write"
    # Limited to `writable`: another store is unknown to it (404, as an unknown id).
    with pytest.raises(anthropic.NotFoundError):
        _create(server, secret, (writable.id, "read_write"), (readable.id, "read_only"))


def test_a_session_token_mints_no_session(server: Server, admin: anthropic.Anthropic) -> None:
    store = admin.beta.memory_stores.create(name="agent's")
    token = server.session((store.id, "read_write"))["token"]
    for access in ("read_write", "read_only"):
        with pytest.raises(anthropic.PermissionDeniedError) as refused:
            _create(server, token, (store.id, access))
        assert refused.value.error_code == "session_not_allowed"
