"""The filesystems under test, behind one small interface.

Each :class:`System` holds at most one *session* at a time: a fresh, empty filesystem
(optionally preloaded with a tree, untimed), mounted at a directory the workloads run in.

==========  ==========================================  =================================
system      what a session is                           "cold" (before a cold read)
==========  ==========================================  =================================
tmpfs       a new directory on kernel tmpfs             nothing to do: tmpfs *is* the
                                                        page cache, so cold = warm
rclone      ``rclone mount`` of a new local directory   wait for uploads, unmount, empty
            (on the backing disk), ``--vfs-cache-mode   the VFS cache, drop the page
            writes``, other options rclone's defaults   cache, mount again
floor       ``scripts/floorfs.py`` (in-memory pyfuse3)  drop the page cache (a remount
                                                        would lose the in-memory data)
floor_      ``scripts/floorfs.py --kernel-cache``       as floor
patched     (the patched pyfuse3: noflush, cached
            listings; issue 17)
memfs       ``memfs mount --store S --foreground`` of   ``memfs umount``, drop the page
            a new store in ``$MEMFS_HOME`` on the       cache, mount again
            backing disk; preloaded through the engine
==========  ==========================================  =================================

Daemons run in their own session (``start_new_session``), so a Ctrl-C reaches only the
benchmark, which then unmounts them in order. :meth:`System.abandon` is the last resort:
lazy unmount and kill by PID.

Errors: :class:`SetupFailed` when a system cannot mount, unmount or settle; the
benchmark then marks every remaining workload of that system as failed, with the reason.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from benchlib import host
from benchlib.trees import Tree

__all__ = [
    "FloorSystem",
    "MemfsSystem",
    "PatchedFloorSystem",
    "StockMemfsSystem",
    "RcloneSystem",
    "Scratch",
    "SetupFailed",
    "System",
    "TmpfsSystem",
]

MOUNT_TIMEOUT_S = 60.0
UNMOUNT_TIMEOUT_S = 120.0
UNMOUNT_RETRY_S = 5.0
SETTLE_TIMEOUT_S = 300.0
POLL_INTERVAL_S = 0.002
LOG_TAIL_BYTES = 2000

# Every command the benchmark runs sees the C locale: same sorting and the fast paths of
# grep and ls on every machine. Python may keep compiled bytecode, as an installed
# package does: PYTHONDONTWRITEBYTECODE (set in some shells and CI images) would make
# every `memfs mount` compile the whole package again and count that as mount time.
COMMAND_ENV = {
    **{k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"},
    "LC_ALL": "C",
}


class SetupFailed(RuntimeError):
    """A system could not mount, unmount, settle or preload; the message says why."""


class Scratch:
    """Scratch directories of one benchmark run.

    Attributes:
        ram: a directory on tmpfs: the source trees and the tmpfs system live here.
        disk: a directory on the backing filesystem: rclone's remote and cache, memfs's
            ``$MEMFS_HOME``.
        mounts: parent of every FUSE mount point.
        bin: prepended to ``PATH`` of the daemons (holds a ``fusermount`` fallback).
        repo: the memfs repository (for ``scripts/floorfs.py`` and ``.venv``).
    """

    def __init__(self, ram: Path, disk: Path, repo: Path) -> None:
        self.ram = ram
        self.disk = disk
        self.mounts = disk / "mnt"
        self.bin = disk / "bin"
        self.repo = repo
        for directory in (self.mounts, self.bin):
            directory.mkdir(parents=True, exist_ok=True)
        self._make_fusermount_fallback()

    def _make_fusermount_fallback(self) -> None:
        # rclone's FUSE library calls `fusermount`; Debian's fuse3 ships `fusermount3`.
        if shutil.which("fusermount") is None and shutil.which("fusermount3") is not None:
            (self.bin / "fusermount").symlink_to(shutil.which("fusermount3") or "")

    def daemon_env(self, **extra: str) -> dict[str, str]:
        env = {**COMMAND_ENV, **extra}
        env["PATH"] = f"{self.bin}{os.pathsep}{env.get('PATH', '')}"
        return env


def fusermount_command() -> str:
    """``fusermount3`` if installed, else ``fusermount``."""
    return shutil.which("fusermount3") or shutil.which("fusermount") or "fusermount3"


def run_checked(argv: list[str], *, timeout_s: float, what: str) -> None:
    """Runs an untimed helper command; raises :class:`SetupFailed` on failure."""
    try:
        result = subprocess.run(
            argv, capture_output=True, text=True, timeout=timeout_s, env=COMMAND_ENV
        )
    except subprocess.TimeoutExpired as exc:
        raise SetupFailed(f"{what}: `{' '.join(argv)}` timed out after {timeout_s:.0f} s") from exc
    if result.returncode != 0:
        output = (result.stderr or result.stdout).strip()[-LOG_TAIL_BYTES:]
        raise SetupFailed(f"{what}: `{' '.join(argv)}` exited {result.returncode}: {output}")


def tree_listing(root: Path) -> dict[str, int]:
    """Relative path → size of every regular file below ``root``."""
    listing = {}
    for directory, _subdirs, names in os.walk(root):
        for name in names:
            path = os.path.join(directory, name)
            listing[os.path.relpath(path, root)] = os.stat(path).st_size
    return listing


class System:
    """One filesystem under test. Subclasses implement the session hooks.

    Attributes:
        key: short name used in the JSON document ("memfs").
        title: column heading.
        notes: what a reader needs to know to read this column honestly.
        root: the directory workloads run in while a session is open, else None.
        last_mount_s: wall-clock seconds of the latest mount, from starting the daemon
            to the mount answering ``readdir`` on the root with the preloaded tree in it.
    """

    key = "system"
    title = "system"
    # Can the same session be unmounted and mounted again without losing data?
    can_remount = True
    # Caveats printed beside the cold-read and mount-time figures.
    cold_note: str | None = None
    mount_note: str | None = None

    def __init__(self, scratch: Scratch) -> None:
        self.scratch = scratch
        self.notes: list[str] = []
        self.root: Path | None = None
        self.last_mount_s: float | None = None
        self.session: str | None = None
        if not host.can_drop_caches():
            self.cold_note = self.cold_note or "remount only: page cache not dropped (not root)"

    # -------------------------------------------------------------- interface

    def open_session(self, session: str, preload: Tree | None = None) -> Path:
        """Starts a fresh, empty filesystem; copies ``preload`` into ``<root>/<name>``
        (untimed); returns the root. Raises :class:`SetupFailed`."""
        raise NotImplementedError

    def go_cold(self) -> None:
        """Makes the next access as cold as this system can be made (see module doc)."""

    def settle(self) -> None:
        """Waits until every write so far is where a fresh mount would find it."""

    def remount(self, *, drop_caches: bool) -> None:
        """Unmounts and mounts the same session again (updates :attr:`last_mount_s`)."""
        raise SetupFailed(f"{self.title} cannot be remounted")

    def close_session(self) -> None:
        """Unmounts and removes the session's data."""

    def daemon_pid(self) -> int | None:
        """PID of the FUSE daemon while mounted (memory figures), else None."""
        return None

    def daemon_problems(self) -> str:
        """The daemon's latest log lines that report a problem ("" if none or no daemon)."""
        return ""

    def abandon(self) -> None:
        """Last-resort clean-up after a failure or Ctrl-C: never raises."""
        with contextlib.suppress(Exception):
            self.close_session()


