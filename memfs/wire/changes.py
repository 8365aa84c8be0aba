"""A store's change feed on the wire (memfs extension behind remote mounts, SPEC §4):
the ``memory_store_change`` object and the answer of ``GET …/changes``."""

from __future__ import annotations

from typing import Literal

from pydantic import (
    Field,
)

from memfs.wire.common import (
    Timestamp,
    WireObject,
)

__all__ = [
    "ChangeOut",
    "ChangePage",
]


class ChangeOut(WireObject):
    """One entry of a store's change feed (issue 4; ``seq`` 1, 2, 3 … without gaps)."""

    type: Literal["memory_store_change"]
    seq: int
    memory_store_id: str
    kind: Literal[
        "memory_written",
        "memory_deleted",
        "version_redacted",
        "store_updated",
        "store_archived",
        "store_deleted",
        "blob_purged",
    ]
    memory_id: str | None
    path: str | None
    old_path: str | None = Field(description="Set when a memory_written entry is a rename.")
    content_sha256: str | None = Field(
        description="memory_written: the new head's digest; blob_purged: the erased bytes'."
    )
    memory_version_id: str | None = Field(description="memory_written: the new head version.")
    created_at: Timestamp


class ChangePage(WireObject):
    """Answer of ``GET …/changes``: entries after ``after``, oldest first."""

    data: list[ChangeOut]
    last_seq: int = Field(description="The store's newest seq when the answer was made.")
