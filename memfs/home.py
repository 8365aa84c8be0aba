"""Durable private files under ``$MEMFS_HOME``: the one place that writes them.

What lives there (SPEC §5): the SQLite database, the mount status files
(``mounts/``), the daemon logs (``logs/``), a remote mount's content cache (``cache/``)
and outbox (``outbox/``), and the bytes of refused writes (``rejected/``). This module
owns how such files are written:

Everything here is private to the user running memfs (SPEC §3: other
local users must not read memories): files are created ``0600`` and directories
``0700`` whatever the umask (:func:`private_directory`, :func:`open_private`), and
:func:`secure_home` takes group and other access away from an existing
``$MEMFS_HOME`` made by an older version.

* :func:`compact_timestamp`: the one timestamp format of file names.
* :func:`fsync_directory`: makes a rename or a new name in a directory durable.
* :func:`write_atomically`: temporary file, (fsync), rename — readers see the old
  content or the new, never a torn file.
* :func:`scrub_file`: rewrites a file with some strings replaced (a redacted memory's
  path in a mount's log, SPEC §2), atomically, even while this process appends to it
  through its own standard error (see its docstring for why no line is lost).
* :func:`scrub_stopped_mounts`: the same for the log and status files of every mount
  whose daemon is not running (recognised by :func:`hold_mount_lock`'s ``flock``).
* :func:`save_rejected`: the one way to keep the bytes of a write that could not be
  stored (SPEC §4: "a write rejected at close is never silently dropped"):
  ``rejected/<session_id>/<UTC timestamp>[-<tag>]-<name>``.

Only the standard library and :mod:`memfs.core.config` / :mod:`memfs.core.model`: every layer
that keeps local files (fuse, remote, cli) may use it.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import stat
from collections.abc import Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from memfs.core.config import memfs_home
from memfs.core.model import utcnow
from memfs.core.naming import compact_timestamp

__all__ = [
    "PRIVATE_DIRECTORY_MODE",
    "PRIVATE_FILE_MODE",
    "compact_timestamp",
    "create_private_file",
    "fsync_directory",
    "hold_mount_lock",
    "is_disk_full",
    "mount_lock_path",
    "open_private",
    "private_directory",
    "redaction_marker",
    "rejected_directory",
    "rejected_path",
    "save_rejected",
    "scrub_erased_paths",
    "scrub_file",
    "scrub_stopped_mounts",
    "secure_home",
    "write_atomically",
]

# Modes of everything memfs creates under $MEMFS_HOME (and beside a --database file).
PRIVATE_FILE_MODE = 0o600
PRIVATE_DIRECTORY_MODE = 0o700
_GROUP_OTHER_BITS = 0o077

# How many same-named refusals one second may keep before save_rejected gives up.
_MAX_SAME_NAME = 1000
# Longest file name part kept from the refused file's name (NAME_MAX is 255 bytes).
_MAX_NAME_CHARS = 200


def is_disk_full(exc: BaseException) -> bool:
    """Whether ``exc`` is an OSError saying the filesystem has no room: ``ENOSPC`` (no
    space left on device) or ``EDQUOT`` (disk quota exceeded). Either goes away once
    space is freed, unlike every other OSError of a write."""
    return isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT)


def private_directory(directory: Path) -> Path:
    """Creates ``directory`` and its missing parents ``0700`` (whatever the umask);
    an existing directory is left as it is. Returns ``directory``. Raises OSError."""
    missing: list[Path] = []
    current = directory
    while not current.exists():
        missing.append(current)
        if current.parent == current:
            break
        current = current.parent
    for path in reversed(missing):
        try:
            os.mkdir(path, PRIVATE_DIRECTORY_MODE)
        except FileExistsError:
            continue  # made meanwhile by another process: not ours to change
        os.chmod(path, PRIVATE_DIRECTORY_MODE)
    return directory


def open_private(path: Path, flags: int) -> int:
    """``os.open(path, flags | O_CREAT | O_CLOEXEC)`` with mode ``0600``: a new file
    never has group or other bits (the umask can only take bits away), and with
    ``O_EXCL`` (the file is surely this call's) it is made exactly ``0600`` whatever
    the umask. An existing file keeps its mode. Returns the fd. Raises OSError
    (FileExistsError with ``O_EXCL``)."""
    fd = os.open(path, flags | os.O_CREAT | os.O_CLOEXEC, PRIVATE_FILE_MODE)
    try:
        if os.fstat(fd).st_mode & 0o777 != PRIVATE_FILE_MODE and flags & os.O_EXCL:
            os.fchmod(fd, PRIVATE_FILE_MODE)  # created by us: the umask took bits away
    except BaseException:
        os.close(fd)
        raise
    return fd


def create_private_file(path: Path) -> None:
    """Creates ``path`` empty and ``0600`` in a private directory unless it exists (so
    that SQLite, which gives its ``-wal`` and ``-shm`` files the database file's mode,
    makes them private too). Raises OSError."""
    private_directory(path.parent)
    with contextlib.suppress(FileExistsError):
        os.close(open_private(path, os.O_WRONLY | os.O_EXCL))


def secure_home(home: Path | None = None) -> int:
    """Takes group and other access away from everything under ``$MEMFS_HOME`` (a home
    made before memfs created its files private): directories become ``0700``, files
    lose their group and other bits. Symbolic links are not followed.

    Returns:
        How many files and directories were changed (0 when the home is missing, owned
        by another user, or already private: the walk then costs one ``lstat`` each).
    """
    root = home if home is not None else memfs_home()
    changed = 0
    if not root.is_dir() or root.is_symlink() or root.stat().st_uid != os.geteuid():
        return 0  # another user's home (read through a shared database): not ours
    for directory, subdirectories, files in os.walk(root):
        changed += _make_private(Path(directory), PRIVATE_DIRECTORY_MODE)
        for name in files:
            path = Path(directory, name)
            try:
                mode = path.lstat().st_mode
            except FileNotFoundError:
                continue  # removed meanwhile (a cache eviction, a status file)
            if stat.S_ISREG(mode) and mode & _GROUP_OTHER_BITS:
                changed += _make_private(path, stat.S_IMODE(mode) & ~_GROUP_OTHER_BITS)
        subdirectories[:] = [d for d in subdirectories if not Path(directory, d).is_symlink()]
    return changed


def _make_private(path: Path, mode: int) -> int:
    try:
        if stat.S_IMODE(path.lstat().st_mode) == mode:
            return 0
        os.chmod(path, mode, follow_symlinks=False)
    except FileNotFoundError:
        return 0
    return 1


def fsync_directory(directory: Path) -> None:
    """fsyncs ``directory`` itself, so that names created or renamed in it survive a
    crash. Raises OSError."""
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_atomically(path: Path, data: bytes, *, durable: bool = True) -> None:
    """Replaces ``path`` with ``data`` in one step (a temporary name beside it, then
    ``rename``): a reader sees the old content or the new one.

    Args:
        durable: fsync the file before the rename and the directory after it (the
            result survives a crash); False for files that are cheap to lose (a status
            snapshot rewritten many times a second).

    Raises:
        OSError: the directory is missing or unwritable, the disk is full. The temporary
            file is removed then.
    """
    temporary = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    temporary.unlink(missing_ok=True)  # left by a crash of a process with our pid
    try:
        with open(open_private(temporary, os.O_WRONLY | os.O_EXCL), "wb") as file:
            file.write(data)
            if durable:
                file.flush()
                os.fsync(file.fileno())
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    if durable:
        fsync_directory(path.parent)


def scrub_file(
    path: Path, replacements: Mapping[str, str], *, redirect_fds: Sequence[int] = ()
) -> bool:
    """Replaces every occurrence of each key of ``replacements`` in ``path`` by its value
    (SPEC §2: a redaction erases the path everywhere memfs keeps it, logs included).

    The new content is written beside the file, fsynced and renamed over it
    (:func:`write_atomically`): a reader, or a crash, sees the old file or the new one.
    Each fd of ``redirect_fds`` (this process's 1 and 2, when they append to ``path``)
    that is open on the old file is pointed at the new one (``dup2``), and whatever was
    appended through any fd between the first read and that switch is copied over,
    scrubbed too, so no line is lost. The caller holds the lock of every logging handler
    writing to the file, so no line is torn either.

    Returns:
        Whether anything was replaced (False: the file is missing or holds none of the
        keys; it is left untouched).

    Raises:
        OSError: the file can't be read or replaced (it is left as it was).
    """
    def scrub(data: bytes) -> bytes:
        for old, new in replacements.items():
            if old:
                data = data.replace(old.encode(), new.encode())
        return data

    try:
        reader = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        return False
    with open(reader, "rb") as old_file:
        data = old_file.read()
        scrubbed = scrub(data)
        if scrubbed == data:
            return False
        old_identity = _identity(os.fstat(reader))
        write_atomically(path, scrubbed)
        appender = open_private(path, os.O_WRONLY | os.O_APPEND)
        try:
            for fd in redirect_fds:
                with contextlib.suppress(OSError):
                    if _identity(os.fstat(fd)) == old_identity:
                        os.dup2(appender, fd)
            tail = old_file.read()  # appended to the old file before the switch
            if tail:
                os.write(appender, scrub(tail))
        finally:
            os.close(appender)
    return True


def _identity(result: os.stat_result) -> tuple[int, int]:
    return result.st_dev, result.st_ino


def rejected_directory(session_id: str, home: Path | None = None) -> Path:
    """``$MEMFS_HOME/rejected/<session_id>``: where one mount session's refused writes
    are kept (``home`` overrides ``$MEMFS_HOME``)."""
    return (home if home is not None else memfs_home()) / "rejected" / session_id


def _file_name(name: str) -> str:
    return name.replace("/", "_")[:_MAX_NAME_CHARS] or "file"


def rejected_path(directory: Path, name: str, when: datetime, *, tag: str | None = None) -> Path:
    """``<directory>/<UTC timestamp>[-<tag>]-<name>``: where :func:`save_rejected` keeps
    the bytes of a refused write made at ``when`` (without a tag, ``.2``, … is added
    when that name is taken)."""
    stem = compact_timestamp(when)
    if tag is not None:
        stem += f"-{tag}"
    return directory / f"{stem}-{_file_name(name)}"


def save_rejected(
    directory: Path,
    name: str,
    data: bytes | None,
    *,
    when: datetime | None = None,
    tag: str | None = None,
    record: Mapping[str, Any] | None = None,
) -> Path:
    """Keeps what a refused write held (SPEC §4) and returns where.

    The file is ``<directory>/<UTC timestamp>[-<tag>]-<name>`` (``directory`` is
    usually :func:`rejected_directory`), fsynced, with the refusal's ``record`` as JSON
    beside it (the same name plus ``.json``) when one is given.

    Args:
        name: the refused file's name (``/`` becomes ``_``; shortened to 200 chars).
        data: the bytes; None when the write had no content (a delete): only the
            record is kept.
        when: the write's time (default now).
        tag: something that makes the name depend only on the write (an outbox
            sequence number): saving the same write again, after a crash, replaces the
            same files. Without a tag an earlier file is never overwritten: a second
            refusal in the same microsecond gets ``.2``, ``.3``, …
        record: JSON-serialisable facts about the refusal (reason, operation, …).

    Returns:
        The record file when a ``record`` is given, else the content file.

    Raises:
        OSError: the directory can't be created or written (the caller reports it).
    """
    private_directory(directory)
    stem = rejected_path(directory, name, when or utcnow(), tag=tag).name
    if tag is not None:
        base = directory / stem
        if data is not None:
            write_atomically(base, data)
    else:
        base = _create_exclusively(directory, stem, data or b"")
    if record is None:
        return base
    record_path = base.with_name(base.name + ".json")
    write_atomically(record_path, json.dumps(dict(record), ensure_ascii=False, indent=2).encode())
    return record_path


def _create_exclusively(directory: Path, stem: str, data: bytes) -> Path:
    """Writes ``data`` to ``directory/stem`` (or ``stem.2``, … when taken), fsynced; on
    failure (a full disk) the file is removed again. Raises OSError."""
    for attempt in range(1, _MAX_SAME_NAME):
        path = directory / (stem if attempt == 1 else f"{stem}.{attempt}")
        try:
            # never overwrite an earlier rejection
            fd = open_private(path, os.O_WRONLY | os.O_EXCL)
        except FileExistsError:
            continue
        try:
            with open(fd, "wb") as file:
                file.write(data)
                file.flush()
                os.fsync(file.fileno())
        except BaseException:
            path.unlink(missing_ok=True)  # a full disk: no empty or partial file stays
            raise
        fsync_directory(directory)
        return path
    raise FileExistsError(f"too many rejected writes named {stem!r}")


# ------------------------------------------------------------ mounts that are not running


def mount_lock_path(log_file: Path) -> Path:
    """The lock beside a mount's log (``logs/mount-<key>.lock`` for
    ``logs/mount-<key>.log``): held, as an exclusive ``flock``, by the daemon writing
    that log for as long as it runs (:func:`hold_mount_lock`)."""
    return log_file.with_suffix(".lock")


def hold_mount_lock(log_file: Path, *, wait_s: float = 2.0) -> int | None:
    """Opens and exclusively ``flock``\\ s the lock of ``log_file``'s mount and returns the
    descriptor. Pass it to the daemon (``subprocess.Popen(pass_fds=…)``) and close this
    copy: the lock then lives exactly as long as the daemon, because a ``flock``
    belongs to the open file description both share.

    :func:`scrub_stopped_mounts` holds a lock for milliseconds; one still held after
    ``wait_s`` seconds belongs to another daemon writing the same log (the same mount
    point mounted in another mount namespace): then None is returned and the new daemon
    runs without one, which only means a redaction leaves this log to the daemons
    themselves (the safe side: nothing rewrites a log a daemon appends to).

    Raises:
        OSError: the lock file can't be created.
    """
    import fcntl
    import time

    fd = open_private(mount_lock_path(log_file), os.O_RDWR)
    deadline = time.monotonic() + wait_s
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return fd
        except BlockingIOError:
            if time.monotonic() >= deadline:
                os.close(fd)
                return None
            time.sleep(0.01)
        except BaseException:
            os.close(fd)
            raise


def _pid_alive(pid: object) -> bool:
    if not isinstance(pid, int) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def scrub_stopped_mounts(replacements: Mapping[str, str], home: Path | None = None) -> int:
    """Replaces erased paths (SPEC §2: a redaction or hard delete erases the path
    everywhere memfs keeps it) in the files of every mount under ``home`` whose daemon
    is not running: its log ``logs/mount-<key>.log`` (every earlier run's lines), its
    saved-scratch list ``mounts/<key>.scratch.json`` and a status file a crashed daemon
    left behind. A running daemon scrubs its own files when the change reaches it
    (:mod:`memfs.fuse.feed`); it is recognised by the ``flock`` it holds
    (:func:`hold_mount_lock`), which is taken here, non-blocking, for the time of the
    rewrite, so no daemon starts appending to a file being replaced. A foreground
    mount (no lock: it logs to its own standard error) keeps its status file while its
    pid lives.

    Args:
        replacements: each erased path -> its marker (``<redacted mem_…>``); longer
            keys first, as :func:`scrub_file`.
        home: ``$MEMFS_HOME`` unless told.

    Returns:
        How many files were rewritten. Blocking: run it in a worker thread from async
        code. A file that can't be rewritten is left as it was (and not counted).
    """
    import fcntl

    home = home if home is not None else memfs_home()
    rewritten = 0
    for log_file in sorted((home / "logs").glob("mount-*.log")):
        key = log_file.stem.removeprefix("mount-")
        try:
            fd = open_private(mount_lock_path(log_file), os.O_RDWR)
        except OSError:
            continue
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                continue  # its daemon runs and scrubs itself
            candidates = [log_file, home / "mounts" / f"{key}.scratch.json"]
            status_file = home / "mounts" / f"{key}.json"
            with contextlib.suppress(OSError, ValueError):
                if not _pid_alive(json.loads(status_file.read_text()).get("pid")):
                    candidates.append(status_file)
            for path in candidates:
                with contextlib.suppress(OSError):
                    rewritten += scrub_file(path, replacements)
        finally:
            os.close(fd)
    return rewritten


def redaction_marker(memory_id: str) -> str:
    """What replaces an erased path in logs and status files: ``<redacted mem_…>``."""
    return f"<redacted {memory_id}>"


def scrub_erased_paths(memory_id: str, paths: frozenset[str] | set[str]) -> int:
    """:func:`scrub_stopped_mounts` for the ``paths`` a redaction or hard delete of
    ``memory_id`` erased (what :meth:`memfs.store.memories.Memories.delete` returns), each
    replaced by :func:`redaction_marker`; longer paths first, so that a path is never
    half-replaced through a shorter one it ends with. Returns the number of files
    rewritten (0 for no paths). Blocking."""
    if not paths:
        return 0
    marker = redaction_marker(memory_id)
    return scrub_stopped_mounts({p: marker for p in sorted(paths, key=len, reverse=True)})
