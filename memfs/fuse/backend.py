"""What a mount needs from a store, as an async interface, and its embedded implementation.

The FUSE layer never sees SQL, HTTP or the engine: it talks to a :class:`Backend`. Two
implementations, one FUSE layer (issue 4):

* :class:`EmbeddedBackend` wraps :class:`memfs.store.Engine` in the same process,
  running every engine call in a worker thread (``trio.to_thread.run_sync``) so the
  trio loop that serves the kernel never blocks;
* :class:`memfs.remote.backend.RemoteBackend` talks to a ``memfs serve`` elsewhere with
  a session token, through a local content cache and a durable outbox.

Both raise only the domain errors of :mod:`memfs.errors` (a remote backend adds
:class:`BackendUnavailable` for "the server can't be asked now").

Writes are attributed to the session the backend opened with :meth:`Backend.open_session`
(SPEC §3: writes through a mount are attributed to ``session_actor {session_id}``). A
backend may come with its session already (a session token): then
:meth:`Backend.preset_session` names its stores, access modes and mount paths.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Protocol, TypeVar

import trio

from memfs.errors import MemfsError
from memfs.model import Access, Actor, Change, Memory, MemoryStore, Session

if TYPE_CHECKING:
    from memfs.store import Engine

__all__ = [
    "EMBEDDED_CHANGE_POLL_INTERVAL_S",
    "AttachmentSpec",
    "Backend",
    "BackendEvent",
    "BackendStatistics",
    "BackendUnavailable",
    "EmbeddedBackend",
]

T = TypeVar("T")

# How often an embedded backend looks at the engine's change feed while a caller waits
# for changes (the engine has no notification; SPEC §4 asks for about one second).
EMBEDDED_CHANGE_POLL_INTERVAL_S = 0.05
_PASSWORD_IN_URL_RE = re.compile(r"(://[^:/@]+:)[^@]*@")


class BackendUnavailable(MemfsError):
    """Raised when the store can't be asked now (a remote server is unreachable or
    answered 5xx); nothing about the request itself is wrong, and asking again later
    may succeed. Reads of uncached content fail with it (EIO); writes are queued by the
    backend instead of raising it."""

    code = "backend_unavailable"


@dataclass(frozen=True)
class BackendEvent:
    """Something a backend met on its own, outside any request of the kernel (e.g. while
    replaying queued writes), shown by ``memfs status``.

    Attributes:
        at: when (UTC).
        path: the memory path concerned ("" when none).
        message: one line for people.
        conflict_path: for a conflict: where this mount's content was saved.
        saved_to: for a refused write: where its bytes are kept locally.
        error: for a refused write: the refusal (its errno is shown).
    """

    at: datetime
    path: str
    message: str
    conflict_path: str | None = None
    saved_to: str | None = None
    error: MemfsError | None = None


@dataclass(frozen=True)
class BackendStatistics:
    """A snapshot of a backend for ``memfs status`` (issue 4: outbox depth, server state,
    last errors, conflicts).

    Attributes:
        kind: ``embedded`` or ``remote``.
        location: the database URL (password hidden) or the server URL.
        server_state: ``in-process`` (embedded), ``reachable``, ``unreachable`` or
            ``unknown`` (nothing asked yet).
        outbox_depth: writes accepted by the mount and not yet confirmed by the server.
        outbox_oldest_at: when the oldest of them was accepted.
        cache_entries, cache_size_bytes, cache_max_size_bytes: the backend's own
            content cache (the remote disk cache); 0 when it has none.
        conflict_count, conflicts: conflicts the backend resolved (both contents kept),
            since start; the newest few.
        rejected_count, rejected: writes the server refused for good (bytes kept).
        error_count, last_errors: failures to reach the store.
    """

    kind: str
    location: str
    server_state: str
    outbox_depth: int = 0
    outbox_oldest_at: datetime | None = None
    cache_entries: int = 0
    cache_size_bytes: int = 0
    cache_max_size_bytes: int = 0
    conflict_count: int = 0
    conflicts: tuple[BackendEvent, ...] = ()
    rejected_count: int = 0
    rejected: tuple[BackendEvent, ...] = ()
    error_count: int = 0
    last_errors: tuple[BackendEvent, ...] = ()


@dataclass(frozen=True)
class AttachmentSpec:
    """One store to attach to the mount's session.

    Attributes:
        store_id: the ``memstore_…`` id.
        read_only: True for a ``read_only`` attachment (``--store NAME:ro``, or a
            non-default store of a flat layout).
    """

    store_id: str
    read_only: bool


class Backend(Protocol):
    """The store as seen by a mount. Every method may raise :class:`memfs.errors.MemfsError`
    subclasses (NotFound, StoreArchived, PathConflict, PreconditionFailed, …), nothing else
    on purpose."""

    async def preset_session(self) -> Session | None:
        """The session this backend is bound to before any mount (a remote backend holds
        a session token: its resources are the stores to mount, with their access
        modes and mount paths), or None when the mount makes its own session with
        :meth:`open_session` (embedded). Raises AuthenticationFailed,
        BackendUnavailable."""
        ...

    async def resolve_store(self, name_or_id: str) -> MemoryStore:
        """A store by id, exact name or slug. Raises NotFound, InvalidInput (ambiguous)."""
        ...

    async def get_store(self, store_id: str) -> MemoryStore:
        """Raises NotFound."""
        ...

    async def open_session(self, attachments: Sequence[AttachmentSpec], *, mount_root: str) -> str:
        """Creates the mount's session and attributes every later write to it.

        Returns:
            The ``sesn_…`` id. Raises InvalidInput, NotFound, StoreArchived.
        """
        ...

    async def list_memories(self, store_id: str) -> list[Memory]:
        """Every live memory of a store, without content, in path order. Raises NotFound."""
        ...

    async def memory_room(self, store_id: str) -> int | None:
        """How many more live memories the store accepts now (SPEC §1 limit: live
        memories per store), so a mount can refuse ``create`` with ENOSPC before it
        accepts bytes it can't store (SPEC §4: fail early). 0 when full; None when the
        backend can't tell (then the commit at close refuses, as always). Raises
        NotFound, BackendUnavailable."""
        ...

    async def get_memory(self, store_id: str, memory_id: str) -> Memory:
        """A live memory without content. Raises NotFound (unknown or deleted)."""
        ...

    async def read_content(self, memory: Memory) -> bytes:
        """The bytes of ``memory``'s head content. Raises NotFound."""
        ...

    async def read_contents(self, memories: Sequence[Memory]) -> dict[str, bytes]:
        """Read-ahead: the head contents of several memories, keyed by blob key, in as
        few round trips as the backend can. Best effort: content that is gone or can't
        be fetched now is left out (the read that needs it asks :meth:`read_content`,
        which raises)."""
        ...

    async def create_memory(
        self, store_id: str, path: str, content: str, *, metadata: dict[str, str] | None = None
    ) -> Memory:
        """Creates a memory (one ``created`` version). Raises the errors of
        :meth:`memfs.store.Engine.create_memory`."""
        ...

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
    ) -> Memory:
        """Changes content, path and/or metadata in one version (none if nothing changed).

        ``replace=True`` soft-deletes a live memory at the new path in the same
        transaction (rename(2) semantics). Raises PreconditionFailed, PathConflict,
        NotFound, StoreArchived and the validation errors.
        """
        ...

    async def delete_memory(
        self, store_id: str, memory_id: str, *, expected_sha256: str | None = None
    ) -> None:
        """Soft-deletes a memory (SPEC §4 ``rm``). Raises NotFound, PreconditionFailed."""
        ...

    async def rename_prefix(self, store_id: str, old_prefix: str, new_prefix: str) -> list[Memory]:
        """Moves every memory below ``old_prefix`` (ends with ``/``) below ``new_prefix`` in
        one transaction. Returns the moved memories. Raises PathConflict, StoreArchived."""
        ...

    async def last_change_seq(self, store_id: str) -> int:
        """The newest change-feed seq of a store (0 when none). Raises NotFound."""
        ...

    async def changes_since(
        self, store_id: str, after_seq: int, *, timeout_s: float = 0.0
    ) -> list[Change]:
        """Change-feed entries with seq > ``after_seq``, oldest first (a bounded batch).

        Args:
            timeout_s: when there are none yet, wait up to this long for the first one
                (a long poll), then return what there is (maybe nothing).

        Raises:
            NotFound (the store is gone and its feed fully read), BackendUnavailable.
        """
        ...

    async def maintain(self) -> None:
        """The backend's own background work for the life of the mount, run by the
        daemon as a named task and cancelled at unmount; never returns and never raises
        (failures are logged and counted in :meth:`statistics`). Remote: replays queued
        writes whenever there are some and the server answers. Embedded: nothing."""
        ...

    def statistics(self) -> BackendStatistics:
        """A snapshot for ``memfs status``; cheap (no request to the store)."""
        ...

    async def aclose(self) -> None:
        """Releases connections. The backend is unusable afterwards."""
        ...


