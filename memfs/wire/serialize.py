"""Model → wire objects of api-contract §4 (plain dicts, JSON-ready).

Used by the HTTP API and by the CLI's ``--json`` output, so both print the same
objects; the models of the sibling modules (:mod:`memfs.wire.stores`, …) document
them in ``/openapi.json`` and read them in the remote client. Every field of §4 is
always emitted (optional ones as ``null``); the extensions SPEC §1 allows are added
after them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from memfs.core.model import (
    ApiKey,
    Change,
    IdentityMount,
    Memory,
    MemoryPrefix,
    MemoryStore,
    MemoryVersion,
    Session,
    format_timestamp,
)

if TYPE_CHECKING:  # not imported at run time: a command printing a store needs neither
    from memfs.core.history import MergePlan, RestorePlan, Snapshot, StoreDiff
    from memfs.core.query import SearchHit

__all__ = [
    "api_key_to_wire",
    "change_to_wire",
    "identity_mount_deleted_to_wire",
    "identity_mount_to_wire",
    "memory_deleted_to_wire",
    "memory_to_wire",
    "prefix_to_wire",
    "search_hit_to_wire",
    "session_deleted_to_wire",
    "session_to_wire",
    "snapshot_deleted_to_wire",
    "snapshot_to_wire",
    "merge_plan_to_wire",
    "restore_plan_to_wire",
    "store_diff_to_wire",
    "store_deleted_to_wire",
    "store_to_wire",
    "version_to_wire",
]


def _ts(value: Any) -> str | None:
    return None if value is None else format_timestamp(value)


def store_to_wire(store: MemoryStore) -> dict[str, Any]:
    """api-contract §4.1 ``memory_store``, plus ``entry_count``, ``total_size`` and
    ``version_retention_seconds`` (SPEC §2 retention; null keeps versions forever), the
    SPEC §8 extensions, and ``forked_from``/``fork_base`` (SPEC §10 fork)."""
    return {
        "id": store.id,
        "type": "memory_store",
        "name": store.name,
        "description": store.description,
        "metadata": dict(store.metadata),
        "created_at": _ts(store.created_at),
        "updated_at": _ts(store.updated_at),
        "archived_at": _ts(store.archived_at),
        "entry_count": store.entry_count,
        "total_size": store.total_size_bytes,
        "version_retention_seconds": store.version_retention_s,
        # SPEC §8 (seed 000's store object): extensions.
        "status": store.status,
        "system_managed": store.system_managed,
        "identity_id": store.identity_id,
        "binding_info": {"identity_template_count": store.identity_template_count},
        # SPEC §10 fork: extensions (null for a store that is no fork).
        "forked_from": store.forked_from,
        "fork_base": store.fork_base,
    }


def identity_mount_to_wire(mount: IdentityMount) -> dict[str, Any]:
    """A store mounted on an (identity, template) pair (SPEC §8, seed 000's mount
    record; memfs extension): ``type`` ``memory_store_mount``."""
    return {
        "type": "memory_store_mount",
        "memory_store_id": mount.memory_store_id,
        "identity_id": mount.identity_id,
        "template_id": mount.template_id,
        "access": mount.access.value,
        "system_managed": mount.system_managed,
        "name": mount.name,
        "status": mount.status,
        "entry_count": mount.entry_count,
        "created_at": _ts(mount.created_at),
    }


def identity_mount_deleted_to_wire(
    memory_store_id: str, identity_id: str, template_id: str
) -> dict[str, Any]:
    """The answer of removing a mount from a pair (SPEC §8, memfs extension)."""
    return {
        "type": "memory_store_mount_deleted",
        "memory_store_id": memory_store_id,
        "identity_id": identity_id,
        "template_id": template_id,
    }


def store_deleted_to_wire(store_id: str) -> dict[str, Any]:
    """api-contract §4.2."""
    return {"id": store_id, "type": "memory_store_deleted"}


def memory_to_wire(memory: Memory, *, full: bool) -> dict[str, Any]:
    """api-contract §4.3 ``memory``; ``content`` is null unless ``full``. Adds ``metadata``
    and ``status`` (``active``, or ``deleted`` for a soft-deleted memory, seed 004)."""
    return {
        "id": memory.id,
        "type": "memory",
        "memory_store_id": memory.memory_store_id,
        "memory_version_id": memory.memory_version_id,
        "path": memory.path,
        "content": memory.content if full else None,
        "content_sha256": memory.content_sha256,
        "content_size_bytes": memory.content_size_bytes,
        "created_at": _ts(memory.created_at),
        "updated_at": _ts(memory.updated_at),
        "metadata": dict(memory.metadata),
        "status": "active" if memory.deleted_at is None else "deleted",
    }


def prefix_to_wire(prefix: MemoryPrefix) -> dict[str, Any]:
    """api-contract §4.4 ``memory_prefix``."""
    return {"type": "memory_prefix", "path": prefix.path}


def memory_deleted_to_wire(memory_id: str) -> dict[str, Any]:
    """api-contract §4.5."""
    return {"id": memory_id, "type": "memory_deleted"}


def version_to_wire(version: MemoryVersion, *, full: bool) -> dict[str, Any]:
    """api-contract §4.6 ``memory_version``; ``content`` is null unless ``full``.

    Adds ``reason`` (the audited reason of a deletion) as an extension.
    """
    return {
        "id": version.id,
        "type": "memory_version",
        "memory_id": version.memory_id,
        "memory_store_id": version.memory_store_id,
        "operation": version.operation.value,
        "created_at": _ts(version.created_at),
        "content": version.content if full else None,
        "content_sha256": version.content_sha256,
        "content_size_bytes": version.content_size_bytes,
        "path": version.path,
        "created_by": version.created_by.to_wire() if version.created_by else None,
        "redacted_at": _ts(version.redacted_at),
        "redacted_by": version.redacted_by.to_wire() if version.redacted_by else None,
        "reason": version.reason,
    }


def session_to_wire(session: Session) -> dict[str, Any]:
    """A session with its memory_store resources (api-contract §7.2) and its
    ``principal`` (memfs extension, SPEC §6: ``{"user_id", "roles"}`` or null)."""
    return {
        "id": session.id,
        "type": "session",
        "title": session.title,
        "created_at": _ts(session.created_at),
        "resources": [resource.to_wire() for resource in session.resources],
        "layout": session.layout.value,  # memfs extension: "per-store" or "flat" (SPEC §4)
        "principal": None if session.principal is None else session.principal.to_wire(),
    }


def session_deleted_to_wire(session_id: str) -> dict[str, Any]:
    """The SDK's ``BetaManagedAgentsDeletedSession``."""
    return {"id": session_id, "type": "session_deleted"}


