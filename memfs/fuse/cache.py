"""The mount's content cache: head contents keyed by blob key, least recently used out.

Blob keys name content (SPEC §5: content is stored content-addressed), so a cached
entry never goes stale; it is only dropped for space or when a redaction purges those
bytes (SPEC §2: after redaction the bytes must be gone from every local cache).
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

__all__ = ["DEFAULT_MEMORY_CACHE_SIZE_BYTES", "BlobCache", "BlobCacheStatistics"]

# Warm reads are answered by the kernel's page cache (keep_cache) without loading
# anything here, so this only has to hold what is being read or written now and what
# a read-ahead brought in: 32 MiB keeps a 10,000-memory mount's peak RSS well under
# 150 MB after a grep -r of all of it. Each memory is at most 100 KiB (SPEC §1).
DEFAULT_MEMORY_CACHE_SIZE_BYTES = 32 * 1024 * 1024


@dataclass(frozen=True)
class BlobCacheStatistics:
    """A snapshot of :class:`BlobCache` counters."""

    entries: int
    size_bytes: int
    hits: int
    misses: int


class BlobCache:
    """An in-memory LRU map ``blob_key -> bytes`` bounded by total size.

    Args:
        max_size_bytes: the most content bytes kept; older entries are evicted first.
    """

    def __init__(self, max_size_bytes: int = DEFAULT_MEMORY_CACHE_SIZE_BYTES) -> None:
        self._max_size_bytes = max_size_bytes
        self._entries: OrderedDict[str, bytes] = OrderedDict()
        self._size_bytes = 0
        self._hits = 0
        self._misses = 0

    def get(self, blob_key: str) -> bytes | None:
        """The cached bytes of ``blob_key``, or None (a miss)."""
        data = self._entries.get(blob_key)
        if data is None:
            self._misses += 1
            return None
        self._hits += 1
        self._entries.move_to_end(blob_key)
        return data

    def __contains__(self, blob_key: object) -> bool:
        """Whether ``blob_key`` is cached (counts neither a hit nor a miss)."""
        return blob_key in self._entries

    def put(self, blob_key: str, data: bytes) -> None:
        """Caches ``data`` under ``blob_key``, evicting least recently used entries."""
        self.discard(blob_key)
        if len(data) > self._max_size_bytes:
            return
        self._entries[blob_key] = data
        self._size_bytes += len(data)
        while self._size_bytes > self._max_size_bytes:
            _, evicted = self._entries.popitem(last=False)
            self._size_bytes -= len(evicted)

    def discard(self, blob_key: str) -> None:
        """Drops ``blob_key`` if cached (redaction purge)."""
        data = self._entries.pop(blob_key, None)
        if data is not None:
            self._size_bytes -= len(data)

    def statistics(self) -> BlobCacheStatistics:
        return BlobCacheStatistics(
            entries=len(self._entries),
            size_bytes=self._size_bytes,
            hits=self._hits,
            misses=self._misses,
        )
