"""The pyfuse3 patch of third_party/pyfuse3 does what it says, on a real mount: the
kernel sends no FLUSH at the close of a ``noflush`` open, and serves a second listing of
a directory opened with ``cache_readdir`` + ``keep_cache`` from its cache until the
filesystem invalidates the directory. Each check is paired with the same filesystem
replying as stock pyfuse3 can, which must show the requests (so a patch that built but
did not reach the kernel fails here)."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import pyfuse3
import pytest
from _support.polling import wait_until

from memfs.fuse import capabilities

T = TypeVar("T")


def _counts(mount: Path) -> dict[str, int]:
    counts: dict[str, int] = json.loads(os.getxattr(mount, "user.counts"))
    return counts


def _run(*args: str | Path) -> str:
    return subprocess.run([str(a) for a in args], check=True, capture_output=True,
                          text=True, timeout=30).stdout


def test_the_installed_pyfuse3_is_the_patched_one() -> None:
    """scripts/setup installs the patched build; libfuse here (3.14) has both fields."""
    assert pyfuse3.NOFLUSH_SUPPORTED
    assert pyfuse3.CACHE_READDIR_SUPPORTED
    info = pyfuse3.FileInfo(fh=7, noflush=True, cache_readdir=True)
    assert (info.fh, info.noflush, info.cache_readdir, info.keep_cache) == (7, True, True, True)
    assert not pyfuse3.FileInfo().noflush
    assert not pyfuse3.FileInfo().cache_readdir
    assert capabilities.KERNEL_CACHE.noflush
    assert capabilities.KERNEL_CACHE.cached_listings


@pytest.mark.parametrize("stock", [False, True], ids=["patched", "stock"])
def test_noflush_skips_the_flush_of_read_only_opens(cachefs, stock: bool) -> None:
    mount = cachefs(stock=stock)
    target = mount / "d" / "a"
    assert _run("cat", target) == "a\n"
    assert _run("cat", target) == "a\n"
    assert _counts(mount).get("flush", 0) == (2 if stock else 0)
    with target.open("a") as stream:  # a writable open keeps its FLUSH
        stream.write("x")
    assert _counts(mount).get("flush", 0) == (3 if stock else 1)


def _cache_drops() -> tuple[int, ...]:
    """How often anyone on this machine wrote /proc/sys/vm/drop_caches (``drop_pagecache``,
    ``drop_slab`` of /proc/vmstat). The box is shared: another test or benchmark doing
    that between two listings drops a cached listing as it is meant to."""
    counters = dict(line.split() for line in Path("/proc/vmstat").read_text().splitlines())
    return int(counters.get("drop_pagecache", 0)), int(counters.get("drop_slab", 0))


def _undisturbed(experiment: Callable[[], T], attempts: int = 10) -> T:
    """``experiment()`` from a run during which nobody dropped the kernel's caches."""
    for _ in range(attempts):
        before = _cache_drops()
        result = experiment()
        if _cache_drops() == before:
            return result
    raise AssertionError(f"the kernel's caches were dropped during each of {attempts} runs")


@pytest.mark.parametrize("stock", [False, True], ids=["patched", "stock"])
def test_cache_readdir_serves_a_second_listing(cachefs, stock: bool) -> None:
    mount = cachefs(stock=stock)
    directory = mount / "d"

    def readdirs_of_two_listings() -> tuple[int, int]:
        counts = [_counts(mount)]
        for _ in range(2):
            assert _run("ls", directory).split() == ["a", "b"]
            counts.append(_counts(mount))
        opens = [c.get("opendir", 0) for c in counts]
        assert opens[2] - opens[1] == opens[1] - opens[0] == 1  # each ls opens it
        first, second = (counts[n + 1]["readdir"] - counts[n].get("readdir", 0) for n in (0, 1))
        return first, second

    first, second = _undisturbed(readdirs_of_two_listings)
    if stock:
        assert first == second > 0
    else:
        assert second == 0  # the first listing (of this run or one before) filled the cache


def test_invalidate_inode_drops_a_cached_listing(cachefs) -> None:
    mount = cachefs()
    directory = mount / "d"
    assert _run("ls", directory).split() == ["a", "b"]
    assert _run("ls", directory).split() == ["a", "b"]  # now served from the cache
    os.setxattr(mount, "user.add", b"c")  # behind the kernel's back, then invalidated

    def listed_with_c() -> bool:
        listed = _run("ls", directory).split()
        assert listed in (["a", "b"], ["a", "b", "c"])
        return listed == ["a", "b", "c"]

    wait_until(listed_with_c, "the cached listing to be dropped")
    assert (directory / "c").read_text() == "c\n"


def test_detect_falls_back_to_stock_behaviour(monkeypatch: pytest.MonkeyPatch) -> None:
    """Stock pyfuse3 has neither constant; MEMFS_FUSE_KERNEL_CACHE=0 turns both off."""
    off = capabilities.KernelCache(noflush=False, cached_listings=False)
    assert capabilities.detect({capabilities.DISABLE_ENV: "0"}) == off
    assert capabilities.detect({}) == capabilities.KernelCache(noflush=True, cached_listings=True)
    monkeypatch.delattr(pyfuse3, "NOFLUSH_SUPPORTED")
    monkeypatch.delattr(pyfuse3, "CACHE_READDIR_SUPPORTED")
    assert capabilities.detect({}) == off
    monkeypatch.setattr(capabilities, "KERNEL_CACHE", off)
    assert capabilities.directory_reply(5) == 5
    assert not capabilities.file_reply(5, keep_cache=True, read_only=True).noflush


def test_replies_with_the_patch() -> None:
    reply = capabilities.directory_reply(5)
    assert isinstance(reply, pyfuse3.FileInfo)
    assert (reply.fh, reply.cache_readdir, reply.keep_cache) == (5, True, True)
    assert capabilities.file_reply(5, keep_cache=True, read_only=True).noflush
    assert not capabilities.file_reply(5, keep_cache=True, read_only=False).noflush
