"""Helpers of the fault tests: a real ``memfs serve`` that can be killed and restarted on
the same port, and remote mounts served by real ``memfs mount --api`` daemons.

The FUSE tests' helpers (``tests/fuse/fuse_helpers.py``: running commands, polling with
a deadline, the :class:`Mount` record and the :class:`Mounter` that cleans up every
mount) are reused, not copied; so is the wait for ``memfs serve``'s ready line
(``tests/serve_helpers.py``, shared with the API tests).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from fuse_helpers import (
    COMMAND_TIMEOUT_S,
    MEMFS,
    MOUNT_TIMEOUT_S,
    Mount,
    Mounter,
    run,
    wait_until,
)
from serve_helpers import read_ready_url

from memfs.fuse import mounts
from memfs.fuse.status import read_status

SERVER_START_TIMEOUT_S = 30.0
SERVER_STOP_TIMEOUT_S = 15.0
# SPEC §4 / issue 4: a change made elsewhere is visible in a mount within one second.
PROPAGATION_DEADLINE_S = 1.0
TOKEN_ENV = "MEMFS_TOKEN"


class Server:
    """``memfs serve`` on loopback over one database, as a subprocess.

    Args:
        database: the SQLite file (shared with the test's engine and embedded mounts).
        log_dir: where each run's stderr goes (``server-<n>.log``).
    """

    def __init__(self, database: Path, log_dir: Path) -> None:
        self.database = database
        self.log_dir = log_dir
        self.port = 0
        self.url = ""
        self.process: subprocess.Popen[str] | None = None
        self.runs = 0
        self.expected_log: list[str] = []

    def start(self) -> None:
        """Starts the server, on the port of its previous run if it had one."""
        assert self.process is None or self.process.poll() is not None
        self.runs += 1
        log_path = self.log_dir / f"server-{self.runs}.log"
        deadline = time.monotonic() + SERVER_START_TIMEOUT_S
        while True:
            with open(log_path, "w") as log:
                self.process = subprocess.Popen(
                    [sys.executable, "-m", "memfs.cli", "serve", "--host", "127.0.0.1",
                     "--port", str(self.port), "--database", str(self.database)],
                    stdout=subprocess.PIPE, stderr=log, text=True,
                )
            url = self._wait_ready(deadline)
            if url is not None:
                break
            # The port of a killed server may be briefly unavailable: try again.
            if time.monotonic() > deadline or not self.port:
                raise AssertionError(f"memfs serve did not start:\n{log_path.read_text()}")
        self.url = url
        self.port = int(url.rsplit(":", 1)[1])

    def _wait_ready(self, deadline: float) -> str | None:
        assert self.process is not None and self.process.stdout is not None
        url = read_ready_url(self.process.stdout, deadline)
        if url is not None:
            return url
        self.process.wait(timeout=SERVER_STOP_TIMEOUT_S)
        self.process.stdout.close()
        return None

    def kill(self) -> None:
        """``kill -9``: no request in flight gets an answer, nothing is flushed."""
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=SERVER_STOP_TIMEOUT_S)
        assert self.process.stdout is not None
        self.process.stdout.close()

    def stop(self) -> None:
        """SIGTERM; asserts a clean exit."""
        process = self.process
        if process is None or process.poll() is not None:
            return
        process.send_signal(signal.SIGTERM)
        try:
            status = process.wait(timeout=SERVER_STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
            raise AssertionError("memfs serve did not stop on SIGTERM") from None
        finally:
            assert process.stdout is not None
            process.stdout.close()
        assert status == 0, f"memfs serve exited {status}"

    def tracebacks(self) -> list[str]:
        return [
            str(path) for path in sorted(self.log_dir.glob("server-*.log"))
            if "Traceback" in path.read_text(errors="replace")
        ]


def mount_remote(
    mounter: Mounter,
    server: Server,
    token: str,
    *,
    path: Path | None = None,
    layout: str = "per-store",
    wait: bool = True,
    extra: tuple[str, ...] = (),
) -> Mount:
    """Starts ``memfs mount PATH --api URL --foreground`` with the token in
    ``$MEMFS_TOKEN`` (as the background mode passes it); waits until it is live unless
    ``wait`` is False (a mount that must wait for its server)."""
    index = len(mounter.mounts)
    if path is None:
        path = mounter._tmp_path / f"remote{index}"
        path.mkdir()
    log_file = mounter._tmp_path / f"remote-mount{index}.log"
    env = dict(os.environ, **{TOKEN_ENV: token})
    with open(log_file, "ab") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "memfs.cli.mounting", "mount", str(path), "--api",
             server.url, "--layout", layout, "--foreground", *extra],
            stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=env,
        )
    mount = Mount(path, process.pid, log_file, process)
    mounter.mounts.append(mount)
    if wait:
        wait_live(mount)
    return mount


def wait_live(mount: Mount, timeout_s: float = MOUNT_TIMEOUT_S) -> None:
    """Waits until ``mount``'s daemon serves it (mounted, status file written)."""
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


def backend_status(mount: Mount) -> dict[str, Any]:
    """The live backend section of the mount's status file."""
    backend = mount.status.get("backend")
    assert backend is not None, mount.status
    return dict(backend)


def memfs_status(mount: Mount) -> str:
    """``memfs status MOUNTPOINT`` as a user sees it."""
    return run(MEMFS, "status", mount.path).stdout


def wait_outbox_empty(mount: Mount, timeout_s: float = 30.0) -> None:
    wait_until(
        lambda: backend_status(mount)["outbox_depth"] == 0
        and backend_status(mount)["server_state"] == "reachable",
        f"the outbox of {mount.path} to drain", timeout_s,
    )


def read_text(path: Path) -> str | None:
    """The file's text, or None when it does not exist (yet)."""
    try:
        return path.read_text()
    except FileNotFoundError:
        return None


def reads(path: Path, text: str) -> Callable[[], bool]:
    """A predicate for :func:`wait_until`: ``path`` reads ``text``."""
    return lambda: read_text(path) == text


def memory_cache_entries(mount: Mount, entries: int) -> Callable[[], bool]:
    """A predicate: the mount's in-memory content cache holds ``entries`` contents."""
    return lambda: bool(mount.status["memory_cache"]["entries"] == entries)
