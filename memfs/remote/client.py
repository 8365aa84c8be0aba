"""An async HTTP client of the memfs API for a mount daemon that holds only a session
token (SPEC §3: "the mount daemon inside a sandbox holds only that token").

It speaks the wire format of api-contract §1–§5 plus three extension endpoints the API
serves for remote mounts (SPEC §1 allows extra endpoints)::

    GET  /v1/sessions/current
        The session the bearer token belongs to, as ``GET /v1/sessions/{id}`` returns
        it (api-contract §7.2 resources with ``access`` and ``mount_path``), without its
        token. Only a session token may call it: an API key gets 403
        ``permission_error`` (``error_code: session_not_allowed``). The route must be
        registered before ``GET /v1/sessions/{session_id}``.

    POST /v1/memory_stores/{memory_store_id}/memories/rename_prefix
        Body:     {"old_prefix": "/a/", "new_prefix": "/b/"}
        Response: {"data": [memory, ...], "next_page": null}
        Moves every live memory under ``old_prefix`` below ``new_prefix`` in one
        transaction, one ``modified`` version each, ids kept (SPEC §4 directory
        rename; ``engine.memories.rename_prefix``). ``data`` holds the moved memories with
        ``view=basic`` (``content: null``) in new-path order; ``[]`` when nothing was
        under ``old_prefix`` (so a replayed request is harmless). Both prefixes must
        end with ``/``, and neither may be ``/``. Errors: 400 ``invalid_request_error``
        (``invalid_path``, ``invalid_input`` for a move into itself, ``store_archived``),
        403 (read-only attachment), 404 (store), 409 ``memory_path_conflict_error``
        with ``conflicting_memory_id``/``conflicting_path`` (a destination is taken by a
        memory outside the move; nothing moved). Needs ``memory:write`` or a
        ``read_write`` attachment. The route must be registered before
        ``POST …/memories/{memory_id}``, or that route captures ``rename_prefix`` as an id.

    GET  /v1/memory_stores/{memory_store_id}/changes?after=SEQ&timeout_s=N&limit=L
        Response: {"data": [change, ...], "last_seq": N}
        The store's change feed (``engine.feed.changes_since``), a long poll. ``after``
        (int ≥ 0, default 0) is the last seq the caller has seen. If changes with
        ``seq > after`` exist, up to ``limit`` (1–1000, default 1000) of them are
        returned at once, oldest first. Otherwise the server waits up to ``timeout_s``
        (0–30 s, default 0) for one and then answers, with ``data: []`` if none came.
        It never waits when ``after > last_seq`` (the feed was reset; the caller must
        resynchronize). ``last_seq`` is the store's newest seq when the answer was
        made. Each change is::

            {"type": "memory_store_change", "seq": 12,
             "memory_store_id": "memstore_…",
             "kind": "memory_written" | "memory_deleted" | "version_redacted" |
                     "store_updated" | "store_archived" | "store_deleted" | "blob_purged",
             "memory_id": "mem_…" | null, "path": "/…" | null, "old_path": "/…" | null,
             "content_sha256": "<64 hex>" | null,      # blob_purged: the erased bytes;
                                                        # memory_written: the new head's
             "memory_version_id": "memver_…" | null,   # memory_written: the new head
             "created_at": "<RFC 3339>"}

        Readable by anyone who may read the store (``memory:read``, or a session the
        store is attached to). A deleted store keeps answering until its final
        ``store_deleted`` entry has been read (then 404). Errors: 400 for ``after`` < 0,
        ``timeout_s`` or ``limit`` out of range; 404 unknown store.

Errors come back as the typed errors of :mod:`memfs.core.errors`, translated from the error
envelope of api-contract §2.1 by the registry the server sends them with
(:func:`memfs.wire.errors.error_class_for`, the inverse of its table). Every
failure that says nothing about the request itself (no connection, a timeout, a 5xx,
408, 429, a body that is not JSON) raises
:class:`ServerUnavailable`, so that the caller can queue the write in its outbox and try
again later::

    MemfsError
    ├── …the domain tree of memfs.core.errors, mapped from 4xx responses
    └── BackendUnavailable         (memfs.core.errors: "the store can't be asked now")
        └── ServerUnavailable      transport failure, timeout, 5xx, 408, 429

The client never retries: retrying belongs to the outbox (:mod:`memfs.remote.replay`),
which knows what is safe to repeat.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncGenerator, Mapping, Sequence
from http import HTTPStatus
from typing import Any, Self

import httpx

from memfs.core.errors import (
    BackendUnavailable,
    InvalidMetadata,
    MemfsError,
    PathConflict,
    PreconditionFailed,
)
from memfs.core.model import Session
from memfs.core.query import SearchHit
from memfs.wire.changes import ChangePage
from memfs.wire.errors import error_class_for
from memfs.wire.memories import MemoryOut
from memfs.wire.search import SearchHitOut
from memfs.wire.stores import MemoryStoreOut
from memfs.wire.versions import MemoryVersionOut

__all__ = [
    "BETA_HEADER",
    "DEFAULT_CONNECT_TIMEOUT_S",
    "DEFAULT_TIMEOUT_S",
    "LIST_PAGE_LIMIT",
    "LONG_POLL_MARGIN_S",
    "MAX_LONG_POLL_TIMEOUT_S",
    "MemfsClient",
    "ServerUnavailable",
    "error_from_response",
]

log = logging.getLogger(__name__)

# Timeouts of one request; a long poll adds its own wait to the read timeout.
DEFAULT_TIMEOUT_S = 10.0
DEFAULT_CONNECT_TIMEOUT_S = 5.0
LONG_POLL_MARGIN_S = 10.0
# The longest wait the server grants one long poll (extension endpoint above).
MAX_LONG_POLL_TIMEOUT_S = 30.0
# api-contract §3/§5.10: at most 100 items per page with view=basic.
LIST_PAGE_LIMIT = 100
# api-contract §1.2: the beta token the SDK sends; the server may require it.
BETA_HEADER = "agent-memory-2026-07-22"
USER_AGENT = "memfs-mount/0.1"


class ServerUnavailable(BackendUnavailable):
    """Raised when the server could not be asked or did not answer the question:
    no connection, a timeout, a 5xx, 408 or 429, or a success body that is not a JSON
    object. Whether a write sent just before was applied is unknown; the outbox
    (SPEC §4 "writes queue durably and replay in order") makes its replay idempotent.

    Attributes:
        status: the HTTP status, or None for a transport failure.
    """

    code = "server_unavailable"

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


# ------------------------------------------------------------------ errors

# Statuses that say "ask again later", not "your request is wrong" (api-contract §2.3
# lists them among the ones the SDK retries).
_TRANSIENT_STATUSES = frozenset({HTTPStatus.REQUEST_TIMEOUT, HTTPStatus.TOO_MANY_REQUESTS})


def error_from_response(response: httpx.Response) -> MemfsError:
    """The typed error of a non-2xx ``response`` (api-contract §2.1 envelope).

    Returns:
        :class:`ServerUnavailable` for 5xx, 408 and 429; else the class
        :func:`memfs.wire.errors.error_class_for` picks (a plain :class:`MemfsError` for a
        status no class is sent with), carrying ``error.message`` as its message and
        ``details.error_code`` as its ``code`` (so e.g. a 403 ``read_only_attachment``
        stays distinguishable).
        :class:`PathConflict` gets ``conflicting_memory_id``/``conflicting_path`` from
        the error object (empty strings when absent); :class:`PreconditionFailed` gets
        ``actual_sha256`` from ``error.actual_content_sha256`` if the server sends it,
        else ``""`` (unknown). The request id is added as an exception note.
    """
    status = response.status_code
    request_id = response.headers.get("request-id")
    error: Mapping[str, Any] = {}
    try:
        body = response.json()
    except (json.JSONDecodeError, UnicodeDecodeError):
        body = None
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        error = body["error"]
    message = error.get("message")
    if not isinstance(message, str) or not message:
        message = f"HTTP {status} {response.reason_phrase}".strip()
    error_type = error.get("type") if isinstance(error.get("type"), str) else None
    details = error.get("details")
    error_code = details.get("error_code") if isinstance(details, dict) else None
    if not isinstance(error_code, str):
        error_code = None

    exc: MemfsError
    if status >= HTTPStatus.INTERNAL_SERVER_ERROR or status in _TRANSIENT_STATUSES:
        exc = ServerUnavailable(f"the server answered {status}: {message}", status=status)
    else:
        cls = error_class_for(status, error_type, error_code)
        if issubclass(cls, PathConflict):
            exc = cls(
                message,
                conflicting_memory_id=error.get("conflicting_memory_id") or None,
                conflicting_path=error.get("conflicting_path") or None,
            )
        elif issubclass(cls, PreconditionFailed):
            exc = cls(message, actual_sha256=str(error.get("actual_content_sha256") or ""))
        elif issubclass(cls, InvalidMetadata):
            exc = cls([message])
            exc.message = message
            exc.args = (message,)
        else:
            exc = cls(message)
        if error_code is not None:
            exc.code = error_code
    exc.add_note(f"HTTP {status} {response.request.method} {response.request.url.path}")
    if request_id:
        exc.add_note(f"request-id: {request_id}")
    return exc


# ---------------------------------------------------------------- the client


class MemfsClient:
    """The memfs API as seen by one session token.

    Use it as an async context manager, or call :meth:`aclose`. Every method raises
    the domain errors of :mod:`memfs.core.errors` or :class:`ServerUnavailable`.

    Args:
        base_url: the server, e.g. ``http://127.0.0.1:8765``.
        token: the session token ``memfs_st_…`` (an API key works too, except for
            :meth:`retrieve_session`).
        transport: an httpx transport to use instead of the network (tests:
            ``httpx.MockTransport``, ``httpx.ASGITransport``).
        timeout_s: read/write/pool timeout of one request.
        connect_timeout_s: connect timeout.
    """

    def __init__(
        self,
        base_url: str,
        token: str,
        *,
        transport: httpx.AsyncBaseTransport | None = None,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        connect_timeout_s: float = DEFAULT_CONNECT_TIMEOUT_S,
    ) -> None:
        self._timeout = httpx.Timeout(timeout_s, connect=connect_timeout_s)
        self._http = httpx.AsyncClient(
            base_url=base_url,
            transport=transport,
            timeout=self._timeout,
            headers={
                "authorization": f"Bearer {token}",
                "anthropic-beta": BETA_HEADER,
                "accept": "application/json",
                "user-agent": USER_AGENT,
            },
        )

    @property
    def base_url(self) -> str:
        """The server's URL, as given."""
        return str(self._http.base_url)

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Closes the connection pool."""
        await self._http.aclose()

    async def _request(
        self,
        method: str,
        url: str,
        *,
        params: Mapping[str, str | int] | None = None,
        body: Mapping[str, Any] | None = None,
        request_timeout: httpx.Timeout | None = None,
    ) -> dict[str, Any]:
        try:
            response = await self._http.request(
                method,
                url,
                params=params,
                json=body,
                timeout=request_timeout if request_timeout is not None else self._timeout,
            )
        except httpx.TransportError as exc:
            raise ServerUnavailable(f"{method} {url}: {type(exc).__name__}: {exc}") from exc
        if not response.is_success:
            raise error_from_response(response)
        try:
            data = response.json()
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise ServerUnavailable(
                f"{method} {url}: the server answered {response.status_code} with a body "
                "that is not JSON",
                status=response.status_code,
            ) from exc
        if not isinstance(data, dict):
            raise ServerUnavailable(
                f"{method} {url}: the server answered with JSON that is not an object",
                status=response.status_code,
            )
        return data

    # ------------------------------------------------------------ sessions

    async def retrieve_session(self, session_id: str | None = None) -> Session:
        """The session of the token (``GET /v1/sessions/current``), or the session
        ``session_id`` (``GET /v1/sessions/{id}``).

        Returns:
            The session with its resources: store ids, access modes, mount paths.

        Raises:
            AuthenticationFailed, PermissionDenied, NotFound, ServerUnavailable.
        """
        which = "current" if session_id is None else session_id
        return Session.model_validate(await self._request("GET", f"/v1/sessions/{which}"))

    # -------------------------------------------------------------- stores

    async def retrieve_store(self, store_id: str) -> MemoryStoreOut:
        """``GET /v1/memory_stores/{id}`` (api-contract §5.2), archived ones included.

        Raises:
            NotFound, PermissionDenied, AuthenticationFailed, ServerUnavailable.
        """
        return MemoryStoreOut.model_validate(await self._request("GET", _store_url(store_id)))

    # ------------------------------------------------------------ memories

    async def list_memories(
        self,
        store_id: str,
        *,
        path_prefix: str | None = None,
        depth: int | None = None,
        at: str | None = None,
    ) -> list[MemoryOut]:
        """Every live memory of a store (or below ``path_prefix``), following
        ``next_page`` to the end (api-contract §3, §5.10), ``view=basic``: contents are
        None, digests and sizes are set. ``memory_prefix`` items (``depth`` > 0) are
        left out. ``at``: the store as it was at that point (SPEC §10, the ``at=``
        extension).

        Raises:
            NotFound, InvalidPath (a prefix without a trailing ``/``), InvalidPoint,
            PermissionDenied, AuthenticationFailed, ServerUnavailable.
        """
        result: list[MemoryOut] = []
        async for page in self.memory_pages(
            store_id, path_prefix=path_prefix, depth=depth, at=at
        ):
            result.extend(page)
        return result

    async def memory_pages(
        self,
        store_id: str,
        *,
        path_prefix: str | None = None,
        depth: int | None = None,
        at: str | None = None,
        limit: int = LIST_PAGE_LIMIT,
    ) -> AsyncGenerator[list[MemoryOut], None]:
        """:meth:`list_memories` one page (up to ``limit`` requested items) at a time,
        so that a caller may stop early; same errors."""
        params: dict[str, str | int] = {"view": "basic", "limit": limit}
        if path_prefix is not None:
            params["path_prefix"] = path_prefix
        if depth is not None:
            params["depth"] = depth
        if at is not None:
            params["at"] = at
        page: str | None = None
        while True:
            query = dict(params) if page is None else {**params, "page": page}
            data = await self._request("GET", _memories_url(store_id), params=query)
            items = data.get("data") or []
            yield [
                MemoryOut.model_validate(item) for item in items if item.get("type") == "memory"
            ]
            page = data.get("next_page")
            # api-contract §3: a cursor with an empty page would loop forever.
            if not page or not items:
                return

    async def find_memory_by_path(self, store_id: str, path: str) -> MemoryOut | None:
        """The live memory at exactly ``path``, or None (a ``depth=1`` listing of its
        directory; the API has no lookup by path).

        Raises:
            NotFound (the store), PermissionDenied, AuthenticationFailed,
            ServerUnavailable.
        """
        parent = path.rsplit("/", 1)[0] + "/"
        for memory in await self.list_memories(store_id, path_prefix=parent, depth=1):
            if memory.path == path:
                return memory
        return None

    async def retrieve_memory(self, store_id: str, memory_id: str) -> MemoryOut:
        """``GET …/memories/{id}?view=full`` (api-contract §5.8): the memory with content.

        Raises:
            NotFound (unknown, deleted, other store), PermissionDenied,
            AuthenticationFailed, ServerUnavailable.
        """
        data = await self._request("GET", _memory_url(store_id, memory_id), params={"view": "full"})
        return MemoryOut.model_validate(data)

    async def retrieve_version(self, store_id: str, version_id: str) -> MemoryVersionOut:
        """``GET …/memory_versions/{id}?view=full`` (api-contract §5.13), with content
        unless it is a ``deleted`` or redacted version.

        Raises:
            NotFound, PermissionDenied, AuthenticationFailed, ServerUnavailable.
        """
        data = await self._request(
            "GET",
            f"{_store_url(store_id)}/memory_versions/{version_id}",
            params={"view": "full"},
        )
        return MemoryVersionOut.model_validate(data)

    async def newest_version_id(self, store_id: str) -> str | None:
        """The id of the store's newest version (``GET …/memory_versions?limit=1``,
        newest first), None when it has none: the point ``now`` made fixed.

        Raises:
            NotFound, PermissionDenied, AuthenticationFailed, ServerUnavailable.
        """
        data = await self._request(
            "GET", f"{_store_url(store_id)}/memory_versions", params={"limit": 1}
        )
        items = data.get("data") or []
        return str(items[0]["id"]) if items else None

    async def snapshot_name(self, store_id: str, snapshot_id: str) -> str:
        """The name of a snapshot by ``snap_…`` id (``GET …/snapshots/{id}``).

        Raises:
            NotFound, PermissionDenied, AuthenticationFailed, ServerUnavailable.
        """
        data = await self._request("GET", f"{_store_url(store_id)}/snapshots/{snapshot_id}")
        return str(data["name"])

    async def list_versions(self, store_id: str, memory_id: str) -> list[MemoryVersionOut]:
        """Every version of one memory, newest first (``GET …/memory_versions?memory_id=``,
        api-contract §5.12, ``view=basic``: no contents), following ``next_page``.

        Raises:
            NotFound (the store), PermissionDenied, AuthenticationFailed,
            ServerUnavailable.
        """
        params: dict[str, str | int] = {"memory_id": memory_id, "limit": LIST_PAGE_LIMIT}
        result: list[MemoryVersionOut] = []
        page: str | None = None
        while True:
            query = dict(params) if page is None else {**params, "page": page}
            data = await self._request(
                "GET", f"{_store_url(store_id)}/memory_versions", params=query
            )
            items = data.get("data") or []
            result.extend(MemoryVersionOut.model_validate(item) for item in items)
            page = data.get("next_page")
            if not page or not items:
                return result

    async def create_memory(
        self, store_id: str, path: str, content: str, *, metadata: dict[str, str] | None = None
    ) -> MemoryOut:
        """``POST …/memories`` (api-contract §5.7); returns the new memory (``view=basic``,
        so ``content`` is None: the caller has it). ``metadata`` is the memfs extension
        of SPEC §1 (sent only when given).

        Raises:
            PathConflict (path, an ancestor or a descendant taken; names the blocker),
            StoreArchived, StoreFull, PermissionDenied (read-only attachment),
            InvalidPath, PathTooLong, InvalidContent, ContentTooLarge, NotFound,
            AuthenticationFailed, ServerUnavailable.
        """
        data = await self._request(
            "POST",
            _memories_url(store_id),
            params={"view": "basic"},
            body={"path": path, "content": content}
            | ({} if metadata is None else {"metadata": metadata}),
        )
        return MemoryOut.model_validate(data)

    async def update_memory(
        self,
        store_id: str,
        memory_id: str,
        *,
        content: str | None = None,
        path: str | None = None,
        expected_sha256: str | None = None,
        metadata: dict[str, str] | None = None,
        replace: bool = False,
    ) -> MemoryOut:
        """``POST …/memories/{id}`` (api-contract §5.9): new content and/or path, with a
        ``content_sha256`` precondition when ``expected_sha256`` is given (the digest
        the file had when it was opened, SPEC §4 concurrent writers). An update that
        changes nothing writes no version and returns the memory as it is.
        ``metadata`` (memfs extension) replaces the memory's metadata when given.
        ``replace`` (memfs extension, body ``"replace": true``): a live memory already
        at the new ``path`` is soft-deleted in the same transaction, rename(2) over an
        existing file; without it an occupied path raises PathConflict.

        Returns:
            The memory after the update (``view=basic``).

        Raises:
            PreconditionFailed (``actual_sha256`` is the head's digest), PathConflict
            (new path taken; with ``replace``, only by an ancestor or a descendant),
            NotFound, StoreArchived, PermissionDenied, the validation errors of
            :meth:`create_memory`, AuthenticationFailed, ServerUnavailable.
        """
        body: dict[str, Any] = {}
        if content is not None:
            body["content"] = content
        if path is not None:
            body["path"] = path
        if metadata is not None:
            body["metadata"] = metadata
        if expected_sha256 is not None:
            body["precondition"] = {"type": "content_sha256", "content_sha256": expected_sha256}
        if replace:
            body["replace"] = True
        data = await self._request(
            "POST", _memory_url(store_id, memory_id), params={"view": "basic"}, body=body
        )
        return MemoryOut.model_validate(data)

    async def delete_memory(
        self, store_id: str, memory_id: str, *, expected_sha256: str | None = None
    ) -> None:
        """``DELETE …/memories/{id}`` (api-contract §5.11), a soft delete, only if the
        head's digest is still ``expected_sha256`` when given.

        Raises:
            PreconditionFailed, NotFound (unknown or already deleted),
            PermissionDenied, AuthenticationFailed, ServerUnavailable.
        """
        params = {} if expected_sha256 is None else {"expected_content_sha256": expected_sha256}
        await self._request("DELETE", _memory_url(store_id, memory_id), params=params)

    async def search(self, store_ids: Sequence[str], query: str, *, limit: int) -> list[SearchHit]:
        """``POST /v1/search`` (memfs extension, SPEC §7) over ``store_ids``.

        Raises:
            InvalidInput, NotFound, PermissionDenied, AuthenticationFailed,
            ServerUnavailable.
        """
        body = {"query": query, "memory_store_ids": list(store_ids), "limit": limit}
        data = await self._request("POST", "/v1/search", body=body)
        hits = [SearchHitOut.model_validate(item) for item in data.get("data", [])]
        return [
            SearchHit(
                store_id=hit.memory_store_id,
                memory_id=hit.memory_id,
                path=hit.path,
                score=hit.score,
                snippet=hit.snippet,
            )
            for hit in hits
        ]

    async def rename_prefix(
        self, store_id: str, old_prefix: str, new_prefix: str
    ) -> list[MemoryOut]:
        """Directory rename: ``POST …/memories/rename_prefix`` (extension, wire shape in
        the module docstring). Returns the moved memories in new-path order.

        Raises:
            PathConflict, InvalidPath, InvalidInput, StoreArchived, NotFound,
            PermissionDenied, AuthenticationFailed, ServerUnavailable.
        """
        data = await self._request(
            "POST",
            f"{_memories_url(store_id)}/rename_prefix",
            body={"old_prefix": old_prefix, "new_prefix": new_prefix},
        )
        return [MemoryOut.model_validate(item) for item in data.get("data") or []]

    # --------------------------------------------------------- change feed

    async def changes(
        self, store_id: str, *, after: int, timeout_s: float = 0.0, limit: int | None = None
    ) -> ChangePage:
        """The store's changes with ``seq > after`` (extension long poll, wire shape in
        the module docstring). Waits up to ``timeout_s`` (capped at
        :data:`MAX_LONG_POLL_TIMEOUT_S`) for the first one when there is none.

        Raises:
            NotFound (store unknown, or deleted and its feed fully read),
            PermissionDenied, AuthenticationFailed, ServerUnavailable.
        """
        wait_s = max(0.0, min(timeout_s, MAX_LONG_POLL_TIMEOUT_S))
        params: dict[str, str | int] = {"after": after, "timeout_s": _seconds(wait_s)}
        if limit is not None:
            params["limit"] = limit
        timeout = self._timeout
        if wait_s:
            timeout = httpx.Timeout(
                (self._timeout.read or DEFAULT_TIMEOUT_S) + wait_s + LONG_POLL_MARGIN_S,
                connect=self._timeout.connect,
            )
        data = await self._request(
            "GET", f"{_store_url(store_id)}/changes", params=params, request_timeout=timeout
        )
        return ChangePage.model_validate(data)


def _seconds(value: float) -> str | int:
    return int(value) if float(value).is_integer() else repr(value)


def _store_url(store_id: str) -> str:
    return f"/v1/memory_stores/{store_id}"


def _memories_url(store_id: str) -> str:
    return f"{_store_url(store_id)}/memories"


def _memory_url(store_id: str, memory_id: str) -> str:
    return f"{_memories_url(store_id)}/{memory_id}"
