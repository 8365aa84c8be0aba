"""The durable, ordered outbox of a remote mount: writes the server has not confirmed.

SPEC §4: "after ``close()`` returns 0 the new version is durable (committed to the store
or, when the server is unreachable, to the mount's durable outbox)"; "writes queue
durably and replay in order". This module is the storage only; applying entries to the
server is :mod:`memfs.remote.replay`.

Why a journal and not SQLite
----------------------------
SQL lives in ``memfs/store`` only (house rule), and the outbox needs very little: append
at the tail, remove at the head, read everything at start. An append-only JSON-lines
journal does that with one ``write`` + ``fsync`` per change and is readable with
``cat`` when something goes wrong.

Format
------
One file, ``<directory>/journal.jsonl``. Each line is ``<crc32 as 8 hex> <json>\\n``,
the CRC-32 taken over the UTF-8 JSON text. Records::

    {"type": "header", "version": 1, "next_seq": 7}     first line after a compaction
    {"type": "write", "seq": 7, "store_id": "memstore_…",
     "operation": "create" | "update" | "delete" | "rename" | "rename_prefix",
     "memory_id": "mem_…" | null, "path": "/…", "new_path": "/…" | null,
     "content": "…" | null, "expected_sha256": "<64 hex>" | null,
     "replace": true | false,                       # rename only; absent = false
     "created_at": "<RFC 3339>"}
    {"type": "done", "seq": 7, "outcome": "applied" | "already_applied" |
                                         "conflict" | "rejected"}

An entry is pending from its ``write`` line until a ``done`` line names its seq.

Durability and crashes
----------------------
* :meth:`Outbox.append` and :meth:`Outbox.mark_done` return only after the line is
  written and ``fsync``'d (the directory too, when the journal was just created). So
  a ``close()`` that queued a write may return success: a ``kill -9`` or a power loss
  after that keeps the entry.
* A crash mid-append leaves at most one torn last line (no ``\\n``, or a CRC that does
  not match). On open, a torn tail is cut off: that append never returned, so no
  caller was told it succeeded.
* A damaged line that is *not* the last one is not a torn append but damage: it is
  logged, its bytes are copied to ``<directory>/damaged-<timestamp>.jsonl`` so nothing
  is silently lost, and the rest of the journal is still read.
* The checkpoint is a compaction of the journal itself: when every entry is done, or
  when done lines outnumber pending ones by :data:`COMPACT_DEAD_LINES`, the pending
  entries are written with a ``header`` line to ``journal.jsonl.tmp``, fsync'd, and
  renamed over the journal (then the directory is fsync'd). Rename is atomic: a crash
  leaves the old journal or the new one, both complete.
* A crash between "the server applied the head entry" and its ``done`` line makes the
  entry replay again; :mod:`memfs.remote.replay` recognises that case.

One process at a time: the outbox holds an exclusive ``flock`` on
``<directory>/lock`` (released by the kernel when the daemon dies, even by
``kill -9``), so a second daemon for the same session fails with
:class:`OutboxLocked` instead of replaying the same entries twice.

Rejected entries (the server refused them for good) are kept under ``rejected_dir``
(``$MEMFS_HOME/rejected/<session_id>/`` by the mount): the content, and a ``.json``
record of the entry and the reason, written before the ``done`` line.

The API is synchronous and thread-safe; call it from trio with
``trio.to_thread.run_sync``.
"""

from __future__ import annotations

import contextlib
import enum
import fcntl
import json
import logging
import os
import threading
import zlib
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from memfs.core.errors import MemfsError
from memfs.core.model import format_timestamp, utcnow
from memfs.home import (
    compact_timestamp,
    fsync_directory,
    private_directory,
    save_rejected,
    write_atomically,
)

__all__ = [
    "COMPACT_DEAD_LINES",
    "JOURNAL_NAME",
    "Outbox",
    "OutboxEntry",
    "OutboxLocked",
    "OutboxStatistics",
    "PendingWrite",
    "WriteOperation",
    "WriteOutcome",
    "read_pending",
]

log = logging.getLogger(__name__)

JOURNAL_NAME = "journal.jsonl"
LOCK_NAME = "lock"
JOURNAL_VERSION = 1
# Compact when this many lines are dead (done entries and their done lines) beyond the
# pending ones; also whenever the outbox becomes empty.
COMPACT_DEAD_LINES = 256


class OutboxLocked(MemfsError):
    """Raised when another process (or another :class:`Outbox` object) holds the outbox."""

    code = "outbox_locked"


class WriteOperation(enum.StrEnum):
    """What a queued write does on the server (SPEC §4 mapping)."""

    CREATE = "create"  # path, content
    UPDATE = "update"  # memory_id (or path), content, expected_sha256
    DELETE = "delete"  # memory_id (or path), expected_sha256
    RENAME = "rename"  # memory_id (or path), new_path
    RENAME_PREFIX = "rename_prefix"  # path = old prefix, new_path = new prefix (end in /)


