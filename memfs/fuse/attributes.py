"""What stat(2) and statfs(2) show for a mount, and how long the kernel may cache it.

Owns :class:`Attributes`: a node's ``pyfuse3.EntryAttributes`` (owner and modes from
:class:`memfs.fuse.sandbox.MountAccess`, SPEC §4 Sandboxes; ``w`` bits only where a
write would be accepted) and the ``statfs`` figures of the mount's stores. Handing
attributes to the kernel records them on the node (``Node.kernel_attributes``), so
the table can tell when the kernel's copy turns stale
(:meth:`memfs.fuse.inodes.InodeTable.notice_if_stale`).
"""

from __future__ import annotations

import stat
import time

import pyfuse3

from memfs.core.config import MAX_CONTENT_BYTES, MAX_SEGMENT_BYTES
from memfs.fuse.capabilities import KERNEL_CACHE
from memfs.fuse.inodes import InodeTable, Node
from memfs.fuse.sandbox import MountAccess

__all__ = [
    "ATTR_TIMEOUT_S",
    "BLOCK_SIZE_BYTES",
    "ENTRY_TIMEOUT_S",
    "IMMUTABLE_TIMEOUT_S",
    "STATFS_MAX_AGE_S",
    "STAT_BLOCK_BYTES",
    "Attributes",
]

# Kernel cache timeouts. Freshness comes from precise invalidation, not from expiry:
# every change the mount learns of (its own commits included, see
# InodeTable.notice_if_stale; the change feed for the rest) invalidates exactly the
# entries and attributes it changed (SPEC §4: "kernel caches are invalidated for
# exactly the changed entries"). The timeouts only bound how long a missed
# invalidation could show stale metadata, and let `ls -lR`, `find` and `cat` over a
# warm tree be answered by the kernel without a round trip. With cached listings (the
# patched pyfuse3, memfs.fuse.capabilities) they are long: a listing the kernel keeps
# carries no attributes, so once they expired `ls -lR` would send one LOOKUP per
# entry; a directory's listing is dropped by invalidation too.
ENTRY_TIMEOUT_S = 3600.0 if KERNEL_CACHE.cached_listings else 10.0
ATTR_TIMEOUT_S = ENTRY_TIMEOUT_S
# An as-of attachment (SPEC §10) never changes: its entries and attributes may stay in
# the kernel's caches for a day (only an erasure, SPEC §2, removes one: invalidated).
IMMUTABLE_TIMEOUT_S = 86400.0
BLOCK_SIZE_BYTES = 4096
STAT_BLOCK_BYTES = 512  # st_blocks counts 512-byte units (stat(2))
# statfs(2) figures are recounted at most this often (seconds): counting walks every
# stored memory (6 ms for 10,000 on the 2-core box), and `find` (gnulib fts) asks once
# per run, `df` at each call. Free space and files are an estimate anyway (other
# mounts write too); a count at most this old is what `df` shows.
STATFS_MAX_AGE_S = 1.0


class Attributes:
    """The attributes a mount hands to the kernel.

    Args:
        table: the inode table (writability, subdirectory counts, stored memories).
        access: owner and modes every inode shows (SPEC §4 Sandboxes).
        memory_limit: live memories allowed per store (the capacity ``statfs`` shows).
    """

    def __init__(self, table: InodeTable, access: MountAccess, memory_limit: int) -> None:
        self._table = table
        self._access = access
        self._uid, self._gid = access.owner()
        self._memory_limit = memory_limit
        self._statfs: pyfuse3.StatvfsData | None = None
        self._statfs_at = 0.0  # time.monotonic() of the count in _statfs

    def of(self, node: Node) -> pyfuse3.EntryAttributes:
        """The attributes of ``node``, recorded as what the kernel now holds of it."""
        entry = pyfuse3.EntryAttributes()
        entry.st_ino = node.inode
        entry.generation = 0
        if node.attachment is not None and node.attachment.immutable:
            entry.entry_timeout = entry.attr_timeout = IMMUTABLE_TIMEOUT_S
        else:
            entry.entry_timeout = ENTRY_TIMEOUT_S
            entry.attr_timeout = ATTR_TIMEOUT_S
        writable = self._table.is_writable(node)
        if node.is_dir:
            entry.st_mode = stat.S_IFDIR | self._access.directory_mode(writable)
            entry.st_nlink = 2 + self._table.subdirectory_count(node)
            entry.st_size = 0
        else:
            entry.st_mode = stat.S_IFREG | self._access.file_mode(writable)
            entry.st_nlink = 1 if node.parent is not None else 0
            entry.st_size = node.size_bytes
        entry.st_uid = self._uid
        entry.st_gid = self._gid
        entry.st_rdev = 0
        entry.st_blksize = BLOCK_SIZE_BYTES
        entry.st_blocks = -(-entry.st_size // STAT_BLOCK_BYTES)
        entry.st_atime_ns = node.mtime_ns
        entry.st_mtime_ns = node.mtime_ns
        entry.st_ctime_ns = node.mtime_ns
        node.kernel_attributes = (entry.st_size, node.mtime_ns)
        return entry

    def statfs(self) -> pyfuse3.StatvfsData:
        """statfs(2): capacity is the memory limit of each attached store times the
        largest content (SPEC §1), used space the content of every stored memory, as
        counted at most :data:`STATFS_MAX_AGE_S` ago."""
        now = time.monotonic()
        if self._statfs is None or now - self._statfs_at >= STATFS_MAX_AGE_S:
            self._statfs = self._count()
            self._statfs_at = now
        return self._statfs

    def _count(self) -> pyfuse3.StatvfsData:
        """The statfs figures as the table shows them now (one pass over the memories)."""
        table = self._table
        stored = used_bytes = 0
        for node in table.store_memory_nodes():
            stored += 1
            used_bytes += node.size_bytes
        capacity_files = self._memory_limit * max(1, len(table.attachments))
        capacity_blocks = capacity_files * MAX_CONTENT_BYTES // BLOCK_SIZE_BYTES
        data = pyfuse3.StatvfsData()
        data.f_bsize = BLOCK_SIZE_BYTES
        data.f_frsize = BLOCK_SIZE_BYTES
        data.f_blocks = capacity_blocks
        data.f_bfree = max(0, capacity_blocks - used_bytes // BLOCK_SIZE_BYTES)
        data.f_bavail = data.f_bfree
        data.f_files = capacity_files
        data.f_ffree = max(0, capacity_files - stored)
        data.f_favail = data.f_ffree
        data.f_namemax = MAX_SEGMENT_BYTES
        return data
