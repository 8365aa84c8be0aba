"""History on the wire (SPEC §10, memfs extensions under ``/v1/memory_stores/{id}/…``):
the ``memory_store_snapshot`` object, its create body, page and deletion answer, and
the ``memory_store_diff`` object ``memfs diff --json`` prints.

``memory_store_snapshot`` fields:

=====================  =============================================================
``id``                 ``snap_…``
``type``               ``"memory_store_snapshot"``
``memory_store_id``    the store
``name``               unique in the store; a path segment, never ``now``, a time, a
                       ``memver_`` id or holding ``@`` (it is also a point: ``at=NAME``)
``description``        ≤1,024 chars; ``""`` when unset
``memory_version_id``  the store's newest version at the point (the point is the moment
                       right after it); null for a point before the store's first version
``created_at``         RFC 3339, when it was taken
``created_by``         actor (api-contract §4.7) or null
=====================  =============================================================
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from memfs.wire.common import RequestBody, Timestamp, WireObject
from memfs.wire.memories import Precondition
from memfs.wire.stores import StoreDescription, StoreName
from memfs.wire.versions import Actor

__all__ = [
    "DiffEntryOut",
    "RestorePlanOut",
    "StoreRestore",
    "SnapshotCreate",
    "SnapshotDeleted",
    "SnapshotOut",
    "SnapshotPage",
    "StoreDiffOut",
    "MergePlanOut",
    "StoreFork",
    "StoreMerge",
    "MemoryRevert",
]


class SnapshotCreate(RequestBody):
    """``POST /v1/memory_stores/{id}/snapshots`` (SPEC §10)."""

    name: str = Field(
        description="Unique in the store; a path segment (SPEC §1), not 'now', not "
        "starting like a time or a memver_ id, no '@'.",
        min_length=1,
        max_length=255,
    )
    description: StoreDescription | None = None
    at: str | None = Field(
        default=None,
        description="The point it names: now (the default), an RFC 3339 time, a "
        "snapshot name or snap_ id, or a memver_ id.",
    )


class SnapshotOut(WireObject):
    """One ``memory_store_snapshot`` (module docstring)."""

    read_defaults = ("type", "memory_version_id", "created_by")

    id: str
    type: Literal["memory_store_snapshot"] = "memory_store_snapshot"
    memory_store_id: str
    name: str
    description: str
    memory_version_id: str | None = None
    created_at: Timestamp
    created_by: Actor | None = None


class SnapshotPage(WireObject):
    data: list[SnapshotOut]
    next_page: str | None


class SnapshotDeleted(WireObject):
    id: str
    type: Literal["memory_store_snapshot_deleted"] = "memory_store_snapshot_deleted"


class DiffEntryOut(WireObject):
    """One memory that differs (:class:`memfs.core.history.DiffEntry`)."""

    status: Literal["added", "removed", "modified", "renamed"]
    memory_id: str
    old_memory_id: str | None = Field(
        default=None,
        description="side A's memory when it is another (matched by origin across a fork)",
    )
    old_path: str | None
    new_path: str | None
    old_memory_version_id: str | None
    new_memory_version_id: str | None
    old_content_sha256: str | None
    new_content_sha256: str | None
    content_changed: bool
    redacted: bool
    diff: str | None
    insertions: int
    deletions: int


class StoreDiffOut(WireObject):
    """``memory_store_diff``: what changed from one point (``from``) to another (``to``)."""

    type: Literal["memory_store_diff"] = "memory_store_diff"
    from_: dict[str, str] = Field(alias="from")
    to: dict[str, str]
    entries: list[DiffEntryOut]
    stat: dict[str, int]


class StoreFork(RequestBody):
    """``POST /v1/memory_stores/{id}/fork`` (SPEC §10 fork): a new store holding this
    one's memories at ``at``."""

    name: StoreName = Field(description="The new store's name (SPEC §1 store rules).")
    description: StoreDescription | None = None
    at: str | None = Field(
        default=None,
        min_length=1,
        max_length=1024,
        description="The point (default now): an RFC 3339 time, a snapshot name or "
        "snap_ id, a memver_ id.",
    )


class StoreRestore(RequestBody):
    """``POST /v1/memory_stores/{id}/restore`` (SPEC §10 point-in-time recovery)."""

    to: str = Field(
        min_length=1,
        max_length=1024,
        description="The point: now, an RFC 3339 time, a snapshot name or snap_ id, "
        "or a memver_ id.",
    )
    dry_run: bool = Field(default=False, description="Answer the plan; change nothing.")
    reason: str | None = Field(
        default=None, max_length=1024, description="Recorded in the audit trail."
    )


class RestoreStepOut(WireObject):
    action: Literal["change", "delete", "bring_back", "keep"]
    memory_id: str
    path_now: str | None
    path_then: str | None
    content_changes: bool


class RestorePlanOut(WireObject):
    """``memory_store_restore``: what a restore did (``applied``) or would do."""

    type: Literal["memory_store_restore"] = "memory_store_restore"
    memory_store_id: str
    point: str
    applied: bool
    snapshot: SnapshotOut | None
    steps: list[RestoreStepOut]


class StoreMerge(RequestBody):
    """``POST /v1/memory_stores/{fork_id}/merge`` (SPEC §10 merge of a fork)."""

    into: str | None = Field(
        default=None, description="The fork's origin (checked when given): memstore_ id."
    )
    dry_run: bool = Field(default=False, description="Answer the plan; change nothing.")
    reason: str | None = Field(
        default=None, max_length=1024, description="Recorded in the audit trail."
    )


class MergeStepOut(WireObject):
    action: Literal["update", "create", "delete", "conflict_copy", "keep"]
    fork_memory_id: str | None
    memory_id: str | None
    path_before: str | None
    path: str | None
    content_changes: bool
    note: str


class MergePlanOut(WireObject):
    """``memory_store_merge``: what a merge did (``applied``) or would do."""

    type: Literal["memory_store_merge"] = "memory_store_merge"
    fork_memory_store_id: str
    memory_store_id: str
    base: str
    applied: bool
    snapshot: SnapshotOut | None
    steps: list[MergeStepOut]


class MemoryRevert(RequestBody):
    """``POST /v1/memory_stores/{id}/memories/{memory_id}/revert`` (SPEC §10): one
    memory back to its content and path of a point."""

    to: str = Field(
        min_length=1,
        max_length=1024,
        description="The point: now, an RFC 3339 time, a snapshot name or snap_ id, "
        "or a memver_ id.",
    )
    precondition: Precondition | None = None
    reason: str | None = Field(
        default=None, max_length=1024, description="Recorded in the audit trail."
    )
