"""The mount daemon: attach stores, mount, serve the kernel until unmounted.

:func:`run` is what ``memfs mount --foreground`` executes. It resolves the stores,
opens the mount's session (writes are attributed to it, SPEC §3), loads every store's
tree, mounts, reports readiness, then runs three named tasks until the filesystem is
unmounted (``memfs umount``, ``fusermount3 -u``) or the process gets SIGTERM/SIGINT/
SIGHUP:

* ``memfs-fuse``: pyfuse3's request loop;
* ``memfs-change-poller``: applies the change feed (changes made elsewhere);
* ``memfs-invalidator``: tells the kernel which cached entries changed.

On the way out it commits writes still pending in open files, unmounts, and removes
its status file last, so ``memfs umount`` knows the flush is done when the file is
gone.
"""

from __future__ import annotations

import logging
import os
import signal
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import pyfuse3
import trio

from memfs.errors import InvalidInput
from memfs.fuse.backend import AttachmentSpec, Backend
from memfs.fuse.inodes import Attachment, InodeTable, Layout
from memfs.fuse.mounts import is_mounted, is_stale, unmount
from memfs.fuse.operations import Operations
from memfs.fuse.status import MountStatus, log_path
from memfs.model import format_timestamp, utcnow
from memfs.rules import unique_slugs

__all__ = ["MOUNT_OPTIONS", "MountConfig", "StoreRequest", "run", "serve"]

log = logging.getLogger(__name__)

# mount.fuse3(8) options. No `default_permissions`: the kernel would answer EACCES from
# the mode bits of read-only files before memfs could give the EROFS SPEC §4 asks for;
# memfs enforces access itself. Only the mounting user sees the mount (no allow_other).
MOUNT_OPTIONS = frozenset({"fsname=memfs", "subtype=memfs", "noatime"})


@dataclass(frozen=True)
class StoreRequest:
    """One ``--store NAME_OR_ID[:ro]`` argument."""

    name_or_id: str
    read_only: bool

    @classmethod
    def parse(cls, argument: str) -> StoreRequest:
        """``"notes:ro"`` → read-only ``notes``; ``:rw`` or nothing → read-write."""
        for suffix, read_only in ((":ro", True), (":rw", False)):
            if argument.endswith(suffix) and len(argument) > len(suffix):
                return cls(argument[: -len(suffix)], read_only)
        return cls(argument, False)


@dataclass(frozen=True)
class MountConfig:
    """What to mount where.

    Attributes:
        mountpoint: an existing empty directory.
        stores: in attachment order (1–8).
        layout: per-store (default) or flat.
        memory_limit: live memories per store, for ``statfs``.
    """

    mountpoint: str
    stores: Sequence[StoreRequest]
    layout: Layout
    memory_limit: int


async def _attach(backend: Backend, config: MountConfig) -> list[Attachment]:
    """Resolves the requested stores into attachments (SPEC §4 layouts).

    Per-store: each store in its slug directory (``memfs.rules.unique_slugs``). Flat:
    the first store not asked read-only is the writable default, every other one is
    read-only; the default comes first in priority, then attachment order.

    Raises:
        InvalidInput: no store, or a store given twice. NotFound: unknown store.
    """
    if not config.stores:
        raise InvalidInput("give at least one --store")
    stores = [await backend.resolve_store(request.name_or_id) for request in config.stores]
    ids = [store.id for store in stores]
    if len(set(ids)) != len(ids):
        raise InvalidInput("the same store is given twice")
    slugs = unique_slugs([(store.id, store.name) for store in stores])
    attachments = [
        Attachment(
            store_id=store.id,
            name=store.name,
            directory=slugs[store.id],
            priority=index,
            read_only=request.read_only,
            archived=store.archived,
        )
        for index, (store, request) in enumerate(zip(stores, config.stores, strict=True))
    ]
    if config.layout is Layout.FLAT:
        default = next((a for a in attachments if not a.read_only), None)
        for attachment in attachments:
            attachment.read_only = attachment is not default
        if default is not None:
            # The default wins, then attachment order; the list keeps attachment order
            # (the session's resources are in that order).
            for attachment in attachments:
                attachment.priority += 0 if attachment is default else 1
            default.priority = 0
    return attachments


