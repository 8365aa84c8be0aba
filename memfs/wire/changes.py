"""A store's change feed on the wire (memfs extension behind remote mounts, SPEC §4):
the ``memory_store_change`` object and the answer of ``GET …/changes``."""

from __future__ import annotations

from typing import Annotated, Literal, NewType

from pydantic import Field

from memfs.core.model import ChangeKind
from memfs.wire.common import Timestamp, WireObject, enum_field

__all__ = [
    "ChangeOut",
    "ChangePage",
]


# A ChangeKind of memfs.core.model (common.enum_field says why a NewType).
_ChangeKind = NewType("_ChangeKind", ChangeKind)
Kind = Annotated[_ChangeKind, *enum_field(ChangeKind)]


class ChangeOut(WireObject):
    """One entry of a store's change feed (``seq`` 1, 2, 3 … without gaps)."""

    # Sent by memfs.wire.serialize.change_to_wire; read by the remote client.
    # content_sha256 names the bytes a blob_purged entry erased (the remote cache drops
    # them, SPEC §2 redaction); on memory_written it carries the new head's digest, so
    # that a mount holding that content in its cache need not fetch it. None when the
    # server does not know or does not send it.

    read_defaults = (
        "type",
        "memory_id",
        "path",
        "old_path",
        "content_sha256",
        "memory_version_id",
    )

    type: Literal["memory_store_change"] = "memory_store_change"
    seq: int
    memory_store_id: str
    kind: Kind
    memory_id: str | None = None
    path: str | None = None
    old_path: str | None = Field(
        default=None, description="Set when a memory_written entry is a rename."
    )
    content_sha256: str | None = Field(
        default=None,
        description="memory_written: the new head's digest; blob_purged: the erased bytes'.",
    )
    memory_version_id: str | None = Field(
        default=None, description="memory_written: the new head version."
    )
    created_at: Timestamp


class ChangePage(WireObject):
    """Answer of ``GET …/changes``: entries after ``after``, oldest first."""

    # last_seq below the requested ``after`` means the feed was reset (e.g. the store
    # was recreated on a new database): a mount must resynchronize from a full listing.

    read_defaults = ("last_seq",)

    data: list[ChangeOut]
    last_seq: int = Field(
        default=0, description="The store's newest seq when the answer was made."
    )
