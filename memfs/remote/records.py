"""What a remote mount learns from the server: wire objects as frozen records.

These mirror api-contract §4 (plus the extensions of :mod:`memfs.remote.client`) and
nothing more: unlike :class:`memfs.core.model.Memory` they carry no ``blob_key``, because the
engine's internal content address (xxh3) never crosses the wire. A remote mount keys
content by ``content_sha256`` instead (SPEC §4 "local content-addressed cache keyed by
content hash").

Unknown fields are ignored (api-contract §1.3), so a newer server does not break an
older mount.
"""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict

from memfs.core.model import ChangeKind, Operation

__all__ = [
    "ChangeBatch",
    "RemoteChange",
    "RemoteMemory",
    "RemoteStore",
    "RemoteVersion",
]


class _Record(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")


class RemoteStore(_Record):
    """A ``memory_store`` (api-contract §4.1); ``archived_at`` set means read-only."""

    id: str
    name: str
    description: str = ""
    metadata: dict[str, str] = {}
    created_at: datetime
    updated_at: datetime
    archived_at: datetime | None = None
    entry_count: int = 0  # memfs extensions (SPEC §1); 0 when the server omits them
    total_size: int = 0

    @property
    def archived(self) -> bool:
        return self.archived_at is not None


class RemoteMemory(_Record):
    """A ``memory`` (api-contract §4.3). ``content`` is None unless fetched with
    ``view=full``; ``content_sha256`` and ``content_size_bytes`` are always set."""

    id: str
    memory_store_id: str
    memory_version_id: str
    path: str
    content: str | None = None
    content_sha256: str
    content_size_bytes: int
    created_at: datetime
    updated_at: datetime
    metadata: dict[str, str] = {}


class RemoteVersion(_Record):
    """A ``memory_version`` (api-contract §4.6). ``content``, ``content_sha256``,
    ``content_size_bytes`` are None for ``deleted`` versions and after redaction."""

    id: str
    memory_id: str
    memory_store_id: str
    operation: Operation
    created_at: datetime
    content: str | None = None
    content_sha256: str | None = None
    content_size_bytes: int | None = None
    path: str | None = None
    redacted_at: datetime | None = None


class RemoteChange(_Record):
    """One entry of a store's change feed, as ``GET …/changes`` returns it.

    ``content_sha256`` names the bytes a ``blob_purged`` entry erased (the remote cache
    drops them, SPEC §2 redaction); on ``memory_written`` it may carry the new head's
    digest, so that a mount holding that content in its cache need not fetch it. It is
    None when the server does not know or does not send it.
    """

    seq: int
    memory_store_id: str
    kind: ChangeKind
    memory_id: str | None = None
    path: str | None = None
    old_path: str | None = None
    content_sha256: str | None = None
    memory_version_id: str | None = None
    created_at: datetime


class ChangeBatch(_Record):
    """One answer of the change feed.

    Attributes:
        changes: entries with ``seq`` > the requested ``after``, oldest first.
        last_seq: the store's newest seq when the server answered. ``last_seq`` below
            the requested ``after`` means the feed was reset (e.g. the store was
            recreated on a new database): the mount must resynchronize from a full
            listing.
    """

    changes: list[RemoteChange]
    last_seq: int
