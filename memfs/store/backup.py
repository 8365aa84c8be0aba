"""Online backup of an embedded (SQLite) store database, and putting one back.

A backup is ``VACUUM INTO`` a new file: one read transaction of the source, so the copy
is one consistent snapshot taken while mounts and servers keep writing (in WAL mode a
reader blocks no writer, and no writer blocks it), whatever was in the WAL included. It
is rebuilt page by page from the live rows, so it holds no free pages: the bytes of a
redaction, hard delete or prune made before the backup are in no page of it, not even a
zeroed-free one (SPEC §2: erased, not hidden). It is a rollback-journal database with no
``-wal``/``-shm`` beside it: one file, which memfs opens like any other.

A copy of the file made with ``cp`` while a mount writes is not a backup: the WAL holds
the newest commits and a page copied mid-checkpoint is torn.

Restoring replaces a database file only when no process has it open. Every SQLite
connection in WAL mode holds a shared POSIX lock on the database file's SHARED range
(``SHARED_FIRST``, 510 bytes from byte ``0x40000002``; sqlite3's ``os_unix.c``) from its
first read until it closes; an exclusive lock on that range is therefore what "nobody
has it open" means, across processes (a mount daemon, ``memfs serve``, a command). The
lock is held while the old file's ``-wal`` and ``-shm`` are removed and the new file is
renamed over it, so a process that opens the old file in that instant waits (its busy
timeout) rather than read it half replaced. Limits: restore is for an installation
whose mounts, servers and commands are stopped (the check refuses otherwise; the lock
narrows, not closes, the window of one starting during the rename); POSIX locks say
nothing about processes on another machine using the file over a network filesystem
(SQLite's WAL mode is not for those either); PostgreSQL is backed up with ``pg_dump``
(README "Backup and restore").
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import sqlite3
import struct
from collections.abc import Iterator
from pathlib import Path

from memfs.core.errors import StoreBusy
from memfs.home import fsync_directory, open_private
from memfs.store._light import erase_marker

__all__ = [
    "SIDE_FILE_SUFFIXES",
    "side_files",
    "database_in_use",
    "exclusively_unused",
    "refuse_in_use",
    "replace_database",
    "vacuum_into",
]

# The files SQLite keeps beside a database file (its WAL, the WAL's shared index, the
# rollback journal): stale beside a restored file, and harmful (a stale WAL would be
# replayed into it). memfs's pending-erasure marker is the fourth (side_files).
SIDE_FILE_SUFFIXES = ("-wal", "-shm", "-journal")


def side_files(database: Path) -> list[Path]:
    """The files SQLite and memfs keep beside the SQLite file ``database``: its WAL,
    the WAL's shared index, the rollback journal (:data:`SIDE_FILE_SUFFIXES`) and the
    pending-erasure marker (:func:`memfs.store._light.erase_marker`)."""
    return [
        *(database.with_name(database.name + suffix) for suffix in SIDE_FILE_SUFFIXES),
        erase_marker(database),
    ]


# sqlite3 os_unix.c: the byte range every connection of a database read-locks.
_PENDING_BYTE = 0x40000000
_SHARED_FIRST = _PENDING_BYTE + 2
_SHARED_SIZE = 510


def vacuum_into(conn: sqlite3.Connection, destination: Path) -> None:
    """Writes one consistent snapshot of the database of ``conn`` (a SQLite connection
    outside any transaction, as VACUUM must be) to ``destination``, created here
    ``0600``; it must not exist.

    Raises:
        FileExistsError: ``destination`` exists.
        OSError: its directory is missing or unwritable.
        sqlite3.OperationalError: SQLite could not write it (a full disk).
    """
    # VACUUM INTO accepts an existing empty file and keeps its mode: made private first.
    os.close(open_private(destination, os.O_WRONLY | os.O_EXCL))
    try:
        conn.execute("VACUUM INTO ?", (str(destination),))
    except BaseException:
        destination.unlink(missing_ok=True)
        raise


def _lock(fd: int, kind: int, command: int = fcntl.F_SETLK) -> bytes:
    record = struct.pack("hhqqi", kind, os.SEEK_SET, _SHARED_FIRST, _SHARED_SIZE, 0)
    return fcntl.fcntl(fd, command, record)


def database_in_use(path: Path) -> int | None:
    """Whether a process (another one: a process never sees its own POSIX locks) has the
    SQLite database ``path`` open. Returns the pid of one such process, or None (also
    when ``path`` does not exist). Raises OSError when ``path`` can't be opened."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    try:
        answer = _lock(fd, fcntl.F_WRLCK, fcntl.F_GETLK)
    finally:
        os.close(fd)
    kind, _whence, _start, _length, pid = struct.unpack("hhqqi", answer)
    return None if kind == fcntl.F_UNLCK else int(pid)


def _in_use(path: Path, holder: int | None) -> StoreBusy:
    return StoreBusy(
        f"the database {path} is open by another process"
        f"{f' (pid {holder})' if holder else ''}: stop the mounts, servers and commands "
        "using it first (memfs status lists mounts), or restore into a new home (--home)"
    )


def refuse_in_use(path: Path) -> None:
    """Raises StoreBusy (naming a pid) when another process has the SQLite database
    ``path`` open (:func:`database_in_use`); returns otherwise."""
    holder = database_in_use(path)
    if holder is not None:
        raise _in_use(path, holder)


@contextlib.contextmanager
def exclusively_unused(path: Path) -> Iterator[None]:
    """Holds the database ``path`` closed to every other process for the ``with`` body
    (an exclusive lock on its SHARED range: a process that opens it meanwhile waits, up
    to its busy timeout). A missing ``path`` is held by nothing.

    Raises:
        StoreBusy: a process has the database open (its pid is named).
    """
    try:
        fd = os.open(path, os.O_RDWR | os.O_CLOEXEC)
    except FileNotFoundError:
        yield
        return
    try:
        try:
            _lock(fd, fcntl.F_WRLCK)
        except OSError as exc:
            if exc.errno not in (errno.EACCES, errno.EAGAIN):
                raise
            refuse_in_use(path)
            raise _in_use(path, None) from exc
        yield
    finally:
        os.close(fd)  # releases the lock


def replace_database(prepared: Path, target: Path) -> None:
    """Renames the database file ``prepared`` (a verified copy in ``target``'s
    directory, one file) over ``target`` once no process has ``target`` open, removing
    the files beside the old ``target`` (:data:`SIDE_FILE_SUFFIXES`) first; fsyncs the
    directory after the rename.

    Raises:
        StoreBusy: a process has ``target`` open; nothing was changed.
        OSError: ``target``'s directory can't be written.
    """
    with exclusively_unused(target):
        for side_file in side_files(target):
            side_file.unlink(missing_ok=True)
        os.replace(prepared, target)
    fsync_directory(target.parent)
