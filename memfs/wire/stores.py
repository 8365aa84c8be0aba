"""Memory stores on the wire: the bodies of api-contract §5.1-§5.3 and the
``memory_store`` object of §4.1 (with the SPEC §2 retention and SPEC §8 extensions),
its page, and the store's audit log (SPEC §2 "audited")."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BeforeValidator, Field, JsonValue, WithJsonSchema

from memfs.core.config import MAX_VERSION_RETENTION_S
from memfs.wire.common import (
    NO_CONTROL,
    NO_NUL,
    Metadata,
    MetadataPatch,
    RequestBody,
    Timestamp,
    WireObject,
    integral_number,
)

__all__ = [
    "AuditEvent",
    "AuditEventList",
    "BindingInfo",
    "MemoryStoreCreate",
    "MemoryStoreOut",
    "MemoryStorePage",
    "MemoryStoreUpdate",
    "StoreDescription",
    "StoreName",
    "VersionRetention",
]

_NAME_SCHEMA: dict[str, JsonValue] = {"minLength": 1, "maxLength": 255, "pattern": NO_CONTROL}
StoreName = Annotated[
    str,
    WithJsonSchema({"type": "string", **_NAME_SCHEMA}),
    Field(description="1 to 255 characters, no control characters."),
]
StoreDescription = Annotated[
    str,
    WithJsonSchema({"type": "string", "maxLength": 1024, "pattern": NO_NUL}),
    Field(description="Up to 1,024 characters."),
]


# SPEC §2 retention on the wire (memfs extension): seconds; 0 keeps versions forever.
# (The bounds come first: after the validator they would not reach the JSON Schema.)
VersionRetention = Annotated[
    int, Field(ge=0, le=MAX_VERSION_RETENTION_S), BeforeValidator(integral_number)
]


class MemoryStoreCreate(RequestBody):
    """api-contract §5.1, plus ``version_retention_seconds`` (memfs extension)."""

    name: StoreName
    description: StoreDescription | None = None
    metadata: Metadata | None = None
    version_retention_seconds: VersionRetention | None = Field(
        default=None,
        description="SPEC §2 retention: versions older than this many seconds may be "
        "pruned (never a live memory's head, nor what a restore needs); null or 0 keeps "
        "every version forever (the default).",
    )


class MemoryStoreUpdate(RequestBody):
    """api-contract §5.3: a patch; a top-level ``null`` means "no change"."""

    name: StoreName | None = None
    description: StoreDescription | None = None
    metadata: MetadataPatch | None = Field(
        default=None, description="A string adds or replaces a key; null removes it."
    )
    version_retention_seconds: VersionRetention | None = Field(
        default=None,
        description="memfs extension (SPEC §2 retention): the new period in seconds; 0 "
        "keeps every version forever; null leaves it unchanged.",
    )


class BindingInfo(WireObject):
    """SPEC §8: how many (identity, template) pairs mount the store."""

    identity_template_count: int


class MemoryStoreOut(WireObject):
    """api-contract §4.1, plus the counters ``entry_count`` and ``total_size`` and the
    SPEC §8 extensions ``status``, ``system_managed``, ``identity_id``, ``binding_info``,
    and the SPEC §10 extensions ``forked_from`` and ``fork_base``."""

    # Sent by memfs.wire.serialize.store_to_wire; read by the remote client.

    read_defaults = (
        "type",
        "description",
        "metadata",
        "archived_at",
        "entry_count",
        "total_size",
        "version_retention_seconds",
        "status",
        "system_managed",
        "identity_id",
        "binding_info",
        "forked_from",
        "fork_base",
    )

    id: str
    type: Literal["memory_store"] = "memory_store"
    name: str
    description: str = ""
    metadata: dict[str, str] = {}
    created_at: Timestamp
    updated_at: Timestamp
    archived_at: Timestamp | None = None
    entry_count: int = 0
    total_size: int = 0
    version_retention_seconds: int | None = Field(
        default=None, description="memfs extension (SPEC §2): null keeps every version forever."
    )
    status: Literal["active", "archived"] = "active"
    system_managed: bool = False
    identity_id: str | None = None
    binding_info: BindingInfo = BindingInfo(identity_template_count=0)
    forked_from: str | None = Field(
        default=None,
        description="memfs extension (SPEC §10 fork): the memstore_ id this store was "
        "forked from; null for a store that is no fork.",
    )
    fork_base: str | None = Field(
        default=None,
        description="memfs extension (SPEC §10 fork): the point of the origin it was forked "
        "at, as a memver_ id of the origin (a point); null when no fork, or forked from an "
        "empty origin.",
    )

    @property
    def archived(self) -> bool:
        """True when the store is archived: read-only (SPEC §2 archive)."""
        return self.archived_at is not None


class MemoryStorePage(WireObject):
    """api-contract §3: ``next_page`` is null on the last page."""

    data: list[MemoryStoreOut]
    next_page: str | None


class AuditEvent(WireObject):
    """One audit-log entry (SPEC §2 "audited"); ``metadata`` is what the forget or
    restore request carried (seed 004), ``{}`` when none."""

    action: str
    memory_store_id: str
    memory_id: str | None
    reason: str | None
    metadata: dict[str, str]
    actor_type: str | None
    actor_id: str | None
    created_at: Timestamp


class AuditEventList(WireObject):
    data: list[AuditEvent]
    next_page: None = None
