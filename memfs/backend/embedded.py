"""The embedded :class:`~memfs.backend.protocol.Backend`: a store engine in this process.

Owns :class:`EmbeddedBackend`, which runs every :class:`memfs.store.Engine` call in a
worker thread (``trio.to_thread.run_sync``) so the trio loop that serves the kernel
never blocks (house rule: never block the trio loop).
"""

from __future__ import annotations

import contextlib
import functools
import re
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, TypeVar

import trio

from memfs.backend.protocol import BackendStatistics, MemoryChange
from memfs.errors import MemfsError
from memfs.model import Access, Actor, Change, Memory, MemoryStore, Session

if TYPE_CHECKING:
    from memfs.backend.protocol import AttachmentSpec
    from memfs.store import Engine

__all__ = ["EmbeddedBackend"]

T = TypeVar("T")
_PASSWORD_IN_URL_RE = re.compile(r"(://[^:/@]+:)[^@]*@")


class _Wakeups:
    """The engine's change notifications on the trio loop (issue 12 idle cost): a count
    per store that only grows, plus one for "any store may have changed"; a feed read
    that waits takes the count first, so a change committed after it is never missed."""

    def __init__(self) -> None:
        self._any = 0
        self._stores: dict[str, int] = {}
        self._moved = trio.Event()

    def mark(self, store_ids: frozenset[str] | None) -> None:
        """On the loop: ``store_ids`` changed (None: any store may have)."""
        if store_ids is None:
            self._any += 1
        else:
            for store_id in store_ids:
                self._stores[store_id] = self._stores.get(store_id, 0) + 1
        self._moved.set()
        self._moved = trio.Event()

    def count(self, store_id: str) -> tuple[int, int]:
        return self._any, self._stores.get(store_id, 0)

    async def wait_past(self, store_id: str, count: tuple[int, int], timeout_s: float) -> None:
        """Returns once ``store_id``'s count is past ``count``, or after ``timeout_s``."""
        with trio.move_on_after(timeout_s):
            while self.count(store_id) == count:
                await self._moved.wait()


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
        # Per store: the newest seq changes_since handed out, and the batch after it
        # that change_counter read (see change_counter).
        self._delivered: dict[str, int] = {}
        self._prefetched: dict[str, tuple[int, list[Change]]] = {}
        self._wakeups: _Wakeups | None = None
        self._watching = trio.Lock()
        self._unwatch: Callable[[], None] | None = None

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

    async def update_memory(self, store_id: str, memory_id: str, change: MemoryChange) -> Memory:
        memory = await self._run(
            self._engine.update_memory,
            store_id,
            memory_id,
            actor=self._actor,
            content=change.content,
            path=change.path,
            expected_sha256=change.expected_sha256,
            metadata=change.metadata,
            replace=change.replace,
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

    async def discard_created(self, store_id: str, memory_id: str) -> None:
        """See the Protocol: erased when nothing but this mount's empty create exists."""
        if self._actor is not None and await self._run(
            self._engine.retract_create, store_id, memory_id, actor=self._actor
        ):
            return
        await self.delete_memory(store_id, memory_id)

    async def rename_prefix(self, store_id: str, old_prefix: str, new_prefix: str) -> list[Memory]:
        memories = await self._run(
            self._engine.rename_prefix, store_id, old_prefix, new_prefix, actor=self._actor
        )
        return [_without_content(m) for m in memories]

    async def last_change_seq(self, store_id: str) -> int:
        return await self._run(self._engine.last_change_seq, store_id)

    async def change_counter(self, store_id: str) -> int | None:
        """See the Protocol: the store's newest seq.

        Once this backend has handed out changes of the store, it reads the changes
        after them instead (one indexed read too) and keeps that batch for the next
        :meth:`changes_since` of the store: the catch-up that asked for the counter
        then applies them without a second round trip (issue 17: after each of the
        mount's own commits, an open or a lookup miss found the counter ahead and read
        the feed again). Every :meth:`changes_since` drops the kept batch, so it never
        outlives the catch-up that read it by more than one feed poll.
        """
        after = self._delivered.get(store_id)
        if after is None:
            return await self._run(self._engine.last_change_seq, store_id)
        changes = await self._run(
            self._engine.changes_since, store_id, after, limit=self.CHANGE_BATCH
        )
        if len(changes) >= self.CHANGE_BATCH:
            return await self._run(self._engine.last_change_seq, store_id)
        self._prefetched[store_id] = (after, changes)
        return changes[-1].seq if changes else after

    async def changes_since(
        self, store_id: str, after_seq: int, *, timeout_s: float = 0.0
    ) -> list[Change]:
        """See the Protocol. A wait sleeps until the engine says a commit (of any
        process) grew this store's feed (:meth:`memfs.store.Engine.watch_changes`), then
        reads it again: nothing is read while nothing changes (issue 12 idle cost). A
        batch that change_counter kept is handed out first (issue 17)."""
        prefetched = self._prefetched.pop(store_id, None)
        if prefetched is not None and prefetched[0] == after_seq and prefetched[1]:
            return self._deliver(store_id, after_seq, prefetched[1])
        read = functools.partial(
            self._run, self._engine.changes_since, store_id, after_seq, limit=self.CHANGE_BATCH
        )
        if timeout_s <= 0:
            return self._deliver(store_id, after_seq, await read())
        deadline = trio.current_time() + timeout_s
        wakeups = await self._watch()
        while True:
            count = wakeups.count(store_id)  # before the read: no later commit is missed
            changes = await read()
            remaining_s = deadline - trio.current_time()
            if changes or remaining_s <= 0:
                return self._deliver(store_id, after_seq, changes)
            await wakeups.wait_past(store_id, count, remaining_s)

    async def _watch(self) -> _Wakeups:
        """This backend's subscription to the engine's change watch (made once)."""
        async with self._watching:
            if self._wakeups is None:
                wakeups = _Wakeups()
                token = trio.lowlevel.current_trio_token()

                def deliver(store_ids: frozenset[str] | None) -> None:
                    with contextlib.suppress(trio.RunFinishedError):
                        token.run_sync_soon(wakeups.mark, store_ids)

                self._unwatch = await self._run(self._engine.watch_changes, deliver)
                self._wakeups = wakeups
            return self._wakeups

    def _deliver(self, store_id: str, after_seq: int, changes: list[Change]) -> list[Change]:
        """Records how far the store's feed has been handed out (see change_counter)."""
        newest = changes[-1].seq if changes else after_seq
        self._delivered[store_id] = max(self._delivered.get(store_id, newest), newest)
        return changes

    async def maintain(self) -> None:
        await trio.sleep_forever()  # every write is committed when it is made

    def statistics(self) -> BackendStatistics:
        return BackendStatistics(
            kind="embedded",
            location=_PASSWORD_IN_URL_RE.sub(r"\1***@", self._engine.url),
            server_state="in-process",
        )

    async def aclose(self) -> None:
        """Ends the mount's session (archived: `memfs session list` no longer shows it
        as active; its versions keep its id as their actor), then closes the engine."""
        if self._actor is not None:
            session_id = self._actor.id
            with contextlib.suppress(MemfsError):  # the database went away: nothing to end
                await self._run(self._engine.archive_session, session_id)
        if self._unwatch is not None:
            self._unwatch()
        await self._run(self._engine.close)
