"""Authentication comes first (SPEC §3): a request without a valid
credential gets 401 before its body or query is looked at, so a stranger learns
nothing about the shapes the server accepts.

A sample through the real SDK (bad bodies the SDK sends as given), then a sweep over
every operation of ``/openapi.json`` with raw HTTP: malformed JSON, wrong types, bad
query values and NUL characters, with no credential and with an unknown one.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

import anthropic
import httpx
import pytest

if TYPE_CHECKING:
    from tests.api.conftest import Server

UNKNOWN_SECRET = "memfs_sk_not-a-real-secret"
# Query values that every operation taking them refuses (and unknown ones are ignored).
BAD_QUERY = {
    "limit": "0",
    "view": "sideways",
    "depth": "-1",
    "after": "-1",
    "timeout_s": "nan",
    "mode": "shred",
    "include_archived": "maybe",
    "created_at[gte]": "yesterday",
    "expected_content_sha256": "XYZ",
}
BAD_BODIES: tuple[Any, ...] = (b"{not json", [1, 2], {"path": 5, "name": 7, "resources": "x"})


def _assert_401(response: httpx.Response) -> None:
    assert response.status_code == 401, response.text
    error = response.json()["error"]
    assert error["type"] == "authentication_error"
    # Nothing about the request itself: no field, no location, no value.
    assert not re.search(r"body|query|path\b|field|limit|json", error["message"], re.I)


@pytest.fixture(scope="module")
def operations(server: Server) -> list[tuple[str, str]]:
    """(method, path) of every documented operation, path parameters filled in."""
    with server.http() as http:
        document = http.get("/openapi.json").json()
    found = []
    for path, item in document["paths"].items():
        concrete = re.sub(r"\{[a-z_]+\}", "memstore_x", path)
        found.extend((method.upper(), concrete) for method in item)
    assert len(found) >= 22
    return found


@pytest.mark.parametrize("secret", [None, UNKNOWN_SECRET], ids=["no-credential", "unknown-key"])
def test_every_operation_authenticates_before_validating(
    server: Server, operations: list[tuple[str, str]], secret: str | None
) -> None:
    headers = {"authorization": f"Bearer {secret}"} if secret else {}
    with httpx.Client(base_url=server.url, headers=headers, timeout=30) as http:
        for method, path in operations:
            for query in (BAD_QUERY, {"limit": "a\x00b"}):
                _assert_401(http.request(method, path, params=query))
            if method in ("POST", "PATCH", "PUT"):
                for body in BAD_BODIES:
                    content = body if isinstance(body, bytes) else None
                    json_body = None if isinstance(body, bytes) else body
                    _assert_401(
                        http.request(
                            method,
                            path,
                            content=content,
                            json=json_body,
                            headers={"content-type": "application/json"},
                        )
                    )


@pytest.mark.parametrize("method", ["OPTIONS", "TRACE", "PUT", "PROPFIND"])
@pytest.mark.parametrize("secret", [None, UNKNOWN_SECRET], ids=["no-credential", "unknown-key"])
def test_every_method_authenticates_before_405(
    server: Server, operations: list[tuple[str, str]], method: str, secret: str | None
) -> None:
    """A method a path does not have is 401 to a stranger, 405 with ``Allow`` only to a
    caller with a valid credential: a stranger learns nothing, not even the methods."""
    headers = {"authorization": f"Bearer {secret}"} if secret else {}
    paths = sorted({path for m, path in operations if (method, path) not in operations})
    assert paths
    with httpx.Client(base_url=server.url, headers=headers, timeout=30) as stranger:
        for path in paths:
            _assert_401(stranger.request(method, path))
    with server.http() as http:
        for path in paths:
            allowed = http.request(method, path)
            assert allowed.status_code == 405, (path, allowed.text)
            assert allowed.headers["allow"]


def test_sdk_bad_bodies_without_a_valid_key_are_401(server: Server, store: Any) -> None:
    stranger = server.client(UNKNOWN_SECRET).beta
    attempts = (
        lambda: stranger.memory_stores.memories.create(store.id, path=5, content=None),  # type: ignore[arg-type]
        lambda: stranger.memory_stores.create(name=7),  # type: ignore[arg-type]
        lambda: stranger.memory_stores.update(store.id, metadata="x"),  # type: ignore[arg-type]
        lambda: stranger.memory_stores.memories.list(store.id, limit=0, view="x"),  # type: ignore[arg-type]
        lambda: stranger.memory_stores.memory_versions.list(store.id, operation="x"),  # type: ignore[arg-type]
        lambda: stranger.sessions.create(agent="a", environment_id="e", resources="x"),  # type: ignore[arg-type]
    )
    for attempt in attempts:
        with pytest.raises(anthropic.AuthenticationError) as refused:
            attempt()
        assert refused.value.type == "authentication_error"  # type: ignore[attr-defined]


def test_a_valid_key_still_gets_the_field_details(server: Server, store: Any) -> None:
    with server.http() as http:
        response = http.post(f"/v1/memory_stores/{store.id}/memories", json={"path": 5})
    assert response.status_code == 400
    assert "path" in response.json()["error"]["message"]
