#!/usr/bin/env python3
"""floorfs: the smallest honest in-memory pyfuse3 filesystem, the benchmark's floor.

``scripts/bench`` mounts it beside kernel tmpfs, ``rclone mount`` and memfs to show what
the pyfuse3 + trio + libfuse3 stack costs by itself: every request crosses the kernel into
this Python process and back, but the work done here is a dict lookup or a ``bytearray``
slice. Whatever memfs spends beyond this floor is memfs's own (SQLite, validation,
versioning), not FUSE's. The shape follows pyfuse3's ``examples/tmpfs.py`` with its
in-memory SQLite replaced by dicts, which is the cheaper of the two.

Usage::

    python scripts/floorfs.py MOUNTPOINT [--kernel-cache] [--debug]

``--kernel-cache`` is the *patched floor* (issue 17): with the pyfuse3 that scripts/setup
builds from third_party/pyfuse3/, read-only opens set ``noflush`` (no FLUSH at close)
and ``opendir`` returns ``FileInfo(cache_readdir=True, keep_cache=True)`` (the kernel
keeps listings; only this mount changes the tree, and the kernel drops a directory's
cached listing itself when it changes through the mount). It exits with an error when
the installed pyfuse3 is the stock one.

It runs in the foreground until unmounted (``fusermount3 -u MOUNTPOINT``) or interrupted.

Behaviour, chosen to match what the benchmark's workloads need:
    - regular files and directories: lookup, getattr, setattr (size, mode, owner, times),
      readdir(plus) with a monotonic cursor (entries ordered by inode number; inode
      numbers are never reused), open, create, read, write at any offset (holes read as zeros),
      flush/fsync/release (no-ops: there is nowhere to flush to), mkdir, unlink, rmdir
      (``ENOTEMPTY``), rename (replaces a file or an empty directory), statfs.
    - the lookup-count contract of pyfuse3's ``Operations`` docstrings: an unlinked inode
      lives until the kernel has forgotten every lookup of it.
    - kernel caching as generous as is correct for a filesystem that only this mount
      changes: entry and attribute timeouts are pyfuse3's defaults (300 s) and ``open``
      sets ``keep_cache`` (the page cache stays valid across opens, since every write goes
      through it). ``examples/tmpfs.py`` omits ``keep_cache``; with it, this is the floor
      for reads too, not only for writes. No writeback cache: writes reach this process
      at once, as they do in memfs (which must refuse bad content at write time).

Limitations (deliberate; it is a benchmark floor, not a filesystem to keep data in):
    - everything lives in this process's memory and is gone at unmount;
    - no symlinks, hard links, device nodes, xattrs or ACLs (``ENOSYS``/``ENOTSUP`` from
      pyfuse3's defaults); ``rename`` flags (``RENAME_NOREPLACE``/``EXCHANGE``) give
      ``EINVAL``;
    - no size limit or quota: ``statfs`` reports a fixed, large free space;
    - permissions are checked by the kernel (``default_permissions``), never here;
    - single-threaded (one trio task per request, no locks needed since handlers never
      await while mutating).
"""

from __future__ import annotations

import argparse
import errno
import logging
import os
import stat
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import pyfuse3
import trio

log = logging.getLogger("floorfs")

# statfs figures: a fixed, large pretend capacity (the fs has no quota).
_BLOCK_SIZE_BYTES = 4096
_PRETEND_BLOCKS = 1 << 24  # 64 GiB of 4 KiB blocks
_PRETEND_INODES = 1 << 24


@dataclass(eq=False)
class _Inode:
    """One file or directory. ``children`` maps names to inode numbers (empty for files)."""

    number: int
    mode: int
    uid: int
    gid: int
    parent: int
    data: bytearray = field(default_factory=bytearray)
    children: dict[bytes, int] = field(default_factory=dict)
    nlink: int = 1
    lookup_count: int = 0
    atime_ns: int = 0
    mtime_ns: int = 0
    ctime_ns: int = 0

    @property
    def is_dir(self) -> bool:
        return stat.S_ISDIR(self.mode)


