"""The change-feed follower of a remote mount (SPEC §4 remote mounts, SPEC §2 redaction).

:class:`RemoteFeed` reads the server's change feed for the FUSE layer:
:meth:`RemoteFeed.changes_since` (the long poll; replays the outbox first, purges
redacted content from the disk cache, hands a replayed create's changes out under its
provisional id), the bulk fetch-ahead of the states a large batch names (directory
listings, then :data:`READ_AHEAD_CONCURRENCY` retrievals at a time, taken by
``get_memory``), and the saved feed position from which a new mount applies the
purges it missed while unmounted (:meth:`RemoteFeed.last_change_seq`).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Sequence
from pathlib import Path

import trio

from memfs.core.errors import (
    MemfsError,
    NotFound,
)
from memfs.core.model import (
    Change,
    ChangeKind,
)
from memfs.home import private_directory, write_atomically
from memfs.remote.reading import READ_AHEAD_CONCURRENCY
from memfs.remote.state import _change, _memory
from memfs.remote.writing import RemoteWrites
from memfs.wire.changes import ChangeOut, ChangePage

__all__ = [
    "FETCH_AHEAD_MIN",
    "LIST_AHEAD_OVERREAD",
    "MISSED_PURGES_BATCH",
    "RemoteFeed",
]

# Logged under the name of the module this one was split from (mount logs, filters).
log = logging.getLogger("memfs.remote.backend")

# Change-feed entries per request when catching up on purges missed while unmounted.
MISSED_PURGES_BATCH = 1000
# A batch of the change feed naming at least this many memories has their states
# fetched ahead (changes_since), so that the FUSE layer's get_memory of each is answered
# here: a directory by listing it (100 per request) when that reads at most
# LIST_AHEAD_OVERREAD entries per memory wanted there, the others READ_AHEAD_CONCURRENCY
# at a time (SPEC §4 "bulk changes included": 5,000 changes were 5,000 requests in a row).
FETCH_AHEAD_MIN = 4
LIST_AHEAD_OVERREAD = 25


class RemoteFeed(RemoteWrites):
    """The change feed of :class:`~memfs.remote.backend.RemoteBackend` (see the module
    docstring)."""

    async def memory_room(self, store_id: str) -> int | None:
        """Unknown (None): the server does not expose its per-store memory limit, so a
        full store is refused by the commit at close (bytes kept under ``rejected/``)."""
        return None

    async def change_counter(self, store_id: str, *, local_only: bool = False) -> int | None:
        """See the Protocol: None; a remote mount learns of changes from the feed."""
        return None

    def known_change_counter(self, store_id: str) -> int | None:
        """See the Protocol: None, as :meth:`change_counter`."""
        return None

    async def last_change_seq(self, store_id: str) -> int:
        """The store's newest seq. First, the purges this ``$MEMFS_HOME`` missed while no
        mount of the store ran are applied to the disk cache: the feed is read from the
        position saved by the last mount (SPEC §2: redacted bytes leave every cache)."""
        batch = await self._ask(self._client.changes(store_id, after=0, limit=1))
        await self._purge_missed(store_id, batch.last_seq)
        return batch.last_seq

    def _feed_position_path(self, store_id: str) -> Path:
        return self._home / "feed" / f"{store_id}.seq"

    async def _purge_missed(self, store_id: str, current: int) -> None:
        path = self._feed_position_path(store_id)
        saved = await self._thread(_read_position, path)
        after = saved if saved is not None and saved < current else current
        while after < current:
            batch = await self._ask(
                self._client.changes(store_id, after=after, limit=MISSED_PURGES_BATCH)
            )
            if not batch.data:
                break
            for remote in batch.data:
                if (
                    remote.kind is ChangeKind.BLOB_PURGED
                    and remote.content_sha256
                    and await self._thread(self._cache.purge, remote.content_sha256)
                ):
                    log.info("purged content %s redacted while unmounted from the disk "
                             "cache", remote.content_sha256)
            after = batch.data[-1].seq
        await self._thread(_write_position, path, current)

    async def changes_since(
        self, store_id: str, after_seq: int, *, timeout_s: float = 0.0
    ) -> list[Change]:
        """Replays the outbox if it holds writes, then returns the store's changes after
        ``after_seq``, waiting up to ``timeout_s`` for the first one (the server's long
        poll). Bytes a redaction erased (``blob_purged``) leave the disk cache before
        the changes are returned.

        Raises:
            ServerUnavailable, NotFound, AuthenticationFailed.
        """
        await self.replay()
        self._ahead.clear()
        batch = await self._ask(
            self._client.changes(store_id, after=after_seq, timeout_s=timeout_s)
        )
        await self._fetch_ahead(store_id, after_seq, batch)
        if batch.last_seq < after_seq:
            log.warning(
                "the change feed of %s restarted (seq %d < %d): remount to resynchronise",
                store_id, batch.last_seq, after_seq,
            )
        changes: list[Change] = []
        claimed: set[str] = set()
        # A replay running now may be creating memories whose changes this batch holds:
        # map them to their provisional ids only once it is done.
        async with self._write_lock:
            for remote in batch.data:
                if (
                    remote.kind is ChangeKind.BLOB_PURGED
                    and remote.content_sha256
                    and await self._thread(self._cache.purge, remote.content_sha256)
                ):
                    log.info("purged redacted content %s from the disk cache",
                             remote.content_sha256)
                memory_id = remote.memory_id
                if memory_id is not None and memory_id in self._unclaimed:
                    claimed.add(memory_id)
                    memory_id = self._unclaimed[memory_id]
                changes.append(_change(remote, memory_id))
            for server_id in claimed:
                del self._unclaimed[server_id]
        if batch.data:  # the disk cache has had this batch's purges
            await self._thread(
                _write_position, self._feed_position_path(store_id), batch.data[-1].seq
            )
        return changes

    async def _fetch_ahead(self, store_id: str, after_seq: int, batch: ChangePage) -> None:
        """Fetches the states of the memories a large change batch names (see
        :data:`FETCH_AHEAD_MIN`) into ``_ahead``, where :meth:`get_memory` finds them.
        Memories this mount wrote at that version are left out (the FUSE layer asks
        nothing for them). Never raises: what could not be fetched is asked for later."""
        self._listed = {k: v for k, v in self._listed.items() if v[0] > after_seq}
        wanted: dict[str, ChangeOut] = {}
        for change in batch.data:
            if change.memory_id is None or change.kind not in (
                ChangeKind.MEMORY_WRITTEN, ChangeKind.MEMORY_DELETED
            ):
                continue
            known = self._known.get(change.memory_id)
            if known is not None and known.memory_version_id == change.memory_version_id:
                continue
            wanted[change.memory_id] = change  # the last change of each memory
        if len(wanted) < FETCH_AHEAD_MIN:
            return
        try:
            self._take_listed(wanted)
            await self._list_ahead(store_id, wanted, batch.last_seq)
            self._take_listed(wanted)
            await self._get_ahead(store_id, [i for i in wanted if i not in self._ahead])
        except MemfsError as exc:  # e.g. the server went away: get_memory asks again
            log.debug("fetching %d changed memories ahead stopped: %s", len(wanted), exc)

    def _take_listed(self, wanted: dict[str, ChangeOut]) -> None:
        """Moves the listed states that are current for ``wanted`` into ``_ahead``."""
        for memory_id, change in wanted.items():
            listed = self._listed.pop(memory_id, None)
            if listed is not None and listed[0] >= change.seq:
                self._ahead[memory_id] = listed[1]

    async def _list_ahead(
        self, store_id: str, wanted: dict[str, ChangeOut], seq: int
    ) -> None:
        """Lists each directory of written memories of ``wanted`` (not fetched yet) whose
        listing reads at most :data:`LIST_AHEAD_OVERREAD` entries per memory wanted in
        it, judged by the entries this mount knows there; what it reads is current up to
        ``seq`` (the feed's newest when the batch came)."""
        by_directory: dict[str, int] = {}
        for memory_id, change in wanted.items():
            if (
                change.kind is ChangeKind.MEMORY_WRITTEN
                and change.path
                and memory_id not in self._ahead
            ):
                directory = _directory(change.path)
                by_directory[directory] = by_directory.get(directory, 0) + 1
        known = dict.fromkeys(by_directory, 0)
        for memory in self._known.values():
            directory = _directory(memory.path)
            if memory.memory_store_id == store_id and directory in known:
                known[directory] += 1
        for directory, count in by_directory.items():
            budget = LIST_AHEAD_OVERREAD * count
            if known[directory] + count > budget:
                continue  # a large directory with few changes: one request each is less
            pages = self._client.memory_pages(store_id, path_prefix=directory, depth=1)
            async with contextlib.aclosing(pages):
                async for page in pages:
                    self._server_state = "reachable"
                    for remote in page:
                        self._listed[remote.id] = (seq, _memory(remote))
                    budget -= len(page)
                    if budget <= 0:
                        break

    async def _get_ahead(self, store_id: str, memory_ids: Sequence[str]) -> None:
        """Retrieves ``memory_ids`` (:data:`READ_AHEAD_CONCURRENCY` at a time)."""
        limiter = trio.CapacityLimiter(READ_AHEAD_CONCURRENCY)

        async def get(memory_id: str) -> None:
            async with limiter:
                try:
                    remote = await self._ask(self._client.retrieve_memory(store_id, memory_id))
                except NotFound:
                    self._ahead[memory_id] = None
                    return
                except MemfsError:  # get_memory asks again and raises it
                    return
                if remote.content is not None:
                    await self._cache_put(remote.content)
                self._ahead[memory_id] = _memory(remote)

        async with trio.open_nursery() as nursery:
            for memory_id in memory_ids:
                nursery.start_soon(get, memory_id)


def _directory(path: str) -> str:
    """``/a/b.md`` → ``/a/``; ``/b.md`` → ``/``."""
    return path.rsplit("/", 1)[0] + "/"


def _read_position(path: Path) -> int | None:
    """The change-feed seq saved at ``path`` (see RemoteBackend._purge_missed), or None
    when there is none or it is unreadable."""
    try:
        return int(path.read_text().strip())
    except (OSError, ValueError):
        return None


def _write_position(path: Path, seq: int) -> None:
    """Saves a change-feed seq atomically (write a temporary file, rename it). A failure
    (a full disk) is logged, not raised: it only makes the next mount read more."""
    try:
        private_directory(path.parent)
        write_atomically(path, f"{seq}\n".encode(), durable=False)
    except OSError as exc:
        log.warning("could not save the change-feed position %s: %s", path, exc)
