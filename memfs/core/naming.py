"""Names memfs gives on its own (SPEC §4): conflict copies, and the compact UTC time in
file names. One rule for every writer that meets a newer head: the FUSE layer (a close),
the remote replay (a queued write), and a merge of a fork (SPEC §10: a memory changed
on both sides keeps the origin's content and gets the fork's beside it).
"""

from __future__ import annotations

from datetime import datetime

from memfs.core.config import MAX_SEGMENT_BYTES
from memfs.core.model import format_timestamp

__all__ = ["compact_timestamp", "conflict_name"]


def compact_timestamp(when: datetime) -> str:
    """UTC time for file names: ``20260102T030405.123456Z`` (no ``:``, sorts by time)."""
    return format_timestamp(when).replace("-", "").replace(":", "")


def conflict_name(name: str, when: datetime, session_id: str) -> str:
    """The name of a conflict copy beside ``name`` (SPEC §4 concurrent writers).

    ``notes.md`` → ``notes.conflict-<UTC timestamp>-<session>.md``; a name without an
    extension gets no trailing dot. The stem is shortened so the result stays within
    255 bytes (NAME_MAX).
    """
    stem, dot, extension = name.rpartition(".")
    if not dot or not stem:
        stem, extension = name, ""
    suffix = f".conflict-{compact_timestamp(when)}-{session_id}" + (
        f".{extension}" if extension else ""
    )
    budget = MAX_SEGMENT_BYTES - len(suffix.encode())
    encoded = stem.encode()
    if len(encoded) > budget:
        stem = encoded[: max(budget, 1)].decode("utf-8", "ignore").rstrip() or "file"
    return stem + suffix
