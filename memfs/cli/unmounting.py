"""``memfs umount`` and ``memfs status`` (SPEC §5 components): how a mount ends and what
it says while it runs. Neither may hang on a dead or stuck mount: the mount point is
never touched; whether the daemon answers is asked in a child process under a timeout
(see :func:`umount`). Registered by :mod:`memfs.cli.mounting` beside ``memfs mount``.
"""

from __future__ import annotations

import errno
import json
from typing import Annotated, Any

import typer

from memfs.cli._common import fail

__all__ = ["status", "umount"]

# How long `memfs umount` waits for the daemon to commit pending writes and exit.
DEFAULT_UMOUNT_TIMEOUT_S = 30.0
# How long `memfs umount` waits for a daemon to answer before calling it stuck.
PROBE_TIMEOUT_S = 3.0


def umount(
    mountpoint: Annotated[str, typer.Argument(help="A memfs mount point.")],
    lazy: Annotated[
        bool, typer.Option("--lazy", "-z", help="Detach even if busy (fusermount3 -z).")
    ] = False,
    timeout_s: Annotated[
        float,
        typer.Option(
            "--timeout", min=1.0, help="Seconds to wait for the daemon to finish (at least 1)."
        ),
    ] = DEFAULT_UMOUNT_TIMEOUT_S,
    force: Annotated[
        bool,
        typer.Option(
            "--force",
            help="Abort the FUSE connection of a daemon that does not answer; exit 0 "
            "although a remote mount's writes stay queued (kept).",
        ),
    ] = False,
) -> None:
    """Commit pending writes, then unmount (also cleans up a mount whose daemon died).

    A remote mount whose writes could not all reach its server keeps them in its outbox
    (``$MEMFS_HOME/outbox/<session>``); they replay at the next mount of that session
    from this home. This says how many and where, and exits 1 unless ``--force``
    (nothing a user wrote is silently lost).

    Never hangs on a dead or stuck mount: whether the daemon answers is asked in a
    child process given :data:`PROBE_TIMEOUT_S`. A mount whose daemon is gone has its
    FUSE connection aborted (``/sys/fs/fuse/connections/N/abort``: what still waits on
    it fails with ENOTCONN) and is detached; one whose daemon lives but does not answer
    is treated so only with ``--force``. Either is said on stderr.
    """
    from memfs.fuse import mounts
    from memfs.fuse.status import read_status, status_path

    target = mounts.mount_path(mountpoint)
    record = read_status(target)
    mounted = mounts.mount_points()
    if target in mounted and mounted[target] != mounts.FS_TYPE:
        # root may unmount anything: never what memfs did not mount (a tmpfs, a bind).
        fail(f"{target} is not a memfs mount (it is {mounted[target]}); nothing was unmounted")
    if target not in mounted:
        if record is not None and not mounts.process_alive(int(record["pid"])):
            status_path(target).unlink(missing_ok=True)
        elsewhere = _other_namespace(record)
        if record is not None and elsewhere is not None:
            fail(
                f"{target} is not mounted in this mount namespace: daemon {record['pid']} "
                f"serves it in {elsewhere}; unmount it there, e.g. `nsenter --mount "
                f"--target {record['pid']} memfs umount {target}`"
            )
        fail(f"{target} is not mounted")
    pid = int(record["pid"]) if record is not None else None
    unanswered = _unanswered(target, pid)
    if unanswered is not None:
        _remove_unanswered(target, pid, unanswered, force=force, timeout_s=timeout_s)
        return
    result = mounts.unmount(target, lazy=lazy, timeout_s=timeout_s)
    if not result.ok:
        if "busy" in result.message.lower():
            # Nothing is lost: a file open for writing commits when its process closes it.
            fail(
                f"{target} is busy: a process has a file or directory open in it (see "
                f"`fuser -vm {target}`). Nothing was unmounted; open files commit when "
                "they are closed. Close them and retry, or use --lazy to detach now and "
                "let the daemon finish when the last one closes"
            )
        fail(f"unmounting {target} failed: {result.message}")
    if lazy:
        # The daemon serves open files until they are closed, then commits and exits.
        typer.echo(f"detached {target}; daemon {pid} finishes when the last open file closes")
        return
    if pid is not None and not mounts.wait_for_exit(pid, timeout_s):
        fail(f"unmounted {target}, but daemon {pid} is still finishing after {timeout_s} s")
    message = _queued_writes_message(target, record)
    if message is not None:
        if not force:
            fail(message)
        typer.echo(message)
        return
    typer.echo(f"unmounted {target}")