def _without_content(memory: Memory) -> Memory:
    if memory.content is None:
        return memory
    return memory.model_copy(update={"content": None})


class EmbeddedBackend:
    """:class:`Backend` over an in-process :class:`memfs.store.Engine`.

    Args:
        engine: an open engine; :meth:`aclose` closes it.

    Every call runs in a worker thread. Memories are returned without content (the
    mount caches content by blob key, see :mod:`memfs.fuse.cache`).
    """

    CHANGE_BATCH = 1000

    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        self._actor: Actor | None = None

    async def _run(self, fn: Callable[..., T], *args: object, **kwargs: object) -> T:
        return await trio.to_thread.run_sync(functools.partial(fn, *args, **kwargs))

    async def preset_session(self) -> Session | None:
        return None  # the mount attaches the stores it is given (open_session)

    async def resolve_store(self, name_or_id: str) -> MemoryStore:
        return await self._run(self._engine.find_store, name_or_id)

    async def get_store(self, store_id: str) -> MemoryStore:
        return await self._run(self._engine.get_store, store_id)

    async def open_session(self, attachments: Sequence[AttachmentSpec], *, mount_root: str) -> str:
        from memfs.store import ResourceSpec

        specs = [
            ResourceSpec(a.store_id, Access.READ_ONLY if a.read_only else Access.READ_WRITE)
            for a in attachments
        ]
        session, _token = await self._run(
            self._engine.create_session, specs, mount_root=mount_root, with_token=False
        )
        self._actor = Actor.session(session.id)
        return session.id

    async def list_memories(self, store_id: str) -> list[Memory]:
        return await self._run(self._engine.all_memories, store_id)

    async def memory_room(self, store_id: str) -> int | None:
        """See the Protocol: the engine's limit minus the store's live ``entry_count``."""
        store = await self._run(self._engine.get_store, store_id)
        return max(0, self._engine.memory_limit - store.entry_count)

    async def get_memory(self, store_id: str, memory_id: str) -> Memory:
        return await self._run(
            self._engine.get_memory, store_id, memory_id, with_content=False
        )

    async def read_content(self, memory: Memory) -> bytes:
        return await self._run(self._engine.read_blob, memory.blob_key)

    async def read_contents(self, memories: Sequence[Memory]) -> dict[str, bytes]:
        """See the Protocol: one query for every blob."""
        return await self._run(self._engine.read_blobs, [m.blob_key for m in memories])

    async def create_memory(
        self, store_id: str, path: str, content: str, *, metadata: dict[str, str] | None = None
    ) -> Memory:
        memory = await self._run(
            self._engine.create_memory,
            store_id,
            path,
            content,
            actor=self._actor,
            metadata=metadata,
        )
        return _without_content(memory)

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
    ) -> Memory:
        memory = await self._run(
            self._engine.update_memory,
            store_id,
            memory_id,
            actor=self._actor,
            content=content,
            path=path,
            expected_sha256=expected_sha256,
            metadata=metadata,
            replace=replace,
        )
        return _without_content(memory)

    async def delete_memory(
        self, store_id: str, memory_id: str, *, expected_sha256: str | None = None
    ) -> None:
        await self._run(
            self._engine.delete_memory,
            store_id,
            memory_id,
            actor=self._actor,
            expected_sha256=expected_sha256,
        )

    async def rename_prefix(self, store_id: str, old_prefix: str, new_prefix: str) -> list[Memory]:
        memories = await self._run(
            self._engine.rename_prefix, store_id, old_prefix, new_prefix, actor=self._actor
        )
        return [_without_content(m) for m in memories]

    async def last_change_seq(self, store_id: str) -> int:
        return await self._run(self._engine.last_change_seq, store_id)

    async def changes_since(
        self, store_id: str, after_seq: int, *, timeout_s: float = 0.0
    ) -> list[Change]:
        """See the Protocol. The engine has no notification: a wait polls its feed every
        :data:`EMBEDDED_CHANGE_POLL_INTERVAL_S`."""
        deadline = trio.current_time() + timeout_s
        while True:
            changes = await self._run(
                self._engine.changes_since, store_id, after_seq, limit=self.CHANGE_BATCH
            )
            remaining_s = deadline - trio.current_time()
            if changes or remaining_s <= 0:
                return changes
            await trio.sleep(min(EMBEDDED_CHANGE_POLL_INTERVAL_S, remaining_s))

    async def maintain(self) -> None:
        await trio.sleep_forever()  # every write is committed when it is made

    def statistics(self) -> BackendStatistics:
        return BackendStatistics(
            kind="embedded",
            location=_PASSWORD_IN_URL_RE.sub(r"\1***@", self._engine.url),
            server_state="in-process",
        )

    async def aclose(self) -> None:
        await self._run(self._engine.close)