class TmpfsSystem(System):
    """A directory on kernel tmpfs: the limit (no FUSE round trips at all)."""

    key = "tmpfs"
    title = "tmpfs"
    can_remount = False
    cold_note = "= warm (no cold state)"
    mount_note = "no mount"

    def __init__(self, scratch: Scratch) -> None:
        super().__init__(scratch)
        self.notes = ["kernel tmpfs: cold read = warm read (the page cache is the storage)"]

    def open_session(self, session: str, preload: Tree | None = None) -> Path:
        self.session = session
        root = self.scratch.ram / "tmpfs" / session
        shutil.rmtree(root, ignore_errors=True)
        root.mkdir(parents=True)
        if preload is not None:
            run_checked(
                ["cp", "-r", str(preload.path), str(root / preload.name)],
                timeout_s=600,
                what="preload",
            )
        self.root = root
        return root

    def close_session(self) -> None:
        if self.root is not None:
            shutil.rmtree(self.root, ignore_errors=True)
        self.root = None


def process_alive(pid: int) -> bool:
    """True while ``pid`` exists and is not a zombie (``/proc/PID/stat`` state ``Z``)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def processes_mentioning(text: str) -> list[int]:
    """PIDs (other than this process) with an argument equal to ``text``."""
    wanted = os.fsencode(text)
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            arguments = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if wanted in arguments and process_alive(int(entry)):
            found.append(int(entry))
    return found


class FuseDaemonSystem(System):
    """A system served by a FUSE daemon process that this object starts and stops.

    By default the daemon runs in the foreground as this process's child
    (:meth:`daemon_argv`); a subclass whose command daemonizes overrides :meth:`_start`.
    """

    def __init__(self, scratch: Scratch) -> None:
        super().__init__(scratch)
        self.process: subprocess.Popen[bytes] | None = None  # when the daemon is our child
        self.pid: int | None = None
        self.mount_point: Path | None = None
        self.log_path: Path | None = None
        self._ready_entry: str | None = None

    # Subclass hooks.
    def daemon_argv(self) -> list[str]:
        raise NotImplementedError

    def daemon_environment(self) -> dict[str, str]:
        return self.scratch.daemon_env()

    def session_root(self) -> Path:
        assert self.mount_point is not None
        return self.mount_point

    def unmount_argv(self) -> list[str]:
        assert self.mount_point is not None
        return [fusermount_command(), "-u", str(self.mount_point)]

    def log_files(self) -> list[Path]:
        """Where the daemon's output goes."""
        return [self.log_path] if self.log_path is not None else []

    # Mechanics.
    def daemon_problems(self) -> str:
        markers = ("ERROR", "WARNING", "CRITICAL", "Traceback", "Error:")
        problems = []
        for path in self.log_files():
            with contextlib.suppress(OSError):
                text = path.read_bytes()[-200_000:].decode("utf-8", errors="replace")
                problems += [line for line in text.splitlines() if any(m in line for m in markers)]
        return " / ".join(problems[-3:])[-LOG_TAIL_BYTES:]

    def _log_tail(self) -> str:
        tails = []
        for path in self.log_files():
            with contextlib.suppress(OSError):
                tails.append(path.read_bytes()[-LOG_TAIL_BYTES:].decode("utf-8", "replace"))
        return "\n".join(tails).strip()[-LOG_TAIL_BYTES:]

    def _start(self, argv: list[str], deadline: float) -> None:
        """Starts the daemon in the foreground, as a child in its own session."""
        assert self.log_path is not None
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=self.daemon_environment(),
                start_new_session=True,
                cwd=self.scratch.disk,
            )
        self.pid = self.process.pid

    def _mount(self, *, drop_caches: bool) -> None:
        assert self.mount_point is not None
        self.mount_point.mkdir(parents=True, exist_ok=True)
        if drop_caches:
            host.drop_caches()
        argv = self.daemon_argv()
        started = time.perf_counter()
        deadline = started + MOUNT_TIMEOUT_S
        self._start(argv, deadline)
        root = self.session_root()
        while not self._ready(root):
            if self.pid is None or not process_alive(self.pid):
                if self.process is not None:
                    self.process.wait()
                    status = f"exited with status {self.process.returncode}"
                else:
                    status = "has no live daemon"
                raise SetupFailed(
                    f"`{' '.join(argv)}` {status} before the mount was ready: "
                    f"{self._log_tail() or '(no output)'}"
                )
            if time.perf_counter() > deadline:
                raise SetupFailed(
                    f"`{' '.join(argv)}` not ready after {MOUNT_TIMEOUT_S:.0f} s: "
                    f"{self._log_tail() or '(no output)'}"
                )
            time.sleep(POLL_INTERVAL_S)
        self.last_mount_s = time.perf_counter() - started
        self.root = root

    def _ready(self, root: Path) -> bool:
        assert self.mount_point is not None
        if not host.is_mount_point(self.mount_point):
            return False
        try:
            names = os.listdir(root)
        except OSError:
            return False
        return self._ready_entry is None or self._ready_entry in names

    def _wait_gone(self, timeout_s: float) -> bool:
        """Waits for the daemon to exit (reaping it when it is our child)."""
        if self.process is not None:
            try:
                self.process.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                return False
            return True
        deadline = time.monotonic() + timeout_s
        while self.pid is not None and process_alive(self.pid):
            if time.monotonic() > deadline:
                return False
            time.sleep(0.01)
        return True

    def _unmount_politely(self) -> str | None:
        """Runs :meth:`unmount_argv`, retrying while the kernel says the mount is busy.

        Right after a mount, ``umount`` can fail with EBUSY for a moment (seen when a
        Ctrl-C lands just as a daemon starts); a retry a tenth of a second later works.

        Returns:
            None once unmounted, else the last failure.
        """
        assert self.mount_point is not None
        argv = self.unmount_argv()
        deadline = time.monotonic() + UNMOUNT_RETRY_S
        while True:
            result = subprocess.run(
                argv, capture_output=True, text=True, timeout=UNMOUNT_TIMEOUT_S,
                env=self.daemon_environment(),
            )  # fmt: skip
            if result.returncode == 0 or not host.is_mount_point(self.mount_point):
                return None
            if time.monotonic() > deadline:
                output = (result.stderr or result.stdout).strip()[-LOG_TAIL_BYTES:]
                return f"`{' '.join(argv)}` exited {result.returncode}: {output}"
            time.sleep(0.1)

    def _unmount(self) -> None:
        mounted = self.mount_point is not None and host.is_mount_point(self.mount_point)
        if self.pid is None and not mounted:
            return
        self.root = None
        failure = None
        if mounted:
            failure = self._unmount_politely()
        if failure is None and not self._wait_gone(UNMOUNT_TIMEOUT_S):
            failure = f"daemon {self.pid} still running after unmount"
        if failure is not None:
            self._force_stop()
            raise SetupFailed(failure)
        self.pid = self.process = None

    def _force_stop(self) -> None:
        """Lazy unmount, then SIGTERM and SIGKILL to the daemon by its PID. Never raises."""
        if self.mount_point is not None and host.is_mount_point(self.mount_point):
            with contextlib.suppress(Exception):
                subprocess.run(
                    [fusermount_command(), "-u", "-z", str(self.mount_point)],
                    capture_output=True,
                    timeout=30,
                )
        for sig in (signal.SIGTERM, signal.SIGKILL):
            if self.pid is None or not process_alive(self.pid):
                break
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, sig)
            self._wait_gone(10)
        if self.process is not None and self.process.poll() is None:
            with contextlib.suppress(Exception):
                self.process.wait(timeout=10)
        self.pid = self.process = None

    def _start_session(self, session: str) -> None:
        self.session = session
        self.mount_point = self.scratch.mounts / f"{self.key}-{session}"
        self.log_path = self.scratch.disk / f"{self.key}-{session}.log"

    def remount(self, *, drop_caches: bool) -> None:
        self._unmount()
        self._mount(drop_caches=drop_caches)

    def daemon_pid(self) -> int | None:
        return self.pid

    def close_session(self) -> None:
        self._unmount()

    def abandon(self) -> None:
        self.root = None
        with contextlib.suppress(Exception):
            if (
                self.pid is not None
                and process_alive(self.pid)
                and self._unmount_politely() is None
            ):
                self._wait_gone(UNMOUNT_TIMEOUT_S)
        self._force_stop()