def _unanswered(target: str, pid: int | None) -> tuple[bool, str] | None:
    """Why the mount at ``target`` can't be unmounted by its daemon, or None when it
    answers: (True, why) when its daemon is gone (dead, or exiting but held in the
    kernel), (False, why) when it lives but gave no answer in :data:`PROBE_TIMEOUT_S`."""
    from memfs.fuse import mounts

    if pid is not None and not mounts.process_alive(pid):
        return True, f"its daemon (pid {pid}) is gone"
    answer = mounts.probe(target, PROBE_TIMEOUT_S)
    if answer == 0:
        return None
    if answer is None:
        who = f"its daemon (pid {pid})" if pid is not None else "its daemon"
        return False, f"{who} does not answer (nothing within {PROBE_TIMEOUT_S:g} s)"
    if answer == errno.ENOTCONN:
        return True, "its daemon is gone (ENOTCONN)"
    return None  # another error is an answer: the normal unmount says what it is


def _remove_unanswered(
    target: str, pid: int | None, unanswered: tuple[bool, str], *, force: bool,
    timeout_s: float,
) -> None:
    """Aborts and detaches a mount whose daemon is gone, or (``force``) does not answer;
    refuses the latter without ``force``. A live daemon is given up to
    :data:`PROBE_TIMEOUT_S` to exit; the mount point is free either way."""
    from memfs.fuse import mounts
    from memfs.fuse.status import status_path

    gone, reason = unanswered
    if not gone and not force:
        fail(
            f"{target}: {reason}. Nothing was unmounted; `memfs umount --force "
            f"{target}` aborts its FUSE connection (what waits on it fails with "
            "ENOTCONN) and detaches it"
        )
    if pid is None or mounts.threads_left(pid):  # else its /dev/fuse is closed: ended
        _abort(target, reason)
    result = mounts.unmount(target, lazy=True, timeout_s=PROBE_TIMEOUT_S * 4)
    if not result.ok:
        fail(f"removing the mount {target} failed: {result.message}")
    if gone:
        status_path(target).unlink(missing_ok=True)
        typer.echo(f"removed stale mount {target} (its daemon was gone)")
    elif pid is not None and not mounts.wait_for_exit(pid, min(timeout_s, PROBE_TIMEOUT_S)):
        # The mount point is free; the daemon sees its connection gone when it runs
        # again, commits what its open files held and exits.
        typer.echo(f"detached {target}; its daemon {pid} did not answer and is still running")
    else:
        typer.echo(f"detached {target} (its daemon did not answer)")


def _abort(target: str, reason: str) -> None:
    """Aborts the FUSE connection of the mount at ``target``, if it is still open, and
    says so on stderr (a connection already closed needs nothing)."""
    from memfs.fuse import mounts

    number = mounts.connection_of(target)
    if number is None:
        return
    try:
        mounts.abort_connection(number)
    except FileNotFoundError:
        return  # closed already: its daemon's /dev/fuse is closed, nothing waits
    except OSError as exc:
        typer.echo(
            f"memfs: {target}: {reason}; its FUSE connection {number} could not be "
            f"aborted ({exc.strerror}); processes waiting on it stay blocked until it is "
            f"(echo 1 > {mounts.CONNECTIONS}/{number}/abort as root)",
            err=True,
        )
        return
    typer.echo(
        f"memfs: {target}: {reason}; aborted its FUSE connection {number} "
        "(what waited on it failed with ENOTCONN)",
        err=True,
    )


