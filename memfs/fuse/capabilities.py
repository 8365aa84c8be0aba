"""What the installed pyfuse3 lets a mount ask of the kernel's caches.

Stock pyfuse3 3.5 passes on only ``fh``, ``direct_io``, ``keep_cache`` and
``nonseekable``; scripts/setup builds it with the patch in third_party/pyfuse3/, which
adds ``FileInfo(noflush=, cache_readdir=)`` and lets ``opendir`` return a ``FileInfo``.
This module finds out at import which of the two is installed, and builds the replies
of ``open`` and ``opendir`` accordingly, so that the handlers never test for it:

- ``noflush`` on read-only opens: ``close(2)`` of a descriptor that cannot have written
  sends no FLUSH (memfs's flush commits only for handles that wrote; a writable open
  keeps it, since FLUSH is the commit point: SPEC §4 close-to-open, errno at close).
- cached listings: ``cache_readdir`` with ``keep_cache`` from ``opendir``, so a second
  listing of an unchanged directory is answered by the kernel. Correct only because a
  directory's cache is dropped by a full ``invalidate_inode(dir)`` whenever its entries
  change (memfs.fuse.inodes.InodeTable: every link and unlink notices the directory).

With stock pyfuse3, or with ``MEMFS_FUSE_KERNEL_CACHE=0`` in the environment (to
measure or to rule it out), both are off and mounts behave as before.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import pyfuse3

__all__ = [
    "KERNEL_CACHE",
    "KernelCache",
    "detect",
    "directory_reply",
    "file_reply",
    "stock_pyfuse3_warning",
]

#: Set to 0 to run as with stock pyfuse3 even when the patched one is installed.
DISABLE_ENV = "MEMFS_FUSE_KERNEL_CACHE"


@dataclass(frozen=True)
class KernelCache:
    """Which kernel caching flags reach the kernel through the installed pyfuse3.

    Attributes:
        noflush: ``FileInfo.noflush`` is passed on (patched pyfuse3, libfuse >= 3.11).
        cached_listings: ``opendir`` may return ``FileInfo(cache_readdir=True,
            keep_cache=True)`` (patched pyfuse3, libfuse >= 3.5).
    """

    noflush: bool
    cached_listings: bool


def _turned_off(env: dict[str, str] | os._Environ[str]) -> bool:
    """Whether ``MEMFS_FUSE_KERNEL_CACHE`` turns the kernel caching flags off."""
    return env.get(DISABLE_ENV, "1").strip() in ("0", "off", "no", "false")


def detect(environ: dict[str, str] | None = None) -> KernelCache:
    """The flags the installed pyfuse3 supports, unless ``MEMFS_FUSE_KERNEL_CACHE=0``.

    Stock pyfuse3 has neither ``NOFLUSH_SUPPORTED`` nor ``CACHE_READDIR_SUPPORTED``; the
    patched one sets each to whether the libfuse it was built against has the field.
    """
    if _turned_off(os.environ if environ is None else environ):
        return KernelCache(noflush=False, cached_listings=False)
    return KernelCache(
        noflush=bool(getattr(pyfuse3, "NOFLUSH_SUPPORTED", False)),
        cached_listings=bool(getattr(pyfuse3, "CACHE_READDIR_SUPPORTED", False)),
    )


#: What this process's mounts use; read once at import.
KERNEL_CACHE = detect()


def stock_pyfuse3_warning(environ: dict[str, str] | None = None) -> str | None:
    """The warning ``memfs mount`` prints (once, not its daemon) when the installed
    pyfuse3 is the stock build, as a wheel from PyPI installs it; None with the patched
    build, or when ``MEMFS_FUSE_KERNEL_CACHE=0`` turned the caches off on purpose."""
    if hasattr(pyfuse3, "NOFLUSH_SUPPORTED") or _turned_off(
        os.environ if environ is None else environ
    ):
        return None
    return (
        "pyfuse3 is the stock build, without memfs's patch (third_party/pyfuse3/): the "
        "kernel caches no listings and every close sends a FLUSH (correct, slower); "
        "scripts/setup builds the patched one; MEMFS_FUSE_KERNEL_CACHE=0 silences this"
    )


def file_reply(
    fh: int, *, keep_cache: bool, direct_io: bool = False, read_only: bool = False
) -> pyfuse3.FileInfo:
    """The reply to ``open``/``create``: ``noflush`` is set only for a ``read_only``
    open (one that cannot write, so its FLUSH would do nothing) and only when the
    installed pyfuse3 passes it on."""
    info = pyfuse3.FileInfo(fh=fh, keep_cache=keep_cache, direct_io=direct_io)
    if read_only and KERNEL_CACHE.noflush:
        info.noflush = True
    return info


def directory_reply(fh: int, *, keep_cache: bool = True) -> int | pyfuse3.FileInfo:
    """The reply to ``opendir``: the bare handle with stock pyfuse3, else a ``FileInfo``
    that lets the kernel keep the listing until the directory is invalidated
    (``keep_cache`` False: the kernel drops the listing it holds at this open)."""
    if not KERNEL_CACHE.cached_listings:
        return fh
    info = pyfuse3.FileInfo(fh=fh, keep_cache=keep_cache)
    info.cache_readdir = True
    return info