class RcloneSystem(FuseDaemonSystem):
    """``rclone mount`` of a local directory with ``--vfs-cache-mode writes``."""

    key = "rclone"
    title = "rclone"

    def __init__(self, scratch: Scratch) -> None:
        super().__init__(scratch)
        self.notes = [
            "rclone mount of a local directory, --vfs-cache-mode writes, other options at "
            "rclone's defaults (--vfs-write-back 5s: a close returns before the data reaches "
            "the directory; not durable at close)",
            "cold = wait for uploads, unmount, empty the VFS cache, drop the page cache, mount",
        ]

    def _session_dir(self) -> Path:
        return self.scratch.disk / "rclone" / (self.session or "none")

    def daemon_argv(self) -> list[str]:
        assert self.mount_point is not None
        directory = self._session_dir()
        return [
            "rclone", "mount", str(directory / "remote"), str(self.mount_point),
            "--vfs-cache-mode", "writes",
            "--cache-dir", str(directory / "cache"),
            "--config", "/dev/null",
        ]  # fmt: skip

    def open_session(self, session: str, preload: Tree | None = None) -> Path:
        if shutil.which("rclone") is None:
            raise SetupFailed("rclone is not installed (scripts/setup installs Debian's rclone)")
        self._start_session(session)
        directory = self._session_dir()
        shutil.rmtree(directory, ignore_errors=True)
        (directory / "remote").mkdir(parents=True)
        if preload is not None:
            run_checked(
                ["cp", "-r", str(preload.path), str(directory / "remote" / preload.name)],
                timeout_s=600,
                what="preload",
            )
            self._ready_entry = preload.name
        else:
            self._ready_entry = None
        self._mount(drop_caches=True)
        return self.session_root()

    def settle(self) -> None:
        # Uploads are done when the remote directory holds what the mount shows.
        assert self.mount_point is not None
        deadline = time.monotonic() + SETTLE_TIMEOUT_S
        expected = tree_listing(self.mount_point)
        while tree_listing(self._session_dir() / "remote") != expected:
            if time.monotonic() > deadline:
                raise SetupFailed(f"rclone uploads not finished after {SETTLE_TIMEOUT_S:.0f} s")
            time.sleep(0.1)

    def go_cold(self) -> None:
        self.settle()
        self._unmount()
        shutil.rmtree(self._session_dir() / "cache", ignore_errors=True)
        self._mount(drop_caches=True)

    def close_session(self) -> None:
        super().close_session()
        shutil.rmtree(self._session_dir(), ignore_errors=True)


