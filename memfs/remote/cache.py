"""The local content cache of a remote mount: files named by the SHA-256 of their bytes.

SPEC §4: "Reads are served from a local content-addressed cache keyed by content hash;
it survives daemon restarts. When the server is unreachable, reads of cached content
keep working." Issue 4: size-bounded with least-recently-used eviction; a redaction
purges the redacted bytes from every mount's cache (SPEC §2).

Layout under ``root`` (by default ``$MEMFS_HOME/cache``)::

    <root>/<sha[:2]>/<sha>            the bytes whose SHA-256 is <sha>
    <root>/<sha[:2]>/.<sha>.<rand>    a write in progress (removed at start)

Rules:

* A name is a promise about the content: an entry is written to a temporary file,
  then renamed into place, so no reader ever sees a partial entry. Entries are not
  fsync'd (that cost 5 ms of a 15 ms cold read): the cache is not the durable copy of
  anything (the server is, or the outbox for queued writes), and every read hashes the
  bytes again, so an entry a power loss left empty or torn is a miss, deleted, and
  fetched again. A mismatch from disk damage or tampering is handled the same way.
* Access order is kept in memory and persisted as each file's atime, set explicitly
  with :func:`os.utime` on every hit (so ``noatime``/``relatime`` mounts don't matter).
  At start the order is rebuilt from ``max(atime, mtime)``; least recently used files
  go first when the total size passes ``max_size_bytes``. An entry bigger than the
  whole bound is not cached.
* :meth:`ContentCache.purge` overwrites the file with zeros, fsyncs and unlinks it: the
  redacted bytes leave no trace the cache controls (the filesystem or the disk may
  still hold old blocks; that is below memfs).

Several mounts may share one directory (same ``$MEMFS_HOME``): entries are immutable
and renames atomic, so they never see a torn file; each process bounds only what it
knows about, so the shared total can exceed one bound until the next start.

The API is synchronous and thread-safe (one lock around each operation; entries are at
most 100 KiB, so holding it during I/O is cheap). Call it from trio with
``trio.to_thread.run_sync``.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import re
import secrets
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path

from memfs.core.config import DEFAULT_CACHE_SIZE_BYTES, memfs_home
from memfs.home import fsync_directory, open_private, private_directory

__all__ = ["CacheStatistics", "ContentCache", "default_cache_root"]

log = logging.getLogger(__name__)

_SHA256_RE = re.compile(r"[0-9a-f]{64}")


def default_cache_root() -> Path:
    """``$MEMFS_HOME/cache`` (SPEC §4: the local content-addressed cache)."""
    return memfs_home() / "cache"


@dataclass(frozen=True)
class CacheStatistics:
    """A snapshot of a :class:`ContentCache`.

    Attributes:
        entries, size_bytes: what the cache holds now.
        max_size_bytes: its bound.
        hits, misses: lookups since the cache was opened (a corrupt entry is a miss).
        evictions: entries removed for space since then.
        corrupt: entries found not to hash to their name (deleted).
    """

    entries: int
    size_bytes: int
    max_size_bytes: int
    hits: int
    misses: int
    evictions: int
    corrupt: int


class ContentCache:
    """A directory of immutable files named by the SHA-256 of their bytes, bounded by
    total size with least-recently-used eviction.

    Args:
        root: the cache directory (created if missing).
        max_size_bytes: the most bytes kept (file sizes); default
            :data:`memfs.core.config.DEFAULT_CACHE_SIZE_BYTES`.
    """

    def __init__(self, root: Path, max_size_bytes: int = DEFAULT_CACHE_SIZE_BYTES) -> None:
        if max_size_bytes < 0:
            raise ValueError("max_size_bytes must be ≥ 0")
        self.root = root
        self.max_size_bytes = max_size_bytes
        self._lock = threading.Lock()
        # sha → size in bytes, least recently used first.
        self._entries: OrderedDict[str, int] = OrderedDict()
        self._size_bytes = 0
        self._hits = 0
        self._misses = 0
        self._evictions = 0
        self._corrupt = 0
        self._last_stamp_ns = 0
        private_directory(self.root)
        self._load()

    # ------------------------------------------------------------- helpers

    def _path(self, sha256: str) -> Path:
        return self.root / sha256[:2] / sha256

    def _stamp_ns(self) -> int:
        # Strictly increasing, so that two hits within one clock tick keep their order
        # across a restart.
        self._last_stamp_ns = max(time.time_ns(), self._last_stamp_ns + 1)
        return self._last_stamp_ns

    def _load(self) -> None:
        found: list[tuple[int, str, int]] = []
        for directory in self.root.iterdir():
            if not directory.is_dir() or len(directory.name) != 2:
                continue
            for path in directory.iterdir():
                name = path.name
                if name.startswith("."):
                    # A write interrupted by a crash: never renamed, never trusted.
                    with contextlib.suppress(FileNotFoundError):
                        path.unlink()
                    continue
                if not _SHA256_RE.fullmatch(name) or name[:2] != directory.name:
                    continue
                try:
                    st = path.stat()
                except FileNotFoundError:
                    continue
                found.append((max(st.st_atime_ns, st.st_mtime_ns), name, st.st_size))
        found.sort()
        for stamp_ns, name, size in found:
            self._entries[name] = size
            self._size_bytes += size
            self._last_stamp_ns = max(self._last_stamp_ns, stamp_ns)
        self._evict()

    def _forget(self, sha256: str) -> None:
        size = self._entries.pop(sha256, None)
        if size is not None:
            self._size_bytes -= size

    def _evict(self) -> None:
        while self._size_bytes > self.max_size_bytes and self._entries:
            sha256 = next(iter(self._entries))
            self._forget(sha256)
            with contextlib.suppress(FileNotFoundError):
                self._path(sha256).unlink()
            self._evictions += 1

    def _touch(self, sha256: str) -> None:
        self._entries.move_to_end(sha256)
        stamp = self._stamp_ns()
        with contextlib.suppress(FileNotFoundError):
            os.utime(self._path(sha256), ns=(stamp, stamp))

    # ---------------------------------------------------------- public API

    def get(self, sha256: str) -> bytes | None:
        """The bytes whose SHA-256 is ``sha256``, or None (not cached, or corrupt).

        A hit makes the entry the most recently used. A file whose bytes do not hash to
        its name is deleted and counts as a miss.
        """
        with self._lock:
            path = self._path(sha256)
            try:
                data = path.read_bytes()
            except (FileNotFoundError, NotADirectoryError):
                self._forget(sha256)
                self._misses += 1
                return None
            if hashlib.sha256(data).hexdigest() != sha256:
                log.warning("cache entry %s does not match its digest; deleted", sha256)
                self._forget(sha256)
                with contextlib.suppress(FileNotFoundError):
                    path.unlink()
                self._corrupt += 1
                self._misses += 1
                return None
            if sha256 not in self._entries:
                # Written by another process sharing the directory.
                self._entries[sha256] = len(data)
                self._size_bytes += len(data)
            self._touch(sha256)
            self._hits += 1
            self._evict()
            return data

    def contains(self, sha256: str) -> bool:
        """True when an entry named ``sha256`` is present (not verified, not touched)."""
        with self._lock:
            return sha256 in self._entries or self._path(sha256).exists()

    def put(self, data: bytes) -> str:
        """Caches ``data`` and returns its SHA-256 (lowercase hex).

        The entry becomes the most recently used; older ones are evicted past the bound.
        Data larger than ``max_size_bytes`` is not stored (the digest is still returned).

        Raises:
            OSError: the cache directory is not writable (disk full, permissions).
        """
        sha256 = hashlib.sha256(data).hexdigest()
        with self._lock:
            if len(data) > self.max_size_bytes:
                return sha256
            path = self._path(sha256)
            if sha256 in self._entries and path.exists():
                self._touch(sha256)
                return sha256
            private_directory(path.parent)
            temporary = path.parent / f".{sha256}.{secrets.token_hex(4)}"
            try:
                with open(open_private(temporary, os.O_WRONLY | os.O_EXCL), "wb") as file:
                    file.write(data)
                os.replace(temporary, path)  # not fsync'd: see the module docstring
            except BaseException:
                with contextlib.suppress(FileNotFoundError):
                    temporary.unlink()
                raise
            self._forget(sha256)
            self._entries[sha256] = len(data)
            self._size_bytes += len(data)
            self._touch(sha256)
            self._evict()
            return sha256

    def purge(self, sha256: str) -> bool:
        """Erases the entry ``sha256`` (SPEC §2 redaction): overwritten with zeros,
        fsync'd, unlinked, forgotten. Returns True when there was one."""
        with self._lock:
            self._forget(sha256)
            path = self._path(sha256)
            try:
                fd = os.open(path, os.O_WRONLY)
            except FileNotFoundError:
                return False
            try:
                zeros = memoryview(bytes(os.fstat(fd).st_size))
                while zeros:
                    zeros = zeros[os.write(fd, zeros) :]
                os.fsync(fd)
            finally:
                os.close(fd)
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
            fsync_directory(path.parent)
            return True

    def statistics(self) -> CacheStatistics:
        """Counters and sizes now."""
        with self._lock:
            return CacheStatistics(
                entries=len(self._entries),
                size_bytes=self._size_bytes,
                max_size_bytes=self.max_size_bytes,
                hits=self._hits,
                misses=self._misses,
                evictions=self._evictions,
                corrupt=self._corrupt,
            )

    def lru_order(self) -> list[str]:
        """The digests held, least recently used first (for tests and ``memfs status``)."""
        with self._lock:
            return list(self._entries)
