"""Telling the kernel what changed: delivery of :class:`memfs.fuse.inodes.Notice`.

Owns :class:`KernelNotices`. Every change of an entry the kernel may have cached is
recorded by the inode table as a notice; handlers hand them over with
:meth:`KernelNotices.send`, and one long-lived thread of its own (``memfs-invalidator``,
a daemon thread) invalidates them with ``pyfuse3.invalidate_*``, in order, outside every
request handler and without the mutation lock. SPEC §4: kernel caches are invalidated
for exactly the changed entries.

Why a thread of its own: the kernel carries out an entry invalidation under the lock of
the entry's directory (``fuse_reverse_inval_entry``), and a page invalidation under the
locks of the file's pages. A request that holds such a lock (a rename, create or lookup
in that directory — a rename holds it between its requests too — a read of that file)
holds it until this daemon answers, so an invalidation may wait, uninterruptibly, for
the trio loop to answer a request. The thread that waits is therefore never the loop,
and never one of trio's worker threads, which a cancelled task (the shutdown) would
wait for. While the daemon lives such a wait is short. Two ways it could be endless
are handled elsewhere: at shutdown, once requests are no longer answered, the daemon
aborts its connection if :meth:`KernelNotices.wait_idle` says the thread is still in
the kernel (:mod:`memfs.fuse.daemon`); and a daemon killed meanwhile (SIGKILL) can't
exit while the thread waits, so its watchdog process aborts the connection
(:mod:`memfs.fuse.watchdog`).
"""

from __future__ import annotations

import contextlib
import errno
import logging
import queue
import threading
import time
from collections.abc import Callable

import pyfuse3
import trio

from memfs import metrics
from memfs.fuse.inodes import InodeTable, Notice

__all__ = ["KernelNotices", "invalidate"]

log = logging.getLogger(__name__)

_STOP = object()  # the end of delivery, as a queue item


class _Mark:
    """A queue item that delivers nothing: when the thread reaches it, every notice
    queued before it was delivered, and ``reached`` is called (from the thread)."""

    def __init__(self, reached: Callable[[], None]) -> None:
        self.reached = reached


def invalidate(notice: Notice) -> None:
    """Drops one cache entry of the kernel (``pyfuse3.invalidate_entry`` or
    ``invalidate_inode``); may wait in the kernel (see the module docstring).
    ENOENT (the kernel holds no such entry), ENOTCONN and EBADF (the mount is gone) are
    nothing to report; other errors are logged."""
    try:
        if notice.name is not None:
            metrics.FUSE_INVALIDATIONS.labels("entry").inc()
            pyfuse3.invalidate_entry(notice.inode, notice.name)
        else:
            metrics.FUSE_INVALIDATIONS.labels("inode").inc()
            pyfuse3.invalidate_inode(notice.inode, attr_only=notice.attr_only)
    except OSError as exc:
        if exc.errno not in (errno.ENOENT, errno.ENOTCONN, errno.EBADF):
            log.warning("invalidating %r failed: %s", notice, exc)


class KernelNotices:
    """The notices of one mount's inode table, on their way to the kernel.

    Args:
        table: the mount's inode table (its recorded notices are taken by :meth:`send`).
        invalidate: carries out one notice in the kernel (tests give their own).
    """

    def __init__(
        self, table: InodeTable, invalidate: Callable[[Notice], None] = invalidate
    ) -> None:
        self._table = table
        self._invalidate = invalidate
        self._queue: queue.SimpleQueue[object] = queue.SimpleQueue()
        # Guards the two fields below; notified when a kernel call ends.
        self._guard = threading.Condition()
        self._call_started: float | None = None  # monotonic start of the kernel call
        self._stopped = False
        self._thread: threading.Thread | None = None

    def send(self) -> None:
        """Queues the notices the table recorded since the last call (never blocks)."""
        for notice in self._table.take_notices():
            self._queue.put(notice)

    async def delivered(self) -> None:
        """Returns once every notice queued before this call (:meth:`send`) has been
        delivered to the kernel. Only for a task that holds no kernel lock and not the
        mutation lock (an invalidation may wait for a request to be answered: the
        module docstring); never from a request handler."""
        with self._guard:
            if self._thread is None or self._stopped:
                return  # nothing delivers (not started, or shutting down)
        reached = trio.Event()
        token = trio.lowlevel.current_trio_token()
        self._queue.put(_Mark(lambda: token.run_sync_soon(reached.set)))
        await reached.wait()

    def start(self) -> None:
        """Starts the delivering thread (once)."""
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._deliver, name="memfs-invalidator", daemon=True
            )
            self._thread.start()

    def stop(self) -> None:
        """Ends delivery: no kernel call starts after this returns (the session may be
        closed next); one in progress is left to finish, or to be aborted."""
        with self._guard:
            self._stopped = True
        self._queue.put(_STOP)

    def stuck_s(self) -> float | None:
        """How long the kernel call in progress has lasted (s), or None when the thread
        is not in the kernel."""
        with self._guard:
            started = self._call_started
        return None if started is None else time.monotonic() - started

    def wait_idle(self, timeout_s: float) -> float | None:
        """Waits (blocking) up to ``timeout_s`` for the kernel call in progress to end;
        returns :meth:`stuck_s` then (None: the thread is not in the kernel)."""
        with self._guard:
            self._guard.wait_for(lambda: self._call_started is None, timeout_s)
        return self.stuck_s()

    async def deliver(self) -> None:
        """Delivers notices until cancelled (the daemon's ``memfs-invalidator`` task):
        the thread does the work, and cancelling never waits for it."""
        self.start()
        try:
            await trio.sleep_forever()
        finally:
            self.stop()

    def _deliver(self) -> None:
        while True:
            batch = [self._queue.get()]
            with contextlib.suppress(queue.Empty):
                while True:
                    batch.append(self._queue.get_nowait())
            for notice in dict.fromkeys(batch):  # in order, each once
                if notice is _STOP:
                    return
                if isinstance(notice, _Mark):
                    with contextlib.suppress(trio.RunFinishedError):
                        notice.reached()
                    continue
                assert isinstance(notice, Notice)
                with self._guard:
                    if self._stopped:
                        return
                    self._call_started = time.monotonic()
                try:
                    self._invalidate(notice)
                except Exception:  # a bug: it must not end delivery
                    log.exception("invalidating %r failed", notice)
                finally:
                    with self._guard:
                        self._call_started = None
                        self._guard.notify_all()