class WriteOutcome(enum.StrEnum):
    """How an entry left the outbox (its ``done`` line)."""

    APPLIED = "applied"  # the server applied it now
    ALREADY_APPLIED = "already_applied"  # the server had applied it before a crash
    CONFLICT = "conflict"  # another writer won; ours kept beside it or nothing to keep
    REJECTED = "rejected"  # refused for good; content kept under rejected_dir


@dataclass(frozen=True)
class PendingWrite:
    """One write of a mount, as it is sent to the server or queued.

    Attributes:
        store_id: the ``memstore_…`` the write goes to.
        operation: see :class:`WriteOperation` for the fields each one uses.
        path: the memory's path (for ``rename_prefix``: the old prefix).
        memory_id: the memory, when the mount knows its id; None for a memory created
            while offline (found by ``path`` at replay).
        new_path: the destination of a rename (for ``rename_prefix``: the new prefix).
        content: the full new content (create, update).
        expected_sha256: the digest the file had when it was opened (update, delete):
            the precondition of SPEC §4 "concurrent writers".
        replace: rename only: a memory at ``new_path`` is soft-deleted in the same
            transaction (rename(2) over an existing file; the API's ``replace``).
        created_at: when the mount accepted the write (UTC); also names its conflict
            copy, so a replay after a crash makes the same name.

    Raises:
        ValueError: a field the operation needs is missing.
    """

    store_id: str
    operation: WriteOperation
    path: str
    memory_id: str | None = None
    new_path: str | None = None
    content: str | None = None
    expected_sha256: str | None = None
    replace: bool = False
    created_at: datetime = field(default_factory=utcnow)

    def __post_init__(self) -> None:
        operation = WriteOperation(self.operation)
        object.__setattr__(self, "operation", operation)
        if operation in (WriteOperation.CREATE, WriteOperation.UPDATE) and self.content is None:
            raise ValueError(f"a {operation} write needs content")
        if operation in (WriteOperation.RENAME, WriteOperation.RENAME_PREFIX) and not (
            self.new_path
        ):
            raise ValueError(f"a {operation} write needs new_path")
        if operation is WriteOperation.RENAME_PREFIX and not (
            self.path.endswith("/") and (self.new_path or "").endswith("/")
        ):
            raise ValueError("rename_prefix prefixes must end with '/'")

    def to_record(self) -> dict[str, Any]:
        return {
            "store_id": self.store_id,
            "operation": self.operation.value,
            "memory_id": self.memory_id,
            "path": self.path,
            "new_path": self.new_path,
            "content": self.content,
            "expected_sha256": self.expected_sha256,
            "replace": self.replace,
            "created_at": format_timestamp(self.created_at),
        }

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> PendingWrite:
        return cls(
            store_id=record["store_id"],
            operation=WriteOperation(record["operation"]),
            path=record["path"],
            memory_id=record.get("memory_id"),
            new_path=record.get("new_path"),
            content=record.get("content"),
            expected_sha256=record.get("expected_sha256"),
            replace=bool(record.get("replace", False)),
            created_at=datetime.fromisoformat(record["created_at"]),
        )


@dataclass(frozen=True)
class OutboxEntry:
    """A queued write and its place in the queue (``seq`` increases by one per append,
    never reused within one outbox directory)."""

    seq: int
    write: PendingWrite


@dataclass(frozen=True)
class OutboxStatistics:
    """A snapshot for ``memfs status``.

    Attributes:
        depth: pending entries.
        oldest_created_at: when the oldest pending write was accepted, or None.
        next_seq: the seq the next append gets.
        journal_size_bytes: the journal file's size.
        rejected: entries rejected since the outbox was opened.
    """

    depth: int
    oldest_created_at: datetime | None
    next_seq: int
    journal_size_bytes: int
    rejected: int


def _encode_line(record: dict[str, Any]) -> bytes:
    text = json.dumps(record, ensure_ascii=False, separators=(",", ":"))
    data = text.encode("utf-8")
    return b"%08x " % zlib.crc32(data) + data + b"\n"


def _decode_line(line: bytes) -> dict[str, Any] | None:
    """The record of one line without its ``\\n``, or None if torn or damaged."""
    if len(line) < 10 or line[8:9] != b" ":
        return None
    try:
        crc = int(line[:8], 16)
    except ValueError:
        return None
    data = line[9:]
    if zlib.crc32(data) != crc:
        return None
    try:
        record = json.loads(data)
    except (json.JSONDecodeError, UnicodeDecodeError):
        return None
    return record if isinstance(record, dict) else None


