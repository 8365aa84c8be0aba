"""The remote mount's durable outbox (memfs/remote/outbox.py): ordering, fsync before
return, crash recovery from torn journal lines, compaction, rejection, the lock."""

from __future__ import annotations

import json
import logging
import os
import signal
from datetime import UTC, datetime
from pathlib import Path

import pytest
from _support.scripts import script_process

from memfs.remote import outbox as outbox_module
from memfs.remote.outbox import (
    JOURNAL_NAME,
    Outbox,
    OutboxLocked,
    PendingWrite,
    WriteOperation,
    WriteOutcome,
    read_pending,
)

STORE = "memstore_test"
WHEN = datetime(2026, 1, 2, 3, 4, 5, 123456, tzinfo=UTC)


def update(path: str, content: str, *, memory_id: str | None = "mem_1") -> PendingWrite:
    return PendingWrite(
        store_id=STORE,
        operation=WriteOperation.UPDATE,
        path=path,
        memory_id=memory_id,
        content=content,
        expected_sha256="0" * 64,
        created_at=WHEN,
    )


@pytest.fixture
def directory(tmp_path: Path) -> Path:
    return tmp_path / "outbox" / "sesn_test"


@pytest.fixture
def rejected_dir(tmp_path: Path) -> Path:
    return tmp_path / "rejected" / "sesn_test"


def open_outbox(directory: Path, rejected_dir: Path) -> Outbox:
    return Outbox(directory, rejected_dir=rejected_dir)


# ------------------------------------------------------------------- order


def test_entries_come_out_in_the_order_they_went_in(directory: Path, rejected_dir: Path) -> None:
    with open_outbox(directory, rejected_dir) as outbox:
        entries = [outbox.append(update(f"/f{n}.md", f"v{n}")) for n in range(5)]
        assert [e.seq for e in entries] == [1, 2, 3, 4, 5]
        assert outbox.first() == entries[0]
        assert outbox.pending() == entries
        assert len(outbox) == 5
        outbox.mark_done(1, WriteOutcome.APPLIED)
        assert outbox.first() == entries[1]
        assert outbox.pending(store_id="memstore_other") == []


def test_every_field_round_trips_through_the_journal(directory: Path, rejected_dir: Path) -> None:
    writes = [
        PendingWrite(STORE, WriteOperation.CREATE, "/ünï/código.md", content="é\n\t" * 30_000),
        update("/a.md", "x"),
        PendingWrite(STORE, WriteOperation.DELETE, "/a.md", memory_id="mem_1"),
        PendingWrite(STORE, WriteOperation.RENAME, "/a.md", memory_id="mem_1", new_path="/b.md"),
        PendingWrite(STORE, WriteOperation.RENAME_PREFIX, "/d/", new_path="/e/"),
    ]
    with open_outbox(directory, rejected_dir) as outbox:
        for write in writes:
            outbox.append(write)
    with open_outbox(directory, rejected_dir) as reopened:
        assert [e.write for e in reopened.pending()] == writes


@pytest.mark.parametrize(
    "fields",
    [
        {"operation": WriteOperation.CREATE, "path": "/a.md"},
        {"operation": WriteOperation.UPDATE, "path": "/a.md", "memory_id": "mem_1"},
        {"operation": WriteOperation.RENAME, "path": "/a.md", "memory_id": "mem_1"},
        {"operation": WriteOperation.RENAME_PREFIX, "path": "/a", "new_path": "/b/"},
        {"operation": "explode", "path": "/a.md"},
    ],
)
def test_a_write_missing_what_its_operation_needs_is_refused(fields: dict[str, str]) -> None:
    with pytest.raises(ValueError, match="needs|must end with|is not a valid"):
        PendingWrite(store_id=STORE, **fields)  # type: ignore[arg-type]


# -------------------------------------------------------------- durability


