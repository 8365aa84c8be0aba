"""The system's mount table, ``fusermount3``, and daemon liveness, for mount/umount/status.

Nothing here talks to the kernel's FUSE channel; it reads ``/proc``, writes the FUSE
control filesystem (``/sys/fs/fuse/connections``) and runs ``fusermount3(1)``, so the
CLI can use it against a daemon in another process. Nothing here makes a call that
reaches a mount's daemon unless its docstring says so: on a dead or stuck mount such a
call can hang, uninterruptibly.
"""

from __future__ import annotations

import errno
import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass

__all__ = [
    "CONNECTIONS",
    "FS_TYPE",
    "FUSERMOUNT",
    "UnmountResult",
    "abort_connection",
    "connection_of",
    "is_mounted",
    "is_stale",
    "mount_path",
    "mount_points",
    "probe",
    "process_alive",
    "threads_left",
    "unmount",
    "wait_for_exit",
]

FUSERMOUNT = "fusermount3"
# The filesystem type a memfs mount has in the mount table: FUSE with the subtype the
# daemon mounts with (daemon.MOUNT_OPTIONS: subtype=memfs).
FS_TYPE = "fuse.memfs"
MOUNTINFO = "/proc/self/mountinfo"
# The FUSE control filesystem (fusectl): one directory per connection, named by the
# connection's device minor, with an `abort` file (the kernel's fuse.rst).
CONNECTIONS = "/sys/fs/fuse/connections"
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


def mount_path(path: str) -> str:
    """``path`` made absolute with its parent's symlinks resolved, without a call that
    reaches a mount at ``path`` itself (os.path.realpath stats it, which waits on its
    daemon). A path that is no mount point in that form is resolved fully."""
    absolute = os.path.abspath(path)
    name = os.path.basename(absolute)
    if name:
        candidate = os.path.join(os.path.realpath(os.path.dirname(absolute)), name)
        if candidate in mount_points():
            return candidate
    return os.path.realpath(path)


def probe(path: str, timeout_s: float) -> int | None:
    """Whether the filesystem at ``path`` answers: statvfs(2) of it in a child process
    (which always reaches the daemon), given ``timeout_s``.

    Returns:
        0 when it answered, the errno it failed with (ENOTCONN: its daemon is gone), or
        None when no answer came in time (the child is killed and left to the kernel:
        a call stuck in a dead mount can't be waited for).
    """
    code = "import os, sys\ntry:\n    os.statvfs(sys.argv[1])\nexcept OSError as e:\n" \
        "    sys.exit(e.errno)\n"
    completed = _run_bounded([sys.executable, "-I", "-c", code, path], timeout_s)
    return None if completed is None else completed.returncode


def _run_bounded(command: list[str], timeout_s: float) -> subprocess.CompletedProcess[str] | None:
    """Runs ``command``; None when it has not exited within ``timeout_s`` (it is then
    killed, and never waited for: a process stuck in a dead mount may not die)."""
    process = subprocess.Popen(
        command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True,
    )
    try:
        stdout, stderr = process.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        process.kill()
        return None
    return subprocess.CompletedProcess(command, process.returncode, stdout, stderr)


def connection_of(path: str) -> int | None:
    """The FUSE connection number of the mount at ``path`` (an absolute path as
    mountinfo shows it), or None when no FUSE filesystem is mounted there.

    The number is the minor of the mount's device (``st_dev``), read from
    ``/proc/self/mountinfo`` (proc(5)): never stat(2) of the mount point, which waits
    on the daemon, forever on a stuck one. The last mount at ``path`` counts.
    """
    number = None
    with open(MOUNTINFO) as file:
        for line in file:
            fields = line.split()
            separator = fields.index("-")
            fstype = fields[separator + 1]
            if _unescape(fields[4]) == path and (fstype == "fuse" or fstype.startswith("fuse.")):
                major, minor = fields[2].split(":")
                number = int(minor) if major == "0" else None
    return number


def abort_connection(number: int) -> None:
    """Aborts FUSE connection ``number``: every request waiting on its daemon fails
    with ENOTCONN at once, and so does every later one (echo 1 > .../abort). Mounts
    the control filesystem first if it is not (as root only).

    Raises:
        FileNotFoundError: no such connection (closed already).
        OSError: not allowed (EACCES: only the mount's owner and root may), or no
            control filesystem (ENODEV: not mounted, and this is not root).
    """
    abort = os.path.join(CONNECTIONS, str(number), "abort")
    if not _fusectl_mounted():
        if os.geteuid() == 0:
            _run_bounded(["mount", "-t", "fusectl", "fusectl", CONNECTIONS], 10.0)
        if not _fusectl_mounted():
            raise OSError(errno.ENODEV, f"the FUSE control filesystem is not mounted at "
                          f"{CONNECTIONS}", CONNECTIONS)
    with open(abort, "w") as file:
        file.write("1")


def _fusectl_mounted() -> bool:
    return mount_points().get(CONNECTIONS) == "fusectl"


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


def threads_left(pid: int) -> bool:
    """True when process ``pid`` still has a thread that has not exited (its leader
    may be a zombie): then its files, ``/dev/fuse`` among them, are still open."""
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return False
    for task in tasks:
        try:
            with open(f"/proc/{pid}/task/{task}/stat") as file:
                state = file.read().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if state not in ("Z", "X"):
            return True
    return False


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


def unmount(path: str, *, lazy: bool = False, timeout_s: float = 60.0) -> UnmountResult:
    """Runs ``fusermount3 -u [-z] path``; as root, a lazy unmount fusermount3 refused
    is made with ``umount -l`` (e.g. a mount of another user).

    Args:
        lazy: detach now even if busy (``-z``); the kernel finishes when the last file
            is closed. Used for stale mounts, whose daemon is gone.
        timeout_s: each command's bound; one that takes longer is killed and fails.
    """
    command = [FUSERMOUNT, "-u"] + (["-z"] if lazy else []) + [path]
    completed = _run_bounded(command, timeout_s)
    if completed is not None and completed.returncode == 0:
        return UnmountResult(True, "")
    if completed is None and path not in mount_points():
        return UnmountResult(True, "")  # it finished as the bound killed fusermount3
    message = (
        f"{FUSERMOUNT} did not finish within {timeout_s} s" if completed is None
        else completed.stderr.strip()
    )
    if lazy and os.geteuid() == 0:
        forced = _run_bounded(["umount", "-l", path], timeout_s)
        if forced is not None and forced.returncode == 0:
            return UnmountResult(True, "")
    return UnmountResult(False, message)
