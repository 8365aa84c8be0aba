"""Folds made of ordinary writes, for a backend that can't fold in one transaction.

A remote mount speaks the memory-store API, which has no fold (SPEC §4 "One save, one
version"); neither has an embedded backend without an actor. They still save right,
with more versions: :func:`fold_by_steps` is the atomic save as it was before folds
(the target updated, the temporary soft-deleted, or the temporary renamed).
"""

from __future__ import annotations

import contextlib

from memfs.backend.protocol import Backend, MemoryChange
from memfs.core.content import Content
from memfs.core.errors import NotFound
from memfs.core.model import Memory

__all__ = ["fold_by_steps"]


async def fold_by_steps(
    backend: Backend,
    store_id: str,
    temporary_id: str,
    *,
    target_id: str | None,
    path: str,
    content: Content | None,
    expected_sha256: str | None,
) -> Memory:
    """:meth:`Backend.fold_temporary` in ordinary writes: over a target, the target's
    update (with the precondition) then a soft delete of the temporary memory (already
    gone counts as done); to a new name, a rename of the temporary memory (rename(2):
    a memory at ``path`` is replaced). Raises what those writes raise."""
    if target_id is not None:
        memory = await backend.update_memory(
            store_id, target_id, MemoryChange(content=content, expected_sha256=expected_sha256)
        )
        with contextlib.suppress(NotFound):  # already gone counts as done
            await backend.delete_memory(store_id, temporary_id)
        return memory
    return await backend.update_memory(
        store_id, temporary_id, MemoryChange(path=path, content=content, replace=True)
    )
