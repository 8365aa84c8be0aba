"""The ``memfs-consolidate`` dreamer (SPEC §11): consolidation without a language model
and without a network, deterministic (the same store gives the same output).

It reads the output store's live memories and records, decides with
:func:`memfs.core.dreams.plan_consolidation` (``supersedes`` applied, decayed records
removed, exact duplicates and, with a local embedding model configured (SPEC §7), near
duplicates merged into the one kept, which notes what it absorbed in its metadata
``memfs_absorbed``), and carries the plan out one change at a time, each a version
attributed to the dream's session, checking before each that the dream was not
canceled. Removals are soft deletes: restorable, and undone by restoring the automatic
snapshot.

Which duplicate is kept: the memory created first in the input store, ties broken by
path. A ``create_new`` dream works on a fork, whose copies were all created at the
fork: each copy counts from its original's creation (same path in the input), so both
output behaviours keep the same memory.

Near duplicates: two live memories whose embeddings' cosine similarity is at least
:func:`memfs.core.config.dream_near_duplicate` (``MEMFS_DREAM_NEAR_DUPLICATE``,
default 0.95: different wording of the same note, not two notes on one topic). The
vectors are computed here from the current contents by the configured model (not read
from the semantic index, which may lag), so the same store and model give the same
output. Without a model the result says ``near_duplicates: skipped`` and why.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

from memfs.core import config
from memfs.core.dreams import ConsolidationItem, plan_consolidation
from memfs.core.errors import InvalidMetadata, SearchUnavailable
from memfs.core.model import DeleteMode, Memory
from memfs.core.records import RelationType
from memfs.store import Caller

__all__ = ["Canceled", "consolidate"]


class Canceled(Exception):
    """Raised when the dream was canceled between two steps."""


# Embeds texts as unit vectors (Engine.embed); None: no model is configured.
Embed = Callable[[Sequence[str]], Any]


def _near_pairs(
    caller: Caller, store_id: str, memories: Sequence[Memory], embed: Embed, threshold: float
) -> dict[tuple[str, str], float] | None:
    """``(id, id)`` → cosine similarity (both orders) of the memories at or above
    ``threshold``; None when no model is configured."""
    texts = [caller.memories.get(store_id, m.id).content or "" for m in memories]
    vectors = embed(texts)
    if vectors is None:
        return None
    scores = vectors @ vectors.T
    pairs: dict[tuple[str, str], float] = {}
    for i, first in enumerate(memories):
        for j in range(i + 1, len(memories)):
            score = float(scores[i, j])
            if score >= threshold:
                pairs[(first.id, memories[j].id)] = score
                pairs[(memories[j].id, first.id)] = score
    return pairs


def consolidate(
    caller: Caller,
    store_id: str,
    *,
    decay_below: float,
    step: Callable[[str], bool],
    input_store_id: str | None = None,
    embed: Embed | None = None,
    near_duplicate: float | None = None,
) -> dict[str, Any]:
    """Consolidates ``store_id`` as ``caller`` (the dream's session).

    Args:
        decay_below: records whose decay score is below this are removed.
        step: called with a line saying what is about to be done (the dream's transcript,
            its heartbeat); False means the dream was canceled: stop.
        input_store_id: the dream's input, when ``store_id`` is a fork of it (the kept
            duplicate's rule, module docstring).
        embed: the local embedding model (``Engine.embed``); None: no near duplicates.
        near_duplicate: their similarity threshold (default: the setting).

    Returns:
        The dream's result (:meth:`memfs.core.dreams.ConsolidationPlan.summary`).

    Raises:
        Canceled: ``step`` said stop; the changes made so far stay.
    """
    memories = caller.memories.all(store_id)
    records = {r.memory_id: r for r in caller.records.list([store_id])}
    born: dict[str, datetime] = {}
    if input_store_id is not None and input_store_id != store_id:
        born = {m.path: m.created_at for m in caller.memories.all(input_store_id)}
    threshold = config.dream_near_duplicate() if near_duplicate is None else near_duplicate
    similar = None
    skipped = "skipped: no embedding model is configured (MEMFS_SEARCH_MODEL_DIR)"
    try:
        if embed is not None:
            similar = _near_pairs(caller, store_id, memories, embed, threshold)
    except SearchUnavailable as exc:  # a broken model: the rest of the dream still runs
        skipped = f"skipped: {exc.message}"
    items = []
    for memory in memories:
        record = records.get(memory.id)
        items.append(
            ConsolidationItem(
                memory_id=memory.id,
                path=memory.path,
                content_sha256=memory.content_sha256,
                created_at=born.get(memory.path, memory.created_at),
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
        items, decay_below=decay_below, metadata_value_chars=config.MAX_METADATA_VALUE_CHARS,
        similar=similar,
    )
    if not step(f"read {len(items)} memories ({len(records)} records) of {store_id}"):
        raise Canceled
    for removal in plan.removals:
        why = {
            "superseded": f"superseded by {removal.by_path}",
            "decayed": f"decay_score below {decay_below}",
            "duplicate": f"exact duplicate of {removal.by_path}",
            "near_duplicate": f"near duplicate of {removal.by_path} "
            f"(similarity {removal.similarity or 0:.3f})",
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
        skipped if similar is None else f"merged at cosine similarity >= {threshold:g}"
    )
    return summary