async def serve(
    backend: Backend, config: MountConfig, *, on_ready: Callable[[], None] | None = None
) -> None:
    """Mounts and serves until unmounted or signalled (see the module docstring).

    Args:
        backend: the store; closed on return.
        config: what to mount where.
        on_ready: called once the mount is live (the readiness pipe of ``memfs mount``).

    Raises:
        InvalidInput: the mount point is missing, not a directory or already mounted
            (a stale mount whose daemon died is removed first).
        NotFound, StoreArchived, …: from attaching the stores.
        RuntimeError: the kernel refused the mount.
    """
    mountpoint = os.path.realpath(config.mountpoint)
    try:
        if is_mounted(mountpoint):
            if not is_stale(mountpoint):
                raise InvalidInput(f"{mountpoint} is already a mount point")
            # A daemon that died left its mount behind (e.g. before a systemd restart).
            log.warning("removing the stale mount at %s (its daemon is gone)", mountpoint)
            result = unmount(mountpoint, lazy=True)
            if not result.ok:
                raise InvalidInput(
                    f"can't remove the stale mount at {mountpoint}: {result.message}"
                )
        if not os.path.isdir(mountpoint):
            raise InvalidInput(f"mount point {mountpoint} is not a directory")
        attachments = await _attach(backend, config)
        session_id = await backend.open_session(
            [AttachmentSpec(a.store_id, a.read_only) for a in attachments],
            mount_root=mountpoint,
        )
    except BaseException:
        await backend.aclose()
        raise
    status = MountStatus(
        mountpoint,
        {
            "pid": os.getpid(),
            "layout": config.layout.value,
            "session_id": session_id,
            "started_at": format_timestamp(utcnow()),
            "log_file": str(log_path(mountpoint)),
            "stores": [
                {
                    "id": a.store_id,
                    "name": a.name,
                    "directory": a.directory if config.layout is Layout.PER_STORE else ".",
                    "access": "read_only" if a.read_only else "read_write",
                    "archived": a.archived,
                }
                for a in attachments
            ],
        },
    )
    table = InodeTable(config.layout, attachments)
    operations = Operations(
        backend, table, session_id=session_id, status=status, memory_limit=config.memory_limit
    )
    try:
        await operations.load()
        pyfuse3.init(operations, mountpoint, set(MOUNT_OPTIONS))
    except BaseException:
        await backend.aclose()
        raise
    log.info("mounted %s (%s layout, session %s, %d inodes)", mountpoint,
             config.layout.value, session_id, len(table))
    try:
        status.write()
        if on_ready is not None:
            on_ready()
        async with trio.open_nursery() as nursery:
            nursery.start_soon(operations.poll_changes, name="memfs-change-poller")
            nursery.start_soon(operations.deliver_notices, name="memfs-invalidator")
            nursery.start_soon(_terminate_on_signal, name="memfs-signals")
            await pyfuse3.main()
            nursery.cancel_scope.cancel()
    finally:
        with trio.CancelScope(shield=True):
            await operations.commit_pending()
            pyfuse3.close(unmount=True)
            await backend.aclose()
        status.remove()
        log.info("unmounted %s", mountpoint)


async def _terminate_on_signal() -> None:
    """Ends the request loop on SIGTERM, SIGINT or SIGHUP (then the daemon unmounts)."""
    with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT, signal.SIGHUP) as signals:
        async for signum in signals:
            log.info("got %s; unmounting", signal.Signals(signum).name)
            pyfuse3.terminate()
            return


def run(
    backend: Backend, config: MountConfig, *, on_ready: Callable[[], None] | None = None
) -> None:
    """:func:`serve` in a new trio run (the daemon's main)."""
    trio.run(lambda: serve(backend, config, on_ready=on_ready))