def _queued_writes_message(target: str, record: dict[str, Any] | None) -> str | None:
    """What ``umount`` says of a remote mount's writes still queued after its daemon
    exited (nothing a user wrote is silently lost), or None when there are none: how
    many, where, and how they reach the server — at the next mount of that session, or
    with ``memfs outbox replay`` under another session when the server refused this
    one's token."""
    from memfs.core.config import memfs_home
    from memfs.remote.outbox import read_pending

    if record is None or (record.get("backend") or {}).get("kind") != "remote":
        return None
    session_id = str(record["session_id"])
    outbox = memfs_home() / "outbox" / session_id
    queued = len(read_pending(outbox))
    if not queued:
        return None
    location = record["backend"]["location"]
    if record["backend"].get("server_state") == "token refused":
        then = (
            f"the server refused session {session_id}'s token (revoked or expired), so "
            f"send them with a new session: `memfs outbox replay {session_id} --api "
            f"{location} --token NEW_TOKEN`"
        )
    else:
        then = (
            f"they replay when session {session_id} is mounted again with "
            f"MEMFS_HOME={memfs_home()} (or `memfs outbox replay {session_id} --api "
            f"{location} --token TOKEN` sends them with another session)"
        )
    return (
        f"unmounted {target}, but {queued} write(s) did not reach the server {location}: "
        f"they are kept in {outbox}; {then}"
    )

