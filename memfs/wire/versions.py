"""Memory versions on the wire: the ``memory_version`` object of api-contract §4.6, its
actors (§4.7) and its page."""

from __future__ import annotations

from typing import Literal

from memfs.wire.common import (
    Timestamp,
    WireObject,
)

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


class MemoryVersionOut(WireObject):
    """api-contract §4.6, plus ``reason`` (audited reason of a deletion)."""

    id: str
    type: Literal["memory_version"]
    memory_id: str
    memory_store_id: str
    operation: Literal["created", "modified", "deleted"]
    created_at: Timestamp
    content: str | None
    content_sha256: str | None
    content_size_bytes: int | None
    path: str | None
    created_by: Actor | None
    redacted_at: Timestamp | None
    redacted_by: Actor | None
    reason: str | None = None


class MemoryVersionPage(WireObject):
    data: list[MemoryVersionOut]
    next_page: str | None