@dataclass(frozen=True)
class _ParsedJournal:
    records: list[dict[str, Any]]  # the good lines, in order
    damaged: list[bytes]  # bad lines followed by good ones: damage, not a torn append
    torn_bytes: int  # bytes of a torn last line (a crash mid-append), to cut off


def _parse_journal(raw: bytes) -> _ParsedJournal:
    lines = raw.split(b"\n")
    tail = lines.pop()  # after the last "\n": empty, or an append cut short
    torn_bytes = len(tail)
    if lines and _decode_line(lines[-1]) is None:
        # A last line with its "\n" but a bad CRC: its blocks were not all written.
        torn_bytes += len(lines.pop()) + 1
    records: list[dict[str, Any]] = []
    damaged: list[bytes] = []
    for line in lines:
        record = _decode_line(line)
        if record is None:
            damaged.append(line)
        else:
            records.append(record)
    return _ParsedJournal(records=records, damaged=damaged, torn_bytes=torn_bytes)


def _replay_records(records: list[dict[str, Any]]) -> tuple[dict[int, OutboxEntry], int]:
    """The pending entries (in seq order) and the next seq the records leave."""
    pending: dict[int, OutboxEntry] = {}
    next_seq = 1
    for record in records:
        kind = record.get("type")
        if kind == "header":
            next_seq = max(next_seq, int(record["next_seq"]))
        elif kind == "write":
            seq = int(record["seq"])
            pending[seq] = OutboxEntry(seq=seq, write=PendingWrite.from_record(record))
            next_seq = max(next_seq, seq + 1)
        elif kind == "done":
            pending.pop(int(record["seq"]), None)
    return pending, next_seq


def read_pending(directory: Path) -> list[OutboxEntry]:
    """The pending entries of the outbox in ``directory``, oldest first, read without
    taking its lock or repairing anything (for ``memfs status`` while a daemon runs, and
    for tests reading from a fresh process). A torn or damaged line is skipped."""
    try:
        raw = (directory / JOURNAL_NAME).read_bytes()
    except FileNotFoundError:
        return []
    pending, _next_seq = _replay_records(_parse_journal(raw).records)
    return list(pending.values())