def status(
    mountpoint: Annotated[str, typer.Argument(help="A memfs mount point.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
    prometheus: Annotated[
        bool,
        typer.Option(
            "--prometheus",
            help="Print the daemon's Prometheus metrics (text exposition, at most 1 s old).",
        ),
    ] = False,
) -> None:
    """Show a mount's daemon, stores, session, rejected writes and last errors."""
    from memfs.fuse import mounts
    from memfs.fuse.status import read_saved_scratch, read_status

    target = mounts.mount_path(mountpoint)
    if prometheus:
        _print_metrics(target)
        return
    record = read_status(target)
    saved_scratch = read_saved_scratch(target)
    mounted = mounts.is_mounted(target)
    if record is None:
        state = "mounted (no status record)" if mounted else "not mounted"
    elif not mounts.process_alive(int(record["pid"])):
        state = "stale (daemon gone)" if mounted else "not mounted (daemon gone)"
    elif not mounted and _other_namespace(record) is not None:
        state = f"running in another mount namespace ({_other_namespace(record)})"
    else:
        state = "running" if mounted else "starting"
    if as_json:
        typer.echo(json.dumps(
            dict(record or {}, mountpoint=target, state=state, saved_scratch=saved_scratch),
            indent=2,
        ))
    else:
        _print_status(target, state, record)
        _print_saved_scratch(saved_scratch)
    if not state.startswith("running"):
        raise typer.Exit(1)


def _print_metrics_url(record: dict[str, Any]) -> None:
    """Where the daemon serves its metrics (``--metrics-port``), if it does."""
    if record.get("metrics_url"):
        typer.echo(f"metrics:      {record['metrics_url']}")


def _print_metrics(target: str) -> None:
    """Prints the metrics file of the daemon serving ``target``; exit status 1 when no
    live daemon serves it."""
    from memfs.fuse import mounts
    from memfs.fuse.status import metrics_path, read_status

    record = read_status(target)
    if record is None or not mounts.process_alive(int(record["pid"])):
        fail(f"no memfs daemon serves {target}")
    try:
        typer.echo(metrics_path(target).read_text(), nl=False)
    except FileNotFoundError:
        fail(f"the daemon of {target} has written no metrics yet; try again in a second")


def _other_namespace(record: dict[str, Any] | None) -> str | None:
    """The mount namespace a live daemon serves its mount in, when it is not this
    process's (``unshare -m``, a container: SPEC §4 Sandboxes); else None."""
    from memfs.fuse import mounts
    from memfs.fuse.sandbox import mount_namespace

    if record is None or not mounts.process_alive(int(record["pid"])):
        return None
    theirs = record.get("mount_namespace") or mount_namespace(int(record["pid"]))
    if theirs is None or theirs == mount_namespace():
        return None
    return str(theirs)


def _flags(store: dict[str, Any]) -> str:
    """``read_write``, ``read_only, archived``, ``read_only, as of before-agent`` …"""
    flags = str(store["access"]) + "".join(
        f", {flag}" for flag in ("archived", "deleted") if store.get(flag)
    )
    if store.get("at") is not None:  # an as-of view (SPEC §10)
        flags += f", as of {store['at']}"
    return flags


def _print_status(target: str, state: str, record: dict[str, Any] | None) -> None:
    typer.echo(f"mount point:  {target}")
    typer.echo(f"state:        {state}")
    if record is None:
        return
    typer.echo(f"daemon pid:   {record['pid']}")
    typer.echo(f"session:      {record['session_id']}")
    typer.echo(f"layout:       {record['layout']}")
    typer.echo(f"started at:   {record['started_at']}")
    typer.echo(f"log:          {record['log_file']}")
    _print_metrics_url(record)
    full = record.get("storage_full")
    if full:
        typer.echo(
            f"disk full:    {full['path']} (since {full['since']}): writes are refused "
            "with ENOSPC until space is freed; reads go on"
        )
    backend = record.get("backend")
    if backend is not None:
        typer.echo(f"backend:      {backend['kind']} {backend['location']}")
        if backend.get("search_pending") is not None:
            typer.echo(
                f"search:       {backend['search_pending']} memories wait for their vector "
                f"(oldest {backend['search_lag_s']:.1f} s)"
            )
        if backend["kind"] == "remote":
            typer.echo(f"server:       {backend['server_state']}")
            oldest = backend.get("outbox_oldest_at")
            since = f" (oldest accepted {oldest})" if oldest else ""
            typer.echo(f"outbox:       {backend['outbox_depth']} write(s) to replay{since}")
            typer.echo(
                f"disk cache:   {backend['cache_entries']} entries, "
                f"{_size(backend['cache_size_bytes'])} of {_size(backend['cache_max_size_bytes'])}"
            )
    memory_cache = record.get("memory_cache")
    if memory_cache is not None:
        typer.echo(
            f"memory cache: {memory_cache['entries']} entries, "
            f"{_size(memory_cache['size_bytes'])} ({memory_cache['hits']} hits, "
            f"{memory_cache['misses']} misses)"
        )
    typer.echo("stores:")
    for store in record["stores"]:
        typer.echo(
            f"  {store['directory']:<24} {store['name']} ({store['id']}, {_flags(store)})"
        )
    typer.echo(f"rejected writes: {record['rejected_count']}")
    for event in record["rejected_writes"]:
        reason = f"{event['message']}; " if event.get("message") else ""
        # A save refused before any byte was accepted kept nothing (SPEC §4: the errno
        # told the writer everything).
        kept = f"kept in {event['saved_to']}" if event["saved_to"] else "no bytes were accepted"
        typer.echo(f"  {event['at']} {event['path']} {event['errno']}: {reason}{kept}")
    typer.echo(f"conflicts: {record['conflict_count']}")
    for event in record["conflicts"]:
        typer.echo(f"  {event['at']} {event['path']} -> {event['conflict_path']}")
    # Saves merged with a change made elsewhere (SPEC §4); older status files lack it.
    typer.echo(f"merges: {record.get('merge_count', 0)}")
    for event in record.get("merges", []):
        typer.echo(f"  {event['at']} {event['path']} (version {event['version_id']})")
    typer.echo(f"last errors: {len(record['last_errors'])}")
    for event in record["last_errors"]:
        typer.echo(f"  {event['at']} {event['message']}")


def _print_saved_scratch(saved: list[dict[str, str]]) -> None:
    if not saved:
        return
    typer.echo(f"scratch files saved at unmount (never stored as memories): {len(saved)}")
    for event in saved:
        typer.echo(f"  {event['at']} {event['path']}: kept in {event['saved_to']}")


def _size(size_bytes: int) -> str:
    if size_bytes < 1024:
        return f"{size_bytes} B"
    if size_bytes < 1024 * 1024:
        return f"{size_bytes / 1024:.1f} KiB"
    return f"{size_bytes / (1024 * 1024):.1f} MiB"
