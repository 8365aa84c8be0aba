"""``/openapi.json``: FastAPI's document, made to say what the server does.

- The error envelope (api-contract §2) is the documented 4xx of every operation, in
  place of FastAPI's 422.
- OpenAPI links (:data:`LINKS`) say where the ids of a response lead: the store a
  create returns to its memories, a memory to its versions, a page to the next one,
  so that a client (and schemathesis's stateful phase) can walk from one call to the
  next without guessing ids.

What JSON Schema can't state about the values (byte limits, Unicode NFC, rules
between two fields) is said in the descriptions of the request models of :mod:`memfs.wire`.
"""

from __future__ import annotations

from collections.abc import Callable
from http import HTTPStatus
from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi

from memfs.api.routes.search import document_search_modes
from memfs.wire.errors import ErrorEnvelope

__all__ = ["ERROR_STATUSES", "LINKS", "openapi_document"]

# Status codes every operation may answer besides 200.
ERROR_STATUSES = (
    HTTPStatus.BAD_REQUEST,
    HTTPStatus.UNAUTHORIZED,
    HTTPStatus.FORBIDDEN,
    HTTPStatus.NOT_FOUND,
    HTTPStatus.CONFLICT,
    HTTPStatus.REQUEST_ENTITY_TOO_LARGE,
)

_STORE = "/v1/memory_stores/{memory_store_id}"
_MEMORIES = f"{_STORE}/memories"
_MEMORY = f"{_MEMORIES}/{{memory_id}}"
_VERSIONS = f"{_STORE}/memory_versions"
_VERSION = f"{_VERSIONS}/{{memory_version_id}}"
_SESSION = "/v1/sessions/{session_id}"

_STORE_ID = {"memory_store_id": "$response.body#/id"}
_SESSION_ID = {"session_id": "$response.body#/id"}
_MEMORY_IDS = {
    "memory_store_id": "$response.body#/memory_store_id",
    "memory_id": "$response.body#/id",
}
_VERSION_IDS = {
    "memory_store_id": "$response.body#/memory_store_id",
    "memory_version_id": "$response.body#/memory_version_id",
}
_NEXT_PAGE_IN_STORE = {
    "memory_store_id": "$request.path.memory_store_id",
    "page": "$response.body#/next_page",
}

# (method, path) of a 200 response → {link name: (method, path of the target, parameters)}.
LINKS: dict[tuple[str, str], dict[str, tuple[str, str, dict[str, str]]]] = {
    ("post", "/v1/memory_stores"): {
        "RetrieveStore": ("get", _STORE, _STORE_ID),
        "UpdateStore": ("post", _STORE, _STORE_ID),
        "CreateMemory": ("post", _MEMORIES, _STORE_ID),
        "ListMemories": ("get", _MEMORIES, _STORE_ID),
        "RenamePrefix": ("post", f"{_MEMORIES}/rename_prefix", _STORE_ID),
        "ListVersions": ("get", _VERSIONS, _STORE_ID),
        "ListChanges": ("get", f"{_STORE}/changes", _STORE_ID),
        "ListAuditEvents": ("get", f"{_STORE}/audit_events", _STORE_ID),
        "ArchiveStore": ("post", f"{_STORE}/archive", _STORE_ID),
        "DeleteStore": ("delete", _STORE, _STORE_ID),
    },
    ("get", "/v1/memory_stores"): {
        "NextPage": ("get", "/v1/memory_stores", {"page": "$response.body#/next_page"}),
    },
    ("post", _MEMORIES): {
        "RetrieveMemory": ("get", _MEMORY, _MEMORY_IDS),
        "UpdateMemory": ("post", _MEMORY, _MEMORY_IDS),
        "DeleteMemory": ("delete", _MEMORY, _MEMORY_IDS),
        "ForgetMemory": ("post", f"{_MEMORY}/forget", _MEMORY_IDS),
        "RetrieveVersion": ("get", _VERSION, _VERSION_IDS),
        "ListItsVersions": (
            "get",
            _VERSIONS,
            {
                "memory_store_id": "$response.body#/memory_store_id",
                "memory_id": "$response.body#/id",
            },
        ),
    },
    ("post", _MEMORY): {
        "RetrieveVersion": ("get", _VERSION, _VERSION_IDS),
        "ListItsVersions": (
            "get",
            _VERSIONS,
            {
                "memory_store_id": "$response.body#/memory_store_id",
                "memory_id": "$response.body#/id",
            },
        ),
    },
    ("delete", _MEMORY): {
        "RestoreMemory": (
            "post",
            f"{_MEMORY}/restore",
            {"memory_store_id": "$request.path.memory_store_id", "memory_id": "$response.body#/id"},
        ),
    },
    ("get", _MEMORIES): {"NextPage": ("get", _MEMORIES, _NEXT_PAGE_IN_STORE)},
    ("get", _VERSIONS): {"NextPage": ("get", _VERSIONS, _NEXT_PAGE_IN_STORE)},
    ("get", _VERSION): {
        "RedactVersion": (
            "post",
            f"{_VERSION}/redact",
            {
                "memory_store_id": "$response.body#/memory_store_id",
                "memory_version_id": "$response.body#/id",
            },
        ),
    },
    ("post", "/v1/sessions"): {
        "RetrieveSession": ("get", _SESSION, _SESSION_ID),
        "RevokeSession": ("post", f"{_SESSION}/revoke", _SESSION_ID),
        "ArchiveSession": ("post", f"{_SESSION}/archive", _SESSION_ID),
        "DeleteSession": ("delete", _SESSION, _SESSION_ID),
    },
    ("get", "/v1/sessions"): {
        "NextPage": ("get", "/v1/sessions", {"page": "$response.body#/next_page"}),
    },
}


def _add_links(document: dict[str, Any]) -> None:
    paths = document.get("paths", {})
    for (method, path), links in LINKS.items():
        source = paths.get(path, {}).get(method)
        if source is None:
            continue
        documented = {}
        for name, (target_method, target_path, parameters) in links.items():
            target = paths.get(target_path, {}).get(target_method)
            if target is not None:
                documented[name] = {"operationId": target["operationId"], "parameters": parameters}
        source["responses"]["200"]["links"] = documented


def openapi_document(app: FastAPI) -> Callable[[], dict[str, Any]]:
    """The ``app.openapi`` of ``app``: the document above, built once."""

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is not None:
            return app.openapi_schema
        document = get_openapi(
            title=app.title,
            version=app.version,
            description=app.description,
            routes=app.routes,
        )
        components = document.setdefault("components", {}).setdefault("schemas", {})
        envelope = ErrorEnvelope.model_json_schema(
            ref_template="#/components/schemas/{model}"
        )
        components.update(envelope.pop("$defs", {}))
        components["ErrorEnvelope"] = envelope
        components.pop("HTTPValidationError", None)
        components.pop("ValidationError", None)
        error_content = {
            "application/json": {"schema": {"$ref": "#/components/schemas/ErrorEnvelope"}}
        }
        for path_item in document.get("paths", {}).values():
            for operation in path_item.values():
                responses = operation.setdefault("responses", {})
                responses.pop("422", None)
                for status in ERROR_STATUSES:
                    responses[str(int(status))] = {
                        "description": status.phrase,
                        "content": error_content,
                    }
        _add_links(document)
        document_search_modes(document)
        app.openapi_schema = document
        return document

    return openapi
