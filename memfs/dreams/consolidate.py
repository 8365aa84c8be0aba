"""The ``memfs-consolidate`` dreamer (SPEC §11): consolidation without a language model
and without a network, deterministic (the same store gives the same output).

It reads the output store's live memories and records, decides with
:func:`memfs.core.dreams.plan_consolidation` (``supersedes`` applied, decayed records
removed, exact duplicates merged into the oldest, which notes what it absorbed in its
metadata ``memfs_absorbed``), and carries the plan out one change at a time, each a
version attributed to the dream's session, checking before each that the dream was not
canceled. Removals are soft deletes: restorable, and undone by restoring the automatic
snapshot.

Limitation: near duplicates (SPEC §7's local embedding model) are not merged yet; the
result says ``near_duplicates: skipped`` with the reason (no model configured, or not
implemented with one).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

from memfs.core import config
from memfs.core.dreams import ConsolidationItem, plan_consolidation
from memfs.core.errors import InvalidMetadata
from memfs.core.model import DeleteMode
from memfs.core.records import RelationType
from memfs.store import Caller

__all__ = ["Canceled", "consolidate"]


class Canceled(Exception):
    """Raised when the dream was canceled between two steps."""


def consolidate(
    caller: Caller,
    store_id: str,
    *,
    decay_below: float,
    step: Callable[[str], bool],
) -> dict[str, Any]:
    """Consolidates ``store_id`` as ``caller`` (the dream's session).

    Args:
        decay_below: records whose decay score is below this are removed.
        step: called with a line saying what is about to be done (the dream's transcript,
            its heartbeat); False means the dream was canceled: stop.

    Returns:
        The dream's result (:meth:`memfs.core.dreams.ConsolidationPlan.summary`).

    Raises:
        Canceled: ``step`` said stop; the changes made so far stay.
    """
    memories = caller.memories.all(store_id)
    records = {r.memory_id: r for r in caller.records.list([store_id])}
    items = []
    for memory in memories:
        record = records.get(memory.id)
        items.append(
            ConsolidationItem(
                memory_id=memory.id,
                path=memory.path,
                content_sha256=memory.content_sha256,
                created_at=memory.created_at,
                decay_score=None if record is None else record.decay_score,
                supersedes=(
                    ()
                    if record is None
                    else tuple(
                        rel.target_memory_id
                        for rel in record.relations
                        if rel.type is RelationType.SUPERSEDES and rel.target_memory_id
                    )
                ),
                metadata=memory.metadata,
            )
        )
    plan = plan_consolidation(
        items, decay_below=decay_below, metadata_value_chars=config.MAX_METADATA_VALUE_CHARS
    )
    if not step(f"read {len(items)} memories ({len(records)} records) of {store_id}"):
        raise Canceled
    for removal in plan.removals:
        why = {
            "superseded": f"superseded by {removal.by_path}",
            "decayed": f"decay_score below {decay_below}",
            "duplicate": f"exact duplicate of {removal.by_path}",
        }[removal.reason]
        if not step(f"remove {removal.path}: {why}"):
            raise Canceled
        caller.memories.delete(
            store_id, removal.memory_id, mode=DeleteMode.SOFT_DELETE, reason=f"dream: {why}"
        )
    for memory_id, (path, metadata) in sorted(plan.absorbed.items(), key=lambda kv: kv[1][0]):
        if not step(f"note on {path} what it absorbed: {metadata['memfs_absorbed']}"):
            raise Canceled
        with contextlib.suppress(InvalidMetadata):  # 16 keys already: no room for the note
            caller.memories.update(store_id, memory_id, metadata=dict(metadata))
    summary = plan.summary()
    summary["decay_below"] = decay_below
    summary["near_duplicates"] = (
        "skipped: no embedding model is configured (MEMFS_SEARCH_MODEL_DIR)"
        if config.search_model_dir() is None
        else "skipped: merging near duplicates is not implemented yet"
    )
    return summary
