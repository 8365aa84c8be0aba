"""The mount daemon: attach stores, mount, serve the kernel until unmounted.

:func:`run` is what ``memfs mount --foreground`` executes, with an embedded or a remote
backend alike. It resolves the stores (those given, or those of the backend's preset
session: a remote mount holds a session token), opens the mount's session (writes are
attributed to it, SPEC §3), loads every store's tree, mounts, reports readiness, then
runs named tasks until the filesystem is unmounted (``memfs umount``,
``fusermount3 -u``) or the process gets SIGTERM/SIGINT/SIGHUP:

* pyfuse3's request loop (``pyfuse3.main``);
* ``memfs-changes-<directory>``: one per store, applies its change feed (changes made
  elsewhere; a long poll on a remote backend);
* ``memfs-invalidator``: tells the kernel which cached entries changed (the work is
  done by a thread of its own, which may wait in the kernel: see
  :mod:`memfs.fuse.notices`);
* ``memfs-backend``: the backend's own work (a remote one replays its outbox);
* ``memfs-status``: keeps the status file current (server state, outbox depth, caches,
  conflicts and refusals the backend met on its own);
* ``memfs-signals``: turns SIGTERM/SIGINT/SIGHUP into an unmount;
* ``memfs-namespace``: in a private mount namespace (``unshare -m``, SPEC §4
  Sandboxes), ends the mount once no other process is left in it
  (:class:`memfs.fuse.sandbox.NamespaceWatch`).

Next to it runs a watchdog process (:mod:`memfs.fuse.watchdog`) that aborts the FUSE
connection if the daemon is killed while a thread of it is held in the kernel.

Who may use the mount (``allow_other``, the owner and modes files show) comes from
``MountConfig.access``; the conditions a mount would be refused for are checked first,
so the error names the cause (:func:`memfs.fuse.sandbox.check_can_mount`). Under
systemd (``Type=notify``) the daemon sends ``READY=1`` once the mount is live and
``STOPPING=1`` when it starts to unmount (:mod:`memfs.fuse.sdnotify`).

On the way out it commits writes still pending in open files, keeps the bytes of
scratch files (which never reach the store) under ``rejected/``, aborts its FUSE
connection if an invalidation is still waiting in the kernel on a request nobody will
answer any more (else the process could never exit), unmounts, and removes
its status file last, so ``memfs umount`` knows the flush is done when the file is
gone.
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import logging
import math
import os
import signal
import sys
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

import pyfuse3
import trio

from memfs import metrics
from memfs.backend import AsOfPoint, AttachmentSpec, Backend, BackendEvent, BackendStatistics
from memfs.core.errors import InvalidInput, InvalidPath
from memfs.core.model import Access, MemoryStore, format_timestamp, utcnow
from memfs.core.points import parse_mount_store
from memfs.core.rules import unique_slugs, validate_segment
from memfs.fuse import watchdog
from memfs.fuse.errno_table import errno_for
from memfs.fuse.inodes import Attachment, InodeTable, Layout
from memfs.fuse.mounts import abort_connection, connection_of, is_mounted, is_stale, unmount
from memfs.fuse.operations import Operations
from memfs.fuse.sandbox import MountAccess, NamespaceWatch, check_can_mount
from memfs.fuse.sdnotify import notify
from memfs.fuse.status import (
    MountStatus,
    flush_held_rejected,
    held_rejected,
    log_path,
    metrics_path,
    record_saved_scratch,
)
from memfs.home import write_atomically

__all__ = [
    "INVALIDATION_GRACE_S",
    "MOUNT_OPTIONS",
    "DaemonLogHandler",
    "NAMESPACE_CHECK_INTERVAL_S",
    "STATUS_REFRESH_INTERVAL_S",
    "MountConfig",
    "StoreRequest",
    "run",
    "serve",
]

log = logging.getLogger(__name__)

# mount.fuse3(8) options. No `default_permissions` by default: the kernel would answer
# EACCES from the mode bits of read-only files before memfs could give the EROFS SPEC §4
# asks for; memfs enforces access itself. Only the mounting user sees the mount, unless
# MountAccess lets others in (then with default_permissions: SPEC §4 Sandboxes).
MOUNT_OPTIONS = frozenset({"fsname=memfs", "subtype=memfs", "noatime"})
# How often a daemon in a private mount namespace looks for other processes in it.
NAMESPACE_CHECK_INTERVAL_S = 1.0
# How often the status file is brought up to date with the backend (memfs status).
STATUS_REFRESH_INTERVAL_S = 0.25
# How often the metrics file of `memfs status --prometheus` is rewritten, in seconds.
METRICS_FILE_INTERVAL_S = 1.0
# At unmount, how long an invalidation still in the kernel may take before the daemon
# aborts its connection (once requests are no longer answered, one waiting on a
# request's lock never returns by itself).
INVALIDATION_GRACE_S = 0.5


class DaemonLogHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """The daemon's log handler (its standard error: the log file of a background
    mount): a record the stream can't take (its disk is full) is counted, not
    reported with a traceback to that same full stream, and the next record it takes
    is preceded by one WARNING saying how many were lost and why. Never raises.
    """

    def __init__(self, stream: Any = None) -> None:
        super().__init__(stream)
        self.lost = 0
        self._reason = ""

    def handleError(self, record: logging.LogRecord) -> None:
        self.lost += 1
        self._reason = str(sys.exc_info()[1])

    def emit(self, record: logging.LogRecord) -> None:
        if self.lost:
            lost, self.lost = self.lost, 0
            super().emit(logging.LogRecord(
                log.name, logging.WARNING, __file__, 0,
                "%d log line(s) could not be written (%s) and are lost", (lost, self._reason),
                None,
            ))
        super().emit(record)


@dataclass(frozen=True)
class StoreRequest:
    """One ``--store NAME_OR_ID[@POINT][:ro]`` argument; ``point``: the text of the
    point of an as-of attachment (SPEC §10), None for the store as it is."""

    name_or_id: str
    read_only: bool
    point: str | None = None

    @classmethod
    def parse(cls, argument: str) -> StoreRequest:
        """``"notes:ro"`` → read-only ``notes``; ``:rw`` or nothing → read-write;
        ``"notes@before-cleanup"`` → ``notes`` as of that snapshot, read-only
        (:func:`memfs.core.points.parse_mount_store`). Raises InvalidInput,
        InvalidPoint."""
        spec, point = parse_mount_store(argument)
        return cls(spec.name_or_id, spec.read_only, None if point is None else point.text)


@dataclass(frozen=True)
class MountConfig:
    """What to mount where.

    Attributes:
        mountpoint: an existing empty directory.
        stores: in attachment order (1–8); empty means every store of the backend's
            preset session (a remote mount).
        layout: per-store or flat; None: the preset session's layout (a remote mount of
            an (identity, template) pair's session is flat, SPEC §8), else per-store.
        memory_limit: live memories per store, for ``statfs``.
        access: who may use the mount; the owner and modes files show.
        metrics_port: serve Prometheus metrics at ``http://127.0.0.1:PORT/metrics``
            (0: a free port, named in the log and the status file); None: only the
            metrics file of ``memfs status --prometheus``.
    """

    mountpoint: str
    stores: Sequence[StoreRequest]
    layout: Layout | None
    memory_limit: int
    access: MountAccess = MountAccess()
    metrics_port: int | None = None


async def _resolve_layout(backend: Backend, config: MountConfig) -> MountConfig:
    """``config`` with its layout decided: as given, else the preset session's."""
    if config.layout is not None:
        return config
    session = await backend.preset_session()
    layout = session.layout if session is not None else Layout.PER_STORE
    return dataclasses.replace(config, layout=layout)