def api_key_to_wire(key: ApiKey, secret: str | None = None) -> dict[str, Any]:
    """An API key's public record (``memfs key … --json``; SPEC §3 credentials), plus
    its ``secret`` right after creation (the only time it is shown)."""
    record: dict[str, Any] = {
        "id": key.id,
        "type": "api_key",
        "name": key.name,
        "scopes": [scope.value for scope in key.scopes],
        "store_ids": list(key.store_ids),
        "created_at": _ts(key.created_at),
        "revoked_at": _ts(key.revoked_at),
        "principal": None if key.principal is None else key.principal.to_wire(),
    }
    if secret is not None:
        record["secret"] = secret
    return record


def change_to_wire(change: Change) -> dict[str, Any]:
    """One ``memory_store_change`` object of a store's change feed (SPEC §4 remote
    mounts; documented by :class:`memfs.wire.changes.ChangeOut`): what ``GET …/changes``
    answers and ``memfs watch`` prints, one serializer for both.

    The engine's content address (``blob_key``) never crosses the wire; ``content_sha256``
    names the bytes (``blob_purged``: the erased ones, ``memory_written``: the new head's).
    """
    return {
        "type": "memory_store_change",
        "seq": change.seq,
        "memory_store_id": change.memory_store_id,
        "kind": change.kind.value,
        "memory_id": change.memory_id,
        "path": change.path,
        "old_path": change.old_path,
        "content_sha256": change.content_sha256,
        "memory_version_id": change.memory_version_id,
        "created_at": _ts(change.created_at),
    }


