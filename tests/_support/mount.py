"""Real FUSE mounts for tests: mounting, driving them with real tools, cleaning up.

- :data:`FUSE_UNAVAILABLE_REASON`: why FUSE can't be used here, or None.
- :func:`run`, :func:`run_python`, :func:`run_script`, :func:`errno_of`: tools in
  subprocesses (so no test process holds the mount); :func:`run_script` runs a program
  of ``tests/_scripts`` (:mod:`_support.scripts`).
- :func:`wait_applied`: waits until a mount has applied the changes made elsewhere.
- :class:`Mount`: a live mount (path, daemon pid, log; its status file).
- :class:`Mounter`: mounts embedded stores (:meth:`Mounter.mount`) or a session of a
  ``memfs serve`` (:meth:`Mounter.mount_remote`), and at :meth:`Mounter.close`
  unmounts every one, checking the daemon's exit status and that its log holds no
  WARNING/ERROR the test did not announce (:meth:`Mount.expect_log`).
"""

from __future__ import annotations

import errno
import os
import shutil
import signal
import subprocess
import sys
import textwrap
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from _support.cli import MEMFS
from _support.polling import PROPAGATION_TIMEOUT_S, wait_until
from _support.scripts import script_command, script_env
from memfs.core.model import Memory, MemoryVersion
from memfs.fuse import mounts
from memfs.fuse.status import read_status
from memfs.store import Engine

__all__ = [
    "COMMAND_TIMEOUT_S",
    "FUSE_UNAVAILABLE_REASON",
    "MEMFS",
    "MOUNT_TIMEOUT_S",
    "PROPAGATION_TIMEOUT_S",
    "TOKEN_ENV",
    "Mount",
    "Mounter",
    "errno_name",
    "errno_of",
    "exists",
    "kill_daemon",
    "live",
    "run",
    "run_python",
    "run_script",
    "script_command",
    "script_env",
    "versions",
    "wait_applied",
    "wait_live",
    "wait_until",
]

TOKEN_ENV = "MEMFS_TOKEN"
COMMAND_TIMEOUT_S = 30.0
MOUNT_TIMEOUT_S = 30.0


def _fuse_unavailable_reason() -> str | None:
    if not os.path.exists("/dev/fuse"):
        return "/dev/fuse does not exist: the FUSE kernel module is not available here"
    if shutil.which(mounts.FUSERMOUNT) is None:
        return "fusermount3 is not installed (Debian package fuse3)"
    try:
        fd = os.open("/dev/fuse", os.O_RDWR)
    except OSError as exc:
        return f"/dev/fuse can't be opened: {exc.strerror}"
    os.close(fd)
    return None


FUSE_UNAVAILABLE_REASON = _fuse_unavailable_reason()


