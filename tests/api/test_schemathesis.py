"""A bounded, deterministic property-based run of schemathesis against /openapi.json.

For every operation, Hypothesis generates requests from the schema (derandomized, a
fixed number of examples, no example database); half of them have their path ids
replaced by real objects created for that operation, so bodies and queries reach the
engine instead of stopping at 404. Every response must be no 5xx, have a documented
status, content type and headers, and match the documented schema.

The change feed's long poll may wait up to 30 s; generated waits are cut to
:data:`MAX_LONG_POLL_S` so that the run stays bounded in time.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from tests.api.conftest import Server

MAX_EXAMPLES_PER_OPERATION = 25
MAX_LONG_POLL_S = 0.05


@pytest.fixture
def openapi_3_1() -> Iterator[None]:
    """schemathesis 3 validates OpenAPI 3.1 (what FastAPI emits) behind an experiment."""
    from schemathesis import experimental

    experimental.OPEN_API_3_1.enable()
    try:
        yield
    finally:
        experimental.OPEN_API_3_1.disable()


def _seed(server: Server) -> dict[str, str]:
    """Real ids for the path parameters of one operation's run."""
    client = server.client().beta.memory_stores
    store = client.create(name="fuzz")
    memory = client.memories.create(store.id, path="/fuzz/a.md", content="a")
    client.memories.update(memory.id, memory_store_id=store.id, content="b")
    oldest = list(client.memory_versions.list(store.id, memory_id=memory.id))[-1]
    deleted = client.memories.create(store.id, path="/fuzz/deleted.md", content="d")
    client.memories.delete(deleted.id, memory_store_id=store.id)
    return {
        "memory_store_id": store.id,
        "memory_id": memory.id,
        "memory_version_id": oldest.id,
        "deleted_memory_id": deleted.id,
        "session_id": "sesn_unknown",
    }


def test_schemathesis(server: Server, openapi_3_1: None) -> None:
    with warnings.catch_warnings():
        # jsonschema deprecations triggered inside schemathesis 3 and requests/urllib3.
        warnings.simplefilter("ignore", DeprecationWarning)
        _run_schemathesis(server)


def _run_schemathesis(server: Server) -> None:
    import schemathesis
    from schemathesis import GenerationConfig
    from schemathesis.checks import not_a_server_error
    from schemathesis.specs.openapi.checks import (
        content_type_conformance,
        response_headers_conformance,
        response_schema_conformance,
        status_code_conformance,
    )

    checks = (
        not_a_server_error,
        status_code_conformance,
        content_type_conformance,
        response_headers_conformance,
        response_schema_conformance,
    )
    # The credential is ours: generated Authorization / x-api-key values would hold
    # control characters, which the HTTP layer (h11) refuses before the app sees them.
    schema = schemathesis.from_uri(
        f"{server.url}/openapi.json",
        base_url=server.url,
        generation_config=GenerationConfig(with_security_parameters=False),
    )
    auth = {"authorization": f"Bearer {server.admin_secret}"}
    operations = [result.ok() for result in schema.get_all_operations()]
    names = {operation.verbose_name for operation in operations}
    assert len(operations) >= 22
    assert {  # the remote-mount extensions (issue 4) are documented too
        "GET /v1/sessions/current",
        "POST /v1/memory_stores/{memory_store_id}/memories/rename_prefix",
        "GET /v1/memory_stores/{memory_store_id}/changes",
    } <= names
    tried: dict[str, set[int]] = {}
    for operation in operations:
        statuses = tried.setdefault(operation.verbose_name, set())
        real_ids = _seed(server)
        if operation.path.endswith("/restore"):
            real_ids["memory_id"] = real_ids.pop("deleted_memory_id")
        _property(operation, real_ids, statuses, auth, checks)()
    # The run reached the engine: successes and client errors on most operations.
    never_ok = {name for name, codes in tried.items() if 200 not in codes}
    # Sessions need real store ids inside the body, which generated data never has; an
    # API key has no current session (403).
    assert never_ok <= {
        "POST /v1/sessions",
        "GET /v1/sessions/{session_id}",
        "GET /v1/sessions/current",
    }, tried
    assert all(codes <= {200, 400, 403, 404, 409, 413} for codes in tried.values()), tried


def _property(
    operation: Any,
    real_ids: dict[str, str],
    statuses: set[int],
    auth: dict[str, str],
    checks: tuple[Any, ...],
) -> Any:
    """The Hypothesis test of one operation (bounded, derandomized)."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    @settings(
        max_examples=MAX_EXAMPLES_PER_OPERATION,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(case=operation.as_strategy(), use_real_ids=st.booleans())
    def check(case: Any, use_real_ids: bool) -> None:
        if use_real_ids and case.path_parameters:
            for name in case.path_parameters:
                case.path_parameters[name] = real_ids.get(name, case.path_parameters[name])
        timeout_s = (case.query or {}).get("timeout_s")
        if isinstance(timeout_s, int | float) and timeout_s > MAX_LONG_POLL_S:
            case.query["timeout_s"] = MAX_LONG_POLL_S
        response = case.call(headers=auth, timeout=30)
        statuses.add(response.status_code)
        case.validate_response(response, checks=checks)

    return check
