"""Getting a file's head content into the mount: the content cache, read-ahead and
purge marks.

Owns :class:`ContentReader`: a file's bytes come from its working copy, else the
content cache (:mod:`memfs.fuse.cache`, keyed by blob key), else the store, fetched
together with the uncached files after it in its directory (read-ahead: a ``grep -r``
or ``cat *`` of a cold tree costs one store call per batch, not one per file).
Purge marks keep bytes a redaction erased from coming back into the cache through a
fetch that was already in flight (SPEC §2: after redaction the bytes are gone from
every local cache).
"""

from __future__ import annotations

import bisect
import hashlib
import itertools
import time
from collections import OrderedDict

from memfs.backend import Backend
from memfs.core.errors import MemfsError, NotFound
from memfs.core.model import Memory
from memfs.fuse.cache import BlobCache, BlobCacheStatistics
from memfs.fuse.inodes import Node

__all__ = [
    "KNOWN_DIGESTS_KEPT",
    "READ_AHEAD_BYTES",
    "READ_AHEAD_FILES",
    "READ_AHEAD_SCAN",
    "ContentReader",
]

# Read-ahead on a content cache miss: at most this many files and bytes per store round
# trip, and at most READ_AHEAD_SCAN names looked at per miss.
READ_AHEAD_FILES = 32
READ_AHEAD_BYTES = 1024 * 1024
READ_AHEAD_SCAN = 4 * READ_AHEAD_FILES
# How many content digests the reader remembers where to find (the base of a merge,
# see ContentReader.content_by_digest): far more than files are open at once.
KNOWN_DIGESTS_KEPT = 4096


