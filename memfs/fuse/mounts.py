"""The system's mount table, ``fusermount3``, and daemon liveness, for mount/umount/status.

Nothing here talks to the kernel's FUSE channel; it reads ``/proc`` and runs
``fusermount3(1)``, so the CLI can use it against a daemon in another process.
"""

from __future__ import annotations

import errno
import os
import re
import subprocess
import time
from dataclasses import dataclass

__all__ = [
    "FUSERMOUNT",
    "UnmountResult",
    "is_mounted",
    "is_stale",
    "mount_points",
    "process_alive",
    "unmount",
    "wait_for_exit",
]

FUSERMOUNT = "fusermount3"
MOUNTINFO = "/proc/self/mountinfo"
_OCTAL_ESCAPE_RE = re.compile(r"\\([0-7]{3})")


def _unescape(field: str) -> str:
    # proc(5): space, tab, newline and backslash in mount points are octal escapes.
    return _OCTAL_ESCAPE_RE.sub(lambda m: chr(int(m.group(1), 8)), field)


def mount_points() -> dict[str, str]:
    """Mounted paths → filesystem type, from ``/proc/self/mountinfo`` (proc(5))."""
    result: dict[str, str] = {}
    with open(MOUNTINFO) as file:
        for line in file:
            fields = line.split()
            separator = fields.index("-")
            result[_unescape(fields[4])] = fields[separator + 1]
    return result


def is_mounted(path: str) -> bool:
    """True when ``path`` (made absolute, symlinks resolved) is a mount point."""
    return os.path.realpath(path) in mount_points()


def is_stale(path: str) -> bool:
    """True when ``path`` is a FUSE mount whose daemon is gone (ENOTCONN).

    statvfs(2) always reaches the filesystem, where stat(2) may be answered from the
    kernel's attribute cache.
    """
    try:
        os.statvfs(path)
    except OSError as exc:
        return exc.errno == errno.ENOTCONN
    return False


def process_alive(pid: int) -> bool:
    """True when process ``pid`` exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as file:
            state = file.read().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False
    return state not in ("Z", "X")


def wait_for_exit(pid: int, timeout_s: float, poll_interval_s: float = 0.05) -> bool:
    """Polls until ``pid`` is gone. Returns False when ``timeout_s`` passed first."""
    deadline = time.monotonic() + timeout_s
    while process_alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(poll_interval_s)
    return True


@dataclass(frozen=True)
class UnmountResult:
    """What ``fusermount3 -u`` said: ``ok``, and its message when not."""

    ok: bool
    message: str


def unmount(path: str, *, lazy: bool = False) -> UnmountResult:
    """Runs ``fusermount3 -u [-z] path``.

    Args:
        lazy: detach now even if busy (``-z``); the kernel finishes when the last file
            is closed. Used for stale mounts, whose daemon is gone.
    """
    command = [FUSERMOUNT, "-u"] + (["-z"] if lazy else []) + [path]
    completed = subprocess.run(command, capture_output=True, text=True, check=False)
    return UnmountResult(completed.returncode == 0, completed.stderr.strip())
