"""Applying a dream (SPEC §11): its output, a fork of the input (``create_new``), merged
back into the input (SPEC §10 merge: three-way against the fork's base, an automatic
snapshot first), and the consolidating dreamer's notes carried along.

Why the notes need carrying: memory metadata is not versioned, so the merge (which
moves content and paths) does not move it; the note a kept duplicate got
(``memfs_absorbed``, :data:`memfs.core.dreams.ABSORBED_METADATA_KEY`) would stay in the
output. After the merge, each output memory with a note gives it to the input's live
memory at the same path holding the same content (the one the merge left or made
there); the input's other metadata keys stay.
"""

from __future__ import annotations

from memfs.core.dreams import ABSORBED_METADATA_KEY, Dream, DreamStatus, OutputBehavior
from memfs.core.errors import Conflict, InvalidMetadata
from memfs.core.history import MergePlan
from memfs.core.model import Actor
from memfs.core.visibility import Viewer
from memfs.store import Engine

__all__ = ["apply_dream"]


def apply_dream(
    engine: Engine,
    dream: Dream,
    *,
    actor: Actor | None,
    viewer: Viewer | None = None,
    dry_run: bool = False,
) -> tuple[MergePlan, int]:
    """Merges a completed ``create_new`` dream's output into its input as ``actor``,
    seeing as ``viewer`` (the applier's, SPEC §6; None: unrestricted, the local CLI):
    the merge plans and writes only the records the applier may see
    (:meth:`memfs.store.history.History.merge`), and the notes carried are those of
    memories it sees.

    Returns:
        The merge plan (with ``dry_run``: what it would do; nothing changes) and how
        many ``memfs_absorbed`` notes were carried to the input.

    Raises:
        Conflict: ``dream_not_completed``; ``dream_updated_input`` (an
            ``update_existing`` dream: nothing to apply, its snapshot undoes it);
            what the merge raises (SPEC §10).
    """
    if dream.status is not DreamStatus.COMPLETED or dream.output_store_id is None:
        raise Conflict(
            f"dream {dream.id} is {dream.status.value}, not completed: nothing to apply",
            code="dream_not_completed",
        )
    if dream.output_behavior is OutputBehavior.UPDATE_EXISTING:
        raise Conflict(
            f"dream {dream.id} wrote into its input store already (update_existing); "
            "its automatic snapshot undoes it",
            code="dream_updated_input",
        )
    history = engine.for_caller(actor=actor, viewer=viewer).history
    if dry_run:
        return history.plan_merge(dream.output_store_id, into=dream.input_store_id), 0
    plan = history.merge(
        dream.output_store_id, into=dream.input_store_id, reason=f"apply dream {dream.id}"
    )
    return plan, _carry_notes(engine, dream, actor, viewer)


def _carry_notes(
    engine: Engine, dream: Dream, actor: Actor | None, viewer: Viewer | None
) -> int:
    assert dream.output_store_id is not None
    caller = engine.for_caller(actor=actor, viewer=viewer)
    here = {m.path: m for m in caller.memories.all(dream.input_store_id)}
    carried = 0
    for memory in caller.memories.all(dream.output_store_id):
        note = memory.metadata.get(ABSORBED_METADATA_KEY)
        target = here.get(memory.path)
        if note is None or target is None:
            continue
        if target.content_sha256 != memory.content_sha256:
            continue
        if target.metadata.get(ABSORBED_METADATA_KEY) == note:
            continue
        try:
            caller.memories.update(
                dream.input_store_id, target.id,
                metadata={**target.metadata, ABSORBED_METADATA_KEY: note},
            )
        except InvalidMetadata:  # 16 keys already: no room for the note
            continue
        carried += 1
    return carried
