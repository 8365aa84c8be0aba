"""The write path of a remote mount (SPEC §4): direct writes, queueing in
the outbox, provisional memories, and the replay of the outbox.

:class:`RemoteWrites` sends a write to the server when nothing is queued and the
server takes it; else it appends the write to the
:class:`~memfs.remote.outbox.Outbox` (fsync'd) and returns a provisional memory
(``mem_local_<seq>`` / ``memver_pending_<seq>``). :meth:`RemoteWrites.replay` and
:meth:`RemoteWrites.maintain` drain the outbox through
:func:`memfs.remote.replay.replay_outbox` and record what it found (conflicts,
refusals) for ``memfs status``; a replayed create maps its provisional id to the
server's. See :mod:`memfs.remote.backend` for the whole picture.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence

import trio

from memfs import metrics
from memfs.backend import BackendEvent, MemoryChange, fold_by_steps
from memfs.core.content import Content, text_of
from memfs.core.errors import (
    AuthenticationFailed,
    MemfsError,
    NotFound,
    StorageFull,
)
from memfs.core.model import (
    Memory,
    utcnow,
)
from memfs.remote.client import ServerUnavailable
from memfs.remote.outbox import (
    OutboxEntry,
    PendingWrite,
    WriteOperation,
    WriteOutcome,
)
from memfs.remote.reading import RemoteReads
from memfs.remote.replay import ApplyResult, replay_outbox
from memfs.remote.state import (
    PENDING_VERSION_PREFIX,
    PROVISIONAL_ID_PREFIX,
    REPLAY_RETRY_MAX_S,
    REPLAY_RETRY_MIN_S,
    TOKEN_REFUSED,
    TOKEN_RETRY_S,
    T,
    _memory,
    _sha256,
)
from memfs.wire.memories import MemoryOut

__all__ = ["RemoteWrites"]

# Logged under the name of the module this one was split from (mount logs, filters).
log = logging.getLogger("memfs.remote.backend")


class RemoteWrites(RemoteReads):
    """Writes of :class:`~memfs.remote.backend.RemoteBackend`: sent, or queued and
    replayed (see the module docstring)."""

    async def _submit(
        self, writes: Sequence[PendingWrite], direct: Callable[[], Awaitable[T]] | None
    ) -> T | OutboxEntry:
        """:meth:`_submit_locked` under the write lock."""
        async with self._write_lock:
            return await self._submit_locked(writes, direct)

    async def _submit_locked(
        self, writes: Sequence[PendingWrite], direct: Callable[[], Awaitable[T]] | None
    ) -> T | OutboxEntry:
        """Runs ``direct`` if nothing is queued and the server answers; else appends
        ``writes`` to the outbox (fsync'd) and returns the last entry. The caller holds
        the write lock.

        Raises:
            The server's answer to ``direct`` other than ServerUnavailable.
            OSError: the outbox could not be written (the write is then lost to the
                caller, who must report the failure: close() fails).
        """
        outbox = self._require_outbox()
        for write in writes:
            metrics.MOUNT_COMMITS.labels(str(write.operation)).inc()  # sent or queued below
        if direct is not None and len(outbox) == 0 and self._server_state != TOKEN_REFUSED:
            try:
                return await self._ask(direct())
            except (ServerUnavailable, AuthenticationFailed):
                pass
        entry: OutboxEntry | None = None
        for write in writes:
            entry = await self._thread(outbox.append, write)
            log.info("queued %s %s (outbox seq %d)", write.operation, write.path, entry.seq)
        assert entry is not None
        self._queued.set()
        return entry

    def _base(self, memory_id: str, server_id: str | None) -> Memory | None:
        """The last state of ``memory_id`` this mount knows (a provisional id whose create
        was replayed is known under the server's id)."""
        base = self._known.get(memory_id)
        if base is None and server_id is not None:
            base = self._known.get(server_id)
        return base

    def _provisional(
        self,
        *,
        store_id: str,
        memory_id: str,
        path: str,
        sha256: str,
        size_bytes: int,
        seq: int,
        base: Memory | None,
    ) -> Memory:
        now = utcnow()
        return self._remember(
            Memory(
                id=memory_id,
                memory_store_id=store_id,
                path=path,
                content=None,
                content_sha256=sha256,
                content_size_bytes=size_bytes,
                memory_version_id=f"{PENDING_VERSION_PREFIX}{seq}",
                metadata=dict(base.metadata) if base is not None else {},
                created_at=base.created_at if base is not None else now,
                updated_at=now,
                blob_key=sha256,
            )
        )

    # --------------------------------------------------------------- writing

    async def create_memory(
        self,
        store_id: str,
        path: str,
        content: str | Content,
        *,
        metadata: dict[str, str] | None = None,
    ) -> Memory:
        content = text_of(content)  # the server takes text (api-contract §5.7)

        async def direct() -> MemoryOut:
            return await self._client.create_memory(store_id, path, content, metadata=metadata)

        write = PendingWrite(store_id, WriteOperation.CREATE, path, content=content)
        result = await self._submit([write], direct)
        await self._cache_put(content)
        if isinstance(result, OutboxEntry):
            return self._provisional(
                store_id=store_id,
                memory_id=f"{PROVISIONAL_ID_PREFIX}{result.seq}",
                path=path,
                sha256=_sha256(content),
                size_bytes=len(content.encode("utf-8")),
                seq=result.seq,
                base=None,
            )
        return self._remember(_memory(result))

    async def update_memory(self, store_id: str, memory_id: str, change: MemoryChange) -> Memory:
        """See the Protocol. Queued, a path change and a content change become a
        ``rename`` and an ``update`` entry; metadata is never queued.

        Raises:
            PreconditionFailed, PathConflict, NotFound, StoreArchived, PermissionDenied,
            the validation errors; ServerUnavailable for a metadata-only change.
        """
        content = None if change.content is None else text_of(change.content)
        path, metadata = change.path, change.metadata
        expected_sha256, replace = change.expected_sha256, change.replace
        if content is None and path is None and metadata is None:
            return await self.get_memory(store_id, memory_id)
        async with self._write_lock:
            # Under the lock: a replay may be turning a provisional id into the server's
            # right now (read before the lock, the write would miss its memory).
            server_id = self._server_id(memory_id)
            base = self._base(memory_id, server_id)

            async def direct() -> MemoryOut:
                if server_id is None:
                    raise NotFound(f"{memory_id} was never created on the server")
                return await self._client.update_memory(
                    store_id,
                    server_id,
                    content=content,
                    path=path,
                    expected_sha256=expected_sha256,
                    metadata=metadata,
                    replace=replace,
                )

            if content is None and path is None:  # metadata only: never queued
                return self._remember(_memory(await self._ask(direct())))
            current_path = base.path if base is not None else (path or "")
            writes = _update_writes(
                store_id, server_id, current_path,
                path=path, content=content, expected_sha256=expected_sha256, replace=replace,
            )
            result = await self._submit_locked(writes, direct) if writes else None
        if result is None:  # a rename onto its own path
            return await self.get_memory(store_id, memory_id)
        if content is not None:
            await self._cache_put(content)
        if isinstance(result, OutboxEntry):
            if content is not None:
                sha256, size = _sha256(content), len(content.encode("utf-8"))
            elif base is not None:
                sha256, size = base.content_sha256, base.content_size_bytes
            else:
                raise NotFound(f"memory {memory_id} is unknown to this mount")
            return self._provisional(
                store_id=store_id,
                memory_id=memory_id,
                path=path or current_path,
                sha256=sha256,
                size_bytes=size,
                seq=result.seq,
                base=base,
            )
        return self._remember(_memory(result))

    async def fill_claim(
        self,
        store_id: str,
        memory_id: str,
        content: Content,
        *,
        metadata: dict[str, str] | None = None,
    ) -> Memory | None:
        """See the Protocol: the memory-store API has no fold (the claim's content is an
        ordinary update)."""
        return None

    async def revive(
        self, store_id: str, memory_id: str, content: Content | None
    ) -> Memory | None:
        """See the Protocol: the memory-store API has no fold (a new memory is created)."""
        return None

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
        """See the Protocol: ordinary writes (:func:`memfs.backend.fold_by_steps`)."""
        return await fold_by_steps(
            self, store_id, temporary_id, target_id=target_id, path=path,  # type: ignore[arg-type]
            content=content, expected_sha256=expected_sha256,
        )

    async def erase_temporary(self, store_id: str, memory_id: str) -> bool:
        """See the Protocol: a soft delete (a session token can't hard-delete)."""
        await self.delete_memory(store_id, memory_id)
        return False

    async def discard_created(self, store_id: str, memory_id: str) -> None:
        """See the Protocol: a soft delete (a session token can't hard-delete)."""
        await self.delete_memory(store_id, memory_id)

    async def delete_memory(
        self, store_id: str, memory_id: str, *, expected_sha256: str | None = None
    ) -> None:
        async with self._write_lock:  # ids read under it, as in update_memory
            server_id = self._server_id(memory_id)
            base = self._base(memory_id, server_id)
            self._known.pop(memory_id, None)
            if server_id is not None:
                self._known.pop(server_id, None)

            async def direct() -> None:
                if server_id is None:
                    raise NotFound(f"{memory_id} was never created on the server")
                await self._client.delete_memory(
                    store_id, server_id, expected_sha256=expected_sha256
                )

            write = PendingWrite(
                store_id,
                WriteOperation.DELETE,
                base.path if base is not None else "/",
                memory_id=server_id,
                expected_sha256=expected_sha256,
            )
            await self._submit_locked([write], direct)

    async def rename_prefix(self, store_id: str, old_prefix: str, new_prefix: str) -> list[Memory]:
        async def direct() -> list[MemoryOut]:
            return await self._client.rename_prefix(store_id, old_prefix, new_prefix)

        write = PendingWrite(
            store_id, WriteOperation.RENAME_PREFIX, old_prefix, new_path=new_prefix
        )
        result = await self._submit([write], direct)
        if isinstance(result, OutboxEntry):
            moved = [
                m
                for m in self._known.values()
                if m.memory_store_id == store_id and m.path.startswith(old_prefix)
            ]
            return [
                self._remember(
                    m.model_copy(update={"path": new_prefix + m.path[len(old_prefix) :]})
                )
                for m in sorted(moved, key=lambda m: m.path)
            ]
        return [self._remember(_memory(m)) for m in result]

    async def replay(self) -> None:
        """Sends the queued writes in order, if any and if the server takes them (never
        raises for an unreachable server: the writes stay queued)."""
        outbox = self._outbox
        if outbox is None or len(outbox) == 0:
            return
        session = await self.session()
        async with self._replay_lock:
            report = await replay_outbox(
                outbox,
                self._client,
                session_id=session.id,
                on_result=self._on_replayed,
                lock=self._write_lock,
            )
        if isinstance(report.stopped_by, AuthenticationFailed):
            self._token_refused(report.stopped_by)
        elif report.stopped_by is not None:
            self._unreachable(report.stopped_by)
        else:
            self._server_state = "reachable"
        done = len(report.results) + len(report.rejected)
        if done:
            log.info("replayed %d queued write(s); %d left", done, len(outbox))

    async def maintain(self) -> None:
        """Replays the outbox whenever it holds writes (see the Protocol): at once after
        a write is queued, then every :data:`REPLAY_RETRY_MIN_S` … :data:`REPLAY_RETRY_MAX_S`
        while the server can't take them."""
        pause_s = REPLAY_RETRY_MIN_S
        while True:
            await self._queued.wait()
            try:
                await self.replay()
            except StorageFull as exc:  # a done line found no room: the entry stays queued
                log.warning("replaying the outbox paused: %s", exc)
                self._error_count += 1
                self._errors.append(BackendEvent(utcnow(), "", f"replay: {exc}"))
            except Exception as exc:  # e.g. OSError from the journal: keep the mount up
                log.exception("replaying the outbox failed")
                self._error_count += 1
                self._errors.append(BackendEvent(utcnow(), "", f"replay: {exc}"))
            outbox = self._outbox
            if outbox is None or len(outbox) == 0:
                self._queued = trio.Event()
                pause_s = REPLAY_RETRY_MIN_S
                continue
            if self._server_state == TOKEN_REFUSED:
                await trio.sleep(TOKEN_RETRY_S)  # a token seldom comes back: ask rarely
                continue
            await trio.sleep(pause_s)
            pause_s = min(2 * pause_s, REPLAY_RETRY_MAX_S)

    def _on_replayed(self, entry: OutboxEntry, result: ApplyResult | MemfsError) -> None:
        write = entry.write
        if isinstance(result, MemfsError):
            self._rejected_count += 1
            saved_to = str(self._outbox.rejected_dir) if self._outbox is not None else ""
            self._rejected.append(
                BackendEvent(
                    utcnow(), write.path, f"queued {write.operation} refused: {result}",
                    saved_to=saved_to, error=result,
                )
            )
            return
        if result.discarded and write.content is not None:
            # Built on redacted content: its bytes leave the disk cache too.
            try:
                self._cache.purge(_sha256(write.content))
            except OSError as exc:
                log.warning("could not purge discarded content from the cache: %s", exc)
        if result.outcome is WriteOutcome.CONFLICT:
            self._conflict_count += 1
            self._conflicts.append(
                BackendEvent(
                    utcnow(), write.path, result.detail, conflict_path=result.conflict_path
                )
            )
        if write.operation is WriteOperation.CREATE and result.memory is not None:
            provisional = f"{PROVISIONAL_ID_PREFIX}{entry.seq}"
            if provisional in self._known:
                # Handed out by this process: the FUSE layer holds a node under it.
                # (A create queued by an earlier daemon is known to nobody here.)
                self._real_ids[provisional] = result.memory.id
                self._unclaimed[result.memory.id] = provisional
                self._known.pop(provisional, None)
                self._remember(_memory(result.memory))


def _update_writes(
    store_id: str,
    server_id: str | None,
    current_path: str,
    *,
    path: str | None,
    content: str | None,
    expected_sha256: str | None,
    replace: bool,
) -> list[PendingWrite]:
    """The outbox entries of one update: a ``rename`` if the path changes, then an
    ``update`` if the content does (``server_id`` None: found by path at replay)."""
    writes: list[PendingWrite] = []
    if path is not None and path != current_path:
        writes.append(
            PendingWrite(
                store_id,
                WriteOperation.RENAME,
                current_path,
                memory_id=server_id,
                new_path=path,
                replace=replace,
            )
        )
    if content is not None:
        writes.append(
            PendingWrite(
                store_id,
                WriteOperation.UPDATE,
                path or current_path,
                memory_id=server_id,
                content=content,
                expected_sha256=expected_sha256,
            )
        )
    return writes

