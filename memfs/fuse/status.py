"""A mount's local state: its status file, rejected writes and names for conflict copies.

Everything here lives under ``$MEMFS_HOME``:

* ``mounts/<key>.json``: the status of a running mount daemon (pid, stores, session,
  rejected writes, conflicts, last errors, and the live state of its backend: server
  state, outbox depth, caches), read by ``memfs status`` and ``memfs umount``.
  ``<key>`` is derived from the mount point's real path. The daemon removes the file as
  the very last step of a clean shutdown, after pending writes are committed.
* ``rejected/<session_id>/<UTC timestamp>-<name>``: the bytes of every write refused at
  close (SPEC §4: "a write rejected at close is never silently dropped"), and of every
  scratch file still holding bytes when the mount ended (scratch names never reach the
  store, SPEC §4 atomic save).
* ``mounts/<key>.scratch.json``: the scratch files saved at the end of mounts of that
  mount point (newest last), kept after unmount so ``memfs status`` can list them.
* ``logs/mount-<key>.log``: the daemon's log when it runs in the background.

A redaction (or hard delete) erases a memory's path everywhere memfs keeps it, logs
included (SPEC §2, issue 11 item 4). Logs keep naming files by path (that is what makes
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
from collections import deque
from collections.abc import Iterator, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

from memfs import home as local
from memfs.core.config import memfs_home
from memfs.core.model import format_timestamp, utcnow
from memfs.fuse.mounts import mount_path
from memfs.home import redaction_marker

__all__ = [
    "MAX_RECORDED_EVENTS",
    "MountStatus",
    "log_path",
    "read_saved_scratch",
    "read_status",
    "record_saved_scratch",
    "redaction_marker",
    "save_rejected",
    "scrub_files",
    "status_path",
]

# How many rejected writes, conflicts and errors the status file keeps (newest last).
MAX_RECORDED_EVENTS = 20


def _key(mountpoint: str) -> str:
    # mount_path: realpath without stat'ing a mount point (which waits on its daemon).
    return hashlib.sha256(mount_path(mountpoint).encode()).hexdigest()[:16]


def status_path(mountpoint: str) -> Path:
    """``$MEMFS_HOME/mounts/<key>.json`` for ``mountpoint``."""
    return memfs_home() / "mounts" / f"{_key(mountpoint)}.json"


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


def save_rejected(session_id: str, name: str, data: bytes) -> Path:
    """Keeps the bytes of a write refused at close (SPEC §4) and returns where:
    ``$MEMFS_HOME/rejected/<session_id>/<UTC timestamp>-<name>`` (fsynced; an earlier
    file is never overwritten). See :func:`memfs.home.save_rejected`."""
    return local.save_rejected(local.rejected_directory(session_id), name, data)


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
        self._errors: deque[dict[str, str]] = deque(maxlen=MAX_RECORDED_EVENTS)
        self.rejected_count = 0
        self.conflict_count = 0
        self._written: str | None = None

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

    def record_error(self, message: str, *, at: datetime | None = None) -> None:
        self._errors.append({"at": format_timestamp(at or utcnow()), "message": message})
        self.write()

    def scrub(self, replacements: Mapping[str, str]) -> None:
        """Replaces erased paths (SPEC §2 redaction) in the recorded rejected writes,
        conflicts and errors, and rewrites the file. ``replacements`` as
        :func:`scrub_files`."""
        for records in (self._rejected, self._conflicts, self._errors):
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
            last_errors=list(self._errors),
        )

    def write(self) -> None:
        """Replaces the status file (write to a temporary name, then rename), unless it
        already holds exactly this snapshot."""
        text = json.dumps(self.snapshot(), indent=2) + "\n"
        if text == self._written and self.path.exists():
            return
        local.private_directory(self.path.parent)
        local.write_atomically(self.path, text.encode(), durable=False)
        self._written = text

    def remove(self) -> None:
        self._written = None
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()


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
