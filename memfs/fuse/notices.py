"""Telling the kernel what changed: delivery of :class:`memfs.fuse.inodes.Notice`.

Owns :class:`KernelNotices`. Every change of an entry the kernel may have cached is
recorded by the inode table as a notice; handlers hand them over with
:meth:`KernelNotices.send`, and one task (:meth:`KernelNotices.deliver`) invalidates
them with ``pyfuse3.invalidate_*`` in a worker thread, outside every request handler
and without the mutation lock (invalidating from inside a handler could deadlock on
the inode being handled). SPEC §4: kernel caches are invalidated for exactly the
changed entries.
"""

from __future__ import annotations

import errno
import logging
import math

import pyfuse3
import trio

from memfs.fuse.inodes import InodeTable, Notice

__all__ = ["KernelNotices"]

log = logging.getLogger(__name__)


class KernelNotices:
    """The notices of one mount's inode table, on their way to the kernel."""

    def __init__(self, table: InodeTable) -> None:
        self._table = table
        self._send, self._receive = trio.open_memory_channel[Notice](math.inf)

    def send(self) -> None:
        """Queues the notices the table recorded since the last call (never blocks)."""
        for notice in self._table.take_notices():
            self._send.send_nowait(notice)

    async def deliver(self) -> None:
        """Invalidates kernel caches for queued notices, forever (a named task)."""
        async for first in self._receive:
            batch = [first]
            while True:
                try:
                    batch.append(self._receive.receive_nowait())
                except trio.WouldBlock:
                    break
            unique = list(dict.fromkeys(batch))
            await trio.to_thread.run_sync(_invalidate, unique)


def _invalidate(notices: list[Notice]) -> None:
    for notice in notices:
        try:
            if notice.name is not None:
                pyfuse3.invalidate_entry(notice.inode, notice.name)
            else:
                pyfuse3.invalidate_inode(notice.inode, attr_only=notice.attr_only)
        except OSError as exc:
            # ENOENT: the kernel does not know that entry or inode (nothing to drop).
            if exc.errno not in (errno.ENOENT, errno.ENOTCONN, errno.EBADF):
                log.warning("invalidating %r failed: %s", notice, exc)
