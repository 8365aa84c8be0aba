"""The reading side of a remote mount (SPEC §4): listings, memory states and content.

:class:`RemoteReads` answers ``get_memory`` from the queued state while writes to the
memory are still in the outbox (the server's older state never overwrites what the
mount has accepted), else from the states the change-feed follower fetched ahead
(:mod:`memfs.remote.feed`), else from the server; ``read_content`` from the disk
cache, else from a queued write, else from the server's version (verified, then
cached); ``read_contents`` is the read-ahead, :data:`READ_AHEAD_CONCURRENCY` requests
at a time. ``resolve_point`` and ``list_memories_at`` read a store as it was (SPEC §10,
the API's ``at=``): its versions are immutable, so ``read_content`` serves them as it
serves heads.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Sequence

import trio

from memfs.backend.protocol import AsOfPoint
from memfs.core.errors import (
    MemfsError,
    NotFound,
)
from memfs.core.model import Memory, utcnow
from memfs.core.points import PointKind, is_snapshot_id, parse_point, point_label
from memfs.core.records import Record
from memfs.remote.client import ServerUnavailable
from memfs.remote.outbox import (
    PendingWrite,
    WriteOperation,
)
from memfs.remote.state import (
    PENDING_VERSION_PREFIX,
    RemoteState,
    _memory,
    _sha256,
)

__all__ = ["READ_AHEAD_CONCURRENCY", "RemoteReads"]

# Logged under the name of the module this one was split from (mount logs, filters).
log = logging.getLogger("memfs.remote.backend")

# Read-ahead requests in flight at once (Backend.read_contents).
READ_AHEAD_CONCURRENCY = 8
# The point of a store that had no version when ``now`` was resolved: before any store.
_BEFORE_EVERY_STORE = "1970-01-01T00:00:00Z"


class RemoteReads(RemoteState):
    """Reads of :class:`~memfs.remote.backend.RemoteBackend` (see the module
    docstring)."""

    async def list_memories(self, store_id: str) -> list[Memory]:
        remote = await self._ask(self._client.list_memories(store_id))
        return [self._remember(_memory(m)) for m in remote]

    async def resolve_point(self, store_id: str, point: str) -> AsOfPoint:
        """See the Protocol. ``now`` is made fixed as the store's newest version (or, in
        a store without one, a time before every store); a time and a snapshot name
        stay as given (they name one state already). The point is tried at once (one
        listing of one item), so a bad one fails here.

        Raises:
            InvalidPoint (named by the server: no such snapshot or version, a time in
            the future), NotFound, ServerUnavailable.
        """
        parsed = parse_point(point)
        resolved_at = utcnow()
        fixed = parsed.text
        snapshot_name = None
        if parsed.kind is PointKind.NOW:
            newest = await self._ask(self._client.newest_version_id(store_id))
            fixed = newest if newest is not None else _BEFORE_EVERY_STORE
        elif parsed.kind is PointKind.SNAPSHOT and is_snapshot_id(str(parsed.name)):
            try:
                snapshot_name = await self._ask(
                    self._client.snapshot_name(store_id, str(parsed.name))
                )
            except NotFound:
                snapshot_name = None  # a snapshot named like an id: the server says
        await self._ask(self._try_point(store_id, fixed))
        label = point_label(parsed, snapshot_name=snapshot_name, resolved_at=resolved_at)
        return AsOfPoint(store_id, parsed.text, label, fixed=fixed)

    async def _try_point(self, store_id: str, point: str) -> None:
        """One listing of one item at ``point``: raises what the server says of it."""
        async with contextlib.aclosing(
            self._client.memory_pages(store_id, at=point, limit=1)
        ) as pages:
            async for _ in pages:
                return

    async def list_memories_at(self, at: AsOfPoint) -> list[Memory]:
        """See the Protocol: the server's listing at ``at.fixed`` (not remembered as the
        mount's known state: these are past versions of live memories)."""
        remote = await self._ask(self._client.list_memories(at.store_id, at=at.fixed))
        return [_memory(m) for m in remote]

    def _queued_state(self, memory_id: str) -> Memory | None:
        """The state this mount gave ``memory_id`` if writes to it are still queued (None
        when none are, or the mount does not know it).

        Raises:
            NotFound: its last queued write deletes it.
        """
        outbox = self._outbox
        if outbox is None or len(outbox) == 0:
            return None
        known = self._known.get(memory_id)
        server_id = self._server_id(memory_id)
        last: PendingWrite | None = None
        for entry in outbox.pending():
            write = entry.write
            if write.memory_id is not None:
                hit = write.memory_id == server_id
            else:
                hit = known is not None and known.path in (write.path, write.new_path)
            if hit:
                last = write
        if last is None:
            return None
        if last.operation is WriteOperation.DELETE:
            raise NotFound(f"memory {memory_id} is deleted (the delete is queued)")
        return known

    async def get_memory(self, store_id: str, memory_id: str) -> Memory:
        """The memory (a provisional id gives the server's memory once its create
        replayed). While writes to it are still queued, the state they give it: the
        server's is older.

        Raises:
            NotFound, ServerUnavailable (also for a create still queued).
        """
        queued = self._queued_state(memory_id)
        if queued is not None:
            return queued
        server_id = self._server_id(memory_id)
        if server_id is None:
            raise ServerUnavailable(f"{memory_id} is still in the outbox")
        if server_id in self._ahead:
            ahead = self._ahead.pop(server_id)
            if ahead is None:
                raise NotFound(f"memory {memory_id} is deleted")
            return self._remember(ahead)
        remote = await self._ask(self._client.retrieve_memory(store_id, server_id))
        if remote.content is not None:
            await self._cache_put(remote.content)
        return self._remember(_memory(remote))

    async def read_contents(self, memories: Sequence[Memory]) -> dict[str, bytes]:
        """Read-ahead (see the Protocol): each memory as :meth:`read_content` would read
        it, :data:`READ_AHEAD_CONCURRENCY` requests at a time; failures are left out
        (the read that needs that content asks again and gets the error)."""
        found: dict[str, bytes] = {}
        limiter = trio.CapacityLimiter(READ_AHEAD_CONCURRENCY)
        unreachable = False

        async def fetch(memory: Memory) -> None:
            nonlocal unreachable
            async with limiter:
                if unreachable:
                    return  # one failure to reach the server is enough
                try:
                    found[memory.blob_key] = await self.read_content(memory)
                except ServerUnavailable:
                    unreachable = True
                except MemfsError as exc:
                    log.debug("read-ahead of %s skipped: %s", memory.path, exc)

        async with trio.open_nursery() as nursery:
            for memory in memories:
                nursery.start_soon(fetch, memory)
        return found

    def note_access(self, store_id: str, memory_ids: Sequence[str]) -> None:
        """Nothing: the server records the reads it serves (a full retrieve of content
        the cache lacks); reads from this mount's cache are not seen (a limitation)."""

    async def get_record(self, store_id: str, memory_id: str) -> Record | None:
        """None: the remote mount does not serve the record xattrs (a limitation)."""
        return None

    async def read_content(self, memory: Memory) -> bytes:
        """The head content of ``memory``: from the disk cache (no round trip), else from
        the outbox (a queued write), else from the server (its version, verified
        against ``content_sha256``, then cached).

        Raises:
            NotFound: the bytes are gone (redacted, deleted) or the server gave others.
            ServerUnavailable: not cached and the server is unreachable.
        """
        digest = memory.content_sha256
        data = await self._thread(self._cache.get, digest)
        if data is not None:
            return data
        outbox = self._require_outbox()
        for entry in await self._thread(outbox.pending, memory.memory_store_id):
            content = entry.write.content
            if content is not None and _sha256(content) == digest:
                await self._cache_put(content)
                return content.encode("utf-8")
        if memory.memory_version_id.startswith(PENDING_VERSION_PREFIX):
            raise NotFound(f"the queued content of {memory.path} is no longer available")
        version = await self._ask(
            self._client.retrieve_version(memory.memory_store_id, memory.memory_version_id)
        )
        text = version.content
        if text is None or _sha256(text) != digest:
            raise NotFound(f"the content {digest} of {memory.path} is not on the server")
        await self._cache_put(text)
        return text.encode("utf-8")
