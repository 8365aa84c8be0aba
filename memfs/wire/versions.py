"""Memory versions on the wire: the ``memory_version`` object of api-contract §4.6, its
actors (§4.7) and its page."""

from __future__ import annotations

from typing import Annotated, Literal, NewType

from memfs.core.model import Operation
from memfs.wire.common import Timestamp, WireObject, enum_field

__all__ = [
    "Actor",
    "MemoryVersionOut",
    "MemoryVersionPage",
]


class Actor(WireObject):
    """api-contract §4.7 (one of the four id fields, by ``type``)."""

    type: Literal["session_actor", "api_actor", "user_actor", "service_account_actor"]
    session_id: str | None = None
    api_key_id: str | None = None
    user_id: str | None = None
    service_account_id: str | None = None


# An Operation of memfs.core.model (common.enum_field says why a NewType).
_Operation = NewType("_Operation", Operation)
VersionOperation = Annotated[_Operation, *enum_field(Operation)]


class MemoryVersionOut(WireObject):
    """api-contract §4.6, plus ``reason`` (audited reason of a deletion)."""

    # Sent by memfs.wire.serialize.version_to_wire; read by the remote client.
    # content, content_sha256 and content_size_bytes are null for deleted versions and
    # after redaction; content also unless asked with view=full.

    read_defaults = (
        "type",
        "content",
        "content_sha256",
        "content_size_bytes",
        "path",
        "created_by",
        "redacted_at",
        "redacted_by",
    )

    id: str
    type: Literal["memory_version"] = "memory_version"
    memory_id: str
    memory_store_id: str
    operation: VersionOperation
    created_at: Timestamp
    content: str | None = None
    content_sha256: str | None = None
    content_size_bytes: int | None = None
    path: str | None = None
    created_by: Actor | None = None
    redacted_at: Timestamp | None = None
    redacted_by: Actor | None = None
    reason: str | None = None


class MemoryVersionPage(WireObject):
    data: list[MemoryVersionOut]
    next_page: str | None