class Outbox:
    """The outbox in ``directory`` (created if missing), opened for this process.

    Args:
        directory: one per session, e.g. ``$MEMFS_HOME/outbox/<session_id>``.
        rejected_dir: where rejected entries are kept, e.g.
            ``$MEMFS_HOME/rejected/<session_id>``.

    Raises:
        OutboxLocked: another :class:`Outbox` holds ``directory``.
        OSError: the directory can't be created or read.
    """

    def __init__(self, directory: Path, *, rejected_dir: Path) -> None:
        self.directory = directory
        self.rejected_dir = rejected_dir
        self.journal_path = directory / JOURNAL_NAME
        self._lock = threading.Lock()
        self._pending: dict[int, OutboxEntry] = {}  # insertion order = seq order
        self._next_seq = 1
        self._lines = 0  # lines in the journal file, header included
        self._rejected = 0
        private_directory(directory)
        self._lock_fd = os.open(directory / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(self._lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(self._lock_fd)
            raise OutboxLocked(
                f"the outbox {directory} is in use by another mount daemon"
            ) from None
        try:
            damaged = self._load()
            self._fd = os.open(self.journal_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            fsync_directory(directory)
            if damaged:
                # The damaged bytes are saved aside; rewrite the journal without them so
                # that the next start does not save them again.
                self._compact()
        except BaseException:
            os.close(self._lock_fd)
            raise

    # -------------------------------------------------------------- loading

    def _load(self) -> bool:
        """Reads the journal, cutting off a torn tail; True if damaged lines were found."""
        try:
            raw = self.journal_path.read_bytes()
        except FileNotFoundError:
            return False
        parsed = _parse_journal(raw)
        if parsed.torn_bytes:
            log.warning(
                "outbox %s: cut off a torn last line (%d bytes) left by a crash",
                self.journal_path,
                parsed.torn_bytes,
            )
            with open(self.journal_path, "r+b") as file:
                file.truncate(len(raw) - parsed.torn_bytes)
                file.flush()
                os.fsync(file.fileno())
        self._lines = len(parsed.records)
        self._pending, self._next_seq = _replay_records(parsed.records)
        if parsed.damaged:
            saved = self.directory / f"damaged-{compact_timestamp(utcnow())}.jsonl"
            write_atomically(saved, b"\n".join(parsed.damaged) + b"\n")
            log.error(
                "outbox %s: %d damaged line(s) skipped; their bytes are kept in %s",
                self.journal_path,
                len(parsed.damaged),
                saved,
            )
        return bool(parsed.damaged)

    # ------------------------------------------------------------ appending

    def _append_line(self, record: dict[str, Any]) -> None:
        line = _encode_line(record)
        view = memoryview(line)
        while view:
            view = view[os.write(self._fd, view) :]
        os.fsync(self._fd)
        self._lines += 1

    def append(self, write: PendingWrite) -> OutboxEntry:
        """Queues ``write`` at the tail; returns after it is on disk (fsync'd).

        Raises:
            OSError: the journal could not be written (e.g. disk full); the write is then
                not queued and the caller must report the failure.
        """
        with self._lock:
            seq = self._next_seq
            self._append_line({"type": "write", "seq": seq, **write.to_record()})
            self._next_seq = seq + 1
            entry = OutboxEntry(seq=seq, write=write)
            self._pending[seq] = entry
            return entry

    def mark_done(self, seq: int, outcome: WriteOutcome) -> None:
        """Removes entry ``seq`` (the server confirmed it); durable on return.

        Raises:
            KeyError: no pending entry ``seq``.
        """
        with self._lock:
            if seq not in self._pending:
                raise KeyError(seq)
            self._append_line({"type": "done", "seq": seq, "outcome": WriteOutcome(outcome)})
            del self._pending[seq]
            self._maybe_compact()

    def reject(self, entry: OutboxEntry, reason: str) -> Path:
        """Removes ``entry`` after keeping it under ``rejected_dir`` (SPEC §4: a write
        the server refuses is never silently dropped) and logging it.

        Writes ``<created_at>-<seq>-<name>`` with the content (if the write has any)
        and ``<created_at>-<seq>-<name>.json`` with the entry and ``reason``; the names
        depend only on the entry, so a rejection repeated after a crash overwrites the
        same files.

        Returns:
            The path of the ``.json`` record.
        """
        write = entry.write
        name = (write.path.rstrip("/").rsplit("/", 1)[-1] or "root").replace("/", "_")[:200]
        content = write.content.encode("utf-8") if write.content is not None else None
        record = {"seq": entry.seq, **write.to_record(), "reason": reason}
        record_path = save_rejected(
            self.rejected_dir, name, content, when=write.created_at, tag=str(entry.seq),
            record=record,
        )
        log.error(
            "write %s %s in %s refused by the server (%s); kept in %s",
            write.operation,
            write.path,
            write.store_id,
            reason,
            record_path,
        )
        with self._lock:
            if entry.seq in self._pending:
                self._append_line(
                    {"type": "done", "seq": entry.seq, "outcome": WriteOutcome.REJECTED}
                )
                del self._pending[entry.seq]
                self._rejected += 1
                self._maybe_compact()
        return record_path

    def _maybe_compact(self) -> None:
        live = len(self._pending)
        dead = self._lines - live - 1
        if (live == 0 and self._lines > 1) or dead > COMPACT_DEAD_LINES:
            self._compact()

    def _compact(self) -> None:
        """Rewrites the journal as a header and the pending entries (atomic rename)."""
        data = _encode_line(
            {"type": "header", "version": JOURNAL_VERSION, "next_seq": self._next_seq}
        )
        for entry in self._pending.values():
            data += _encode_line({"type": "write", "seq": entry.seq, **entry.write.to_record()})
        write_atomically(self.journal_path, data)
        os.close(self._fd)
        self._fd = os.open(self.journal_path, os.O_WRONLY | os.O_APPEND)
        self._lines = 1 + len(self._pending)

    # -------------------------------------------------------------- reading

    def first(self) -> OutboxEntry | None:
        """The oldest pending entry (the next to replay), or None when empty."""
        with self._lock:
            return next(iter(self._pending.values()), None)

    def pending(self, store_id: str | None = None) -> list[OutboxEntry]:
        """Pending entries oldest first, of one store or all."""
        with self._lock:
            return [
                e
                for e in self._pending.values()
                if store_id is None or e.write.store_id == store_id
            ]

    def __len__(self) -> int:
        with self._lock:
            return len(self._pending)

    def statistics(self) -> OutboxStatistics:
        with self._lock:
            oldest = next(iter(self._pending.values()), None)
            try:
                size = os.fstat(self._fd).st_size
            except OSError:
                size = 0
            return OutboxStatistics(
                depth=len(self._pending),
                oldest_created_at=oldest.write.created_at if oldest else None,
                next_seq=self._next_seq,
                journal_size_bytes=size,
                rejected=self._rejected,
            )

    def close(self) -> None:
        """Closes the journal and releases the lock; pending entries stay on disk."""
        with self._lock:
            if self._fd >= 0:
                os.close(self._fd)
                self._fd = -1
            if self._lock_fd >= 0:
                with contextlib.suppress(OSError):
                    fcntl.flock(self._lock_fd, fcntl.LOCK_UN)
                os.close(self._lock_fd)
                self._lock_fd = -1

    def __enter__(self) -> Outbox:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
