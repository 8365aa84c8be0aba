"""The error edge (api-contract §2): malformed requests get a precise 4xx, never a 500,
and change nothing; every response carries ``request-id``."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anthropic
import httpx
import pytest

from memfs.api import create_app
from memfs.api.errors import MAX_REQUEST_BODY_BYTES
from memfs.core.errors import CorruptedStore
from memfs.core.model import Scope
from memfs.store import Engine

if TYPE_CHECKING:
    from tests.api.conftest import Server


def _assert_error(
    response: httpx.Response, status: int, error_type: str, code: str | None = None
) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/json"
    body = response.json()
    assert body["type"] == "error"
    assert body["error"]["type"] == error_type
    assert body["error"]["message"]
    assert body["request_id"] == response.headers["request-id"]
    assert response.headers["request-id"].startswith("req_")
    if status < 500:
        assert response.headers["x-should-retry"] == "false"
    if code is not None:
        assert body["error"]["details"]["error_code"] == code
    return body


@pytest.fixture
def http(server: Server) -> Iterator[httpx.Client]:
    with server.http() as client:
        yield client


def test_malformed_json_is_400_and_changes_nothing(http: httpx.Client, store: Any) -> None:
    response = http.post(
        f"/v1/memory_stores/{store.id}/memories",
        content=b'{"path": "/a.md", "content": "x"',
        headers={"content-type": "application/json"},
    )
    _assert_error(response, 400, "invalid_request_error", "invalid_json")
    assert http.get(f"/v1/memory_stores/{store.id}/memories").json()["data"] == []


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        ({"name": 5}, "body.name"),
        ({"name": True}, "body.name"),
        ({}, "body.name: Field required"),
        ({"name": "n", "surprise": 1}, "body.surprise"),
        ([{"name": "n"}], "body"),
        ("just a string", "body"),
    ],
)
def test_wrong_shapes_are_400(http: httpx.Client, body: Any, fragment: str) -> None:
    response = http.post("/v1/memory_stores", json=body)
    error = _assert_error(response, 400, "invalid_request_error", "invalid_input")
    assert fragment in error["error"]["message"]


def test_wrong_metadata_types_are_invalid_metadata(http: httpx.Client) -> None:
    response = http.post("/v1/memory_stores", json={"name": "n", "metadata": ["k", "v"]})
    _assert_error(response, 400, "invalid_request_error", "invalid_metadata")


@pytest.mark.parametrize(
    "body",
    [
        {"path": "/a.md"},
        {"content": "x"},
        {"path": 1, "content": "x"},
        {"path": "/a.md", "content": ["x"]},
        {"path": "/a.md", "content": "x", "precondition": None, "extra": 1},
    ],
)
def test_wrong_memory_bodies_are_400(http: httpx.Client, store: Any, body: Any) -> None:
    response = http.post(f"/v1/memory_stores/{store.id}/memories", json=body)
    _assert_error(response, 400, "invalid_request_error")
    assert http.get(f"/v1/memory_stores/{store.id}/memories").json()["data"] == []


@pytest.mark.parametrize(
    "query",
    [
        {"limit": "abc"},
        {"limit": "0"},
        {"view": "everything"},
        {"depth": "-1"},
        {"path_prefix": "relative/"},
        {"page": "%%%"},
    ],
)
def test_bad_list_queries_are_400(http: httpx.Client, store: Any, query: dict[str, str]) -> None:
    response = http.get(f"/v1/memory_stores/{store.id}/memories", params=query)
    _assert_error(response, 400, "invalid_request_error")


@pytest.mark.parametrize(
    "query",
    [
        {"created_at[gte]": "yesterday"},
        {"created_at[lte]": "2026-13-01T00:00:00Z"},
        {"include_archived": "maybe"},
    ],
)
def test_bad_store_list_queries_are_400(http: httpx.Client, query: dict[str, str]) -> None:
    _assert_error(http.get("/v1/memory_stores", params=query), 400, "invalid_request_error")


def test_bad_version_queries_are_400(http: httpx.Client, store: Any) -> None:
    url = f"/v1/memory_stores/{store.id}/memory_versions"
    _assert_error(http.get(url, params={"operation": "renamed"}), 400, "invalid_request_error")
    _assert_error(http.get(url, params={"limit": "101"}), 400, "invalid_request_error")


def test_bad_expected_sha_is_400(http: httpx.Client, store: Any) -> None:
    memory = http.post(
        f"/v1/memory_stores/{store.id}/memories", json={"path": "/a.md", "content": "a"}
    ).json()
    response = http.delete(
        f"/v1/memory_stores/{store.id}/memories/{memory['id']}",
        params={"expected_content_sha256": "ABC"},
    )
    _assert_error(response, 400, "invalid_request_error")
    bad_mode = http.delete(
        f"/v1/memory_stores/{store.id}/memories/{memory['id']}", params={"mode": "shred"}
    )
    _assert_error(bad_mode, 400, "invalid_request_error")
    assert http.get(f"/v1/memory_stores/{store.id}/memories/{memory['id']}").status_code == 200


def test_oversize_body_is_413(server: Server, http: httpx.Client, store: Any) -> None:
    big = "x" * MAX_REQUEST_BODY_BYTES
    response = http.post(
        f"/v1/memory_stores/{store.id}/memories", json={"path": "/big.md", "content": big}
    )
    _assert_error(response, 413, "invalid_request_error", "request_too_large")

    def chunks() -> Iterator[bytes]:  # no Content-Length: counted while read
        yield b'{"path": "/big.md", "content": "'
        for _ in range(MAX_REQUEST_BODY_BYTES // 65536 + 1):
            yield b"y" * 65536
        yield b'"}'

    chunked = http.post(
        f"/v1/memory_stores/{store.id}/memories",
        content=chunks(),
        headers={"content-type": "application/json"},
    )
    _assert_error(chunked, 413, "invalid_request_error", "request_too_large")
    with pytest.raises(anthropic.ContentTooLargeError) as info:
        server.client().beta.memory_stores.memories.create(store.id, path="/big.md", content=big)
    assert info.value.error_code == "request_too_large"
    assert http.get(f"/v1/memory_stores/{store.id}/memories").json()["data"] == []


def test_unknown_route_and_method(http: httpx.Client, store: Any) -> None:
    _assert_error(http.get("/v1/nothing-here"), 404, "not_found_error", "route_not_found")
    _assert_error(http.put(f"/v1/memory_stores/{store.id}", json={}), 405, "invalid_request_error")


def test_request_id_on_every_response(server: Server, http: httpx.Client, store: Any) -> None:
    ids = set()
    for response in (
        http.get(f"/v1/memory_stores/{store.id}"),
        http.get("/openapi.json"),
        httpx.get(server.url + "/healthz"),
        http.get("/v1/memory_stores/memstore_unknown"),
    ):
        assert response.headers["request-id"].startswith("req_")
        ids.add(response.headers["request-id"])
    assert len(ids) == 4
    assert "x-should-retry" not in http.get(f"/v1/memory_stores/{store.id}").headers


def test_beta_header_is_not_required(server: Server, store: Any) -> None:
    response = httpx.get(
        f"{server.url}/v1/memory_stores/{store.id}",
        headers={"x-api-key": server.admin_secret},
    )
    assert response.status_code == 200


def test_sdk_extra_headers_are_accepted(server: Server, store: Any) -> None:
    client = server.client()
    retrieved = client.beta.memory_stores.retrieve(
        store.id,
        betas=["managed-agents-2026-04-01"],
        workspace_id="wrkspc_011CZkZaBF1tNoB5wlCeusgy",
    )
    assert retrieved.id == store.id


def test_openapi_document(http: httpx.Client) -> None:
    document = http.get("/openapi.json").json()
    paths = document["paths"]
    operations = {(method.upper(), path) for path, item in paths.items() for method in item}
    for expected in [
        ("POST", "/v1/memory_stores"),
        ("GET", "/v1/memory_stores"),
        ("GET", "/v1/memory_stores/{memory_store_id}"),
        ("POST", "/v1/memory_stores/{memory_store_id}"),
        ("DELETE", "/v1/memory_stores/{memory_store_id}"),
        ("POST", "/v1/memory_stores/{memory_store_id}/archive"),
        ("POST", "/v1/memory_stores/{memory_store_id}/memories"),
        ("GET", "/v1/memory_stores/{memory_store_id}/memories"),
        ("GET", "/v1/memory_stores/{memory_store_id}/memories/{memory_id}"),
        ("POST", "/v1/memory_stores/{memory_store_id}/memories/{memory_id}"),
        ("DELETE", "/v1/memory_stores/{memory_store_id}/memories/{memory_id}"),
        ("GET", "/v1/memory_stores/{memory_store_id}/memory_versions"),
        ("GET", "/v1/memory_stores/{memory_store_id}/memory_versions/{memory_version_id}"),
        (
            "POST",
            "/v1/memory_stores/{memory_store_id}/memory_versions/{memory_version_id}/redact",
        ),
        ("POST", "/v1/memory_stores/{memory_store_id}/memories/{memory_id}/forget"),
        ("POST", "/v1/memory_stores/{memory_store_id}/memories/{memory_id}/restore"),
        ("POST", "/v1/sessions"),
    ]:
        assert expected in operations
    for item in paths.values():
        for operation in item.values():
            assert "422" not in operation["responses"]
            assert {"400", "401", "403", "404", "409", "413"} <= set(operation["responses"])


# ------------------------------------------------------------- in process


@pytest.fixture
def local_engine(tmp_path: Path) -> Iterator[Engine]:
    engine = Engine(f"sqlite:///{tmp_path / 'local.db'}")
    try:
        yield engine
    finally:
        engine.close()


def _client(engine: Engine, *, insecure_dev: bool = False) -> httpx.AsyncClient:
    app = create_app(engine, insecure_dev=insecure_dev)
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
    return httpx.AsyncClient(transport=transport, base_url="http://memfs.test")


async def test_unexpected_failures_are_500_without_details(
    local_engine: Engine, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    _, secret = local_engine.api_keys.create("t", [Scope.ADMIN])
    store = local_engine.stores.create("s")

    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("disk on fire at /var/secret/path")

    monkeypatch.setattr(type(local_engine.stores), "get", broken)  # every caller's
    async with _client(local_engine) as client:
        response = await client.get(
            f"/v1/memory_stores/{store.id}", headers={"authorization": f"Bearer {secret}"}
        )
    _assert_error(response, 500, "api_error", "internal_error")
    assert "x-should-retry" not in response.headers  # the SDK may retry a 5xx
    assert "fire" not in response.text
    assert "disk on fire" in caplog.text  # the traceback went to the log instead


async def test_corrupted_store_is_500(
    local_engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, secret = local_engine.api_keys.create("t", [Scope.ADMIN])

    def corrupted(*args: object, **kwargs: object) -> None:
        raise CorruptedStore("blob abc no longer hashes to its key")

    monkeypatch.setattr(type(local_engine.stores), "list", corrupted)  # every caller's
    async with _client(local_engine) as client:
        response = await client.get("/v1/memory_stores", headers={"x-api-key": secret})
    _assert_error(response, 500, "api_error", "corrupted_store")


async def test_insecure_dev_treats_anonymous_requests_as_admin(local_engine: Engine) -> None:
    async with _client(local_engine, insecure_dev=True) as client:
        created = await client.post("/v1/memory_stores", json={"name": "dev"})
        assert created.status_code == 200
        store_id = created.json()["id"]
        memory = await client.post(
            f"/v1/memory_stores/{store_id}/memories",
            json={"path": "/a.md", "content": "x"},
            headers={"authorization": "Bearer whatever"},
        )
        assert memory.status_code == 200
        versions = await client.get(f"/v1/memory_stores/{store_id}/memory_versions")
    [version] = versions.json()["data"]
    assert version["created_by"] == {"type": "api_actor", "api_key_id": "apikey_insecure_dev"}
    async with _client(local_engine) as strict:
        refused = await strict.get(f"/v1/memory_stores/{store_id}")
    _assert_error(refused, 401, "authentication_error")


def test_insecure_dev_is_refused_off_loopback(memfs_cli: Any, tmp_path: Path) -> None:
    result = memfs_cli(
        "serve", "--insecure-dev", "--host", "0.0.0.0", "--port", "0",
        "--database", str(tmp_path / "x.db"),
    )  # fmt: skip
    assert result.returncode == 1
    assert "--insecure-dev is only allowed on a loopback host" in result.stderr


def test_nul_characters_are_400_everywhere(http: httpx.Client, store: Any) -> None:
    """PostgreSQL text can't hold U+0000; no field may (SPEC §1), so it is a 400, never 500."""
    for response in (
        http.get("/v1/memory_stores/%00"),
        http.get(f"/v1/memory_stores/{store.id}/memories/mem_%00"),
        http.get(f"/v1/memory_stores/{store.id}/memories", params={"path_prefix": "/a\x00/"}),
        http.get(f"/v1/memory_stores/{store.id}/memory_versions", params={"session_id": "\x00"}),
    ):
        error = _assert_error(response, 400, "invalid_request_error", "nul_character")
        assert "NUL" in error["error"]["message"]
    for url, body in (
        ("/v1/memory_stores", {"name": "n", "description": "d\x00"}),
        ("/v1/memory_stores", {"name": "n", "metadata": {"k": "v\x00"}}),
        (f"/v1/memory_stores/{store.id}", {"metadata": {"k\x00": "v"}}),
        (f"/v1/memory_stores/{store.id}/memories", {"path": "/a.md", "content": "\x00"}),
        ("/v1/sessions", {"resources": [], "title": "\x00"}),
    ):
        error = _assert_error(http.post(url, json=body), 400, "invalid_request_error")
        assert "NUL" in error["error"]["message"]
    assert http.get(f"/v1/memory_stores/{store.id}").json()["metadata"] == {}


def test_a_busy_store_is_a_retryable_503_with_retry_after() -> None:
    """Lock contention is never a 500: 503 (the SDK's ServiceUnavailableError, retried)
    with ``retry-after``, ``x-should-retry: true`` and the ``store_busy`` code."""
    from memfs.api.app import error_response
    from memfs.core.errors import StoreBusy

    response = error_response(StoreBusy("the database is busy", retry_after_s=1.5), "req_1")
    assert response.status_code == 503
    assert response.headers["retry-after"] == "2"
    assert response.headers["x-should-retry"] == "true"
    body = json.loads(response.body)
    assert body["error"]["type"] == "overloaded_error"
    assert body["error"]["details"]["error_code"] == "store_busy"
