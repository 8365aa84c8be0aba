"""cachefs: a minimal pyfuse3 filesystem that shows whether the kernel honoured the
flags of third_party/pyfuse3's patch (run by tests/kernelcache as a subprocess).

Usage: ``python cachefs.py MOUNTPOINT [--stock]``. One directory ``d`` holding files
``a`` and ``b`` (content ``"<name>\\n"``). ``--stock`` replies as stock pyfuse3 can: a
bare handle from ``opendir``, no ``noflush``; without it, ``opendir`` returns
``FileInfo(cache_readdir=True, keep_cache=True)`` and read-only opens set ``noflush``.

Counters of requests are read as JSON from the root's xattr ``user.counts``. Setting
``user.add`` on the root to a name adds that file to ``d`` behind the kernel's back:
the kernel is told by ``invalidate_inode(d)`` from a separate task, never from inside
the handler (pyfuse3's rule against deadlocks).
"""

from __future__ import annotations

import errno
import json
import os
import stat
import sys
from collections import Counter

import pyfuse3
import trio

ROOT = pyfuse3.ROOT_INODE
DIR = ROOT + 1
TIMEOUT_S = 300.0


class CacheFs(pyfuse3.Operations):
    def __init__(self, *, stock: bool) -> None:
        super().__init__()
        self.stock = stock
        self.counts: Counter[str] = Counter()
        self.files: dict[bytes, int] = {b"a": DIR + 1, b"b": DIR + 2}
        self.send, self.receive = trio.open_memory_channel[int](100)

    def _attributes(self, inode: int) -> pyfuse3.EntryAttributes:
        entry = pyfuse3.EntryAttributes()
        entry.st_ino = inode
        if inode in (ROOT, DIR):
            entry.st_mode = stat.S_IFDIR | 0o755
            entry.st_nlink = 2
        else:
            entry.st_mode = stat.S_IFREG | 0o644
            entry.st_nlink = 1
            entry.st_size = len(self._content(inode))
        entry.st_uid, entry.st_gid = os.getuid(), os.getgid()
        entry.st_mtime_ns = entry.st_ctime_ns = entry.st_atime_ns = 1_700_000_000 * 10**9
        entry.entry_timeout = entry.attr_timeout = TIMEOUT_S
        return entry

    def _content(self, inode: int) -> bytes:
        for name, number in self.files.items():
            if number == inode:
                return name + b"\n"
        raise pyfuse3.FUSEError(errno.ENOENT)

    async def lookup(self, parent_inode, name, ctx):
        self.counts["lookup"] += 1
        if parent_inode == ROOT and name == b"d":
            return self._attributes(DIR)
        if parent_inode == DIR and name in self.files:
            return self._attributes(self.files[name])
        raise pyfuse3.FUSEError(errno.ENOENT)

    async def getattr(self, inode, ctx):
        self.counts["getattr"] += 1
        return self._attributes(inode)

    async def opendir(self, inode, ctx):
        self.counts["opendir"] += 1
        if self.stock:
            return inode
        return pyfuse3.FileInfo(fh=inode, keep_cache=True, cache_readdir=True)

    async def readdir(self, fh, start_id, token):
        self.counts["readdir"] += 1
        entries = [(b"d", DIR)] if fh == ROOT else sorted(self.files.items())
        for name, inode in entries:
            if inode > start_id and not pyfuse3.readdir_reply(
                token, name, self._attributes(inode), inode
            ):
                break

    async def open(self, inode, flags, ctx):
        read_only = flags & os.O_ACCMODE == os.O_RDONLY
        info = pyfuse3.FileInfo(fh=inode)
        if read_only and not self.stock:
            info.noflush = True
        return info

    async def read(self, fh, off, size):
        return self._content(fh)[off : off + size]

    async def write(self, fh, off, buf):
        return len(buf)  # accepted and dropped: only the FLUSH at close matters here

    async def setattr(self, inode, attr, fields, fh, ctx):
        return self._attributes(inode)

    async def flush(self, fh):
        self.counts["flush"] += 1

    async def getxattr(self, inode, name, ctx):
        if inode == ROOT and name == b"user.counts":
            return json.dumps(self.counts).encode()
        raise pyfuse3.FUSEError(pyfuse3.ENOATTR)

    async def setxattr(self, inode, name, value, ctx):
        if inode != ROOT or name != b"user.add":
            raise pyfuse3.FUSEError(errno.ENOTSUP)
        self.files[value] = max(self.files.values()) + 1
        self.send.send_nowait(DIR)  # invalidated by invalidations(), not here

    async def invalidations(self) -> None:
        async for inode in self.receive:
            await trio.to_thread.run_sync(pyfuse3.invalidate_inode, inode)


async def _serve(fs: CacheFs) -> None:
    async with trio.open_nursery() as nursery:
        nursery.start_soon(fs.invalidations)
        await pyfuse3.main()
        nursery.cancel_scope.cancel()


def main(argv: list[str]) -> int:
    fs = CacheFs(stock="--stock" in argv[1:])
    options = set(pyfuse3.default_options)
    options.add("fsname=cachefs")
    pyfuse3.init(fs, argv[0], options)
    try:
        trio.run(_serve, fs)
    finally:
        pyfuse3.close(unmount=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