class FloorSystem(FuseDaemonSystem):
    """``scripts/floorfs.py``: the pyfuse3 stack with nothing behind it."""

    key = "floor"
    title = "pyfuse3 floor"
    can_remount = False
    cold_note = "page cache dropped, no remount"
    mount_note = "empty filesystem"

    def __init__(self, scratch: Scratch) -> None:
        super().__init__(scratch)
        if not host.can_drop_caches():
            self.cold_note = "NOT cold: page cache cannot be dropped (not root)"
        self.notes = [
            "scripts/floorfs.py: in-memory pyfuse3 + trio filesystem (dicts and bytearrays; "
            "keep_cache on open, 300 s entry and attribute timeouts)",
            "cold = drop the page cache only (a remount would lose the in-memory data)",
            "its mount time is that of an empty filesystem (preloading goes through the mount)",
        ]

    def daemon_argv(self) -> list[str]:
        assert self.mount_point is not None
        return [
            sys.executable,
            str(self.scratch.repo / "scripts" / "floorfs.py"),
            str(self.mount_point),
        ]

    def open_session(self, session: str, preload: Tree | None = None) -> Path:
        self._start_session(session)
        self._ready_entry = None
        self._mount(drop_caches=True)
        root = self.session_root()
        if preload is not None:
            run_checked(
                ["cp", "-r", str(preload.path), str(root / preload.name)],
                timeout_s=600,
                what="preload",
            )
        return root

    def go_cold(self) -> None:
        host.drop_caches()

    def remount(self, *, drop_caches: bool) -> None:
        raise SetupFailed("floorfs keeps its data in memory: a remount would lose it")


