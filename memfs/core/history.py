"""The objects of history you can use (SPEC §10), and the pure half of a diff.

- :class:`Snapshot`: a named point of one store's history (``snap_…``).
- :class:`ResolvedPoint`: a point (:mod:`memfs.core.points`) resolved against one
  store: the sequence number whose state it names.
- :class:`StateEntry`: one memory as it was at a point (no content: the engine reads
  content only for what a diff shows).
- :func:`classify` and :func:`unified_diff`: what changed between two states, matched
  by memory id (a rename keeps the id), and a modified text as a unified diff
  (``difflib``, diff(1)'s and git's conventions, ``\\ No newline at end of file``
  included). :class:`DiffEntry` and :class:`StoreDiff` are the result the engine
  assembles (``engine.history.diff``) and the CLI and the API print.

Redaction wins (SPEC §2, §10): a side whose version is redacted has no path and no
content here; its entry says ``redacted`` and carries no text diff.
"""

from __future__ import annotations

import difflib
import enum
from dataclasses import dataclass
from datetime import datetime

from pydantic import BaseModel, ConfigDict

from memfs.core.model import Actor

__all__ = [
    "DiffEntry",
    "DiffStatus",
    "MergeAction",
    "MergePlan",
    "MergeStep",
    "ResolvedPoint",
    "RestoreAction",
    "RestorePlan",
    "RestoreStep",
    "Snapshot",
    "StateEntry",
    "StoreDiff",
    "classify",
    "unified_diff",
]


class _Frozen(BaseModel):
    # Validators are built on first validation, not at import (memfs.core.model).
    model_config = ConfigDict(frozen=True, defer_build=True)


class Snapshot(_Frozen):
    """A named, read-only point of a store's history (SPEC §10; ZFS-like: it copies
    nothing and is never rewritten).

    Attributes:
        id: ``snap_…``.
        memory_store_id: the store.
        name: unique in the store (:func:`memfs.core.points.validate_snapshot_name`).
        description: ≤1,024 chars; ``""`` when unset.
        memory_version_id: the store's newest version at the point (the point is the
            moment right after it); None for a point before the store's first version.
        created_at: when it was taken.
        created_by: who took it (None: not recorded).
        seq: the store's sequence number at the point (engine-internal order; not on
            the wire).
    """

    id: str
    memory_store_id: str
    name: str
    description: str
    memory_version_id: str | None
    created_at: datetime
    created_by: Actor | None
    seq: int


@dataclass(frozen=True)
class ResolvedPoint:
    """A point resolved against one store.

    Attributes:
        store_id: the store.
        text: the point as written (``now``, a time, a snapshot name, a version id).
        seq: every version of the store with ``seq`` ≤ this is in the state the point
            names, none after it; 0 = before the store's first version (empty).
        snapshot_name: the snapshot's name when the point names one (by name or id).
    """

    store_id: str
    text: str
    seq: int
    snapshot_name: str | None = None


@dataclass(frozen=True)
class StateEntry:
    """One memory of a store's state at a point: its newest version then, which is not
    a ``deleted`` one.

    Attributes:
        memory_id: ``mem_…``.
        version_id: that version (``memver_…``).
        path: its path; None when the version is redacted (SPEC §2: the path is erased
            with the content).
        content_sha256, size_bytes: its content's digest and size; None when redacted.
        blob_key: where the engine finds its content; None when redacted.
    """

    memory_id: str
    version_id: str
    path: str | None
    content_sha256: str | None
    size_bytes: int | None
    blob_key: str | None

    @property
    def redacted(self) -> bool:
        return self.path is None


class DiffStatus(enum.StrEnum):
    """How a memory differs between the two sides of a diff."""

    ADDED = "added"
    REMOVED = "removed"
    MODIFIED = "modified"
    RENAMED = "renamed"  # path changed (its content may have changed too)