class FloorOperations(pyfuse3.Operations):
    """In-memory request handlers; every one is a few dict operations."""

    def __init__(self, *, kernel_cache: bool = False) -> None:
        super().__init__()
        self._kernel_cache = kernel_cache
        now = time.time_ns()
        root = _Inode(
            number=pyfuse3.ROOT_INODE,
            mode=stat.S_IFDIR | 0o755,
            uid=os.getuid(),
            gid=os.getgid(),
            parent=pyfuse3.ROOT_INODE,
            nlink=2,
            atime_ns=now,
            mtime_ns=now,
            ctime_ns=now,
        )
        self._inodes: dict[int, _Inode] = {root.number: root}
        # Inode numbers are never reused: the kernel may still hold a handle to an
        # unlinked inode, and readdir's cursor relies on the order.
        self._next_inode = pyfuse3.ROOT_INODE + 1

    # ------------------------------------------------------------------ helpers

    def _get(self, inode: int) -> _Inode:
        try:
            return self._inodes[inode]
        except KeyError:
            raise pyfuse3.FUSEError(errno.ENOENT) from None

    def _dir(self, inode: int) -> _Inode:
        node = self._get(inode)
        if not node.is_dir:
            raise pyfuse3.FUSEError(errno.ENOTDIR)
        return node

    def _attributes(self, node: _Inode) -> pyfuse3.EntryAttributes:
        attr = pyfuse3.EntryAttributes()
        attr.st_ino = node.number
        attr.generation = 0
        attr.st_mode = node.mode
        attr.st_nlink = node.nlink
        attr.st_uid = node.uid
        attr.st_gid = node.gid
        attr.st_rdev = 0
        attr.st_size = len(node.data)
        attr.st_blksize = _BLOCK_SIZE_BYTES
        attr.st_blocks = (len(node.data) + 511) // 512
        attr.st_atime_ns = node.atime_ns
        attr.st_mtime_ns = node.mtime_ns
        attr.st_ctime_ns = node.ctime_ns
        return attr

    def _maybe_remove(self, node: _Inode) -> None:
        """Drops an inode once it is unlinked and forgotten (pyfuse3 lookup_counts.rst)."""
        if node.nlink == 0 and node.lookup_count == 0:
            del self._inodes[node.number]

    def _new_inode(
        self, parent: _Inode, name: bytes, mode: int, ctx: pyfuse3.RequestContext, *, is_dir: bool
    ) -> _Inode:
        if name in parent.children:
            raise pyfuse3.FUSEError(errno.EEXIST)
        now = time.time_ns()
        node = _Inode(
            number=self._next_inode,
            mode=mode,
            uid=ctx.uid,
            gid=ctx.gid,
            parent=parent.number,
            nlink=2 if is_dir else 1,
            lookup_count=1,
            atime_ns=now,
            mtime_ns=now,
            ctime_ns=now,
        )
        self._next_inode += 1
        self._inodes[node.number] = node
        parent.children[name] = node.number
        if is_dir:
            parent.nlink += 1
        parent.mtime_ns = parent.ctime_ns = now
        return node

    def _detach(self, parent: _Inode, name: bytes, node: _Inode) -> None:
        """Removes the entry ``name`` of ``parent`` that points at ``node``."""
        del parent.children[name]
        now = time.time_ns()
        parent.mtime_ns = parent.ctime_ns = now
        node.ctime_ns = now
        if node.is_dir:
            parent.nlink -= 1
            node.nlink = 0
        else:
            node.nlink -= 1
        self._maybe_remove(node)

    # ----------------------------------------------------------------- handlers

    async def lookup(
        self, parent_inode: int, name: bytes, ctx: pyfuse3.RequestContext
    ) -> pyfuse3.EntryAttributes:
        parent = self._dir(parent_inode)
        if name == b".":
            node = parent
        elif name == b"..":
            node = self._get(parent.parent)
        else:
            number = parent.children.get(name)
            if number is None:
                raise pyfuse3.FUSEError(errno.ENOENT)
            node = self._inodes[number]
        node.lookup_count += 1
        return self._attributes(node)

    async def forget(self, inode_list: Sequence[tuple[int, int]]) -> None:
        for inode, nlookup in inode_list:
            node = self._inodes.get(inode)
            if node is None or inode == pyfuse3.ROOT_INODE:
                continue
            node.lookup_count -= nlookup
            self._maybe_remove(node)

    async def getattr(self, inode: int, ctx: pyfuse3.RequestContext) -> pyfuse3.EntryAttributes:
        return self._attributes(self._get(inode))

    async def setattr(
        self,
        inode: int,
        attr: pyfuse3.EntryAttributes,
        fields: pyfuse3.SetattrFields,
        fh: int | None,
        ctx: pyfuse3.RequestContext,
    ) -> pyfuse3.EntryAttributes:
        node = self._get(inode)
        now = time.time_ns()
        if fields.update_size:
            if node.is_dir:
                raise pyfuse3.FUSEError(errno.EISDIR)
            size = attr.st_size
            if size < len(node.data):
                del node.data[size:]
            else:
                node.data.extend(bytes(size - len(node.data)))
            node.mtime_ns = now
        if fields.update_mode:
            node.mode = stat.S_IFMT(node.mode) | stat.S_IMODE(attr.st_mode)
        if fields.update_uid:
            node.uid = attr.st_uid
        if fields.update_gid:
            node.gid = attr.st_gid
        if fields.update_atime:
            node.atime_ns = attr.st_atime_ns
        if fields.update_mtime:
            node.mtime_ns = attr.st_mtime_ns
        node.ctime_ns = attr.st_ctime_ns if fields.update_ctime else now
        return self._attributes(node)

    async def opendir(self, inode: int, ctx: pyfuse3.RequestContext) -> int | pyfuse3.FileInfo:
        self._dir(inode)
        if self._kernel_cache:
            return pyfuse3.FileInfo(fh=inode, keep_cache=True, cache_readdir=True)
        return inode

    async def readdir(self, fh: int, start_id: int, token: pyfuse3.ReaddirToken) -> None:
        # The cursor is the inode number of the last entry returned: numbers are never
        # reused, so entries created or removed between calls never shift the others.
        node = self._dir(fh)
        entries = sorted(
            (number, name) for name, number in node.children.items() if number > start_id
        )
        for number, name in entries:
            child = self._inodes[number]
            if not pyfuse3.readdir_reply(token, name, self._attributes(child), number):
                break
            # pyfuse3 answers with READDIRPLUS: each entry accepted is a lookup.
            child.lookup_count += 1

    async def mkdir(
        self, parent_inode: int, name: bytes, mode: int, ctx: pyfuse3.RequestContext
    ) -> pyfuse3.EntryAttributes:
        parent = self._dir(parent_inode)
        node = self._new_inode(parent, name, stat.S_IFDIR | stat.S_IMODE(mode), ctx, is_dir=True)
        return self._attributes(node)

    async def rmdir(self, parent_inode: int, name: bytes, ctx: pyfuse3.RequestContext) -> None:
        parent = self._dir(parent_inode)
        number = parent.children.get(name)
        if number is None:
            raise pyfuse3.FUSEError(errno.ENOENT)
        node = self._inodes[number]
        if not node.is_dir:
            raise pyfuse3.FUSEError(errno.ENOTDIR)
        if node.children:
            raise pyfuse3.FUSEError(errno.ENOTEMPTY)
        self._detach(parent, name, node)

    async def unlink(self, parent_inode: int, name: bytes, ctx: pyfuse3.RequestContext) -> None:
        parent = self._dir(parent_inode)
        number = parent.children.get(name)
        if number is None:
            raise pyfuse3.FUSEError(errno.ENOENT)
        node = self._inodes[number]
        if node.is_dir:
            raise pyfuse3.FUSEError(errno.EISDIR)
        self._detach(parent, name, node)

    async def rename(
        self,
        parent_inode_old: int,
        name_old: bytes,
        parent_inode_new: int,
        name_new: bytes,
        flags: int,
        ctx: pyfuse3.RequestContext,
    ) -> None:
        if flags:
            raise pyfuse3.FUSEError(errno.EINVAL)
        old_parent = self._dir(parent_inode_old)
        new_parent = self._dir(parent_inode_new)
        number = old_parent.children.get(name_old)
        if number is None:
            raise pyfuse3.FUSEError(errno.ENOENT)
        node = self._inodes[number]
        target_number = new_parent.children.get(name_new)
        if target_number == number:
            return
        if target_number is not None:
            target = self._inodes[target_number]
            if target.is_dir != node.is_dir:
                raise pyfuse3.FUSEError(errno.EISDIR if target.is_dir else errno.ENOTDIR)
            if target.children:
                raise pyfuse3.FUSEError(errno.ENOTEMPTY)
            self._detach(new_parent, name_new, target)
        del old_parent.children[name_old]
        new_parent.children[name_new] = number
        if node.is_dir:
            old_parent.nlink -= 1
            new_parent.nlink += 1
        node.parent = new_parent.number
        now = time.time_ns()
        old_parent.mtime_ns = old_parent.ctime_ns = now
        new_parent.mtime_ns = new_parent.ctime_ns = now
        node.ctime_ns = now

    async def open(self, inode: int, flags: int, ctx: pyfuse3.RequestContext) -> pyfuse3.FileInfo:
        node = self._get(inode)
        if node.is_dir:
            raise pyfuse3.FUSEError(errno.EISDIR)
        if flags & os.O_TRUNC:
            del node.data[:]
            node.mtime_ns = node.ctime_ns = time.time_ns()
        # Every change to this file passed through this mount: cached pages are current.
        info = pyfuse3.FileInfo(fh=inode, keep_cache=True)
        if self._kernel_cache and flags & os.O_ACCMODE == os.O_RDONLY:
            info.noflush = True  # flush does nothing here anyway; the kernel need not ask
        return info

    async def create(
        self, parent_inode: int, name: bytes, mode: int, flags: int, ctx: pyfuse3.RequestContext
    ) -> tuple[pyfuse3.FileInfo, pyfuse3.EntryAttributes]:
        parent = self._dir(parent_inode)
        node = self._new_inode(parent, name, stat.S_IFREG | stat.S_IMODE(mode), ctx, is_dir=False)
        return pyfuse3.FileInfo(fh=node.number, keep_cache=True), self._attributes(node)

    async def read(self, fh: int, off: int, size: int) -> bytes:
        return bytes(self._get(fh).data[off : off + size])

    async def write(self, fh: int, off: int, buf: bytes) -> int:
        node = self._get(fh)
        end = off + len(buf)
        if off > len(node.data):
            node.data.extend(bytes(off - len(node.data)))
        node.data[off:end] = buf
        node.mtime_ns = node.ctime_ns = time.time_ns()
        return len(buf)

    async def flush(self, fh: int) -> None:
        pass

    async def fsync(self, fh: int, datasync: bool) -> None:
        pass

    async def release(self, fh: int) -> None:
        pass

    async def releasedir(self, fh: int) -> None:
        pass

    async def statfs(self, ctx: pyfuse3.RequestContext) -> pyfuse3.StatvfsData:
        used_blocks = sum(len(n.data) for n in self._inodes.values()) // _BLOCK_SIZE_BYTES
        data = pyfuse3.StatvfsData()
        data.f_bsize = data.f_frsize = _BLOCK_SIZE_BYTES
        data.f_blocks = _PRETEND_BLOCKS
        data.f_bfree = data.f_bavail = _PRETEND_BLOCKS - used_blocks
        data.f_files = _PRETEND_INODES
        data.f_ffree = data.f_favail = _PRETEND_INODES - len(self._inodes)
        data.f_namemax = 255
        return data


