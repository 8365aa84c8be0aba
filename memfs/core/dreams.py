"""Dreams and transcripts (SPEC §11, api-contract §7.4), pure: the objects, the status
machine, and the consolidating dreamer's plan.

A dream (``drm_…``) reads one memory store (and optionally the transcripts of up to 100
sessions) and writes a consolidated version of it: into a fork of the input
(``create_new``, the default) or into the input itself (``update_existing``, after an
automatic snapshot). Its status moves only along::

    pending ──► running ──► completed
       │           ├──────► failed
       └───────────┴──────► canceled

``completed``, ``failed`` and ``canceled`` are final. :func:`plan_consolidation` is what
the ``memfs-consolidate`` dreamer does, decided from the store's state alone, so the same
input gives the same output.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from memfs.core.visibility import Viewer

__all__ = [
    "ABSORBED_METADATA_KEY",
    "ConsolidationItem",
    "ConsolidationPlan",
    "Dream",
    "DreamStatus",
    "OutputBehavior",
    "Removal",
    "SessionEvent",
    "USAGE_KEYS",
    "plan_consolidation",
]


# A dream's ``usage``: token counts, as the SDK's ``BetaDreamUsage`` has them.
USAGE_KEYS = (
    "input_tokens",
    "output_tokens",
    "cache_creation_input_tokens",
    "cache_read_input_tokens",
)


class DreamStatus(enum.StrEnum):
    """Where a dream is in its lifecycle (the SDK's ``BetaDreamStatus``)."""

    PENDING = "pending"
    RUNNING = "running"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELED = "canceled"

    @property
    def final(self) -> bool:
        return self in (DreamStatus.COMPLETED, DreamStatus.FAILED, DreamStatus.CANCELED)


class OutputBehavior(enum.StrEnum):
    """Where a dream writes (api-contract §7.4 ``output_behavior.type``)."""

    CREATE_NEW = "create_new"
    UPDATE_EXISTING = "update_existing"


@dataclass(frozen=True)
class Dream:
    """A dream as memfs keeps it (the wire shape is :func:`memfs.wire.dreams.dream_to_wire`).

    Attributes:
        session_ids: the sessions whose transcripts it reads, sorted; None when the
            request had no ``sessions`` input (memfs accepts both forms).
        output_store_id: the store holding its result, once it exists.
        session_id: the dream's own session, which every version it writes names.
        error_type, error_message: why it failed (None unless ``failed``).
        usage: token counts (``input_tokens``, ``output_tokens``,
            ``cache_creation_input_tokens``, ``cache_read_input_tokens``).
        result: what it did (memfs extension): counts and the changes, by path.
        heartbeat_at: when its job last said it was alive (None unless it ran).
        viewer: whose view of records it has (SPEC §6, §11): its creator's, fixed at
            creation; every step runs with it, so a dream reads, copies and writes only
            what its creator may see. None: an unrestricted creator (an admin key, the
            local CLI).
    """

    id: str
    status: DreamStatus
    input_store_id: str
    session_ids: tuple[str, ...] | None
    model_id: str
    model_speed: str
    instructions: str | None
    output_behavior: OutputBehavior
    output_store_id: str | None
    session_id: str | None
    error_type: str | None
    error_message: str | None
    usage: Mapping[str, int]
    result: Mapping[str, Any] | None
    created_at: datetime
    started_at: datetime | None
    ended_at: datetime | None
    archived_at: datetime | None
    heartbeat_at: datetime | None
    viewer: Viewer | None = None

    def result_for(self, viewer: Viewer | None) -> Mapping[str, Any] | None:
        """The ``result`` as shown to a caller seeing as ``viewer`` (SPEC §6): it names
        the paths the dream read and changed, so only a caller that sees at least what
        the dream saw gets it (an unrestricted one, or the very same viewer); another
        gets None (the status, error, usage and output stay)."""
        if viewer is None or viewer == self.viewer:
            return self.result
        return None


@dataclass(frozen=True)
class SessionEvent:
    """One event of a session's transcript, as sent (``events.send``) or recorded.

    Attributes:
        id: ``sevt_…``.
        session_id: the session it belongs to.
        seq: its position in the session (1, 2, …; the order of ``processed_at``).
        type: e.g. ``user.message``, ``agent.message`` (the SDK's event types).
        body: the event's other fields as sent (``content``, …).
        processed_at: when memfs stored it.
    """

    id: str
    session_id: str
    seq: int
    type: str
    body: Mapping[str, Any]
    processed_at: datetime

    def text(self) -> str:
        """The text blocks of its ``content``, joined by newlines (empty: none)."""
        content = self.body.get("content")
        if isinstance(content, str):
            return content
        if not isinstance(content, list):
            return ""
        return "\n".join(
            str(block.get("text", ""))
            for block in content
            if isinstance(block, dict) and block.get("type") == "text"
        )


# The kept memory of merged exact duplicates notes the paths it absorbed here.
ABSORBED_METADATA_KEY = "memfs_absorbed"


@dataclass(frozen=True)
class ConsolidationItem:
    """One live memory as the consolidating dreamer sees it.

    Attributes:
        created_at: when the memory was created in the input store (a fork's copy: its
            original's time). Of duplicates, the one created first is kept.
        decay_score: its record's decay score (SPEC §6); None for a plain memory.
        supersedes: the memory ids its record's ``supersedes`` relations resolve to.
        metadata: its metadata (the kept duplicate's gets :data:`ABSORBED_METADATA_KEY`).
    """

    memory_id: str
    path: str
    content_sha256: str
    created_at: datetime
    decay_score: float | None = None
    supersedes: tuple[str, ...] = ()
    metadata: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Removal:
    """A memory the dream removes (soft delete), and why.

    Attributes:
        reason: ``superseded``, ``decayed``, ``duplicate`` or ``near_duplicate``.
        by_path: the superseding record, or the kept duplicate.
        similarity: a near duplicate's cosine similarity to the kept one.
    """

    memory_id: str
    path: str
    reason: str
    by_path: str | None = None
    similarity: float | None = None


# The removal reasons, in the order they are decided, and their ``removed`` count keys.
_COUNTS = {
    "superseded": "superseded",
    "decayed": "decayed",
    "duplicate": "duplicates",
    "near_duplicate": "near_duplicates",
}


@dataclass(frozen=True)
class ConsolidationPlan:
    """What :func:`plan_consolidation` decided, in the order it is carried out:
    ``removals`` one by one, then ``absorbed`` (kept path → metadata to set)."""

    removals: tuple[Removal, ...]
    absorbed: Mapping[str, tuple[str, Mapping[str, str]]]  # memory id → (path, metadata)
    read: int

    def summary(self) -> dict[str, Any]:
        """The dream's ``result`` (memfs extension): counts; ``merged_into``, each
        removed duplicate's path → the path of the memory kept in its place; and every
        change by path."""
        counts = dict.fromkeys(_COUNTS.values(), 0)
        for removal in self.removals:
            counts[_COUNTS[removal.reason]] += 1
        changes = []
        for r in self.removals:
            change: dict[str, Any] = {"path": r.path, "removed": r.reason}
            if r.by_path:
                change["by"] = r.by_path
            if r.similarity is not None:
                change["similarity"] = round(r.similarity, 4)
            changes.append(change)
        return {
            "dreamer": "memfs-consolidate",
            "memories_read": self.read,
            "removed": counts,
            "merged_into": {
                r.path: r.by_path
                for r in sorted(self.removals, key=lambda r: r.path)
                if r.reason in ("duplicate", "near_duplicate") and r.by_path
            },
            "changes": changes,
        }


def _absorbed_note(paths: Sequence[str], limit: int) -> str:
    """``a, b, c`` — cut to ``limit`` characters with ``… (+N more)`` (SPEC §1: a
    metadata value holds at most 512 characters)."""
    note = ", ".join(paths)
    if len(note) <= limit:
        return note
    kept: list[str] = []
    for index, path in enumerate(paths):
        tail = f" … (+{len(paths) - index} more)"
        if len(", ".join([*kept, path])) + len(tail) > limit:
            return ", ".join(kept) + f" … (+{len(paths) - len(kept)} more)"
        kept.append(path)
    return note


def _superseded(ordered: Sequence[ConsolidationItem]) -> dict[str, Removal]:
    """Step 1 of :func:`plan_consolidation`: what the records (by path) supersede."""
    by_id = {item.memory_id: item for item in ordered}
    removed: dict[str, Removal] = {}
    for item in ordered:
        if item.memory_id in removed:
            continue
        targets = [by_id[t] for t in item.supersedes if t in by_id and t != item.memory_id]
        for victim in sorted(targets, key=lambda v: v.path):
            if victim.memory_id not in removed:
                removed[victim.memory_id] = Removal(
                    victim.memory_id, victim.path, "superseded", item.path
                )
    return removed


def _keep_order(item: ConsolidationItem) -> tuple[datetime, str]:
    """Of duplicates, the first in this order is kept: created first, then by path."""
    return item.created_at, item.path


class _Notes:
    """What each kept memory absorbed (step 3 and 4 of :func:`plan_consolidation`)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.paths: dict[str, list[str]] = {}  # kept memory id → absorbed paths
        self.kept: dict[str, ConsolidationItem] = {}

    def absorb(self, kept: ConsolidationItem, other: ConsolidationItem) -> None:
        if kept.memory_id not in self.paths:
            before = kept.metadata.get(ABSORBED_METADATA_KEY, "").split(", ")
            self.paths[kept.memory_id] = [p for p in before if p]
            self.kept[kept.memory_id] = kept
        paths = self.paths[kept.memory_id]
        # What ``other`` absorbed before goes with it.
        carried = self.paths.pop(other.memory_id, None)
        self.kept.pop(other.memory_id, None)
        if carried is None:
            carried = [p for p in other.metadata.get(ABSORBED_METADATA_KEY, "").split(", ") if p]
        for path in [other.path, *carried]:
            if path not in paths:
                paths.append(path)

    def metadata(self) -> dict[str, tuple[str, Mapping[str, str]]]:
        result: dict[str, tuple[str, Mapping[str, str]]] = {}
        for memory_id, paths in self.paths.items():
            kept = self.kept[memory_id]
            metadata = dict(kept.metadata)
            metadata[ABSORBED_METADATA_KEY] = _absorbed_note(paths, self.limit)
            result[memory_id] = (kept.path, metadata)
        return result


def _near_duplicates(
    left: Sequence[ConsolidationItem],
    similar: Mapping[tuple[str, str], float],
    removed: dict[str, Removal],
    notes: _Notes,
) -> None:
    """Step 4 of :func:`plan_consolidation` on the memories ``left``, in keep order."""
    for index, kept in enumerate(left):
        if kept.memory_id in removed:
            continue
        near = [
            other for other in left[index + 1 :]
            if other.memory_id not in removed and (kept.memory_id, other.memory_id) in similar
        ]
        for other in sorted(near, key=lambda i: i.path):
            removed[other.memory_id] = Removal(
                other.memory_id, other.path, "near_duplicate", kept.path,
                similar[(kept.memory_id, other.memory_id)],
            )
            notes.absorb(kept, other)


def plan_consolidation(
    items: Sequence[ConsolidationItem],
    *,
    decay_below: float,
    metadata_value_chars: int = 512,
    similar: Mapping[tuple[str, str], float] | None = None,
) -> ConsolidationPlan:
    """What the ``memfs-consolidate`` dreamer does to a store, deterministically:

    1. ``supersedes`` relations applied: every live memory a record supersedes is
       removed (records by path; a record already removed supersedes nothing).
    2. Records whose ``decay_score`` is below ``decay_below`` are removed.
    3. Exact duplicates (same content digest) merged: the one created first (then by
       path) is kept, the others removed, and the kept one's metadata
       :data:`ABSORBED_METADATA_KEY` lists the paths it absorbed (with any it
       absorbed before).
    4. Near duplicates, when ``similar`` is given (``(memory id, memory id)`` →
       cosine similarity, both orders, only pairs at or above the threshold): taking
       the memories left in keep order, each one not yet absorbed keeps every later
       one similar to it, as in step 3 (a greedy grouping: two memories both similar
       to a kept one but not to each other still go together; a chain A~B~C with A
       and C dissimilar keeps C apart).
    """
    ordered = sorted(items, key=lambda i: i.path)
    removed = _superseded(ordered)
    for item in ordered:
        if item.memory_id in removed or item.decay_score is None:
            continue
        if item.decay_score < decay_below:
            removed[item.memory_id] = Removal(item.memory_id, item.path, "decayed")
    groups: dict[str, list[ConsolidationItem]] = {}
    for item in ordered:
        if item.memory_id not in removed:
            groups.setdefault(item.content_sha256, []).append(item)
    notes = _Notes(metadata_value_chars)
    for group in groups.values():
        if len(group) < 2:
            continue
        group.sort(key=_keep_order)
        kept, others = group[0], sorted(group[1:], key=lambda i: i.path)
        for other in others:
            removed[other.memory_id] = Removal(other.memory_id, other.path, "duplicate", kept.path)
            notes.absorb(kept, other)
    if similar:
        left = sorted((i for i in ordered if i.memory_id not in removed), key=_keep_order)
        _near_duplicates(left, similar, removed, notes)
    order = list(_COUNTS)
    removals = sorted(removed.values(), key=lambda r: order.index(r.reason))
    return ConsolidationPlan(
        removals=tuple(removals), absorbed=notes.metadata(), read=len(items)
    )