class DiffEntry(_Frozen):
    """One memory that differs between side A (``old_*``) and side B (``new_*``).

    Attributes:
        status: added (B only), removed (A only), modified (same path, other content),
            renamed (other path; ``content_changed`` says whether the content moved too).
        memory_id: the memory (B's, or A's when it is absent from B).
        old_memory_id: A's memory when it is another one (a diff across a fork matches
            a forked memory with its origin memory, SPEC §10); None otherwise.
        old_path, new_path: its path on A / on B; None on the side it is absent from
            or where its version is redacted.
        old_version_id, new_version_id: its version on each side (None where absent).
        old_content_sha256, new_content_sha256: likewise (None where redacted).
        content_changed: the content differs (or can't be compared: redacted).
        redacted: a side's version is redacted: no content is shown, no text diff.
        diff: the unified text diff (None when the content did not change, or for a
            redacted side); an added or removed memory's diff is against nothing.
        insertions, deletions: lines added and removed by ``diff``.
    """

    status: DiffStatus
    memory_id: str
    old_memory_id: str | None = None
    old_path: str | None
    new_path: str | None
    old_version_id: str | None
    new_version_id: str | None
    old_content_sha256: str | None
    new_content_sha256: str | None
    content_changed: bool
    redacted: bool
    diff: str | None
    insertions: int
    deletions: int

    @property
    def path(self) -> str:
        """The path to show it under: B's, else A's, else a placeholder naming the id."""
        return self.new_path or self.old_path or f"(redacted {self.memory_id})"


class StoreDiff(_Frozen):
    """What changed from side A to side B (``memfs diff A B``).

    Attributes:
        from_store_id, from_point: side A.
        to_store_id, to_point: side B.
        entries: the memories that differ, by path (A's for removed ones).
    """

    from_store_id: str
    from_point: str
    to_store_id: str
    to_point: str
    entries: list[DiffEntry]

    @property
    def insertions(self) -> int:
        return sum(entry.insertions for entry in self.entries)

    @property
    def deletions(self) -> int:
        return sum(entry.deletions for entry in self.entries)


def classify(
    old: dict[str, StateEntry], new: dict[str, StateEntry]
) -> list[tuple[DiffStatus, StateEntry | None, StateEntry | None]]:
    """What differs between two states (by memory id), without content.

    Args:
        old, new: side A's and side B's entries by memory id.

    Returns:
        ``(status, old_entry, new_entry)`` per memory that differs (an entry is None on
        the side the memory is absent from), in no particular order. The same version
        on both sides, or the same path and digest, is no difference.
    """
    found: list[tuple[DiffStatus, StateEntry | None, StateEntry | None]] = []
    for memory_id, before in old.items():
        after = new.get(memory_id)
        if after is None:
            found.append((DiffStatus.REMOVED, before, None))
            continue
        if before.version_id == after.version_id:
            continue
        if before.redacted or after.redacted:
            if before.path is not None and after.path is not None and before.path != after.path:
                found.append((DiffStatus.RENAMED, before, after))
            else:
                found.append((DiffStatus.MODIFIED, before, after))
            continue
        if before.path != after.path:
            found.append((DiffStatus.RENAMED, before, after))
        elif before.content_sha256 != after.content_sha256:
            found.append((DiffStatus.MODIFIED, before, after))
    found.extend(
        (DiffStatus.ADDED, None, after) for memory_id, after in new.items() if memory_id not in old
    )
    return found


_NO_NEWLINE = "\\ No newline at end of file\n"


def unified_diff(
    old_text: str | None, new_text: str | None, old_label: str, new_label: str
) -> tuple[str, int, int]:
    """A unified diff (3 lines of context) of two texts, as diff(1) -u and git print it.

    Args:
        old_text, new_text: the contents; None for a side the memory is absent from
            (diffed against nothing, labelled ``/dev/null`` as git does).
        old_label, new_label: the ``---``/``+++`` names (e.g. ``a/notes/x.md``).

    Returns:
        ``(text, insertions, deletions)``; text is ``""`` when the texts are equal.
    """
    before = (old_text or "").splitlines(keepends=True)
    after = (new_text or "").splitlines(keepends=True)
    lines = difflib.unified_diff(
        before,
        after,
        "/dev/null" if old_text is None else old_label,
        "/dev/null" if new_text is None else new_label,
    )
    out: list[str] = []
    insertions = deletions = 0
    for index, line in enumerate(lines):
        if index >= 2:  # the two file header lines are not counted
            if line.startswith("+"):
                insertions += 1
            elif line.startswith("-"):
                deletions += 1
        if line.endswith("\n"):
            out.append(line)
        else:
            out.append(line + "\n" + _NO_NEWLINE)
    return "".join(out), insertions, deletions


