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
import time
from pathlib import Path

import pyfuse3
import pytest

from memfs.fuse import capabilities

# Changes behind the kernel's back must show within this (SPEC §4: about one second).
PROPAGATION_TIMEOUT_S = 5.0


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


@pytest.mark.parametrize("stock", [False, True], ids=["patched", "stock"])
def test_cache_readdir_serves_a_second_listing(cachefs, stock: bool) -> None:
    mount = cachefs(stock=stock)
    directory = mount / "d"
    assert _run("ls", directory).split() == ["a", "b"]
    first = _counts(mount)["readdir"]
    assert _run("ls", directory).split() == ["a", "b"]
    after = _counts(mount)
    assert after["opendir"] == 2  # the kernel still opens the directory each time
    assert after["readdir"] == (2 * first if stock else first)


def test_invalidate_inode_drops_a_cached_listing(cachefs) -> None:
    mount = cachefs()
    directory = mount / "d"
    assert _run("ls", directory).split() == ["a", "b"]
    assert _run("ls", directory).split() == ["a", "b"]  # now served from the cache
    os.setxattr(mount, "user.add", b"c")  # behind the kernel's back, then invalidated
    deadline = time.monotonic() + PROPAGATION_TIMEOUT_S
    while (listed := _run("ls", directory).split()) != ["a", "b", "c"]:
        assert listed == ["a", "b"]
        assert time.monotonic() < deadline, "the cached listing was never dropped"
        time.sleep(0.02)
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