def run(
    *args: str | Path,
    cwd: Path | None = None,
    check: bool = True,
    input: str | None = None,
    env: Mapping[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """Runs a command; with ``check`` a non-zero exit fails the test with its stderr."""
    completed = subprocess.run(
        [str(a) for a in args], cwd=cwd, capture_output=True, text=True, input=input,
        timeout=COMMAND_TIMEOUT_S, check=False, env=env,
    )
    if check and completed.returncode != 0:
        raise AssertionError(
            f"{' '.join(map(str, args))} exited {completed.returncode}\n"
            f"stdout: {completed.stdout}\nstderr: {completed.stderr}"
        )
    return completed


def run_python(code: str) -> str:
    """Runs ``code`` in a new Python process (so no test process holds the mount)."""
    return run(sys.executable, "-c", textwrap.dedent(code)).stdout


def run_script(name: str, *args: str | Path | int, check: bool = True) -> str:
    """Runs ``tests/_scripts/<name>.py`` with ``args`` in a new Python process (so no
    test process holds the mount); its standard output."""
    return run(*script_command(name, *args), env=script_env(), check=check).stdout


def wait_applied(
    path: Path | str, engine: Engine, timeout_s: float = PROPAGATION_TIMEOUT_S
) -> None:
    """Waits until the mount at ``path`` has applied every change its stores had when
    called: the ``seq`` of each store in its status file (written every
    ``STATUS_REFRESH_INTERVAL_S``) reaches the store's newest change (SPEC §4: changes
    made elsewhere appear within about one second)."""
    record = read_status(str(path))
    assert record is not None, f"no status file for {path}"
    targets = {str(s["id"]): engine.feed.last_seq(str(s["id"])) for s in record["stores"]}

    def applied() -> bool:
        now = read_status(str(path))
        return now is not None and all(s["seq"] >= targets[str(s["id"])] for s in now["stores"])

    wait_until(applied, f"the mount at {path} to apply the changes made elsewhere", timeout_s)


def errno_of(code: str) -> str:
    """Runs ``code`` in a new Python process; the name of the OSError errno it raises,
    or ``"no error"``."""
    body = textwrap.indent(textwrap.dedent(code).strip(), "    ")
    script = (
        "import errno, os, sys\n"
        "try:\n"
        f"{body}\n"
        "except OSError as e:\n"
        "    print(errno.errorcode[e.errno])\n"
        "else:\n"
        "    print('no error')\n"
    )
    return run(sys.executable, "-c", script).stdout.strip()


def exists(path: Path) -> bool:
    return os.path.lexists(path)


def versions(engine: Engine, store_id: str, memory_id: str | None = None) -> list[MemoryVersion]:
    """Every version of a store (or of one memory), oldest first."""
    found: list[MemoryVersion] = []
    cursor = None
    while True:
        page = engine.versions.list(store_id, memory_id=memory_id, limit=100, cursor=cursor)
        found.extend(page.items)
        cursor = page.next_cursor
        if cursor is None:
            return list(reversed(found))


def live(engine: Engine, store_id: str) -> dict[str, Memory]:
    """Live memories of a store with content, by path."""
    return {
        m.path: engine.memories.get(store_id, m.id, with_content=True)
        for m in engine.memories.all(store_id)
    }


class Mount:
    """A live mount: its path, daemon and log."""

    def __init__(
        self, path: Path, pid: int, log_file: Path, process: subprocess.Popen[bytes] | None
    ) -> None:
        self.path = path
        self.pid = pid
        self.log_file = log_file
        self.process = process
        self.expected_log: list[str] = []
        self.unmounted = False

    def __truediv__(self, other: str) -> Path:
        return self.path / other

    @property
    def status(self) -> dict[str, Any]:
        record = read_status(str(self.path))
        assert record is not None, "the daemon wrote no status file"
        return record

    @property
    def session_id(self) -> str:
        return str(self.status["session_id"])

    def expect_log(self, *substrings: str) -> None:
        """Announces WARNING/ERROR log lines this test provokes on purpose."""
        self.expected_log.extend(substrings)

    def unexpected_log_lines(self) -> list[str]:
        text = self.log_file.read_text(errors="replace") if self.log_file.exists() else ""
        bad = []
        for line in text.splitlines():
            if (" WARNING " in line or " ERROR " in line or "Traceback" in line) and not any(
                expected in line for expected in self.expected_log
            ):
                bad.append(line)
        return bad


class Mounter:
    """Mounts stores for real and cleans up every mount, even after a failure."""

    def __init__(self, tmp_path: Path, engine: Engine | None = None) -> None:
        self._tmp_path = tmp_path
        self._engine = engine
        self.mounts: list[Mount] = []

    def mount(
        self,
        *stores: str,
        layout: str = "per-store",
        background: bool = False,
        cli: bool = False,
        path: Path | None = None,
        extra_args: tuple[str, ...] = (),
    ) -> Mount:
        """Mounts ``stores``; waits until the mount is live.

        Args:
            background: ``memfs mount`` without ``--foreground`` (returns when ready).
            cli: the ``memfs`` console script even in the foreground; by default the
                daemon runs as ``python -m memfs.cli.mounting mount --foreground``, the
                same command without loading the other command groups (a faster start).
            path: the mount point (default: a new directory under the test's tmp_path).
            extra_args: more options of ``memfs mount`` (e.g. ``--nonempty``).
        """
        index = len(self.mounts)
        if path is None:
            path = self._tmp_path / f"mnt{index}"
            path.mkdir()
        program = [MEMFS] if background or cli else [sys.executable, "-m", "memfs.cli.mounting"]
        args = [*program, "mount", str(path), "--layout", layout]
        for store in stores:
            args += ["--store", store]
        args += extra_args
        if background:
            run(*args)
            record = read_status(str(path))
            assert record is not None
            mount = Mount(path, int(record["pid"]), Path(record["log_file"]), None)
        else:
            log_file = self._tmp_path / f"mount{index}.log"
            with open(log_file, "wb") as log:
                process = subprocess.Popen(
                    [*args, "--foreground"], stdin=subprocess.DEVNULL, stdout=log,
                    stderr=subprocess.STDOUT,
                )
            mount = Mount(path, process.pid, log_file, process)
        self.mounts.append(mount)  # before the wait: cleaned up even if it never gets live
        if mount.process is not None:
            wait_live(mount)
        return mount

    def mount_remote(
        self,
        url: str,
        token: str,
        *,
        path: Path | None = None,
        layout: str | None = "per-store",
        wait: bool = True,
        extra: tuple[str, ...] = (),
    ) -> Mount:
        """Starts ``memfs mount PATH --api URL --foreground`` with the token in
        ``$MEMFS_TOKEN`` (as the background mode passes it); waits until it is live
        unless ``wait`` is False (a mount that must wait for its server). ``layout``
        None gives no ``--layout``: the session's layout."""
        index = len(self.mounts)
        if path is None:
            path = self._tmp_path / f"remote{index}"
            path.mkdir()
        log_file = self._tmp_path / f"remote-mount{index}.log"
        env = dict(os.environ, **{TOKEN_ENV: token})
        with open(log_file, "ab") as log:
            process = subprocess.Popen(
                [sys.executable, "-m", "memfs.cli.mounting", "mount", str(path), "--api",
                 url, *(["--layout", layout] if layout else []), "--foreground", *extra],
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=env,
            )
        mount = Mount(path, process.pid, log_file, process)
        self.mounts.append(mount)
        if wait:
            wait_live(mount)
        return mount

    def unmount(self, mount: Mount) -> None:
        """``memfs umount``; asserts the daemon exited cleanly and nothing stays mounted."""
        run(MEMFS, "umount", mount.path)
        mount.unmounted = True
        if mount.process is not None:
            assert mount.process.wait(timeout=COMMAND_TIMEOUT_S) == 0, mount.log_file.read_text()
        assert not mounts.is_mounted(str(mount.path))
        assert not mounts.process_alive(mount.pid)

    def close(self) -> None:
        problems: list[str] = []
        for mount in reversed(self.mounts):  # the newest first: it may reuse a path
            if not mount.unmounted and mounts.is_mounted(str(mount.path)):
                # fusermount3 directly (what `memfs umount` runs; its own tests are in
                # test_fuse_lifecycle.py): a CLI start per test would slow the suite.
                result = mounts.unmount(str(mount.path))
                if not result.ok:
                    problems.append(f"unmounting {mount.path} failed: {result.message}")
                    mounts.unmount(str(mount.path), lazy=True)
            if mount.process is not None:
                try:
                    code = mount.process.wait(timeout=COMMAND_TIMEOUT_S)
                except subprocess.TimeoutExpired:
                    mount.process.kill()
                    code = mount.process.wait()
                    problems.append(f"daemon of {mount.path} did not exit")
                if code not in (0, -signal.SIGKILL) and not mount.unmounted:
                    problems.append(f"daemon of {mount.path} exited {code}")
            elif mounts.process_alive(mount.pid) and not mounts.wait_for_exit(
                mount.pid, COMMAND_TIMEOUT_S
            ):
                os.kill(mount.pid, signal.SIGKILL)
                problems.append(f"daemon of {mount.path} did not exit")
            if mounts.is_mounted(str(mount.path)):
                mounts.unmount(str(mount.path), lazy=True)
                problems.append(f"{mount.path} was still mounted")
            problems += [f"unexpected log line: {line}" for line in mount.unexpected_log_lines()]
        assert not problems, "\n".join(problems)


def errno_name(code: int) -> str:
    return errno.errorcode[code]


def wait_live(mount: Mount, timeout_s: float = MOUNT_TIMEOUT_S) -> None:
    """Waits until ``mount``'s daemon (started by the test) serves it: mounted, and the
    status file written by that daemon. A daemon that exits first fails the test with
    its log."""
    process = mount.process
    assert process is not None

    def ready() -> bool:
        if process.poll() is not None:
            raise AssertionError(
                f"the mount daemon exited {process.returncode}:\n{mount.log_file.read_text()}"
            )
        record = read_status(str(mount.path))
        return bool(
            mounts.is_mounted(str(mount.path)) and record and record["pid"] == process.pid
        )

    wait_until(ready, f"the mount at {mount.path}", timeout_s)


def kill_daemon(mount: Mount) -> None:
    """``kill -9`` of the mount's daemon (started by the test); asserts that it died of
    the signal. The mount point is left stale."""
    assert mount.process is not None
    os.kill(mount.pid, signal.SIGKILL)
    assert mount.process.wait(timeout=COMMAND_TIMEOUT_S) == -signal.SIGKILL
