"""A mount's local state: its status file, rejected writes and names for conflict copies.

Everything here lives under ``$MEMFS_HOME``:

* ``mounts/<key>.json``: the status of a running mount daemon (pid, stores, session,
  rejected writes, conflicts, merges, last errors, and the live state of its backend: server
  state, outbox depth, caches), read by ``memfs status`` and ``memfs umount``.
  ``<key>`` is derived from the mount point's real path. The daemon removes the file as
  the very last step of a clean shutdown, after pending writes are committed.
* ``rejected/<session_id>/<UTC timestamp>-<name>``: the bytes of every write refused at
  close (SPEC §4: "a write rejected at close is never silently dropped"), and of every
  scratch file still holding bytes when the mount ended (scratch names never reach the
  store, SPEC §4 atomic save).
* ``mounts/<key>.scratch.json``: the scratch files saved at the end of mounts of that
  mount point (newest last), kept after unmount so ``memfs status`` can list them.
* ``mounts/<key>.prom``: the running daemon's Prometheus metrics, rewritten every second
  (``memfs status --prometheus``; ``memfs mount --metrics-port`` serves them live).
* ``logs/mount-<key>.log``: the daemon's log when it runs in the background.
* ``mounts/<key>.reserve``: :data:`STATUS_RESERVE_BYTES` of zeros kept by a running
  daemon, given back to the filesystem when it fills up so that the status file can
  still say so (see "A full disk" below).

A full disk
-----------
Nothing a mount writes here may end the daemon or change the errno a request gets
(SPEC §4; README "A full disk"). :meth:`MountStatus.write` never raises: a status file
that can't be replaced is logged once and written again on the next event. When the
filesystem under ``mounts/`` is full (``ENOSPC``/``EDQUOT``) the reserve file is deleted
and the write retried once, so ``memfs status`` can show ``storage_full`` (the path that
could not grow, recorded by :meth:`MountStatus.record_storage_full`) however full the
disk is; :meth:`MountStatus.check_space` clears it, and makes the reserve again, once
that filesystem has :data:`SPACE_AGAIN_BYTES` free (a quarter of a smaller one).
:func:`save_rejected` never raises either: bytes that can't be kept under ``rejected/``
are held in memory and written by :func:`flush_held_rejected` (every status refresh,
and at unmount) once space is back.

A redaction (or hard delete) erases a memory's path everywhere memfs keeps it, logs
included (SPEC §2 redaction). Logs keep naming files by path (that is what makes
them readable); instead, when a mount learns of such an erasure from the change feed,
it scrubs the paths it knew for that memory from what it keeps here: the status file's
records (:meth:`MountStatus.scrub`) and the log file and saved-scratch list of its mount
point (:func:`scrub_files`), each replaced by ``<redacted mem_…>``. The log is rewritten
by :func:`memfs.home.scrub_file` (atomic rename; the daemon's own standard error is
moved to the new file) while this process's logging handlers are locked, so no line is
lost or torn. Logs of *other* mount points, of mounts not running at the time of the
redaction, and bytes kept under ``rejected/`` (whose names carry the file's name) are
not scrubbed (README, "someone reading the disk after a redaction").
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import threading
from collections import deque
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from memfs import home as local
from memfs.core.config import memfs_home
from memfs.core.model import format_timestamp, utcnow
from memfs.fuse.mounts import mount_path
from memfs.home import redaction_marker

__all__ = [
    "MAX_HELD_REJECTED_BYTES",
    "MAX_RECORDED_EVENTS",
    "SPACE_AGAIN_BYTES",
    "STATUS_RESERVE_BYTES",
    "MountStatus",
    "flush_held_rejected",
    "held_rejected",
    "log_path",
    "metrics_path",
    "read_saved_scratch",
    "read_status",
    "record_saved_scratch",
    "redaction_marker",
    "save_rejected",
    "scrub_files",
    "status_path",
]

log = logging.getLogger(__name__)

# How many rejected writes, conflicts, merges and errors the status file keeps (newest
# last).
MAX_RECORDED_EVENTS = 20
# The reserve a running daemon keeps beside its status file (a status file with every
# recorded event is ~15 KiB; the rename needs room for the old and the new one).
STATUS_RESERVE_BYTES = 64 * 1024
# Free space (bytes available to this user) under a full path that counts as freed:
# room for a 100 KiB memory and its WAL pages (a quarter of a smaller filesystem).
SPACE_AGAIN_BYTES = 512 * 1024
# The most refused bytes held in memory while they can't be written under rejected/;
# beyond it the oldest are dropped, each with an ERROR naming what was lost.
MAX_HELD_REJECTED_BYTES = 64 * 1024 * 1024


def _key(mountpoint: str) -> str:
    # mount_path: realpath without stat'ing a mount point (which waits on its daemon).
    return hashlib.sha256(mount_path(mountpoint).encode()).hexdigest()[:16]


def status_path(mountpoint: str) -> Path:
    """``$MEMFS_HOME/mounts/<key>.json`` for ``mountpoint``."""
    return memfs_home() / "mounts" / f"{_key(mountpoint)}.json"


def metrics_path(mountpoint: str) -> Path:
    """``$MEMFS_HOME/mounts/<key>.prom``: the running daemon's Prometheus metrics (the
    text exposition, rewritten every second), printed by ``memfs status --prometheus``."""
    return memfs_home() / "mounts" / f"{_key(mountpoint)}.prom"


def log_path(mountpoint: str) -> Path:
    """``$MEMFS_HOME/logs/mount-<key>.log``: where a background daemon logs."""
    return memfs_home() / "logs" / f"mount-{_key(mountpoint)}.log"


def _scrub_text(text: str, replacements: Mapping[str, str]) -> str:
    for old, new in replacements.items():
        if old:
            text = text.replace(old, new)
    return text


@contextlib.contextmanager
def _logging_paused() -> Iterator[None]:
    """Holds the lock of every handler of the root logger (flushed first): no record is
    written while the log file is rewritten."""
    handlers = list(logging.getLogger().handlers)
    for handler in handlers:
        handler.acquire()
    try:
        for handler in handlers:
            with contextlib.suppress(Exception):
                handler.flush()
        yield
    finally:
        for handler in reversed(handlers):
            handler.release()


def scrub_files(mountpoint: str, replacements: Mapping[str, str]) -> bool:
    """Replaces erased paths in the log file and the saved-scratch list of
    ``mountpoint`` (SPEC §2; see the module docstring). Blocking: call it in a worker
    thread. ``replacements`` maps each path to its marker (:func:`redaction_marker`);
    longer keys should come first (a display path before the store path it ends with).

    Returns:
        Whether either file changed.

    Raises:
        OSError: a file could not be rewritten (it is left as it was).
    """
    with _logging_paused():
        changed = local.scrub_file(log_path(mountpoint), replacements, redirect_fds=(1, 2))
    changed |= local.scrub_file(_saved_scratch_path(mountpoint), replacements)
    return changed


@dataclass(frozen=True)
class _Held:
    directory: Path
    name: str
    data: bytes
    at: datetime


_held: deque[_Held] = deque()
_held_lock = threading.Lock()


def save_rejected(session_id: str, name: str, data: bytes) -> Path:
    """Keeps the bytes of a write refused at close (SPEC §4) and returns where:
    ``$MEMFS_HOME/rejected/<session_id>/<UTC timestamp>-<name>`` (fsynced; an earlier
    file is never overwritten). See :func:`memfs.home.save_rejected`.

    Never raises (a refusal must reach the caller with its own errno): when the file
    can't be written (a full disk, above all) the bytes are held in memory, an ERROR is
    logged, and :func:`flush_held_rejected` writes them to the returned path (``.2``,
    … if it was taken meanwhile) once it can; at most :data:`MAX_HELD_REJECTED_BYTES`
    are held."""
    directory = local.rejected_directory(session_id)
    at = utcnow()
    try:
        return local.save_rejected(directory, name, data, when=at)
    except OSError as exc:
        held = _Held(directory, name, data, at)
        planned = local.rejected_path(directory, name, at)
        log.error("could not keep the %d refused bytes of %s in %s (%s); they are held in "
                  "memory and written there once it can be", len(data), name, planned, exc)
        with _held_lock:
            _held.append(held)
            total = sum(len(h.data) for h in _held)
            while total > MAX_HELD_REJECTED_BYTES and len(_held) > 1:
                lost = _held.popleft()
                total -= len(lost.data)
                log.error("dropped %d refused bytes of %s held since %s: more than %d bytes "
                          "could not be written under %s", len(lost.data), lost.name,
                          format_timestamp(lost.at), MAX_HELD_REJECTED_BYTES, lost.directory)
        return planned


def held_rejected() -> int:
    """How many refused writes are held in memory, waiting for :func:`flush_held_rejected`."""
    with _held_lock:
        return len(_held)


def flush_held_rejected() -> int:
    """Writes refused bytes held in memory (see :func:`save_rejected`) under
    ``rejected/``, oldest first, stopping at the first that still can't be written.
    Never raises. Returns how many are still held."""
    while True:
        with _held_lock:
            if not _held:
                return 0
            held = _held[0]
        try:
            saved = local.save_rejected(held.directory, held.name, held.data, when=held.at)
        except OSError:
            return held_rejected()
        log.info("the %d refused bytes of %s held in memory are now kept in %s",
                 len(held.data), held.name, saved)
        with _held_lock:
            if _held and _held[0] is held:
                _held.popleft()


def _space_again(path: str) -> int | None:
    """Bytes available to this user on the filesystem holding ``path`` (or its nearest
    existing parent) when they count as space freed (:data:`SPACE_AGAIN_BYTES`, or a
    quarter of a smaller filesystem); None otherwise, or when that can't be told."""
    current = Path(path)
    while True:
        try:
            result = os.statvfs(current)
        except FileNotFoundError:
            if current.parent == current:
                return None
            current = current.parent
            continue
        except OSError:
            return None
        free = result.f_bavail * result.f_frsize
        needed = min(SPACE_AGAIN_BYTES, result.f_blocks * result.f_frsize // 4)
        return free if free >= needed else None


class MountStatus:
    """The status file of one running mount, rewritten atomically on every event.

    Args:
        mountpoint: the mount point (its real path keys the file).
        info: static facts written once: pid, layout, session id, stores, log file.
    """

    def __init__(self, mountpoint: str, info: dict[str, Any]) -> None:
        self.path = status_path(mountpoint)
        self._info = dict(info, mountpoint=os.path.realpath(mountpoint))
        self._live: dict[str, Any] = {}
        self._rejected: deque[dict[str, str]] = deque(maxlen=MAX_RECORDED_EVENTS)
        self._conflicts: deque[dict[str, str]] = deque(maxlen=MAX_RECORDED_EVENTS)
        self._merges: deque[dict[str, str]] = deque(maxlen=MAX_RECORDED_EVENTS)
        self._errors: deque[dict[str, str]] = deque(maxlen=MAX_RECORDED_EVENTS)
        self.rejected_count = 0
        self.conflict_count = 0
        self.merge_count = 0
        self._written: str | None = None
        self._storage_full: dict[str, str] | None = None
        self._write_failing = False
        self._reserve = self.path.with_name(self.path.stem + ".reserve")
        self._reserved = False

    @property
    def mountpoint(self) -> str:
        """The mount point, as a real path."""
        return str(self._info["mountpoint"])

    def record_rejected(
        self, path: str, errno_name: str, saved_to: str, message: str, *, at: datetime | None = None
    ) -> None:
        self.rejected_count += 1
        self._rejected.append(
            {"at": format_timestamp(at or utcnow()), "path": path, "errno": errno_name,
             "saved_to": saved_to, "message": message}
        )
        self.write()

    def record_conflict(self, path: str, conflict_path: str, *, at: datetime | None = None) -> None:
        self.conflict_count += 1
        self._conflicts.append(
            {"at": format_timestamp(at or utcnow()), "path": path, "conflict_path": conflict_path}
        )
        self.write()

    def record_merge(self, path: str, version_id: str, *, at: datetime | None = None) -> None:
        """A save whose file changed elsewhere meanwhile was merged with that change and
        committed as version ``version_id`` (SPEC §4 concurrent writers)."""
        self.merge_count += 1
        self._merges.append(
            {"at": format_timestamp(at or utcnow()), "path": path, "version_id": version_id}
        )
        self.write()

    def record_error(self, message: str, *, at: datetime | None = None) -> None:
        self._errors.append({"at": format_timestamp(at or utcnow()), "message": message})
        self.write()

    @property
    def storage_full(self) -> dict[str, str] | None:
        """``{"path", "since"}`` while a write of this mount found its disk full."""
        return self._storage_full

    def record_storage_full(self, path: str | None) -> None:
        """A write found no space (``ENOSPC``/``EDQUOT``/``SQLITE_FULL``) under ``path``
        (None: not told; ``$MEMFS_HOME`` is named): ``memfs status`` says "disk full"
        with the path until :meth:`check_space` sees space again. Logged once per
        path. Never raises."""
        where = path or str(memfs_home())
        if self._storage_full is not None and self._storage_full["path"] == where:
            return
        log.warning("disk full under %s: writes are refused with ENOSPC until space is "
                    "freed; reads go on", where)
        self._storage_full = {"path": where, "since": format_timestamp(utcnow())}
        self.write()

    def check_space(self) -> None:
        """Clears the disk-full state once the filesystem of its path has
        :data:`SPACE_AGAIN_BYTES` free (a quarter of a smaller one), and makes the
        reserve file again if it is missing. Never raises; cheap (one ``statvfs``)
        while nothing is full."""
        full = self._storage_full
        if full is not None:
            free = _space_again(full["path"])
            if free is None:
                return
            log.info("space is free again under %s (%d bytes); writes are accepted",
                     full["path"], free)
            self._storage_full = None
            self.write()
        if self._written is not None and not self._reserved:
            self._make_reserve()

    def _make_reserve(self) -> None:
        """Writes the reserve file (see the module docstring); on failure (no room yet)
        nothing is left and the next :meth:`check_space` tries again."""
        with contextlib.suppress(FileNotFoundError):
            self._reserve.unlink()  # a reserve left by a crash, or one cut short
        try:
            fd = local.open_private(self._reserve, os.O_WRONLY | os.O_EXCL)
        except OSError:
            return
        try:
            with open(fd, "wb") as file:
                file.write(bytes(STATUS_RESERVE_BYTES))
        except OSError:
            with contextlib.suppress(OSError):
                self._reserve.unlink()
            return
        self._reserved = True

    def scrub(self, replacements: Mapping[str, str]) -> None:
        """Replaces erased paths (SPEC §2 redaction) in the recorded rejected writes,
        conflicts and errors, and rewrites the file. ``replacements`` as
        :func:`scrub_files`."""
        for records in (self._rejected, self._conflicts, self._merges, self._errors):
            for record in records:
                for field, value in record.items():
                    record[field] = _scrub_text(value, replacements)
        self._written = None
        self.write()

    def set_live(self, **fields: Any) -> None:
        """Replaces the live fields (backend state, caches, stores) and rewrites the file
        if anything changed. Values must be JSON-serialisable."""
        self._live = fields
        self.write()

    def snapshot(self) -> dict[str, Any]:
        return dict(
            self._info,
            **self._live,
            rejected_count=self.rejected_count,
            rejected_writes=list(self._rejected),
            conflict_count=self.conflict_count,
            conflicts=list(self._conflicts),
            merge_count=self.merge_count,
            merges=list(self._merges),
            last_errors=list(self._errors),
            storage_full=self._storage_full,
        )

    def write(self) -> None:
        """Replaces the status file (write to a temporary name, then rename), unless it
        already holds exactly this snapshot. Never raises: a failure is logged (once
        until a write succeeds again) and the next event tries again; on a full disk
        the reserve is given up for it (see the module docstring)."""
        text = json.dumps(self.snapshot(), indent=2) + "\n"
        try:
            if text == self._written and self.path.exists():
                return
            try:
                self._replace(text)
            except OSError as exc:
                if not (local.is_disk_full(exc) and self._reserved):
                    raise
                self._reserved = False
                self._reserve.unlink(missing_ok=True)
                self._replace(text)
        except OSError as exc:
            if not self._write_failing:
                log.warning("could not update the status file %s: %s", self.path, exc)
            self._write_failing = True
            self._written = None
            return
        if self._write_failing:
            log.info("the status file %s is up to date again", self.path)
        self._write_failing = False
        self._written = text
        if not self._reserved and self._storage_full is None:
            self._make_reserve()

    def _replace(self, text: str) -> None:
        local.private_directory(self.path.parent)
        local.write_atomically(self.path, text.encode(), durable=False)

    def remove(self) -> None:
        self._written = None
        self._reserved = False
        for path in (self.path, self._reserve, metrics_path(self.mountpoint)):
            with contextlib.suppress(FileNotFoundError):
                path.unlink()


def read_status(mountpoint: str) -> dict[str, Any] | None:
    """The status a daemon wrote for ``mountpoint``, or None when there is none."""
    try:
        return json.loads(status_path(mountpoint).read_text())  # type: ignore[no-any-return]
    except FileNotFoundError:
        return None


def _saved_scratch_path(mountpoint: str) -> Path:
    return memfs_home() / "mounts" / f"{_key(mountpoint)}.scratch.json"


def record_saved_scratch(mountpoint: str, entries: list[dict[str, str]]) -> None:
    """Adds scratch files saved at unmount to ``mounts/<key>.scratch.json`` (the newest
    :data:`MAX_RECORDED_EVENTS` are kept), for ``memfs status``.

    Args:
        entries: ``{"at", "path", "saved_to"}`` each: the file's path below the mount
            point and where its bytes are kept.
    """
    if not entries:
        return
    records = (read_saved_scratch(mountpoint) + entries)[-MAX_RECORDED_EVENTS:]
    path = _saved_scratch_path(mountpoint)
    local.private_directory(path.parent)
    local.write_atomically(path, (json.dumps(records, indent=2) + "\n").encode(), durable=False)


def read_saved_scratch(mountpoint: str) -> list[dict[str, str]]:
    """The scratch files saved when mounts of ``mountpoint`` ended, oldest first."""
    try:
        return json.loads(_saved_scratch_path(mountpoint).read_text())  # type: ignore[no-any-return]
    except FileNotFoundError:
        return []