class ContentReader:
    """The head contents of a mount's files, cached and fetched ahead.

    Args:
        backend: the store.
    """

    def __init__(self, backend: Backend) -> None:
        self._backend = backend
        self.cache = BlobCache()
        # Purge marks (see purge): blob key -> the purge sequence number that dropped it.
        self._purge_seq = 0
        self.purged: dict[str, int] = {}
        self._fetches = 0  # content fetches in flight
        # content digest -> (blob key, a memory state that held it if seen, length): where
        # the content an open saw can be found again at its close (the base of a merge);
        # ``length``: the first so many bytes of it only (a read the kernel cut, see
        # handed_out_prefix), None for all of it.
        self._known: OrderedDict[str, tuple[str, Memory | None, int | None]] = OrderedDict()

    def statistics(self) -> BlobCacheStatistics:
        """The in-memory content cache of this mount (``memfs status``)."""
        return self.cache.statistics()

    def remember(self, blob_key: str, data: bytes, sha256: str | None = None) -> None:
        """Caches content this mount just wrote (a commit, a conflict copy);
        ``sha256``: its digest when the caller has it (else computed here)."""
        self.cache.put(blob_key, data)
        self._know(sha256 or hashlib.sha256(data).hexdigest(), blob_key, None)

    def _know(
        self, sha256: str, blob_key: str, memory: Memory | None, length: int | None = None
    ) -> None:
        known = self._known.pop(sha256, None)
        if memory is None and known is not None and known[0] == blob_key:
            memory = known[1]
        self._known[sha256] = (blob_key, memory, length)
        if len(self._known) > KNOWN_DIGESTS_KEPT:
            self._known.popitem(last=False)

    def handed_out_prefix(self, node: Node, size_bytes: int) -> None:
        """The kernel cut a read of clean file ``node`` at ``size_bytes``, the size it
        holds for it (smaller than the content: a change made elsewhere whose
        invalidation has not reached the kernel yet, so its reader saw the new content's
        first ``size_bytes`` only). Those bytes are what this open handed out: they
        become :attr:`WorkingCopy.opened_sha256`, the precondition and merge base of a
        save made from them (an editor's temporary file renamed over this one, SPEC §4
        concurrent writers), and are remembered by digest as a prefix of the content's
        blob (a redaction of it forgets them too).

        Without this, the save's precondition was the new head, which the save does not
        hold: a line appended elsewhere between the open and the read was dropped
        silently (or, when the head had moved on again, the merge saw an overlap).
        """
        buffer = node.working.buffer
        assert buffer is not None
        assert 0 <= size_bytes < len(buffer)
        whole = hashlib.sha256(buffer).hexdigest()
        seen = hashlib.sha256(buffer[:size_bytes]).hexdigest()
        known = self._known.get(whole)
        if known is not None and known[2] is None:
            self._know(seen, known[0], known[1], size_bytes)
        # Unknown content (not expected: a clean buffer was loaded through here) keeps
        # the digest anyway: the save then fails its precondition and, with no base to
        # merge from, keeps both; nothing is lost.
        node.working.handed_out_cut(seen, whole)

    async def content_by_digest(self, sha256: str) -> bytes | None:
        """Content of digest ``sha256`` that this mount opened or wrote (one of the last
        :data:`KNOWN_DIGESTS_KEPT`): from the cache, else read again from the store by
        the memory state that held it. The base of a three-way merge at close (SPEC §4
        concurrent writers: "base: what this open saw").

        Returns:
            The bytes, or None when they can't be had (never seen, evicted and not
            readable, erased by a redaction): the caller keeps both instead.
        """
        known = self._known.get(sha256)
        if known is None:
            return None
        blob_key, memory, length = known
        data = self.cache.get(blob_key)
        if data is None and memory is not None:
            try:
                data = await self.read_memory(memory)
            except MemfsError:
                return None
        if data is not None and length is not None:
            data = data[:length]
        if data is None or hashlib.sha256(data).hexdigest() != sha256:
            return None
        return data

    async def read_memory(self, memory: Memory) -> bytes:
        """The content of memory state ``memory`` (a head, or one an open saw): from the
        cache, else from the store (then cached).

        Raises:
            NotFound, BackendUnavailable: as :meth:`Backend.read_content`.
        """
        data = self.cache.get(memory.blob_key)
        if data is None:
            since = self._purge_seq
            data = await self._backend.read_content(memory)
            self._cache_fetched(memory.blob_key, data, since)
            if self.purged.get(memory.blob_key, 0) > since:
                raise NotFound(f"the content of {memory.path} was erased while it was read")
        self._know(memory.content_sha256, memory.blob_key, memory)
        return data

    async def ensure_loaded(self, node: Node) -> bytearray:
        """The content of ``node``: its working copy, else its head from the cache or the
        store (loaded into the working copy).

        Raises:
            NotFound, BackendUnavailable: as :meth:`Backend.read_content`.
        """
        working = node.working
        while working.buffer is None:
            memory = node.memory
            if memory is None:
                working.start_empty(dirty=False)
                break
            data = self.cache.get(memory.blob_key)
            if data is None:
                data = await self.read_ahead(node, memory)
            if working.buffer is None and node.memory is memory:
                working.load(data, memory.content_sha256)
                self._know(memory.content_sha256, memory.blob_key, memory)
        assert working.buffer is not None
        return working.buffer

    async def open_content(self, node: Node, *, writable: bool, truncate: bool) -> None:
        """Readies the working copy of file ``node`` for an open: ``O_TRUNC`` empties it
        (an unloaded file's old content is not fetched: a remote mount can do this with
        its server away), a writable open loads the head (every handle writes into the
        one content). A read-only open loads nothing: the first read does, and with
        ``keep_cache`` the kernel's pages answer the reads, so a warm ``cat`` or
        ``grep -r`` never copies the content out of the cache or the store. The file's
        mtime moves when content was dropped.

        Raises:
            what :meth:`ensure_loaded` raises.
        """
        working = node.working
        if node.memory is not None:  # what this open sees: the base of a merge at close
            self._know(node.memory.content_sha256, node.memory.blob_key, node.memory)
        if truncate and not working.loaded:
            head_size = node.memory.content_size_bytes if node.memory is not None else 0
            if working.truncate_unloaded(head_size_bytes=head_size):
                node.mtime_ns = time.time_ns()
        elif writable or truncate:
            await self.ensure_loaded(node)
            if truncate and working.truncate(0):
                node.mtime_ns = time.time_ns()

    async def read_ahead(self, node: Node, memory: Memory) -> bytes:
        """The head content of ``node`` (a cache miss), fetched together with the
        uncached contents of the files after it in its directory (by name, wrapping),
        up to :data:`READ_AHEAD_FILES` files and :data:`READ_AHEAD_BYTES`: `cat *` and
        `grep -r` on a cold mount then cost one store round trip per batch, not per
        file. Everything fetched goes to the content cache.

        Raises:
            NotFound, BackendUnavailable: as :meth:`Backend.read_content`.
        """
        batch = [memory, *self._siblings(node, memory)]
        self._fetches += 1
        try:
            since = self._purge_seq
            found = await self._backend.read_contents(batch) if len(batch) > 1 else {}
            for blob_key, content in found.items():
                self._cache_fetched(blob_key, content, since)
            data = found.get(memory.blob_key)
            if data is None:
                since = self._purge_seq
                data = await self._backend.read_content(memory)
                self._cache_fetched(memory.blob_key, data, since)
            if self.purged.get(memory.blob_key, 0) > since:
                raise NotFound(f"the content of {memory.path} was erased while it was read")
            return data
        finally:
            self._fetches -= 1
            if not self._fetches:
                self.purged.clear()  # no fetch left that began before those purges

    def _siblings(self, node: Node, memory: Memory) -> list[Memory]:
        """The uncached memories after ``node`` in its directory, within the budget."""
        directory = node.parent
        if directory is None or len(directory.children) <= 1:
            return []
        batch: list[Memory] = []
        budget = READ_AHEAD_BYTES - memory.content_size_bytes
        # Entries are mostly in name order already (loaded sorted, then appended), which
        # makes this sort close to linear.
        names = sorted(directory.children)
        start = bisect.bisect_right(names, node.name)
        # A miss in a big directory whose files are mostly cached costs a bounded scan.
        for name in itertools.islice(
            itertools.chain(names[start:], names[:start]), READ_AHEAD_SCAN
        ):
            if len(batch) + 1 >= READ_AHEAD_FILES or budget <= 0:
                break
            child = directory.children.get(name)
            sibling = child.memory if child is not None else None
            if (
                sibling is None
                or sibling is memory
                or sibling.content_size_bytes > budget
                or sibling.blob_key in self.cache
            ):
                continue
            batch.append(sibling)
            budget -= sibling.content_size_bytes
        return batch

    def purge(self, blob_key: str) -> None:
        """Drops purged content from the cache, and marks it so that a fetch already in
        flight (read-ahead, a read) does not put it back (SPEC §2 redaction)."""
        self.cache.discard(blob_key)
        for sha256 in [d for d, (key, _, _) in self._known.items() if key == blob_key]:
            del self._known[sha256]
        self._purge_seq += 1
        self.purged[blob_key] = self._purge_seq

    def _cache_fetched(self, blob_key: str, data: bytes, since: int) -> None:
        """Caches content fetched by a store call that began at purge mark ``since``,
        unless it was purged meanwhile."""
        if self.purged.get(blob_key, 0) <= since:
            self.cache.put(blob_key, data)
