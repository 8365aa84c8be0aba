"""Search (memfs extension, SPEC §7): one store, ``GET …/search``, and every store the
caller can read, ``POST /v1/search``. Full text, by meaning or both (``mode``); every
answer carries ``semantic_index``, how far the vectors are behind the heads.

A caller never sees a hit it could not read: a store named explicitly must pass
:meth:`Principal.require` for ``memory:read`` (an unreachable store is the 404 of an
unknown one); without names, the search covers exactly the stores the caller can read —
a session token its attached stores, a key limited to stores those stores, an
unlimited key every store. The engine answers live memories only.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query, Request
from fastapi.responses import JSONResponse

from memfs.api.auth import Principal
from memfs.api.routes._common import (
    MinImportanceQuery,
    RecordTagQuery,
    RecordTypeQuery,
    doc,
    json_response,
    run,
)
from memfs.core import config
from memfs.core.model import Scope
from memfs.core.query import (
    DEFAULT_SEARCH_LIMIT,
    MAX_QUERY_CHARS,
    MAX_SEARCH_LIMIT,
    SEARCH_SEMANTIC,
)
from memfs.core.records import RecordFilter
from memfs.store import Engine
from memfs.wire import search_hit_to_wire
from memfs.wire.common import LISTING_PREFIX_PATTERN
from memfs.wire.search import SearchRequest, SearchResults

__all__ = ["document_search_modes", "router"]

router = APIRouter()

SearchQuery = Annotated[
    str,
    Query(
        min_length=1,
        max_length=MAX_QUERY_CHARS,
        description='Words, "phrases", prefix*, -excluded; every term must match.',
    ),
]
SearchLimit = Annotated[int, Query(ge=1, le=MAX_SEARCH_LIMIT, description="1 to 100.")]
PathPrefix = Annotated[
    str,
    Query(
        description="Only memories below this prefix (starts and ends with /).",
        json_schema_extra={"pattern": LISTING_PREFIX_PATTERN},
    ),
]
SearchMode = Annotated[
    Literal["auto", "text", "semantic", "hybrid"],
    Query(description="auto: hybrid with an embedding model, else text."),
]


def document_search_modes(document: dict[str, Any]) -> None:
    """Makes ``/openapi.json`` say what this server answers: without an embedding model
    (``$MEMFS_SEARCH_MODEL_DIR``) the modes are ``auto`` and ``text`` only and
    ``semantic`` is false (the others answer 400 search_unavailable)."""
    if config.search_model_dir() is not None:
        return
    text_only = ["auto", "text"]
    for parameter in (
        document.get("paths", {}).get(_STORE_SEARCH, {}).get("get", {}).get("parameters", [])
    ):
        if parameter.get("name") == "mode":
            parameter["schema"]["enum"] = text_only
    request = document.get("components", {}).get("schemas", {}).get("SearchRequest", {})
    properties = request.get("properties", {})
    if "mode" in properties:
        properties["mode"]["enum"] = text_only
    if "semantic" in properties:
        properties["semantic"]["const"] = False


def readable_stores(principal: Principal, store_ids: Sequence[str] | None) -> list[str] | None:
    """The stores a search of ``principal`` covers: ``store_ids`` after checking each
    (``memory:read``), or every store it can read when None (None = all stores).

    Raises:
        PermissionDenied: a key without ``memory:read``.
        NotFound: a named store the caller can't reach (as an unknown id).
    """
    if store_ids is not None:
        for store_id in store_ids:
            principal.require(Scope.READ, store_id)
        return list(dict.fromkeys(store_ids))
    if principal.session is not None:
        return [r.memory_store_id for r in principal.session.resources]
    principal.require(Scope.READ)
    if principal.api_key is not None and principal.api_key.store_ids:
        return list(principal.api_key.store_ids)
    return None


def _answer(
    engine: Engine,
    principal: Principal,
    *,
    query: str,
    store_ids: Sequence[str] | None,
    path_prefix: str,
    limit: int,
    mode: str,
    record_filter: RecordFilter,
) -> dict[str, Any]:
    stores = readable_stores(principal, store_ids)
    hits = principal.caller(engine).search.query(
        query,
        stores,
        path_prefix=path_prefix,
        limit=limit,
        mode=mode,
        record_filter=record_filter,
    )
    lag = engine.search.index_lag()
    return {
        "data": [search_hit_to_wire(hit) for hit in hits],
        "semantic_index": {
            "model": lag.model,
            "pending": lag.pending,
            "lag_seconds": lag.oldest_seconds,
        },
    }


_STORE_SEARCH = "/v1/memory_stores/{memory_store_id}/search"


@router.get(_STORE_SEARCH, responses=doc(SearchResults))
async def search_store(
    request: Request,
    memory_store_id: str,
    q: SearchQuery,
    path_prefix: PathPrefix = "/",
    limit: SearchLimit = DEFAULT_SEARCH_LIMIT,
    mode: SearchMode = "auto",
    record_type: RecordTypeQuery = None,
    tag: RecordTagQuery = None,
    min_importance: MinImportanceQuery = None,
) -> JSONResponse:
    """Ranked hits among the live memories of one store, best first; the record
    filters keep only records (SPEC §7)."""

    def op(engine: Engine, principal: Principal) -> dict[str, Any]:
        return _answer(
            engine,
            principal,
            query=q,
            store_ids=[memory_store_id],
            path_prefix=path_prefix,
            limit=limit,
            mode=mode,
            record_filter=RecordFilter.of(
                record_type=record_type, tag=tag, min_importance=min_importance
            ),
        )

    return json_response(await run(request, op))


@router.post("/v1/search", responses=doc(SearchResults))
async def search_stores(request: Request, body: SearchRequest) -> JSONResponse:
    """Ranked hits across the stores the caller can read (or those named)."""

    def op(engine: Engine, principal: Principal) -> dict[str, Any]:
        return _answer(
            engine,
            principal,
            query=body.query,
            store_ids=body.memory_store_ids,
            path_prefix=body.path_prefix,
            limit=body.limit,
            mode=SEARCH_SEMANTIC if body.semantic else body.mode,
            record_filter=RecordFilter.of(
                record_type=body.record_type, tag=body.tag, min_importance=body.min_importance
            ),
        )

    return json_response(await run(request, op))