def search_hit_to_wire(hit: SearchHit) -> dict[str, Any]:
    """A search hit (memfs extension, SPEC §7): ``type`` ``search_hit``."""
    return {
        "type": "search_hit",
        "memory_store_id": hit.store_id,
        "memory_id": hit.memory_id,
        "path": hit.path,
        "score": hit.score,
        "snippet": hit.snippet,
    }


def snapshot_to_wire(snapshot: Snapshot) -> dict[str, Any]:
    """``memory_store_snapshot`` (SPEC §10, memfs extension; :mod:`memfs.wire.history`)."""
    return {
        "id": snapshot.id,
        "type": "memory_store_snapshot",
        "memory_store_id": snapshot.memory_store_id,
        "name": snapshot.name,
        "description": snapshot.description,
        "memory_version_id": snapshot.memory_version_id,
        "created_at": _ts(snapshot.created_at),
        "created_by": snapshot.created_by.to_wire() if snapshot.created_by else None,
    }


def snapshot_deleted_to_wire(snapshot_id: str) -> dict[str, Any]:
    """The answer of deleting a snapshot (SPEC §10, memfs extension)."""
    return {"id": snapshot_id, "type": "memory_store_snapshot_deleted"}


def store_diff_to_wire(diff: StoreDiff) -> dict[str, Any]:
    """``memory_store_diff`` (SPEC §10, memfs extension): the two sides, the entries by
    path, and the ``stat`` totals. A redacted side has no path or digest, and no entry
    carries redacted content."""
    return {
        "type": "memory_store_diff",
        "from": {"memory_store_id": diff.from_store_id, "point": diff.from_point},
        "to": {"memory_store_id": diff.to_store_id, "point": diff.to_point},
        "entries": [
            {
                "status": entry.status.value,
                "memory_id": entry.memory_id,
                "old_memory_id": entry.old_memory_id,
                "old_path": entry.old_path,
                "new_path": entry.new_path,
                "old_memory_version_id": entry.old_version_id,
                "new_memory_version_id": entry.new_version_id,
                "old_content_sha256": entry.old_content_sha256,
                "new_content_sha256": entry.new_content_sha256,
                "content_changed": entry.content_changed,
                "redacted": entry.redacted,
                "diff": entry.diff,
                "insertions": entry.insertions,
                "deletions": entry.deletions,
            }
            for entry in diff.entries
        ],
        "stat": {
            "changed": len(diff.entries),
            "insertions": diff.insertions,
            "deletions": diff.deletions,
        },
    }


def restore_plan_to_wire(plan: RestorePlan) -> dict[str, Any]:
    """``memory_store_restore`` (SPEC §10, memfs extension): what a store restore did
    (``applied``) or would do (a dry run), step by step, and the automatic snapshot
    taken first (null on a dry run or when nothing changed)."""
    return {
        "type": "memory_store_restore",
        "memory_store_id": plan.memory_store_id,
        "point": plan.point,
        "applied": plan.applied,
        "snapshot": None if plan.snapshot is None else snapshot_to_wire(plan.snapshot),
        "steps": [
            {
                "action": step.action.value,
                "memory_id": step.memory_id,
                "path_now": step.path_now,
                "path_then": step.path_then,
                "content_changes": step.content_changes,
            }
            for step in plan.steps
        ],
    }


def merge_plan_to_wire(plan: MergePlan) -> dict[str, Any]:
    """``memory_store_merge`` (SPEC §10, memfs extension): what merging a fork into its
    origin did (``applied``) or would do (a dry run), step by step, and the origin's
    automatic snapshot taken first (null on a dry run or when nothing changed)."""
    return {
        "type": "memory_store_merge",
        "fork_memory_store_id": plan.fork_store_id,
        "memory_store_id": plan.origin_store_id,
        "base": plan.base,
        "applied": plan.applied,
        "snapshot": None if plan.snapshot is None else snapshot_to_wire(plan.snapshot),
        "steps": [
            {
                "action": step.action.value,
                "fork_memory_id": step.fork_memory_id,
                "memory_id": step.origin_memory_id,
                "path_before": step.path_before,
                "path": step.path,
                "content_changes": step.content_changes,
                "note": step.note,
            }
            for step in plan.steps
        ],
    }