def main(argv: list[str] | None = None) -> int:
    """Mounts floorfs at MOUNTPOINT in the foreground; returns the exit status."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("mountpoint")
    parser.add_argument(
        "--kernel-cache",
        action="store_true",
        help="noflush on read-only opens, cached listings (needs the patched pyfuse3)",
    )
    parser.add_argument("--debug", action="store_true", help="log every request (slow)")
    args = parser.parse_args(argv)
    if args.kernel_cache and not (
        getattr(pyfuse3, "NOFLUSH_SUPPORTED", False)
        and getattr(pyfuse3, "CACHE_READDIR_SUPPORTED", False)
    ):
        parser.error("--kernel-cache needs the patched pyfuse3 (scripts/setup builds it)")
    logging.basicConfig(
        level=logging.DEBUG if args.debug else logging.WARNING,
        format="%(asctime)s floorfs %(levelname)s %(message)s",
    )
    options = set(pyfuse3.default_options)
    options.add("fsname=floorfs")
    if args.debug:
        options.add("debug")
    pyfuse3.init(FloorOperations(kernel_cache=args.kernel_cache), args.mountpoint, options)
    try:
        trio.run(pyfuse3.main)
    except KeyboardInterrupt:
        pass
    finally:
        # unmount=True is harmless when fusermount3 -u already did it.
        pyfuse3.close(unmount=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
