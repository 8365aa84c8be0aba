"""What a mount needs from a store, as an async interface, and its embedded implementation.

The FUSE layer never sees SQL, HTTP or the engine: it talks to a :class:`Backend`.
:class:`EmbeddedBackend` wraps :class:`memfs.store.Engine` in the same process, running
every engine call in a worker thread (``trio.to_thread.run_sync``) so the trio loop that
serves the kernel never blocks. A remote backend (HTTP, later) implements the same
Protocol; both raise only the domain errors of :mod:`memfs.errors`.

Writes are attributed to the session the backend opened with :meth:`Backend.open_session`
(SPEC §3: writes through a mount are attributed to ``session_actor {session_id}``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, TypeVar

import trio

from memfs.model import Access, Actor, Change, Memory, MemoryStore

if TYPE_CHECKING:
    from memfs.store import Engine

__all__ = ["AttachmentSpec", "Backend", "EmbeddedBackend"]

T = TypeVar("T")


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

    async def get_memory(self, store_id: str, memory_id: str) -> Memory:
        """A live memory without content. Raises NotFound (unknown or deleted)."""
        ...

    async def read_content(self, memory: Memory) -> bytes:
        """The bytes of ``memory``'s head content. Raises NotFound."""
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

    async def changes_since(self, store_id: str, after_seq: int) -> list[Change]:
        """Change-feed entries with seq > ``after_seq``, oldest first (a bounded batch)."""
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

    async def get_memory(self, store_id: str, memory_id: str) -> Memory:
        return await self._run(
            self._engine.get_memory, store_id, memory_id, with_content=False
        )

    async def read_content(self, memory: Memory) -> bytes:
        return await self._run(self._engine.read_blob, memory.blob_key)

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

    async def changes_since(self, store_id: str, after_seq: int) -> list[Change]:
        return await self._run(
            self._engine.changes_since, store_id, after_seq, limit=self.CHANGE_BATCH
        )

    async def aclose(self) -> None:
        await self._run(self._engine.close)
