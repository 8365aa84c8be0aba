"""An in-process stand-in for ``memfs serve``, for the remote-mount tests.

It runs the real :class:`memfs.store.Engine` (SQLite in the test's tmp dir) behind an
``httpx.MockTransport`` that speaks the wire format the client expects (api-contract
§1–§5 and the extension endpoints documented in :mod:`memfs.remote.client`), with the
error envelope of api-contract §2.1. It is deliberately small and independent of
``memfs/api`` (built in parallel); the real server is exercised by the integration
tests.

Faults, for the outbox tests:

* ``down = True``: every request fails with ``httpx.ConnectError`` before reaching
  the engine (the server is unreachable).
* ``lose_responses = n``: the next ``n`` requests are applied, then their responses are
  lost (``httpx.ReadError``): the crash between "server applied" and "client knows".
* ``fail_with_status = [503, …]``: the next requests answer these statuses unapplied.
* ``crash_after_writes = n``: after the n-th further write reached the engine, its
  response is lost and the server goes down (``down`` becomes True): a server killed
  mid-stream of writes, right after committing one.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from http import HTTPStatus
from typing import Any

import httpx
import trio

from memfs.errors import (
    AuthenticationFailed,
    ContentTooLarge,
    HeadVersionRedaction,
    InvalidInput,
    MemfsError,
    NotFound,
    NotRestorable,
    PathConflict,
    PermissionDenied,
    PreconditionFailed,
    StoreArchived,
    StoreFull,
)
from memfs.ids import blob_key_of, sha256_of
from memfs.model import Access, Actor, Session
from memfs.store import Engine
from memfs.wire import memory_to_wire, session_to_wire, store_to_wire, version_to_wire

BASE_URL = "http://memfs.test"

_STATUS: list[tuple[type[MemfsError], HTTPStatus, str]] = [
    # Most specific first.
    (ContentTooLarge, HTTPStatus.REQUEST_ENTITY_TOO_LARGE, "invalid_request_error"),
    (PathConflict, HTTPStatus.CONFLICT, "memory_path_conflict_error"),
    (PreconditionFailed, HTTPStatus.CONFLICT, "memory_precondition_failed_error"),
    (HeadVersionRedaction, HTTPStatus.CONFLICT, "conflict_error"),
    (NotRestorable, HTTPStatus.CONFLICT, "conflict_error"),
    (StoreArchived, HTTPStatus.BAD_REQUEST, "invalid_request_error"),
    (StoreFull, HTTPStatus.BAD_REQUEST, "invalid_request_error"),
    (InvalidInput, HTTPStatus.BAD_REQUEST, "invalid_request_error"),
    (NotFound, HTTPStatus.NOT_FOUND, "not_found_error"),
    (PermissionDenied, HTTPStatus.FORBIDDEN, "permission_error"),
    (AuthenticationFailed, HTTPStatus.UNAUTHORIZED, "authentication_error"),
    (MemfsError, HTTPStatus.INTERNAL_SERVER_ERROR, "api_error"),
]


def error_response(exc: MemfsError) -> httpx.Response:
    """The api-contract §2.1 envelope of ``exc``."""
    status, error_type = next((s, t) for cls, s, t in _STATUS if isinstance(exc, cls))
    error: dict[str, Any] = {
        "type": error_type,
        "message": exc.message,
        "details": {"error_code": exc.code},
    }
    if isinstance(exc, PathConflict):
        error["conflicting_memory_id"] = exc.conflicting_memory_id
        error["conflicting_path"] = exc.conflicting_path
    return httpx.Response(
        status,
        json={"type": "error", "error": error, "request_id": "req_fake"},
        headers={"request-id": "req_fake"},
    )


_ID = r"[A-Za-z0-9_]+"
Handler = Callable[..., Any]


class FakeServer:
    """The fake API over ``engine`` for one session (created here, with its token).

    Attributes:
        session, token: the session the mount uses.
        requests: every request received (method, path, query, JSON body), in order.
        applied: how many requests reached the engine.
    """

    def __init__(self, engine: Engine, resources: list[Any]) -> None:
        self.engine = engine
        session, token = engine.create_session(resources)
        assert token is not None
        self.session: Session = session
        self.token = token
        self.actor = Actor.session(session.id)
        self.down = False
        self.lose_responses = 0
        self.fail_with_status: list[int] = []
        self.crash_after_writes: int | None = None
        self.requests: list[tuple[str, str, dict[str, str], Any]] = []
        self.applied = 0
        self._sha_of_blob: dict[str, str] = {}
        self._changed = trio.Event()
        self._routes: list[tuple[str, re.Pattern[str], Handler]] = [
            ("GET", re.compile(r"/v1/sessions/current"), self._session),
            ("GET", re.compile(rf"/v1/memory_stores/({_ID})"), self._store),
            ("GET", re.compile(rf"/v1/memory_stores/({_ID})/changes"), self._changes),
            ("GET", re.compile(rf"/v1/memory_stores/({_ID})/memories"), self._list),
            ("POST", re.compile(rf"/v1/memory_stores/({_ID})/memories"), self._create),
            (
                "POST",
                re.compile(rf"/v1/memory_stores/({_ID})/memories/rename_prefix"),
                self._rename_prefix,
            ),
            ("GET", re.compile(rf"/v1/memory_stores/({_ID})/memories/({_ID})"), self._retrieve),
            ("POST", re.compile(rf"/v1/memory_stores/({_ID})/memories/({_ID})"), self._update),
            ("DELETE", re.compile(rf"/v1/memory_stores/({_ID})/memories/({_ID})"), self._delete),
            (
                "GET",
                re.compile(rf"/v1/memory_stores/({_ID})/memory_versions/({_ID})"),
                self._version,
            ),
            ("GET", re.compile(rf"/v1/memory_stores/({_ID})/memory_versions"), self._versions),
        ]

    def transport(self) -> httpx.MockTransport:
        return httpx.MockTransport(self.handle)

    def remember(self, content: str) -> None:
        """Records the SHA-256 of content written behind the server's back (the engine's
        change feed names purged bytes by their xxh3 key only)."""
        data = content.encode("utf-8")
        self._sha_of_blob[blob_key_of(data)] = sha256_of(data)

    def notify(self) -> None:
        """Wakes long polls (call after writing to the engine directly)."""
        self._changed.set()
        self._changed = trio.Event()

    # -------------------------------------------------------------- dispatch

    async def handle(self, request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content) if request.content else None
        query = dict(request.url.params)
        self.requests.append((request.method, request.url.path, query, body))
        if self.down:
            raise httpx.ConnectError("connection refused", request=request)
        if self.fail_with_status:
            status = self.fail_with_status.pop(0)
            return httpx.Response(status, json={"type": "error", "error": {"type": "api_error"}})
        if request.headers.get("authorization") != f"Bearer {self.token}":
            return error_response(AuthenticationFailed("invalid credentials"))
        for method, pattern, handler in self._routes:
            match = pattern.fullmatch(request.url.path)
            if method == request.method and match:
                try:
                    result = await handler(*match.groups(), query=query, body=body)
                except MemfsError as exc:
                    response = error_response(exc)
                else:
                    response = httpx.Response(200, json=result)
                if request.method != "GET":
                    self.applied += 1
                    self.notify()
                    if self.crash_after_writes is not None:
                        self.crash_after_writes -= 1
                        if self.crash_after_writes <= 0:
                            self.crash_after_writes = None
                            self.down = True
                            raise httpx.ReadError("server killed", request=request)
                if self.lose_responses:
                    self.lose_responses -= 1
                    raise httpx.ReadError("connection reset by peer", request=request)
                return response
        return error_response(NotFound(f"no route {request.method} {request.url.path}"))

    def _require(self, store_id: str, *, write: bool) -> None:
        resource = next((r for r in self.session.resources if r.memory_store_id == store_id), None)
        if resource is None:
            raise PermissionDenied("store not attached", code="store_not_allowed")
        if write and resource.access is Access.READ_ONLY:
            raise PermissionDenied("read-only attachment", code="read_only_attachment")

    # ---------------------------------------------------------------- routes

    async def _session(self, *, query: dict[str, str], body: Any) -> Any:
        return session_to_wire(self.session)

    async def _store(self, store_id: str, *, query: dict[str, str], body: Any) -> Any:
        self._require(store_id, write=False)
        return store_to_wire(self.engine.get_store(store_id))

    async def _list(self, store_id: str, *, query: dict[str, str], body: Any) -> Any:
        self._require(store_id, write=False)
        page = self.engine.list_memories(
            store_id,
            path_prefix=query.get("path_prefix", "/"),
            depth=int(query.get("depth", 0)),
            limit=int(query.get("limit", 20)),
            cursor=query.get("page"),
        )
        data = []
        for item in page.items:
            if hasattr(item, "id"):
                data.append(memory_to_wire(item, full=False))  # type: ignore[arg-type]
            else:
                data.append({"type": "memory_prefix", "path": item.path})
        return {"data": data, "next_page": page.next_cursor}

    async def _create(self, store_id: str, *, query: dict[str, str], body: Any) -> Any:
        self._require(store_id, write=True)
        self.remember(body["content"])
        memory = self.engine.create_memory(
            store_id, body["path"], body["content"], actor=self.actor, metadata=body.get("metadata")
        )
        return memory_to_wire(memory, full=query.get("view") == "full")

    async def _rename_prefix(self, store_id: str, *, query: dict[str, str], body: Any) -> Any:
        self._require(store_id, write=True)
        moved = self.engine.rename_prefix(
            store_id, body["old_prefix"], body["new_prefix"], actor=self.actor
        )
        return {"data": [memory_to_wire(m, full=False) for m in moved], "next_page": None}

    async def _retrieve(
        self, store_id: str, memory_id: str, *, query: dict[str, str], body: Any
    ) -> Any:
        self._require(store_id, write=False)
        memory = self.engine.get_memory(store_id, memory_id)
        return memory_to_wire(memory, full=query.get("view", "full") == "full")

    async def _update(
        self, store_id: str, memory_id: str, *, query: dict[str, str], body: Any
    ) -> Any:
        self._require(store_id, write=True)
        precondition = body.get("precondition") or {}
        if body.get("content") is not None:
            self.remember(body["content"])
        memory = self.engine.update_memory(
            store_id,
            memory_id,
            actor=self.actor,
            content=body.get("content"),
            path=body.get("path"),
            expected_sha256=precondition.get("content_sha256"),
            metadata=body.get("metadata"),
            replace=bool(body.get("replace", False)),
        )
        return memory_to_wire(memory, full=query.get("view") == "full")

    async def _delete(
        self, store_id: str, memory_id: str, *, query: dict[str, str], body: Any
    ) -> Any:
        self._require(store_id, write=True)
        self.engine.delete_memory(
            store_id,
            memory_id,
            actor=self.actor,
            expected_sha256=query.get("expected_content_sha256"),
        )
        return {"id": memory_id, "type": "memory_deleted"}

    async def _version(
        self, store_id: str, version_id: str, *, query: dict[str, str], body: Any
    ) -> Any:
        self._require(store_id, write=False)
        version = self.engine.get_version(store_id, version_id)
        return version_to_wire(version, full=query.get("view", "full") == "full")

    async def _versions(self, store_id: str, *, query: dict[str, str], body: Any) -> Any:
        self._require(store_id, write=False)
        page = self.engine.list_versions(
            store_id, memory_id=query.get("memory_id"), limit=int(query.get("limit", 20))
        )
        return {"data": [version_to_wire(v, full=False) for v in page.items], "next_page": None}

    async def _changes(self, store_id: str, *, query: dict[str, str], body: Any) -> Any:
        self._require(store_id, write=False)
        after = int(query.get("after", 0))
        timeout_s = float(query.get("timeout_s", 0))
        limit = int(query.get("limit", 1000))
        changes = self.engine.changes_since(store_id, after, limit=limit)
        last_seq = self.engine.last_change_seq(store_id)
        if not changes and timeout_s > 0 and after <= last_seq:
            with trio.move_on_after(timeout_s):
                await self._changed.wait()
            changes = self.engine.changes_since(store_id, after, limit=limit)
            last_seq = self.engine.last_change_seq(store_id)
        return {
            "data": [
                {
                    "type": "memory_store_change",
                    "seq": c.seq,
                    "memory_store_id": c.memory_store_id,
                    "kind": c.kind.value,
                    "memory_id": c.memory_id,
                    "path": c.path,
                    "old_path": c.old_path,
                    "content_sha256": c.content_sha256
                    or self._sha_of_blob.get(c.blob_key or ""),
                    "memory_version_id": c.memory_version_id,
                    "created_at": c.created_at.isoformat(),
                }
                for c in changes
            ],
            "last_seq": last_seq,
        }