class RestoreAction(enum.StrEnum):
    """What a store restore does to one memory (SPEC §10)."""

    CHANGE = "change"  # live now and then: its path and/or content go back
    DELETE = "delete"  # live now, not then: soft-deleted (restorable)
    BRING_BACK = "bring_back"  # soft-deleted now, live then: back under its id
    KEEP = "keep"  # can't go back: its content then is redacted (SPEC §2 redaction wins)


class RestoreStep(_Frozen):
    """One memory a store restore touches, or can't.

    Attributes:
        action: see :class:`RestoreAction`.
        memory_id: the memory.
        path_now: its path now (None when it is not live).
        path_then: its path at the point (None when absent then, or redacted).
        content_changes: its content goes back to another one.
    """

    action: RestoreAction
    memory_id: str
    path_now: str | None
    path_then: str | None
    content_changes: bool


class RestorePlan(_Frozen):
    """What restoring a store to a point does (``--dry-run``) or did.

    Attributes:
        memory_store_id: the store.
        point: the point as written.
        steps: one per memory that changes (or can't), by path.
        snapshot: the automatic snapshot taken first (``auto-restore-…``; None on a dry
            run or when nothing changes).
        applied: False for a dry run.
    """

    memory_store_id: str
    point: str
    steps: list[RestoreStep]
    snapshot: Snapshot | None
    applied: bool

    def count(self, action: RestoreAction) -> int:
        """How many steps do ``action``."""
        return sum(1 for step in self.steps if step.action is action)


class MergeAction(enum.StrEnum):
    """What merging a fork back does to one memory (SPEC §10, three-way against the
    fork's base)."""

    UPDATE = "update"  # changed on the fork only (path and/or content): the origin takes it
    CREATE = "create"  # added on the fork: added to the origin
    DELETE = "delete"  # deleted on the fork, unchanged in the origin: soft-deleted there
    CONFLICT_COPY = "conflict_copy"  # content changed on both sides: the fork's beside
    KEEP = "keep"  # a change the origin's own change wins over (named in ``note``)


class MergeStep(_Frozen):
    """One memory a merge touches (or keeps, saying why).

    Attributes:
        action: see :class:`MergeAction`.
        fork_memory_id: the fork's memory (None: the origin's memory was deleted on the
            fork).
        origin_memory_id: the origin's memory (None for a memory the merge creates
            until it is applied; then the created one).
        path_before: its path in the origin now (None when it has none there).
        path: its path in the origin after the merge (the conflict copy's, for one).
        content_changes: the origin's content at ``path`` becomes the fork's.
        note: why a change is kept out or put beside ("" when it applies plainly).
    """

    action: MergeAction
    fork_memory_id: str | None
    origin_memory_id: str | None
    path_before: str | None
    path: str | None
    content_changes: bool
    note: str = ""


class MergePlan(_Frozen):
    """What merging a fork into its origin does (``--dry-run``) or did.

    Attributes:
        fork_store_id, origin_store_id: the two stores.
        base: the fork's base point (the origin's ``memver_`` id, or ``empty``).
        steps: one per memory that changes (or whose change is kept out), by path.
        snapshot: the origin's automatic snapshot taken first (``auto-merge-…``; None
            on a dry run or when nothing changes).
        applied: False for a dry run.
    """

    fork_store_id: str
    origin_store_id: str
    base: str
    steps: list[MergeStep]
    snapshot: Snapshot | None
    applied: bool

    def count(self, action: MergeAction) -> int:
        """How many steps do ``action``."""
        return sum(1 for step in self.steps if step.action is action)
