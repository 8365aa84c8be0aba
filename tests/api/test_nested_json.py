"""Request bodies nesting JSON deeply: a 400 naming the limit, refused before anything
parses or validates them (each of which recurses once per level: 400 levels was a
RecursionError, a 500), and after authentication (SPEC §3: 401 first).

In process: the ASGI application over an engine, through ``httpx.ASGITransport``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from _support.cli import SETUP_ACTOR

from memfs.api.app import create_app
from memfs.core.model import Scope
from memfs.store import Engine
from memfs.wire.common import MAX_JSON_DEPTH, nests_too_deep

DEPTHS = (2, 50, 300, 400, 5000)


def _nested(levels: int) -> str:
    """JSON text of an object nested ``levels`` deep: ``{"k":{"k":…"x"…}}``."""
    return '{"k":' * levels + '"x"' + "}" * levels


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[Engine]:
    with Engine(f"sqlite:///{tmp_path / 'local.db'}") as engine:
        yield engine


@pytest.fixture
async def http(engine: Engine) -> AsyncIterator[httpx.AsyncClient]:
    _, secret = engine.api_keys.create("t", [Scope.ADMIN])
    transport = httpx.ASGITransport(app=create_app(engine), raise_app_exceptions=False)
    async with httpx.AsyncClient(
        transport=transport,
        base_url="http://memfs.test",
        headers={"authorization": f"Bearer {secret}", "content-type": "application/json"},
    ) as client:
        yield client


def _bodies(store_id: str, memory_id: str, metadata: str) -> list[tuple[str, str, str]]:
    """(method, URL, body) of every route taking a JSON body with ``metadata`` in it."""
    memories = f"/v1/memory_stores/{store_id}/memories"
    fields = [
        (memories, '"path": "/n.md", "content": "x", '),
        ("/v1/memory_stores", '"name": "n", '),
        (f"/v1/memory_stores/{store_id}", ""),
        (f"{memories}/{memory_id}", '"content": "y", '),
        ("/v1/sessions", '"resources": [], '),
        (f"/v1/memories/{memory_id}/forget", ""),
    ]
    return [("POST", url, "{" + more + '"metadata": ' + metadata + "}") for url, more in fields]


@pytest.mark.parametrize("depth", DEPTHS)
async def test_metadata_nested_deeply_is_a_400_naming_the_limit(
    engine: Engine, http: httpx.AsyncClient, depth: int
) -> None:
    store = engine.stores.create("s")
    memory = engine.for_caller(actor=SETUP_ACTOR).memories.create(store.id, "/a.md", "a")
    for method, url, body in _bodies(store.id, memory.id, _nested(depth)):
        response = await http.request(method, url, content=body.encode())
        assert response.status_code == 400, (url, response.text)
        assert response.headers["x-should-retry"] == "false"
        error: dict[str, Any] = response.json()["error"]
        assert error["type"] == "invalid_request_error"
        if depth + 1 > MAX_JSON_DEPTH:  # the body is one level more than its metadata
            assert error["details"]["error_code"] == "json_too_deep", (url, error)
            assert f"the limit is {MAX_JSON_DEPTH}" in error["message"]
        else:  # parsed, and refused by the rules (SPEC §1: metadata values are strings)
            assert error["details"]["error_code"] != "json_too_deep", (url, error)
    # Nothing was written by any of them.
    assert engine.memories.get(store.id, memory.id).content == "a"
    assert [s.id for s in engine.stores.list().items] == [store.id]


async def test_the_deepest_valid_body_is_far_within_the_limit(
    engine: Engine, http: httpx.AsyncClient
) -> None:
    store = engine.stores.create("s")
    resource = {"type": "memory_store", "memory_store_id": store.id, "access": "read_write"}
    assert (await http.post("/v1/sessions", json={"resources": [resource]})).status_code == 200
    at_limit = '{"a":' * (MAX_JSON_DEPTH - 1) + "[]" + "}" * (MAX_JSON_DEPTH - 1)
    assert not nests_too_deep(at_limit.encode())
    assert nests_too_deep(("[" + at_limit + "]").encode())


async def test_a_deep_body_without_a_credential_is_401_first(http: httpx.AsyncClient) -> None:
    for method in ("POST", "PATCH", "PUT", "DELETE"):
        response = await http.request(
            method,
            "/v1/memory_stores",
            content=('{"name": "n", "metadata": ' + _nested(5000) + "}").encode(),
            headers={"authorization": ""},
        )
        assert response.status_code == 401, (method, response.text)


@pytest.mark.parametrize(
    "text",
    [
        '{"a": "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[\\"{{{{"}',  # brackets in strings
        "[" * 5000,  # opened and never closed
        '{"a": 1',  # not JSON: the parser says so
    ],
)
def test_only_brackets_outside_strings_count(text: str) -> None:
    assert nests_too_deep(text.encode()) == text.startswith("[[[")