def test_append_fsyncs_the_journal_before_returning(
    directory: Path, rejected_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    outbox = open_outbox(directory, rejected_dir)
    journal = directory / JOURNAL_NAME
    observed: list[int] = []
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        # What is in the file when fsync is called, i.e. what fsync makes durable.
        observed.append(journal.stat().st_size)
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    outbox.append(update("/a.md", "content"))
    assert observed == [journal.stat().st_size]
    observed.clear()
    outbox.mark_done(1, WriteOutcome.APPLIED)  # the done line, then the compaction
    assert len(observed) >= 1
    outbox.close()


def test_a_fresh_process_reads_what_append_returned_for(
    directory: Path, rejected_dir: Path
) -> None:
    outbox = open_outbox(directory, rejected_dir)
    outbox.append(update("/a.md", "first"))
    outbox.append(update("/b.md", "second"))
    outbox.mark_done(1, WriteOutcome.APPLIED)
    # Still open and locked: the other process reads without the lock.
    result = script_process("outbox_probe", "read_pending", directory)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "2 /b.md second\n"
    outbox.close()


def test_kill_9_with_writes_in_the_outbox_keeps_them(directory: Path, rejected_dir: Path) -> None:
    result = script_process("outbox_probe", "kill_9", directory, rejected_dir, STORE)
    assert result.returncode == -signal.SIGKILL
    assert result.stdout == "appended\n"
    # The kernel released the dead daemon's lock; the remount sees every write.
    with open_outbox(directory, rejected_dir) as outbox:
        assert [(e.seq, e.write.path, e.write.content) for e in outbox.pending()] == [
            (1, "/f0.md", "c0"),
            (2, "/f1.md", "c1"),
            (3, "/f2.md", "c2"),
        ]


# ------------------------------------------------------------------ crashes


def test_a_line_cut_short_by_a_crash_is_dropped_and_the_file_repaired(
    directory: Path, rejected_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with open_outbox(directory, rejected_dir) as outbox:
        for n in range(3):
            outbox.append(update(f"/f{n}.md", f"v{n}"))
    journal = directory / JOURNAL_NAME
    raw = journal.read_bytes()
    last_line_start = raw.rstrip(b"\n").rfind(b"\n") + 1
    journal.write_bytes(raw[: last_line_start + 20])  # the third append, torn

    with caplog.at_level(logging.WARNING), open_outbox(directory, rejected_dir) as outbox:
        assert [e.write.path for e in outbox.pending()] == ["/f0.md", "/f1.md"]
        assert journal.read_bytes() == raw[:last_line_start]
        # The torn append never returned, so its seq is free again; appends continue
        # on a line boundary.
        entry = outbox.append(update("/f3.md", "v3"))
        assert entry.seq == 3
    assert "torn last line" in caplog.text
    with open_outbox(directory, rejected_dir) as outbox:
        assert [e.write.path for e in outbox.pending()] == ["/f0.md", "/f1.md", "/f3.md"]


def test_a_torn_done_line_leaves_its_entry_pending(directory: Path, rejected_dir: Path) -> None:
    with open_outbox(directory, rejected_dir) as outbox:
        outbox.append(update("/a.md", "a"))
        outbox.append(update("/b.md", "b"))
        outbox.mark_done(1, WriteOutcome.APPLIED)
    journal = directory / JOURNAL_NAME
    raw = journal.read_bytes()
    journal.write_bytes(raw[:-5])  # the done line lost its end

    with open_outbox(directory, rejected_dir) as outbox:
        assert [e.seq for e in outbox.pending()] == [1, 2]


def test_a_complete_last_line_with_a_bad_checksum_counts_as_torn(
    directory: Path, rejected_dir: Path
) -> None:
    with open_outbox(directory, rejected_dir) as outbox:
        outbox.append(update("/a.md", "a"))
        outbox.append(update("/b.md", "bbbb"))
    journal = directory / JOURNAL_NAME
    journal.write_bytes(journal.read_bytes().replace(b"bbbb", b"\x00\x00\x00\x00"))

    with open_outbox(directory, rejected_dir) as outbox:
        assert [e.write.path for e in outbox.pending()] == ["/a.md"]
    assert list(directory.glob("damaged-*")) == []


def test_a_damaged_line_in_the_middle_is_kept_aside_and_logged(
    directory: Path, rejected_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with open_outbox(directory, rejected_dir) as outbox:
        for name in ("a", "b", "c"):
            outbox.append(update(f"/{name}.md", f"content-{name}"))
    journal = directory / JOURNAL_NAME
    journal.write_bytes(journal.read_bytes().replace(b"content-b", b"content-X"))

    with caplog.at_level(logging.ERROR), open_outbox(directory, rejected_dir) as outbox:
        assert [e.write.path for e in outbox.pending()] == ["/a.md", "/c.md"]
    (saved,) = directory.glob("damaged-*.jsonl")
    assert b"content-X" in saved.read_bytes()
    assert "damaged line" in caplog.text
    # Saved once: the journal was rewritten without the damaged line.
    with open_outbox(directory, rejected_dir) as outbox:
        assert len(outbox) == 2
    assert len(list(directory.glob("damaged-*.jsonl"))) == 1


# --------------------------------------------------------------- compaction


def test_the_journal_is_compacted_when_the_outbox_drains(
    directory: Path, rejected_dir: Path
) -> None:
    with open_outbox(directory, rejected_dir) as outbox:
        for n in range(4):
            outbox.append(update(f"/f{n}.md", "x" * 1000))
        for seq in range(1, 5):
            outbox.mark_done(seq, WriteOutcome.APPLIED)
        journal = directory / JOURNAL_NAME
        assert journal.stat().st_size < 100
        assert outbox.statistics().depth == 0
        # Seqs are never reused, even after everything was compacted away.
        assert outbox.append(update("/g.md", "y")).seq == 5
    with open_outbox(directory, rejected_dir) as outbox:
        assert [e.seq for e in outbox.pending()] == [5]
        assert outbox.statistics().next_seq == 6


def test_dead_lines_are_compacted_away_keeping_the_pending_in_order(
    directory: Path, rejected_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(outbox_module, "COMPACT_DEAD_LINES", 4)
    with open_outbox(directory, rejected_dir) as outbox:
        for n in range(10):
            outbox.append(update(f"/f{n}.md", f"v{n}"))
        for seq in range(1, 4):
            outbox.mark_done(seq, WriteOutcome.APPLIED)
        lines = (directory / JOURNAL_NAME).read_bytes().splitlines()
        assert len(lines) == 1 + 7  # header + the pending entries
        assert json.loads(lines[0].split(b" ", 1)[1]) == {
            "type": "header",
            "version": 1,
            "next_seq": 11,
        }
        outbox.append(update("/after.md", "z"))
    with open_outbox(directory, rejected_dir) as outbox:
        assert [e.seq for e in outbox.pending()] == [4, 5, 6, 7, 8, 9, 10, 11]


def test_a_compaction_interrupted_before_its_rename_changes_nothing(
    directory: Path, rejected_dir: Path
) -> None:
    with open_outbox(directory, rejected_dir) as outbox:
        outbox.append(update("/a.md", "a"))
    (directory / (JOURNAL_NAME + ".tmp")).write_bytes(b"garbage from a crash")
    with open_outbox(directory, rejected_dir) as outbox:
        assert [e.write.path for e in outbox.pending()] == ["/a.md"]


# ---------------------------------------------------------------- rejection


def test_reject_keeps_the_content_and_the_reason(
    directory: Path, rejected_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with open_outbox(directory, rejected_dir) as outbox:
        entry = outbox.append(update("/notes/todo.md", "my words"))
        with caplog.at_level(logging.ERROR):
            record_path = outbox.reject(entry, "StoreArchived: memory store is archived")
        assert len(outbox) == 0
        assert outbox.statistics().rejected == 1
        # Repeating the rejection (a crash before the done line) rewrites the same files.
        outbox.reject(entry, "StoreArchived: memory store is archived")

    content_path = rejected_dir / "20260102T030405.123456Z-1-todo.md"
    assert content_path.read_text() == "my words"
    assert record_path == rejected_dir / "20260102T030405.123456Z-1-todo.md.json"
    record = json.loads(record_path.read_text())
    assert record["path"] == "/notes/todo.md"
    assert record["reason"] == "StoreArchived: memory store is archived"
    assert sorted(p.name for p in rejected_dir.iterdir()) == [
        content_path.name,
        record_path.name,
    ]
    assert "refused by the server" in caplog.text
    with open_outbox(directory, rejected_dir) as outbox:
        assert len(outbox) == 0


def test_mark_done_of_an_unknown_seq_raises(directory: Path, rejected_dir: Path) -> None:
    with open_outbox(directory, rejected_dir) as outbox, pytest.raises(KeyError):
        outbox.mark_done(7, WriteOutcome.APPLIED)


# --------------------------------------------------------------------- lock


def test_one_daemon_at_a_time(directory: Path, rejected_dir: Path) -> None:
    outbox = open_outbox(directory, rejected_dir)
    with pytest.raises(OutboxLocked):
        open_outbox(directory, rejected_dir)
    result = script_process("outbox_probe", "lock", directory, rejected_dir)
    assert result.stdout == "locked\n", result.stderr
    outbox.close()
    open_outbox(directory, rejected_dir).close()


def test_statistics_describe_the_queue(directory: Path, rejected_dir: Path) -> None:
    with open_outbox(directory, rejected_dir) as outbox:
        empty = outbox.statistics()
        assert (empty.depth, empty.oldest_created_at, empty.next_seq) == (0, None, 1)
        outbox.append(update("/a.md", "a"))
        stats = outbox.statistics()
        assert (stats.depth, stats.oldest_created_at, stats.next_seq) == (1, WHEN, 2)
        assert stats.journal_size_bytes == (directory / JOURNAL_NAME).stat().st_size > 0


def test_read_pending_skips_a_torn_tail_without_repairing_it(
    directory: Path, rejected_dir: Path
) -> None:
    with open_outbox(directory, rejected_dir) as outbox:
        outbox.append(update("/a.md", "a"))
        outbox.append(update("/b.md", "b"))
    journal = directory / JOURNAL_NAME
    torn = journal.read_bytes()[:-7]
    journal.write_bytes(torn)
    assert [e.write.path for e in read_pending(directory)] == ["/a.md"]
    assert journal.read_bytes() == torn
    assert read_pending(directory / "missing") == []
