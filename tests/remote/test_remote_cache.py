"""The remote mount's content-addressed disk cache (memfs/remote/cache.py)."""

from __future__ import annotations

import hashlib
import os
import threading
from pathlib import Path

import pytest
import trio

from memfs.remote.cache import ContentCache, default_cache_root


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def files_under(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file())


def test_default_root_is_under_memfs_home(memfs_home: Path) -> None:
    assert default_cache_root() == memfs_home / "cache"


def test_put_names_the_file_by_its_sha256(tmp_path: Path) -> None:
    cache = ContentCache(tmp_path / "cache")
    digest = cache.put(b"hello")
    assert digest == sha(b"hello")
    assert files_under(tmp_path / "cache") == [tmp_path / "cache" / digest[:2] / digest]
    assert cache.get(digest) == b"hello"
    assert cache.contains(digest)
    stats = cache.statistics()
    assert (stats.entries, stats.size_bytes, stats.hits, stats.misses) == (1, 5, 1, 0)


def test_a_miss_returns_none(tmp_path: Path) -> None:
    cache = ContentCache(tmp_path)
    assert cache.get(sha(b"absent")) is None
    assert not cache.contains(sha(b"absent"))
    assert cache.statistics().misses == 1


def test_put_renames_a_complete_file_into_place_without_fsync(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Readers never see a partial entry; durability is not the cache's job (module
    docstring: a torn entry after a power loss is a hash mismatch, hence a miss)."""
    cache = ContentCache(tmp_path)
    events: list[str] = []
    real_replace = os.replace

    def fsync(fd: int) -> None:
        events.append("fsync")

    def replace(src: str | Path, dst: str | Path) -> None:
        events.append(f"rename {Path(src).read_bytes()!r}")
        real_replace(src, dst)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", replace)
    cache.put(b"complete")
    assert events == ["rename b'complete'"]


def test_an_entry_left_empty_by_a_power_loss_is_a_miss(tmp_path: Path) -> None:
    digest = ContentCache(tmp_path).put(b"lost before it reached the disk")
    (tmp_path / digest[:2] / digest).write_bytes(b"")
    cache = ContentCache(tmp_path)
    assert cache.get(digest) is None
    assert cache.statistics().corrupt == 1
    assert not (tmp_path / digest[:2] / digest).exists()


def test_a_corrupt_entry_is_a_miss_and_is_deleted(tmp_path: Path) -> None:
    cache = ContentCache(tmp_path)
    digest = cache.put(b"original")
    path = tmp_path / digest[:2] / digest
    path.write_bytes(b"tampered")

    assert cache.get(digest) is None
    assert not path.exists()
    stats = cache.statistics()
    assert (stats.corrupt, stats.entries, stats.size_bytes) == (1, 0, 0)
    # A later put of the right bytes heals it.
    cache.put(b"original")
    assert cache.get(digest) == b"original"


def test_least_recently_used_entries_are_evicted_first(tmp_path: Path) -> None:
    cache = ContentCache(tmp_path, max_size_bytes=30)
    a, b, c = (cache.put(bytes([n]) * 10) for n in (1, 2, 3))
    assert cache.get(a) is not None  # a is now the most recently used
    d = cache.put(b"\x04" * 10)

    assert cache.lru_order() == [c, a, d]
    assert cache.get(b) is None
    assert not (tmp_path / b[:2] / b).exists()
    stats = cache.statistics()
    assert (stats.size_bytes, stats.evictions) == (30, 1)


def test_an_entry_bigger_than_the_bound_is_not_cached(tmp_path: Path) -> None:
    cache = ContentCache(tmp_path, max_size_bytes=4)
    kept = cache.put(b"1234")
    digest = cache.put(b"12345")
    assert digest == sha(b"12345")
    assert cache.get(digest) is None
    assert cache.get(kept) == b"1234"


def test_the_cache_and_its_order_survive_a_restart(tmp_path: Path) -> None:
    cache = ContentCache(tmp_path, max_size_bytes=1000)
    a, b, c = (cache.put(data) for data in (b"aaaa", b"bbbb", b"cccc"))
    cache.get(a)
    del cache

    reopened = ContentCache(tmp_path, max_size_bytes=1000)
    assert reopened.lru_order() == [b, c, a]
    assert reopened.statistics().size_bytes == 12
    assert reopened.get(c) == b"cccc"

    # A smaller bound at start evicts the least recently used first.
    smaller = ContentCache(tmp_path, max_size_bytes=8)
    assert smaller.lru_order() == [a, c]
    assert files_under(tmp_path) == sorted(tmp_path / d[:2] / d for d in (a, c))


def test_an_interrupted_write_is_removed_at_start(tmp_path: Path) -> None:
    cache = ContentCache(tmp_path)
    digest = cache.put(b"whole")
    torn = tmp_path / digest[:2] / f".{sha(b'torn')}.0badf00d"
    torn.write_bytes(b"to")
    stray = tmp_path / "not-a-shard"
    stray.write_bytes(b"left alone")

    reopened = ContentCache(tmp_path)
    assert not torn.exists()
    assert stray.exists()
    assert reopened.lru_order() == [digest]


def test_purge_leaves_no_trace_of_the_bytes(tmp_path: Path) -> None:
    cache = ContentCache(tmp_path)
    secret = b"password=hunter2"
    digest = cache.put(secret)
    other = cache.put(b"keep me")

    assert cache.purge(digest) is True
    assert cache.get(digest) is None
    assert digest not in cache.lru_order()
    assert all(secret not in path.read_bytes() for path in files_under(tmp_path))
    assert files_under(tmp_path) == [tmp_path / other[:2] / other]
    assert cache.purge(digest) is False
    assert cache.statistics().size_bytes == len(b"keep me")


def test_purge_reaches_entries_written_by_another_process(tmp_path: Path) -> None:
    mine = ContentCache(tmp_path)
    theirs = ContentCache(tmp_path)  # another mount sharing $MEMFS_HOME
    digest = theirs.put(b"shared")
    assert mine.get(digest) == b"shared"
    assert mine.purge(digest) is True
    assert theirs.get(digest) is None


async def test_concurrent_use_from_worker_threads_keeps_the_books_right(
    tmp_path: Path,
) -> None:
    cache = ContentCache(tmp_path, max_size_bytes=64 * 50)
    payloads = [bytes([n % 256]) * 64 for n in range(200)]
    barrier = threading.Barrier(8)

    def work(worker: int) -> None:
        barrier.wait()
        for index in range(worker, len(payloads), 8):
            digest = cache.put(payloads[index])
            data = cache.get(digest)
            assert data is None or data == payloads[index]
            if index % 5 == 0:
                cache.purge(digest)

    async with trio.open_nursery() as nursery:
        for worker in range(8):
            nursery.start_soon(trio.to_thread.run_sync, work, worker)

    on_disk = files_under(tmp_path)
    stats = cache.statistics()
    assert stats.size_bytes == sum(p.stat().st_size for p in on_disk) <= 64 * 50
    assert stats.entries == len(on_disk)
    assert {p.name for p in on_disk} == set(cache.lru_order())
    for path in on_disk:
        assert sha(path.read_bytes()) == path.name
