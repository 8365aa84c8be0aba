"""What the memory front ends need from memfs, as one small async port, and its two
adapters: an embedded :class:`~memfs.store.Engine`, and a ``memfs serve`` reached with
a session token through the project's HTTP client (:class:`memfs.remote.MemfsClient`).

:class:`StoreAccess` is deliberately narrow: read a file with its digest, list what lies
below a directory prefix, create, update under a ``content_sha256`` precondition, delete,
move a directory. Everything a memory command means (paths under ``/memories``, line
numbers, the result texts) is :mod:`memfs.memory_tool.files`; everything about who may do
what is here or on the server.

Attribution (SPEC §3): an adapter writes as one actor. The embedded adapter writes as the
session it was opened with (:func:`open_embedded` attaches the stores to a new session,
so every version it writes is ``session_actor``), or as the principal of an HTTP request
(``memfs serve``'s ``/mcp``: the caller's session or API key). The HTTP adapter writes as
whatever its token is; the server records it.

Both adapters run on any event loop anyio supports (trio, asyncio). Engine calls run in
worker threads (``anyio.to_thread.run_sync``): the loop never blocks on the database.

Limitations: a listing over HTTP fetches every memory below the prefix (pages of 100),
since the client drops the ``memory_prefix`` roll-ups; a ``view`` of the top of a very
large store is therefore slower remotely than embedded.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, TypeVar

import anyio.to_thread

from memfs.core import rules
from memfs.core.errors import InvalidInput, NotFound
from memfs.core.model import Access, Actor, Memory, MemoryPrefix, Scope, Session
from memfs.core.query import SearchHit
from memfs.core.visibility import Viewer

if TYPE_CHECKING:
    from memfs.remote.client import MemfsClient
    from memfs.store import Engine

__all__ = [
    "StoreView",
    "EngineAccess",
    "FileInfo",
    "HttpAccess",
    "StoreAccess",
    "StoredFile",
    "attachments_of_session",
    "open_embedded",
]

T = TypeVar("T")

# Page size of the listings an adapter makes (api-contract §3: at most 100).
LISTING_PAGE_LIMIT = 100


@dataclass(frozen=True)
class StoreView:
    """One store as the front ends show it: under ``/memories/<slug>/`` (or at
    ``/memories`` itself when it is the only one).

    Attributes:
        store_id: ``memstore_…``.
        name: the store's name when attached.
        slug: its directory name (SPEC §4 slug rule, collisions suffixed in order).
        access: ``read_write`` or ``read_only``.
        description: the store's description ("" when none).
        instructions: per-attachment guidance for the agent, or None.
    """

    store_id: str
    name: str
    slug: str
    access: Access
    description: str = ""
    instructions: str | None = None

    @property
    def read_only(self) -> bool:
        return self.access is Access.READ_ONLY


@dataclass(frozen=True)
class FileInfo:
    """A memory as a listing shows it: no content.

    Attributes:
        memory_id: ``mem_…``.
        path: the memory path in its store (``/a/b.md``).
        size_bytes: ``content_size_bytes``.
        content_sha256: the head's digest.
    """

    memory_id: str
    path: str
    size_bytes: int
    content_sha256: str


@dataclass(frozen=True)
class StoredFile(FileInfo):
    """A memory with its head content (what a read gives)."""

    content: str = ""


class StoreAccess(Protocol):
    """The stores one front end instance may use, as one actor.

    Every method raises the domain errors of :mod:`memfs.core.errors` (the remote adapter
    adds :class:`memfs.remote.client.ServerUnavailable`); paths are memory paths inside
    one store (SPEC §1).
    """

    async def attachments(self) -> list[StoreView]:
        """The attached stores in attachment order.

        Raises:
            AuthenticationFailed, NotFound, ServerUnavailable.
        """
        ...

    async def read(self, store_id: str, path: str) -> StoredFile | None:
        """The live memory at ``path`` with its content, or None. A read of a record
        (a view, an MCP resource, the read before an edit) moves its ``last_accessed``
        (SPEC §6; remote: the server's full retrieve does).

        Raises:
            NotFound (the store), PermissionDenied, AuthenticationFailed.
        """
        ...

    async def listing(self, store_id: str, prefix: str) -> list[FileInfo]:
        """Every live memory below ``prefix`` (``/`` or ``/dir/``), in path order.

        Raises:
            NotFound (the store), InvalidPath, PermissionDenied, AuthenticationFailed.
        """
        ...

    async def create(self, store_id: str, path: str, content: str) -> None:
        """Creates a memory: one ``created`` version.

        Raises:
            PathConflict, StoreArchived, StoreFull, PermissionDenied, InvalidPath,
            PathTooLong, InvalidContent, ContentTooLarge, NotFound.
        """
        ...

    async def update(
        self,
        store_id: str,
        memory_id: str,
        *,
        content: str | None = None,
        path: str | None = None,
        expected_sha256: str | None = None,
    ) -> None:
        """New content and/or path: one ``modified`` version (none when nothing changes),
        only if the head's digest is still ``expected_sha256`` when given.

        Raises:
            PreconditionFailed, NotFound, PathConflict, StoreArchived, PermissionDenied,
            and the validation errors of :meth:`create`.
        """
        ...

    async def delete(self, store_id: str, memory_id: str) -> None:
        """Soft-deletes a memory: one ``deleted`` version, restorable (SPEC §2).

        Raises:
            NotFound, PermissionDenied.
        """
        ...

    async def search(self, store_ids: Sequence[str], query: str, limit: int) -> list[SearchHit]:
        """Ranked full-text hits among the live memories of ``store_ids`` (SPEC §7).

        Raises:
            InvalidInput (the query, the limit), NotFound, PermissionDenied,
            ServerUnavailable.
        """
        ...

    async def rename_prefix(self, store_id: str, old_prefix: str, new_prefix: str) -> None:
        """Moves every memory below ``old_prefix`` below ``new_prefix`` at once, one
        ``modified`` version each (SPEC §4 directory rename).

        Raises:
            PathConflict, InvalidPath, InvalidInput (into itself), StoreArchived,
            PermissionDenied, NotFound.
        """
        ...

    async def aclose(self) -> None:
        """Releases what the adapter holds (connections; never the engine it was given)."""
        ...


def attachments_of_session(session: Session) -> list[StoreView]:
    """The attachments of a session's resources, slugs by the SPEC §4 rule."""
    resources = session.resources
    slugs = rules.unique_slugs([(r.memory_store_id, r.name) for r in resources])
    return [
        StoreView(
            store_id=r.memory_store_id,
            name=r.name,
            slug=slugs[r.memory_store_id],
            access=r.access,
            description=r.description,
            instructions=r.instructions,
        )
        for r in resources
    ]


def _info(memory: Memory) -> FileInfo:
    return FileInfo(memory.id, memory.path, memory.content_size_bytes, memory.content_sha256)


# A check of the caller's right to act with a scope on a store (``Principal.require``
# of memfs.api.auth); raises PermissionDenied or NotFound.
Require = Callable[[Scope, str], None]


class EngineAccess:
    """:class:`StoreAccess` over an engine in this process.

    Args:
        engine: the store engine (not closed by :meth:`aclose`).
        attachments: what this instance may use.
        actor: recorded as ``created_by`` of every version written.
        require: checks each operation's scope on its store first (an HTTP request's
            principal); None when ``attachments`` is all the policy there is.
        viewer: whose records it sees (SPEC §6; an HTTP request's principal): the
            engine hides the others. None: everything (local use).
    """

    def __init__(
        self,
        engine: Engine,
        attachments: Sequence[StoreView],
        actor: Actor,
        *,
        require: Require | None = None,
        viewer: Viewer | None = None,
    ) -> None:
        self._engine = engine
        self._attachments = list(attachments)
        self.actor = actor
        self._require = require
        # The engine's facades as this caller: it writes as ``actor``, sees as ``viewer``.
        self._caller = engine.for_caller(actor=actor, viewer=viewer)

    async def _call(self, scope: Scope, store_id: str, func: Callable[[], T]) -> T:
        if self._require is not None:
            self._require(scope, store_id)
        return await anyio.to_thread.run_sync(func)

    async def attachments(self) -> list[StoreView]:
        return list(self._attachments)

    async def read(self, store_id: str, path: str) -> StoredFile | None:
        def read() -> StoredFile | None:
            try:
                memory = self._caller.memories.get_by_path(
                    store_id,
                    path,
                    with_content=True,
                )
            except NotFound:
                self._engine.stores.get(store_id)  # a missing store is an error, not None
                return None
            self._engine.records.note_access([memory.id])  # SPEC §6: a view reads a record
            return StoredFile(
                memory.id,
                memory.path,
                memory.content_size_bytes,
                memory.content_sha256,
                memory.content or "",
            )

        return await self._call(Scope.READ, store_id, read)

    async def listing(self, store_id: str, prefix: str) -> list[FileInfo]:
        def listing() -> list[FileInfo]:
            found: list[FileInfo] = []
            cursor: str | None = None
            while True:
                page = self._caller.memories.list(
                    store_id,
                    path_prefix=prefix,
                    limit=LISTING_PAGE_LIMIT,
                    cursor=cursor,
                )
                found.extend(_info(m) for m in page.items if not isinstance(m, MemoryPrefix))
                cursor = page.next_cursor
                if cursor is None or not page.items:
                    return found

        return await self._call(Scope.READ, store_id, listing)

    async def create(self, store_id: str, path: str, content: str) -> None:
        create = functools.partial(
            self._caller.memories.create,
            store_id,
            path,
            content,
        )
        await self._call(Scope.WRITE, store_id, create)

    async def update(
        self,
        store_id: str,
        memory_id: str,
        *,
        content: str | None = None,
        path: str | None = None,
        expected_sha256: str | None = None,
    ) -> None:
        update = functools.partial(
            self._caller.memories.update,
            store_id,
            memory_id,
            content=content,
            path=path,
            expected_sha256=expected_sha256,
        )
        await self._call(Scope.WRITE, store_id, update)

    async def delete(self, store_id: str, memory_id: str) -> None:
        delete = functools.partial(
            self._caller.memories.delete, store_id, memory_id
        )
        await self._call(Scope.DELETE, store_id, delete)

    async def rename_prefix(self, store_id: str, old_prefix: str, new_prefix: str) -> None:
        move = functools.partial(
            self._caller.memories.rename_prefix, store_id, old_prefix, new_prefix
        )
        await self._call(Scope.WRITE, store_id, move)

    async def search(self, store_ids: Sequence[str], query: str, limit: int) -> list[SearchHit]:
        if self._require is not None:
            for store_id in store_ids:
                self._require(Scope.READ, store_id)
        search = functools.partial(
            self._caller.search.query, query, list(store_ids), limit=limit
        )
        return await anyio.to_thread.run_sync(search)

    async def aclose(self) -> None:
        return None


class HttpAccess:
    """:class:`StoreAccess` over a ``memfs serve``, with the stores of the client's
    session token (``GET /v1/sessions/current``).

    Args:
        client: the project's HTTP client, holding the token; closed by :meth:`aclose`.
    """

    def __init__(self, client: MemfsClient) -> None:
        self._client = client

    async def attachments(self) -> list[StoreView]:
        return attachments_of_session(await self._client.retrieve_session())

    async def read(self, store_id: str, path: str) -> StoredFile | None:
        found = await self._client.find_memory_by_path(store_id, path)
        if found is None:
            return None
        memory = await self._client.retrieve_memory(store_id, found.id)
        return StoredFile(
            memory.id,
            memory.path,
            memory.content_size_bytes,
            memory.content_sha256,
            memory.content or "",
        )

    async def listing(self, store_id: str, prefix: str) -> list[FileInfo]:
        memories = await self._client.list_memories(store_id, path_prefix=prefix)
        return [
            FileInfo(m.id, m.path, m.content_size_bytes, m.content_sha256) for m in memories
        ]

    async def create(self, store_id: str, path: str, content: str) -> None:
        await self._client.create_memory(store_id, path, content)

    async def update(
        self,
        store_id: str,
        memory_id: str,
        *,
        content: str | None = None,
        path: str | None = None,
        expected_sha256: str | None = None,
    ) -> None:
        await self._client.update_memory(
            store_id, memory_id, content=content, path=path, expected_sha256=expected_sha256
        )

    async def delete(self, store_id: str, memory_id: str) -> None:
        await self._client.delete_memory(store_id, memory_id)

    async def rename_prefix(self, store_id: str, old_prefix: str, new_prefix: str) -> None:
        await self._client.rename_prefix(store_id, old_prefix, new_prefix)

    async def search(self, store_ids: Sequence[str], query: str, limit: int) -> list[SearchHit]:
        return await self._client.search(store_ids, query, limit=limit)

    async def aclose(self) -> None:
        await self._client.aclose()


def open_embedded(
    engine: Engine, stores: Sequence[tuple[str, Access]], *, title: str | None = None
) -> EngineAccess:
    """Attaches ``stores`` to a new session (no token) and returns an adapter writing as
    that session (blocking: call it off the event loop, or before one runs).

    Args:
        engine: the store engine.
        stores: ``(name_or_id, access)`` pairs in attachment order, 1–8 of them.
        title: the session's title (e.g. ``"memfs mcp"``).

    Raises:
        InvalidInput: no store, more than 8, a store twice; or a name shared by several
            stores. NotFound: an unknown store. StoreArchived: an archived store.
    """
    from memfs.store import ResourceSpec

    if not stores:
        raise InvalidInput("attach at least one memory store")
    specs = [
        ResourceSpec(memory_store_id=engine.stores.find(name).id, access=access)
        for name, access in stores
    ]
    session, _token = engine.sessions.create(specs, with_token=False, title=title)
    return EngineAccess(engine, attachments_of_session(session), Actor.session(session.id))