class PatchedFloorSystem(FloorSystem):
    """``scripts/floorfs.py --kernel-cache``: the floor with the kernel caching that the
    patched pyfuse3 can ask for (issue 17): what memfs's reads and scans can reach."""

    key = "floor_patched"
    title = "patched floor"

    def __init__(self, scratch: Scratch) -> None:
        super().__init__(scratch)
        self.notes = [
            "scripts/floorfs.py --kernel-cache: the floor with the patched pyfuse3 "
            "(third_party/pyfuse3): noflush on read-only opens, cache_readdir + keep_cache "
            "from opendir",
            *self.notes[1:],
        ]

    def daemon_argv(self) -> list[str]:
        return [*super().daemon_argv(), "--kernel-cache"]


class MemfsSystem(FuseDaemonSystem):
    """memfs's embedded mount, started the way a user does: ``memfs mount MOUNTPOINT
    --store NAME``, which returns once the daemon it starts in the background is ready.

    The mount time is that command's duration (plus the first ``readdir``); the daemon's
    PID, for its memory figures, is found in ``/proc`` by the mount point in its
    arguments (it is not this process's child).

    Stores are created and preloaded through the engine (``memfs.store.Engine``), not
    through the mount: preloading is not what is measured, and a 10,000-memory store
    takes long enough through the engine already.
    """

    key = "memfs"
    title = "memfs"

    # The copy-in workload keeps every repeat's copy: more than the default 10,000.
    MEMORY_LIMIT = 1_000_000

    def __init__(self, scratch: Scratch, memfs_command: str) -> None:
        super().__init__(scratch)
        self.memfs_command = memfs_command
        self.home = scratch.disk / f"{self.key}-home"  # one $MEMFS_HOME per session below it
        self.store_name: str | None = None
        self.seed_rate_ms: float | None = None
        self.notes = [
            "memfs embedded mount (SQLite WAL in $MEMFS_HOME on the backing dir, "
            f"synchronous={os.environ.get('MEMFS_SQLITE_SYNC', 'normal').upper()}: every "
            "close is a commit before close() returns)",
            "cold = memfs umount, drop the page cache, mount; mount time = `memfs mount` "
            "(background daemon, the default) until the store directory lists",
            f"MEMFS_MEMORY_LIMIT={self.MEMORY_LIMIT} so every repeat's copy fits in one store",
            "preloaded stores are indexed for search before they are mounted (the "
            "mount's indexer would otherwise index them during the timed workloads)",
        ]

    def daemon_environment(self) -> dict[str, str]:
        env = self.scratch.daemon_env(
            MEMFS_HOME=str(self._session_home()), MEMFS_MEMORY_LIMIT=str(self.MEMORY_LIMIT)
        )
        env.pop("MEMFS_DATABASE", None)
        return env

    def _session_home(self) -> Path:
        return self.home / (self.session or "none")


    def daemon_argv(self) -> list[str]:
        assert self.mount_point is not None
        assert self.store_name is not None
        return [self.memfs_command, "mount", str(self.mount_point), "--store", self.store_name]

    def log_files(self) -> list[Path]:
        # The command's own output, then the background daemon's log in $MEMFS_HOME.
        return super().log_files() + sorted(self._session_home().glob("logs/*.log"))

    def _start(self, argv: list[str], deadline: float) -> None:
        assert self.log_path is not None
        assert self.mount_point is not None
        try:
            with open(self.log_path, "ab") as log:
                result = subprocess.run(
                    argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                    env=self.daemon_environment(), cwd=self.scratch.disk,
                    timeout=max(1.0, deadline - time.perf_counter()),
                )  # fmt: skip
        except subprocess.TimeoutExpired as exc:
            self._discover_daemon()
            raise SetupFailed(f"`{' '.join(argv)}` did not return in time") from exc
        finally:
            # Even when the command failed or we were interrupted, a daemon may have been
            # left behind: know its PID so that clean-up can stop it.
            daemons = self._discover_daemon()
        if result.returncode != 0:
            self._force_stop()
            raise SetupFailed(
                f"`{' '.join(argv)}` exited with status {result.returncode}: "
                f"{self._log_tail() or '(no output)'}"
            )
        if self.pid is None:
            raise SetupFailed(
                f"`{' '.join(argv)}` succeeded but {len(daemons)} processes name "
                f"{self.mount_point} in their arguments (expected the one daemon)"
            )

    def _discover_daemon(self) -> list[int]:
        """Sets :attr:`pid` to the one process naming the mount point, if exactly one."""
        assert self.mount_point is not None
        daemons = processes_mentioning(str(self.mount_point))
        self.pid = daemons[0] if len(daemons) == 1 else None
        return daemons

    def abandon(self) -> None:
        if self.pid is None and self.mount_point is not None:
            self._discover_daemon()
        super().abandon()

    def unmount_argv(self) -> list[str]:
        assert self.mount_point is not None
        return [self.memfs_command, "umount", str(self.mount_point)]

    def session_root(self) -> Path:
        assert self.mount_point is not None
        assert self.store_name is not None
        from memfs.core.rules import slugify

        return self.mount_point / slugify(self.store_name)

    def _create_store(self, name: str, preload: Tree | None) -> None:
        previous = {key: os.environ.get(key) for key in ("MEMFS_HOME", "MEMFS_DATABASE")}
        os.environ["MEMFS_HOME"] = str(self._session_home())
        os.environ.pop("MEMFS_DATABASE", None)
        try:
            from memfs.core.config import database_url
            from memfs.store import Engine

            # synchronous_full=False: seeding is not measured; the mount itself opens the
            # database with its own (durable) settings.
            with Engine(
                database_url(), memory_limit=self.MEMORY_LIMIT, synchronous_full=False
            ) as engine:
                store = engine.stores.create(name)
                if preload is None:
                    return
                started = time.perf_counter()
                for relative in preload.files:
                    content = (preload.path / relative).read_text(encoding="utf-8")
                    engine.memories.create(
                        store.id,
                        f"/{preload.name}/{relative}",
                        content,
                    )
                elapsed = time.perf_counter() - started
                self.seed_rate_ms = 1000 * elapsed / max(1, len(preload.files))
                # The writes queued their full-text indexing (README "Writes: the search
                # index off the commit"): index it now, as the indexer would have long
                # since for a store written over time. Otherwise the mount's indexer
                # thread indexes 10,000 notes during the timed workloads after it.
                engine.search.catch_up()
        except Exception as exc:  # any engine failure makes this column fail, not the run
            raise SetupFailed(f"creating store {name!r} through the engine: {exc!r}") from exc
        finally:
            for key, value in previous.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value

    def open_session(self, session: str, preload: Tree | None = None) -> Path:
        self._start_session(session)
        self.store_name = f"bench {session}"
        self._create_store(self.store_name, preload)
        self._ready_entry = preload.name if preload is not None else None
        self._mount(drop_caches=True)
        return self.session_root()

    def go_cold(self) -> None:
        self.remount(drop_caches=True)

    def close_session(self) -> None:
        super().close_session()
        shutil.rmtree(self._session_home(), ignore_errors=True)


class StockMemfsSystem(MemfsSystem):
    """memfs as with stock pyfuse3 (``MEMFS_FUSE_KERNEL_CACHE=0``: a FLUSH at every close,
    listings not cached, 10 s timeouts), in the same run as :class:`MemfsSystem`: the
    before/after of issue 17 side by side. Not in the default set of systems."""

    key = "memfs_stock"
    title = "memfs, stock pyfuse3"

    def __init__(self, scratch: Scratch, memfs_command: str) -> None:
        super().__init__(scratch, memfs_command)
        self.notes = [*self.notes, "MEMFS_FUSE_KERNEL_CACHE=0: the kernel caching of issue 17 off"]

    def daemon_environment(self) -> dict[str, str]:
        return {**super().daemon_environment(), "MEMFS_FUSE_KERNEL_CACHE": "0"}
