"""Memories on the wire: the bodies of api-contract §5.7-§5.9 and of the memfs
extensions (directory rename SPEC §4, forget and restore SPEC §2), the ``memory`` and
``memory_prefix`` objects of §4.3-§4.4 with the ``record`` object of SPEC §6, and their
pages."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field, WithJsonSchema

from memfs.wire.common import (
    CONTENT_SCHEMA,
    PATH_SCHEMA,
    PREFIX_SCHEMA,
    SHA256_PATTERN,
    Metadata,
    RequestBody,
    Sha256,
    Timestamp,
    WireObject,
)

__all__ = [
    "MemoryCreate",
    "MemoryForget",
    "MemoryList",
    "MemoryOut",
    "MemoryPage",
    "MemoryPrefixOut",
    "MemoryRestore",
    "MemoryUpdate",
    "Precondition",
    "RecordOut",
    "RecordRelationOut",
    "RenamePrefix",
]


class Precondition(RequestBody):
    """api-contract §4.8."""

    type: Literal["content_sha256"]
    # Typed nullable so that a null gets the route's precise error; documented as what
    # it must be: a digest (api-contract §4.8).
    content_sha256: Annotated[
        Sha256 | None,
        WithJsonSchema({"type": "string", "pattern": SHA256_PATTERN}),
        Field(description="64 lowercase hex digits: the head's digest the update expects."),
    ]


class MemoryCreate(RequestBody):
    """api-contract §5.7; ``content`` is required (``""`` makes an empty memory).

    ``metadata`` is the memfs extension of SPEC §1.
    """

    path: str = Field(
        description="Absolute memory path, e.g. /projects/foo/notes.md.",
        json_schema_extra=PATH_SCHEMA,
    )
    # Typed nullable like the SDK's, so that null gets the precise error of the route;
    # documented as what it must be: a string.
    content: Annotated[str | None, WithJsonSchema({"type": "string", **CONTENT_SCHEMA})] = Field(
        description="UTF-8 text, at most 102,400 bytes; null is refused."
    )
    metadata: Metadata | None = None


class MemoryUpdate(RequestBody):
    """api-contract §5.9; ``null`` for ``content`` or ``path`` means unchanged.

    ``metadata`` and ``replace`` are memfs extensions.
    """

    content: Annotated[str, WithJsonSchema({"type": "string", **CONTENT_SCHEMA})] | None = None
    path: Annotated[str, WithJsonSchema({"type": "string", **PATH_SCHEMA})] | None = None
    precondition: Precondition | None = None
    metadata: Metadata | None = Field(
        default=None, description="memfs extension: replaces the memory's metadata."
    )
    replace: bool = Field(
        default=False,
        description=(
            "memfs extension: with a new path, a live memory already at that path is "
            "soft-deleted in the same transaction (rename(2) over an existing file); "
            "otherwise an occupied path is a 409 memory_path_conflict_error."
        ),
    )


class RenamePrefix(RequestBody):
    """Body of ``POST …/memories/rename_prefix`` (directory rename, SPEC §4)."""

    old_prefix: str = Field(
        description="The directory to move: starts and ends with '/', not '/' itself.",
        json_schema_extra=PREFIX_SCHEMA,
    )
    new_prefix: str = Field(
        description="Where it goes: starts and ends with '/', not '/', not inside old_prefix.",
        json_schema_extra=PREFIX_SCHEMA,
    )


class MemoryForget(RequestBody):
    """Body of ``POST …/memories/{id}/forget`` (SPEC §2 deletion modes).

    Every field may also be given as a query parameter of the same name (as on
    ``DELETE``); a field given both ways must have the same value. ``mode`` defaults to
    ``redact``: forgetting is the user wanting the content gone, not restorable.
    Unknown fields are refused (400).
    """

    # replacement_content belongs to a redaction: with another mode it is refused.
    model_config = ConfigDict(
        json_schema_extra={
            "if": {
                "properties": {"mode": {"enum": ["soft_delete", "hard_delete"]}},
                "required": ["mode"],
            },
            "then": {"properties": {"replacement_content": {"type": "null"}}},
        }
    )

    mode: Literal["soft_delete", "redact", "hard_delete"] | None = Field(
        default=None,
        description="redact (default: content replaced, history redacted, not restorable), "
        "soft_delete (restorable) or hard_delete (erased; needs memory:hard_delete).",
    )
    reason: str | None = Field(default=None, description="Recorded in the audit trail.")
    replacement_content: str | None = Field(
        default=None, description="mode=redact only: the tombstone's text ([REDACTED] by default)."
    )
    expected_content_sha256: Sha256 | None = None
    metadata: Metadata | None = Field(
        default=None,
        description="Kept with the audit event (seed 004 MemoryForgetRequest); the "
        "memory's own metadata is not changed by it.",
    )


class MemoryRestore(RequestBody):
    """Body of ``POST …/memories/{id}/restore`` (SPEC §2, seed 004 MemoryRestoreRequest)."""

    reason: str | None = Field(default=None, description="Recorded in the audit trail.")
    metadata: Metadata | None = Field(
        default=None, description="Kept with the audit event (seed 004)."
    )


class RecordRelationOut(WireObject):
    """One relation of a record, resolved (SPEC §6)."""

    type: Literal["related_to", "derived_from", "contradicts", "supersedes"]
    target: str
    target_memory_id: str | None
    target_path: str | None
    dangling: bool


class RecordOut(WireObject):
    """The ``record`` object of a memory whose header makes it a record (SPEC §6; a
    memfs extension the SDK ignores): the typed header fields, ``version`` (the
    memory's number of versions), ``last_accessed`` and ``decay_score``."""

    type: Literal["episodic", "semantic", "procedural", "preference", "profile"]
    scope: Literal["private", "share", "public"]
    importance: float | None
    confidence: float | None
    tags: list[str]
    source: str | None
    summary: str | None
    structured: dict[str, Any] | None
    user_id: str | None
    agent_id: str | None
    tenant_id: str | None
    relations: list[RecordRelationOut]
    allowed_users: list[str]
    allowed_roles: list[str]
    version: int
    last_accessed: Timestamp
    decay_score: float


class MemoryOut(WireObject):
    """api-contract §4.3 (``content`` null unless ``view=full``); ``record`` (memfs
    extension, SPEC §6) only on memories that are records."""

    # Sent by memfs.wire.serialize.memory_to_wire; read by the remote client. The
    # engine's content address (blob_key, xxh3) never crosses the wire: a remote mount
    # keys content by content_sha256 (SPEC §4 "local content-addressed cache keyed by
    # content hash").

    read_defaults = ("type", "content", "metadata", "status")

    id: str
    type: Literal["memory"] = "memory"
    memory_store_id: str
    memory_version_id: str
    path: str
    content: str | None = None
    content_sha256: str
    content_size_bytes: int
    created_at: Timestamp
    updated_at: Timestamp
    metadata: dict[str, str] = {}
    status: Literal["active", "deleted"] = Field(
        default="active",
        description="memfs extension (seed 004): deleted for a soft-deleted memory, "
        "listed with include_deleted=true or status=deleted; restorable."
    )
    record: RecordOut | None = None


class MemoryPrefixOut(WireObject):
    """api-contract §4.4."""

    type: Literal["memory_prefix"]
    path: str


class MemoryPage(WireObject):
    data: list[Annotated[MemoryOut | MemoryPrefixOut, Field(discriminator="type")]]
    next_page: str | None


class MemoryList(WireObject):
    """Memories answered in one piece (``next_page`` is always null)."""

    data: list[MemoryOut]
    next_page: None = None
