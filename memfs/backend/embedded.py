"""The embedded :class:`~memfs.backend.protocol.Backend`: a store engine in this process.

Owns :class:`EmbeddedBackend`, which runs every :class:`memfs.store.Engine` call in a
worker thread (``trio.to_thread.run_sync``) so the trio loop that serves the kernel
never blocks (house rule: never block the trio loop).
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, TypeVar

import trio

from memfs import metrics
from memfs.backend.protocol import AsOfPoint, BackendStatistics, MemoryChange
from memfs.backend.steps import fold_by_steps
from memfs.core.content import Content
from memfs.core.errors import MemfsError
from memfs.core.history import ResolvedPoint
from memfs.core.model import (
    Access,
    Actor,
    Change,
    ChangeKind,
    Layout,
    Memory,
    MemoryStore,
    Session,
    UserPrincipal,
    utcnow,
)
from memfs.core.points import parse_point, point_label
from memfs.core.records import Record
from memfs.core.visibility import Viewer

if TYPE_CHECKING:
    from memfs.backend.protocol import AttachmentSpec
    from memfs.store import Engine

__all__ = ["INLINE_ENV", "EmbeddedBackend"]

# Set to 0, a mount's writes of one memory always go to a worker thread (as before the
# inline writes; for comparisons: scripts/bench).
INLINE_ENV = "MEMFS_INLINE_WRITES"

T = TypeVar("T")
M = TypeVar("M", Memory, "Memory | None")
_PASSWORD_IN_URL_RE = re.compile(r"(://[^:/@]+:)[^@]*@")


class _Wakeups:
    """The engine's change notifications on the trio loop (SPEC §4: an idle mount costs
    close to nothing): a count per store that only grows, plus one for "any store may
    have changed"; a feed read that waits takes the count first, so a change committed
    after it is never missed."""

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
        principal: the user the mount speaks for (SPEC §6 visibility): its session
            carries it, and the mount sees only what that user sees (the store hides
            the rest). None: a local mount that sees everything (it holds the database).

    Every call runs in a worker thread. Memories are returned without content (the
    mount caches content by blob key, see :mod:`memfs.fuse.cache`).
    """

    CHANGE_BATCH = 1000
    # Per store: how many of this backend's own newest feed entries it keeps.
    OWN_CHANGES_KEPT = 4096

    def __init__(self, engine: Engine, *, principal: UserPrincipal | None = None) -> None:
        self._engine = engine
        self._actor: Actor | None = None
        self._wakeups: _Wakeups | None = None
        self._watching = trio.Lock()
        self._unwatch: Callable[[], None] | None = None
        # Per store: the newest seq changes_since handed out, and the batch after it
        # that change_counter read (see change_counter).
        self._delivered: dict[str, int] = {}
        self._prefetched: dict[str, tuple[int, list[Change]]] = {}
        self._principal = principal
        self._viewer = None if principal is None else Viewer.of(principal)
        # The engine's facades as this mount's caller: its session (once opened) writes,
        # its principal's view (SPEC §6) reads.
        self._caller = engine.for_caller(viewer=self._viewer)
        # The newest change seq on this thread without a worker (SQLite files only), and
        # per store the feed entries of this backend's own writes, by seq.
        self._probe = engine.feed_probe()
        self._own: dict[str, dict[int, Change]] = {}
        self._own_lock = threading.Lock()  # kept by worker threads, read on the loop
        # Writes of one memory run on the loop when they need not wait (_run_write).
        self._inline = engine.inline_capable and os.environ.get(INLINE_ENV, "1") != "0"

    async def _run(self, fn: Callable[..., T], *args: object, **kwargs: object) -> T:
        return await trio.to_thread.run_sync(functools.partial(fn, *args, **kwargs))

    async def _run_read(self, fn: Callable[..., T], *args: object, **kwargs: object) -> T:
        """A read of one memory (its row, or one blob of at most 100 KiB): on the loop
        when it can run without waiting (:meth:`memfs.store.Engine.inline`; WAL readers
        take no lock), else on a worker thread. A merge at close reads the head and
        commits in turns with the other writer's commits: read on a worker thread, a
        writer committing every millisecond on another mount won every turn
        (SPEC §4 concurrent writers)."""
        if self._inline:
            from memfs.store import WouldWait

            try:
                with self._engine.inline():
                    return fn(*args, **kwargs)
            except WouldWait:
                pass
        return await self._run(fn, *args, **kwargs)

    async def _run_write(
        self, fn: Callable[..., M], *args: object, **kwargs: object
    ) -> M:
        """Runs a write of one memory and keeps the change-feed entries it appended (the
        engine's receipt) when they are all ``memory_written`` entries of that memory:
        the feed hands them back without a read (see :meth:`changes_since`). They are
        kept as soon as the write returns, so the feed task woken by the commit's
        notification almost always finds them (else it reads).

        On a SQLite file the write runs on the loop itself when it can start without
        waiting (:meth:`memfs.store.Engine.inline`: this process's turn free, SQLite's
        write lock free, its commit checkpoint-free): a write of one memory is a few
        small rows, so it is bounded, and the two thread hand-offs it saves were most
        of a small file's save (README "Performance", writes). Otherwise, or while
        another write of this backend is on a worker thread, it runs on a worker
        thread and waits there as any write does."""
        engine = self._engine

        def write() -> M:
            memory = fn(*args, **kwargs)
            metrics.MOUNT_COMMITS.labels(fn.__name__).inc()
            if self._probe is not None and memory is not None:
                self._keep_own(memory.id, engine.feed_receipt())
            return memory

        if self._inline:
            from memfs.store import WouldWait

            try:
                with engine.inline():
                    return write()
            except WouldWait:
                pass
        return await trio.to_thread.run_sync(write)

    def _keep_own(self, memory_id: str, receipt: list[Change]) -> None:
        """Keeps a write's receipt (any thread) when it only wrote ``memory_id``."""
        if not receipt or not all(
            c.kind is ChangeKind.MEMORY_WRITTEN and c.memory_id == memory_id for c in receipt
        ):
            return
        with self._own_lock:
            own = self._own.setdefault(receipt[0].memory_store_id, {})
            for change in receipt:
                own[change.seq] = change
            while len(own) > self.OWN_CHANGES_KEPT:
                del own[next(iter(own))]

    def _own_batch(self, store_id: str, after_seq: int) -> list[Change] | None:
        """What the store's feed holds after ``after_seq`` when that is known without a
        read: nothing (the probe's newest seq is not past it), or only entries this
        backend wrote itself (kept by :meth:`_run_write`). None: read the feed."""
        if self._probe is None:
            return None
        newest = self._probe.last_seq(store_id)
        if newest is None:
            return None  # the store is gone, or the file could not be read at once
        if newest <= after_seq:
            return []
        if newest - after_seq > self.CHANGE_BATCH:
            return None
        with self._own_lock:
            own = self._own.get(store_id, {})
            batch = [own.get(seq) for seq in range(after_seq + 1, newest + 1)]
        if None in batch:
            return None
        return batch  # type: ignore[return-value]  # no None in it

    async def preset_session(self) -> Session | None:
        return None  # the mount attaches the stores it is given (open_session)

    async def resolve_store(self, name_or_id: str) -> MemoryStore:
        return await self._run(self._engine.stores.find, name_or_id)

    async def get_store(self, store_id: str) -> MemoryStore:
        return await self._run(self._engine.stores.get, store_id)

    async def open_session(
        self,
        attachments: Sequence[AttachmentSpec],
        *,
        mount_root: str,
        layout: Layout = Layout.PER_STORE,
    ) -> str:
        from memfs.store import ResourceSpec

        specs = [
            ResourceSpec(a.store_id, Access.READ_ONLY if a.read_only else Access.READ_WRITE)
            for a in attachments
        ]
        session, _token = await self._run(
            self._engine.sessions.create,
            specs,
            mount_root=mount_root,
            with_token=False,
            layout=layout,
            principal=self._principal,
        )
        self._actor = Actor.session(session.id)
        self._caller = self._engine.for_caller(actor=self._actor, viewer=self._viewer)
        return session.id

    async def list_memories(self, store_id: str) -> list[Memory]:
        return await self._run(self._caller.memories.all, store_id)

    async def resolve_point(self, store_id: str, point: str) -> AsOfPoint:
        """See the Protocol: the point's seq (``fixed``), as the mount's principal
        resolves it."""
        parsed = parse_point(point)
        resolved_at = utcnow()
        resolved = await self._run(self._caller.history.resolve, store_id, parsed)
        label = point_label(
            parsed, snapshot_name=resolved.snapshot_name, resolved_at=resolved_at
        )
        return AsOfPoint(store_id, parsed.text, label, fixed=str(resolved.seq))

    async def list_memories_at(self, at: AsOfPoint) -> list[Memory]:
        """See the Protocol: one query (:meth:`memfs.store.history.History.all`)."""
        resolved = ResolvedPoint(store_id=at.store_id, text=at.text, seq=int(at.fixed))
        return await self._run(self._caller.history.all, at.store_id, resolved)

    async def memory_room(self, store_id: str) -> int | None:
        """See the Protocol: the engine's limit minus the store's live ``entry_count``."""
        store = await self._run(self._engine.stores.get, store_id)
        return max(0, self._engine.memory_limit - store.entry_count)

    async def get_memory(self, store_id: str, memory_id: str) -> Memory:
        return await self._run_read(
            self._caller.memories.get, store_id, memory_id, with_content=False
        )

    async def read_content(self, memory: Memory) -> bytes:
        return await self._run_read(self._engine.blobs.read, memory.blob_key)

    def note_access(self, store_id: str, memory_ids: Sequence[str]) -> None:
        """See the Protocol: a dict update under a lock, so no worker thread."""
        self._caller.records.note_access(memory_ids)

    async def get_record(self, store_id: str, memory_id: str) -> Record | None:
        found = await self._run(self._caller.records.get, [memory_id])
        record = found.get(memory_id)
        return record if record is not None and record.store_id == store_id else None

    async def read_contents(self, memories: Sequence[Memory]) -> dict[str, bytes]:
        """See the Protocol: one query for every blob."""
        return await self._run(self._engine.blobs.read_many, [m.blob_key for m in memories])

    async def create_memory(
        self,
        store_id: str,
        path: str,
        content: str | Content,
        *,
        metadata: dict[str, str] | None = None,
    ) -> Memory:
        memory = await self._run_write(
            self._caller.memories.create,
            store_id,
            path,
            content,
            metadata=metadata,
        )
        return _without_content(memory)

    async def update_memory(self, store_id: str, memory_id: str, change: MemoryChange) -> Memory:
        memory = await self._run_write(
            self._caller.memories.update,
            store_id,
            memory_id,
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
            self._caller.memories.delete,
            store_id,
            memory_id,
            expected_sha256=expected_sha256,
        )
        metrics.MOUNT_COMMITS.labels("delete").inc()

    async def discard_created(self, store_id: str, memory_id: str) -> None:
        """See the Protocol: erased when nothing but this mount's empty create exists."""
        if self._actor is not None and await self._run(
            self._caller.memories.retract_create, store_id, memory_id
        ):
            return
        await self.delete_memory(store_id, memory_id)

    async def fill_claim(
        self,
        store_id: str,
        memory_id: str,
        content: Content,
        *,
        metadata: dict[str, str] | None = None,
    ) -> Memory | None:
        """See the Protocol (:meth:`memfs.store.folds.Folds.fill_claim`)."""
        if self._actor is None:
            return None
        memory = await self._run_write(
            self._caller.folds.fill_claim, store_id, memory_id, content, metadata=metadata
        )
        return None if memory is None else _without_content(memory)

    async def revive(
        self, store_id: str, memory_id: str, content: Content | None
    ) -> Memory | None:
        """See the Protocol (:meth:`memfs.store.folds.Folds.revive`)."""
        if self._actor is None:
            return None
        memory = await self._run_write(self._caller.folds.revive, store_id, memory_id, content)
        return None if memory is None else _without_content(memory)

    async def fold_temporary(
        self,
        store_id: str,
        temporary_id: str,
        *,
        target_id: str | None,
        path: str,
        content: Content | None,
        expected_sha256: str | None,
    ) -> Memory:
        """See the Protocol (:meth:`memfs.store.folds.Folds.fold_temporary`)."""
        if self._actor is None:
            return await fold_by_steps(
                self, store_id, temporary_id, target_id=target_id, path=path,
                content=content, expected_sha256=expected_sha256,
            )
        memory = await self._run_write(
            self._caller.folds.fold_temporary, store_id, temporary_id,
            target_id=target_id, path=path, content=content, expected_sha256=expected_sha256,
        )
        return _without_content(memory)

    async def erase_temporary(self, store_id: str, memory_id: str) -> bool:
        """See the Protocol (:meth:`memfs.store.folds.Folds.erase_temporary`)."""
        if self._actor is None:
            await self.delete_memory(store_id, memory_id)
            return False
        return await self._run(self._caller.folds.erase_temporary, store_id, memory_id)

    async def rename_prefix(self, store_id: str, old_prefix: str, new_prefix: str) -> list[Memory]:
        memories = await self._run(
            self._caller.memories.rename_prefix, store_id, old_prefix, new_prefix
        )
        return [_without_content(m) for m in memories]

    async def last_change_seq(self, store_id: str) -> int:
        return await self._run(self._engine.feed.last_seq, store_id)

    def known_change_counter(self, store_id: str) -> int | None:
        """See the Protocol: the feed probe's answer on a SQLite file, else None."""
        return None if self._probe is None else self._probe.last_seq(store_id)

    async def change_counter(self, store_id: str, *, local_only: bool = False) -> int | None:
        """See the Protocol: the store's newest seq.

        On a SQLite file it is read on this thread by the engine's
        :class:`~memfs.store.feed.FeedProbe` (microseconds, never waiting), so an open
        of an unchanged store makes no worker-thread round trip. Otherwise,
        or when the probe can't answer at once: once this backend has handed out
        changes of the store, it reads the changes after them instead (one indexed
        read too) and keeps that batch for the next
        :meth:`changes_since` of the store: the catch-up that asked for the counter
        then applies them without a second round trip (after each of the mount's own
        commits, an open or a lookup miss finds the counter ahead). Every
        :meth:`changes_since` drops the kept batch, so it never outlives the catch-up
        that read it by more than one feed poll.
        """
        if self._probe is not None:
            newest = self._probe.last_seq(store_id)
            if newest is not None:
                return newest
        if local_only:
            return None
        after = self._delivered.get(store_id)
        if after is None:
            return await self._run(self._engine.feed.last_seq, store_id)
        changes = await self._run(
            self._caller.feed.changes_since,
            store_id,
            after,
            limit=self.CHANGE_BATCH,
        )
        if len(changes) >= self.CHANGE_BATCH:
            return await self._run(self._engine.feed.last_seq, store_id)
        self._prefetched[store_id] = (after, changes)
        return changes[-1].seq if changes else after

    async def changes_since(
        self, store_id: str, after_seq: int, *, timeout_s: float = 0.0
    ) -> list[Change]:
        """See the Protocol. A wait sleeps until the engine says a commit (of any
        process) grew this store's feed (:meth:`memfs.store.Engine.watch_changes`), then
        reads it again: nothing is read while nothing changes (SPEC §4 idle cost). A
        batch :meth:`change_counter` has just read is handed out without reading again."""
        prefetched = self._prefetched.pop(store_id, None)
        if prefetched is not None and prefetched[0] == after_seq and prefetched[1]:
            return self._deliver(store_id, after_seq, prefetched[1])
        read = functools.partial(
            self._run,
            self._caller.feed.changes_since,
            store_id,
            after_seq,
            limit=self.CHANGE_BATCH,
        )
        if timeout_s <= 0:
            known = self._own_batch(store_id, after_seq)
            return self._deliver(store_id, after_seq, await read() if known is None else known)
        deadline = trio.current_time() + timeout_s
        wakeups = await self._watch()
        while True:
            count = wakeups.count(store_id)  # before the read: no later commit is missed
            changes = self._own_batch(store_id, after_seq)
            if changes is None:
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
        with self._own_lock:
            own = self._own.get(store_id)
            while own and next(iter(own)) <= newest:
                del own[next(iter(own))]
        return changes

    async def maintain(self) -> None:
        await trio.sleep_forever()  # every write is committed when it is made

    def statistics(self) -> BackendStatistics:
        lag = self._engine.embedder_lag()
        return BackendStatistics(
            kind="embedded",
            location=_PASSWORD_IN_URL_RE.sub(r"\1***@", self._engine.url),
            server_state="in-process",
            search_pending=None if lag is None else lag.pending,
            search_lag_s=None if lag is None else lag.oldest_seconds,
        )

    async def aclose(self) -> None:
        """Ends the mount's session (archived: `memfs session list` no longer shows it
        as active; its versions keep its id as their actor), then closes the engine."""
        if self._actor is not None:
            session_id = self._actor.id
            with contextlib.suppress(MemfsError):  # the database went away: nothing to end
                await self._run(self._engine.sessions.archive, session_id)
        if self._unwatch is not None:
            self._unwatch()
        if self._probe is not None:
            self._probe.close()
        await self._run(self._engine.close)
