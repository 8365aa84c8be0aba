"""A mount daemon's watchdog: frees the mount when the daemon is killed mid-request.

A FUSE connection fails its waiting requests (ENOTCONN) once its daemon's ``/dev/fuse``
is closed, and that happens when the daemon's last thread has exited. A daemon killed
with SIGKILL while its invalidating thread waits in the kernel on a directory lock
(:mod:`memfs.fuse.notices`) never gets there: that thread waits for a request — a
rename, a lookup — that holds the lock and waits for the daemon's answer, which only
the end of the connection can give. The process stays a zombie, the requester hangs,
and so does everything that touches the mount.

:func:`start` runs, next to each daemon, a small process of the standard library only
(about 8 MB, no wake-up while the daemon lives) that breaks this cycle: the kernel
signals it when the daemon's main thread dies (``PR_SET_PDEATHSIG``, which fires on the
death of the thread that started it), and if a thread of the daemon is still there
after :data:`GRACE_S`, it aborts the daemon's FUSE connection
(``/sys/fs/fuse/connections/N/abort``), says so on its stderr (the daemon's log when it
runs in the background), and exits. A daemon that exits normally leaves no thread
behind, so the watchdog just exits. Killing the watchdog as well (a whole process
group, a cgroup) leaves the mount to ``memfs umount --force``.
"""

from __future__ import annotations

import os
import subprocess
import sys

__all__ = ["GRACE_S", "start"]

# How long the daemon's other threads may take to exit once its main thread died.
GRACE_S = 0.5

# argv: daemon pid, FUSE connection number, grace (s). Exit status 0 in every case.
_SCRIPT = r"""
import ctypes, os, signal, sys, time

daemon, connection, grace_s = int(sys.argv[1]), sys.argv[2], float(sys.argv[3])
# Only the kernel's signal counts: a terminal's or a group's SIGINT/SIGHUP/SIGTERM is
# for the daemon, which ends normally, and this process then with it.
signal.pthread_sigmask(
    signal.SIG_BLOCK, {signal.SIGUSR1, signal.SIGTERM, signal.SIGINT, signal.SIGHUP}
)
PR_SET_PDEATHSIG = 1
ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGUSR1)
os.chdir("/")
if os.getppid() == daemon:
    signal.sigwait({signal.SIGUSR1})


def left_behind():
    # Threads of the daemon other than its (dead) leader that have not exited yet.
    try:
        tasks = os.listdir(f"/proc/{daemon}/task")
    except OSError:
        return []
    alive = []
    for task in tasks:
        try:
            with open(f"/proc/{daemon}/task/{task}/stat") as file:
                state = file.read().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if int(task) != daemon and state not in ("Z", "X"):
            alive.append(task)
    return alive


deadline = time.monotonic() + grace_s
while left_behind() and time.monotonic() < deadline:
    time.sleep(0.02)
left = left_behind()
if not left:
    sys.exit(0)
where = []
for task in left:
    try:
        with open(f"/proc/{daemon}/task/{task}/wchan") as file:
            where.append(f"{task} in {file.read().strip() or '?'}")
    except OSError:
        where.append(task)
held = f"thread {', '.join(where)}"
# A thread is still in the kernel: the daemon's /dev/fuse is still open, so connection
# N is still this mount's.
base = "/sys/fs/fuse/connections"
if not os.path.exists(os.path.join(base, connection)) and os.geteuid() == 0:
    os.system(f"mount -t fusectl fusectl {base} 2>/dev/null")
try:
    with open(os.path.join(base, connection, "abort"), "w") as file:
        file.write("1")
except OSError as exc:
    print(f"memfs watchdog: daemon {daemon} died with a thread held in the kernel ({held}); could "
          f"not abort FUSE connection {connection} ({exc.strerror}): run `memfs umount "
          f"--force` on its mount point", file=sys.stderr, flush=True)
else:
    print(f"memfs watchdog: daemon {daemon} died with a thread held in the kernel ({held}); "
          f"aborted FUSE connection {connection} (what waited on it failed with ENOTCONN)",
          file=sys.stderr, flush=True)
"""


def start(connection: int) -> subprocess.Popen[bytes]:
    """Starts the watchdog of this process's FUSE connection ``connection``.

    Must be called on the thread that lives as long as the daemon (the main one):
    the watchdog acts when that thread dies.

    Raises:
        OSError: the process can't be started.
    """
    return subprocess.Popen(
        [sys.executable, "-I", "-S", "-c", _SCRIPT, str(os.getpid()), str(connection),
         str(GRACE_S)],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, close_fds=True,
        start_new_session=False,
    )
