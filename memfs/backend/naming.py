"""Names a backend gives on its own: conflict copies (SPEC §4 concurrent writers).

Owns :func:`conflict_name` (with :func:`memfs.home.compact_timestamp`), shared by the FUSE
layer (a close that meets a newer head) and the remote replay (a queued write that
meets one), so both name conflict copies by one rule.
"""

from __future__ import annotations

from datetime import datetime

from memfs.core.config import MAX_SEGMENT_BYTES
from memfs.home import compact_timestamp

__all__ = ["compact_timestamp", "conflict_name"]


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
