"""Helpers of the fault tests: a real ``memfs serve`` that can be killed and restarted on
the same port (:class:`_support.serve.ServeProcess`), and remote mounts served by real
``memfs mount --api`` daemons (:meth:`_support.mount.Mounter.mount_remote`).

Everything here is a thin layer over ``tests/_support`` (one copy of the server wrapper,
the mounter and the polling), plus the predicates the fault tests poll for.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from _support.mount import (
    COMMAND_TIMEOUT_S,
    MEMFS,
    MOUNT_TIMEOUT_S,
    TOKEN_ENV,
    Mount,
    Mounter,
    kill_daemon,
    run,
    wait_live,
    wait_until,
)
from _support.serve import SERVER_START_TIMEOUT_S, SERVER_STOP_TIMEOUT_S, ServeProcess

__all__ = [
    "COMMAND_TIMEOUT_S",
    "MOUNT_TIMEOUT_S",
    "PROPAGATION_DEADLINE_S",
    "SERVER_START_TIMEOUT_S",
    "SERVER_STOP_TIMEOUT_S",
    "TOKEN_ENV",
    "Server",
    "backend_status",
    "kill_daemon",
    "memfs_status",
    "memory_cache_entries",
    "mount_remote",
    "read_text",
    "reads",
    "wait_live",
    "wait_outbox_empty",
]

# SPEC §4: a change made elsewhere is visible in a mount within one second.
PROPAGATION_DEADLINE_S = 1.0


class Server(ServeProcess):
    """``memfs serve`` on loopback over the test's SQLite file; started by the caller."""

    def __init__(self, database: Path, log_dir: Path) -> None:
        super().__init__(database, log_dir, start=False)


def mount_remote(mounter: Mounter, server: Server, token: str, **options: Any) -> Mount:
    """:meth:`Mounter.mount_remote` on ``server``'s current URL (same options)."""
    return mounter.mount_remote(server.url, token, **options)


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