def _directory_of(mount_path: str) -> str | None:
    """The last segment of a session resource's mount path, if it is a valid name."""
    name = mount_path.rstrip("/").rsplit("/", 1)[-1]
    try:
        return validate_segment(name)
    except InvalidPath:
        return None


async def _attach(backend: Backend, config: MountConfig) -> list[Attachment]:
    """Resolves the requested stores into attachments (SPEC §4 layouts).

    With a preset session (a remote mount's token), the stores default to the session's
    resources in their order, a ``read_only`` resource is attached read-only, and each
    store's directory is the last segment of its resource's mount path (SPEC §3: the
    session decides access modes and mount paths). Otherwise each store is in its slug
    directory (``memfs.core.rules.unique_slugs``).

    Per-store: one directory per store. Flat: the first store not read-only is the
    writable default, every other one is read-only; the default comes first in
    priority, then attachment order.

    Raises:
        InvalidInput: no store, or a store given twice. NotFound: unknown store.
        AuthenticationFailed, BackendUnavailable: from the preset session.
    """
    session = await backend.preset_session()
    requests = list(config.stores)
    resource_read_only: dict[str, bool] = {}
    directories: dict[str, str] = {}
    if session is not None:
        if not requests:
            requests = [StoreRequest(r.memory_store_id, False) for r in session.resources]
        for resource in session.resources:
            resource_read_only[resource.memory_store_id] = resource.access is Access.READ_ONLY
            directory = _directory_of(resource.mount_path)
            if directory is not None:
                directories[resource.memory_store_id] = directory
    if not requests:
        raise InvalidInput("give at least one --store")
    stores = [await backend.resolve_store(request.name_or_id) for request in requests]
    ids = [store.id for store in stores]
    if len(set(ids)) != len(ids):
        raise InvalidInput(
            "the same store is given twice (a store and its past go in two mounts)"
        )
    points = await _resolve_points(backend, stores, requests)
    slugs = unique_slugs([(store.id, store.name) for store in stores])
    if len(set(directories.get(i, slugs[i]) for i in ids)) != len(ids):
        directories = {}  # mount paths that collide here: fall back to the slugs
    directories = {i: directories.get(i, slugs[i]) for i in ids}
    directories.update({i: _as_of_directory(directories[i], at) for i, at in points.items()})
    attachments = [
        Attachment(
            store_id=store.id,
            name=store.name,
            directory=directories.get(store.id, slugs[store.id]),
            priority=index,
            read_only=(
                request.read_only
                or resource_read_only.get(store.id, False)
                or store.id in points
            ),
            archived=store.archived,
            as_of=points.get(store.id),
        )
        for index, (store, request) in enumerate(zip(stores, requests, strict=True))
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


async def _resolve_points(
    backend: Backend, stores: Sequence[MemoryStore], requests: Sequence[StoreRequest]
) -> dict[str, AsOfPoint]:
    """The point of each as-of request, by store id, each resolved once, here, before
    anything is attached (SPEC §10). Raises InvalidPoint, NotFound."""
    return {
        store.id: await backend.resolve_point(store.id, request.point)
        for store, request in zip(stores, requests, strict=True)
        if request.point is not None
    }


def _as_of_directory(directory: str, at: AsOfPoint) -> str:
    """An as-of attachment's directory: ``<store directory>@<label>`` (SPEC §10;
    labels: :func:`memfs.core.points.point_label`). Raises InvalidInput (too long for
    one path segment)."""
    name = f"{directory}@{at.label}"
    try:
        return validate_segment(name)
    except InvalidPath as exc:
        raise InvalidInput(f"the directory {name!r} of the store at {at.text}: {exc}") from exc


def _stores_status(attachments: Sequence[Attachment], layout: Layout) -> list[dict[str, Any]]:
    return [
        {
            "id": a.store_id,
            "name": a.name,
            "directory": a.directory if layout is Layout.PER_STORE else ".",
            "access": "read_only" if a.read_only else "read_write",
            "archived": a.archived,
            "deleted": a.deleted,
            "seq": a.seq,
            "at": None if a.as_of is None else a.as_of.text,
        }
        for a in attachments
    ]


@dataclass
class _StatusFeed:
    """Copies what a backend met on its own into the mount's status (``memfs status``):
    new conflicts, refusals and errors since the last look, and the live fields."""

    status: MountStatus
    operations: Operations
    backend: Backend
    table: InodeTable
    conflicts_seen: int = 0
    rejected_seen: int = 0
    errors_seen: int = 0
    metrics_written_at: float = -math.inf
    metrics_url: str | None = None  # --metrics-port: where they are served

    @staticmethod
    def _new(events: tuple[BackendEvent, ...], count: int, seen: int) -> list[BackendEvent]:
        fresh = count - seen
        return list(events[-fresh:]) if fresh > 0 else []

    def publish(self) -> None:
        # A full disk: the disk-full state ends once space is back, and refused bytes
        # held in memory meanwhile go under rejected/ (memfs.fuse.status, "A full disk").
        self.status.check_space()
        flush_held_rejected()
        stats = self.backend.statistics()
        for event in self._new(stats.conflicts, stats.conflict_count, self.conflicts_seen):
            self.status.record_conflict(event.path, event.conflict_path or "", at=event.at)
        for event in self._new(stats.rejected, stats.rejected_count, self.rejected_seen):
            code = errno_for(event.error) if event.error is not None else errno.EIO
            self.status.record_rejected(
                event.path, errno.errorcode[code], event.saved_to or "", event.message,
                at=event.at,
            )
        for event in self._new(stats.last_errors, stats.error_count, self.errors_seen):
            self.status.record_error(event.message, at=event.at)
        self.conflicts_seen = stats.conflict_count
        self.rejected_seen = stats.rejected_count
        self.errors_seen = stats.error_count
        cache = self.operations.cache_statistics()
        oldest = stats.outbox_oldest_at
        metrics.MOUNT_STATE.update(
            outbox_depth=stats.outbox_depth,
            outbox_oldest_age_s=0.0 if oldest is None else (utcnow() - oldest).total_seconds(),
            cache_hits=cache.hits,
            cache_misses=cache.misses,
            cache_size_bytes=cache.size_bytes,
            conflicts=self.status.conflict_count,
            merges=self.status.merge_count,
            rejected_writes=self.status.rejected_count,
        )
        self._write_metrics()
        self.status.set_live(
            backend=_backend_status(stats),
            memory_cache=dataclasses.asdict(cache),
            kernel_cache=self.operations.kernel_cache_status(),
            stores=_stores_status(self.table.attachments, self.table.layout),
            metrics_url=self.metrics_url,
        )

    def _write_metrics(self) -> None:
        """Rewrites the metrics file ``memfs status --prometheus`` prints, at most every
        :data:`METRICS_FILE_INTERVAL_S` (not durable: a snapshot; a failure is dropped,
        the status file says what matters)."""
        now = time.monotonic()
        if now - self.metrics_written_at < METRICS_FILE_INTERVAL_S:
            return
        self.metrics_written_at = now
        with contextlib.suppress(OSError):
            write_atomically(metrics_path(self.status.mountpoint), metrics.render(),
                             durable=False)

    async def run(self) -> None:
        while True:
            await trio.sleep(STATUS_REFRESH_INTERVAL_S)
            try:
                self.publish()
            except OSError as exc:  # a full disk must not end the mount
                log.warning("could not update the status file: %s", exc)


def _backend_status(stats: BackendStatistics) -> dict[str, Any]:
    return {
        "kind": stats.kind,
        "location": stats.location,
        "server_state": stats.server_state,
        "outbox_depth": stats.outbox_depth,
        "outbox_oldest_at": (
            format_timestamp(stats.outbox_oldest_at) if stats.outbox_oldest_at else None
        ),
        "cache_entries": stats.cache_entries,
        "cache_size_bytes": stats.cache_size_bytes,
        "cache_max_size_bytes": stats.cache_max_size_bytes,
        "conflict_count": stats.conflict_count,
        "rejected_count": stats.rejected_count,
        "error_count": stats.error_count,
        "search_pending": stats.search_pending,
        "search_lag_s": stats.search_lag_s,
    }


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
        FuseUnavailable: ``/dev/fuse`` can't be opened, or ``fusermount3`` would refuse
            (the message names the cause and the fix).
        RuntimeError: the kernel refused the mount.
    """
    await trio.to_thread.run_sync(check_can_mount, config.access)
    mountpoint = await trio.to_thread.run_sync(os.path.realpath, config.mountpoint)
    watch = await trio.to_thread.run_sync(NamespaceWatch)
    async with contextlib.AsyncExitStack() as stack:
        # On every way out, in this (reverse) order: unmount once mounted (commit what
        # open files hold, keep scratch bytes), close the backend, and remove the status
        # file once mounted: last, so `memfs umount` knows the flush is done when the
        # file is gone.
        mounted: list[MountStatus] = []
        stack.callback(_forget_mount, mounted, mountpoint)
        stack.push_async_callback(_shielded, backend.aclose)
        await trio.to_thread.run_sync(_clear_mount_point, mountpoint)
        config = await _resolve_layout(backend, config)
        assert config.layout is not None
        attachments = await _attach(backend, config)
        session_id = await backend.open_session(
            [AttachmentSpec(a.store_id, a.read_only) for a in attachments],
            mount_root=mountpoint,
            layout=config.layout,
        )
        status = MountStatus(
            mountpoint,
            {
                "pid": os.getpid(),
                "mount_namespace": watch.namespace,
                "layout": config.layout.value,
                "session_id": session_id,
                "started_at": format_timestamp(utcnow()),
                "log_file": str(log_path(mountpoint)),
                "stores": _stores_status(attachments, config.layout),
                # The kernel checks modes (allow_other): `memfs prompt` tells the agent
                # that a write to something read-only is EACCES then (SPEC §4 Sandboxes).
                "modes_checked": config.access.checks_permissions,
            },
        )
        table = InodeTable(config.layout, attachments)
        operations = Operations(
            backend, table, session_id=session_id, status=status,
            memory_limit=config.memory_limit, access=config.access,
        )
        feed = _StatusFeed(status, operations, backend, table)
        await operations.load()
        pyfuse3.init(operations, mountpoint, set(MOUNT_OPTIONS) | config.access.kernel_options())
        mounted.append(status)
        connection = await trio.to_thread.run_sync(connection_of, mountpoint)
        if connection is not None:
            # On this (the main) thread: the watchdog acts when it dies.
            watch.own(watchdog.start(connection).pid)
        else:
            log.warning("no FUSE connection found for %s in mountinfo; no watchdog",
                        mountpoint)
        stack.push_async_callback(
            _shielded, lambda: _unmount(operations, mountpoint, connection)
        )
        if config.metrics_port is not None:
            port = metrics.serve_http(config.metrics_port)
            feed.metrics_url = f"http://127.0.0.1:{port}/metrics"
            log.info("metrics on http://127.0.0.1:%d/metrics", port)
        location = backend.statistics().location
        log.info("mounted %s (%s layout, session %s, %d inodes, %s)", mountpoint,
                 config.layout.value, session_id, len(table), location)
        feed.publish()
        notify(f"READY=1\nSTATUS=mounted {mountpoint}\nMAINPID={os.getpid()}")
        if on_ready is not None:
            on_ready()
        async with trio.open_nursery() as nursery:
            for attachment in attachments:
                nursery.start_soon(
                    operations.follow_changes, attachment,
                    name=f"memfs-changes-{attachment.directory}",
                )
            nursery.start_soon(operations.deliver_notices, name="memfs-invalidator")
            nursery.start_soon(backend.maintain, name="memfs-backend")
            nursery.start_soon(feed.run, name="memfs-status")
            nursery.start_soon(_terminate_on_signal, name="memfs-signals")
            if watch.watched:
                nursery.start_soon(_end_with_namespace, watch, name="memfs-namespace")
            await pyfuse3.main()
            nursery.cancel_scope.cancel()


def _clear_mount_point(mountpoint: str) -> None:
    """Checks the mount point; removes a stale mount a dead daemon left there.

    Raises:
        InvalidInput: already mounted (by a live daemon), stale and not removable, or
            not a directory.
    """
    if is_mounted(mountpoint):
        if not is_stale(mountpoint):
            raise InvalidInput(f"{mountpoint} is already a mount point")
        # A daemon that died left its mount behind (e.g. before a systemd restart).
        log.warning("removing the stale mount at %s (its daemon is gone)", mountpoint)
        result = unmount(mountpoint, lazy=True)
        if not result.ok:
            raise InvalidInput(f"can't remove the stale mount at {mountpoint}: {result.message}")
    if not os.path.isdir(mountpoint):
        raise InvalidInput(f"mount point {mountpoint} is not a directory")


async def _shielded(close: Callable[[], Awaitable[None]]) -> None:
    """Runs a teardown step even while the daemon is being cancelled."""
    with trio.CancelScope(shield=True):
        await close()


async def _unmount(operations: Operations, mountpoint: str, connection: int | None) -> None:
    """Commits writes pending in open files, keeps scratch bytes, frees an invalidation
    stuck in the kernel, unmounts."""
    notify(f"STOPPING=1\nSTATUS=unmounting {mountpoint}")
    await operations.commit_pending()
    try:
        record_saved_scratch(mountpoint, operations.save_scratch())
    except OSError as exc:
        log.error("could not record the scratch files saved at unmount: %s", exc)
    if flush_held_rejected():
        log.error("%d refused write(s) held in memory could not be written under "
                  "rejected/ (the disk is still full); their bytes are lost with this "
                  "daemon", held_rejected())
    await _free_invalidation(operations, connection)
    pyfuse3.close(unmount=True)


async def _free_invalidation(operations: Operations, connection: int | None) -> None:
    """Aborts the mount's FUSE connection when an invalidation is still in the kernel
    after :data:`INVALIDATION_GRACE_S`: requests are no longer answered, so one waiting
    on a request's lock would keep this process from ever exiting (and ``/dev/fuse``
    open, the requests waiting, the mount hanging)."""
    stuck_s = await operations.invalidation_stuck_s(INVALIDATION_GRACE_S)
    if stuck_s is None:
        return
    if connection is None:
        log.error("an invalidation has waited in the kernel for %.1f s and the FUSE "
                  "connection is unknown; the daemon may not exit", stuck_s)
        return
    log.warning("an invalidation has waited in the kernel for %.1f s on a request no "
                "longer answered; aborting FUSE connection %d", stuck_s, connection)
    try:
        await trio.to_thread.run_sync(abort_connection, connection)
    except OSError as exc:
        log.error("could not abort FUSE connection %d: %s", connection, exc)


def _forget_mount(mounted: list[MountStatus], mountpoint: str) -> None:
    """Removes the status file of a mount that was live (the last teardown step). The
    "unmounted" line is logged first: a status file gone means the log says so (what
    waits for the file to go, e.g. ``memfs umount``, may read the log next)."""
    for status in mounted:
        log.info("unmounted %s", mountpoint)
        status.remove()


async def _terminate_on_signal() -> None:
    """Ends the request loop on SIGTERM, SIGINT or SIGHUP (then the daemon unmounts)."""
    with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT, signal.SIGHUP) as signals:
        async for signum in signals:
            log.info("got %s; unmounting", signal.Signals(signum).name)
            pyfuse3.terminate()
            return


async def _end_with_namespace(watch: NamespaceWatch) -> None:
    """Ends the request loop once every other process of the daemon's private mount
    namespace has exited (SPEC §4 Sandboxes: the mount ends with its sandbox; nothing
    but this daemon could reach it any more). The daemon then commits and unmounts."""
    while True:
        if await trio.to_thread.run_sync(watch.ended):
            log.info("no other process is left in mount namespace %s; unmounting",
                     watch.namespace)
            pyfuse3.terminate()
            return
        await trio.sleep(NAMESPACE_CHECK_INTERVAL_S)


def run(
    backend: Backend, config: MountConfig, *, on_ready: Callable[[], None] | None = None
) -> None:
    """:func:`serve` in a new trio run (the daemon's main)."""
    trio.run(lambda: serve(backend, config, on_ready=on_ready))
