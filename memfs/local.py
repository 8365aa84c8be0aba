"""Durable private files under ``$MEMFS_HOME``: the one place that writes them.

What lives there (SPEC §5): the SQLite database, the mount status files
(``mounts/``), the daemon logs (``logs/``), a remote mount's content cache (``cache/``)
and outbox (``outbox/``), and the bytes of refused writes (``rejected/``). This module
owns how such files are written:

* :func:`compact_timestamp`: the one timestamp format of file names.
* :func:`fsync_directory`: makes a rename or a new name in a directory durable.
* :func:`write_atomically`: temporary file, (fsync), rename — readers see the old
  content or the new, never a torn file.
* :func:`save_rejected`: the one way to keep the bytes of a write that could not be
  stored (SPEC §4: "a write rejected at close is never silently dropped"):
  ``rejected/<session_id>/<UTC timestamp>[-<tag>]-<name>``.

Only the standard library and :mod:`memfs.config` / :mod:`memfs.model`: every layer
that keeps local files (fuse, remote, cli) may use it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

from memfs.config import memfs_home
from memfs.model import format_timestamp, utcnow

__all__ = [
    "compact_timestamp",
    "fsync_directory",
    "rejected_directory",
    "save_rejected",
    "write_atomically",
]

# How many same-named refusals one second may keep before save_rejected gives up.
_MAX_SAME_NAME = 1000
# Longest file name part kept from the refused file's name (NAME_MAX is 255 bytes).
_MAX_NAME_CHARS = 200


def compact_timestamp(when: datetime) -> str:
    """UTC time for file names: ``20260102T030405.123456Z`` (no ``:``, sorts by time)."""
    return format_timestamp(when).replace("-", "").replace(":", "")


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
    try:
        with open(temporary, "wb") as file:
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


def rejected_directory(session_id: str, home: Path | None = None) -> Path:
    """``$MEMFS_HOME/rejected/<session_id>``: where one mount session's refused writes
    are kept (``home`` overrides ``$MEMFS_HOME``)."""
    return (home if home is not None else memfs_home()) / "rejected" / session_id


def _file_name(name: str) -> str:
    return name.replace("/", "_")[:_MAX_NAME_CHARS] or "file"


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
    directory.mkdir(parents=True, exist_ok=True)
    stem = compact_timestamp(when or utcnow())
    if tag is not None:
        stem += f"-{tag}"
    stem += f"-{_file_name(name)}"
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
    """Writes ``data`` to ``directory/stem`` (or ``stem.2``, … when taken), fsynced."""
    for attempt in range(1, _MAX_SAME_NAME):
        path = directory / (stem if attempt == 1 else f"{stem}.{attempt}")
        try:
            with open(path, "xb") as file:  # never overwrite an earlier rejection
                file.write(data)
                file.flush()
                os.fsync(file.fileno())
        except FileExistsError:
            continue
        fsync_directory(directory)
        return path
    raise FileExistsError(f"too many rejected writes named {stem!r}")
