"""Merging a save with a change made elsewhere, instead of a conflict copy (SPEC §4
"Concurrent writers").

A close (or an atomic save's rename) commits with a precondition on the content the
file was opened with. When another writer changed it meanwhile, :class:`Merger` merges
three-way — base: the content this open saw (by its digest, from
:meth:`memfs.fuse.reading.ContentReader.content_by_digest`), theirs: the head, ours:
this save — with :func:`memfs.core.merging.merge_texts` (the rule, append/append
included, is stated there), and commits the merge as one version with the head's digest
as the precondition. When the head moved again meanwhile, the merge is made again on
the newer head, at most :data:`MERGE_ATTEMPTS` times.

Only when the edits overlap, the base can't be had (never read by this mount and no
longer readable, or erased), the merge is refused by the store (over the size limit) or
the head keeps moving, the caller falls back to keeping both (a conflict copy,
:meth:`memfs.fuse.commits.Committer.keep_both`). The HTTP API's ``content_sha256``
precondition is not affected: it still answers 409 (merging is the mount's).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from memfs.backend import Backend, MemoryChange
from memfs.core.errors import MemfsError, PreconditionFailed
from memfs.core.merging import MERGE_ATTEMPTS, merge_bytes, merge_texts
from memfs.core.model import Memory
from memfs.core.rules import content_from_bytes
from memfs.fuse.reading import ContentReader
from memfs.fuse.status import MountStatus

__all__ = ["MERGE_ATTEMPTS", "Merged", "Merger", "merge_bytes", "merge_texts"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Merged:
    """A merge committed to the store.

    Attributes:
        memory: the memory state holding the merge (the head itself when the head
            already held it: nothing new to commit).
        data: the merged bytes.
    """

    memory: Memory
    data: bytes


class Merger:
    """The store side of a merge at close.

    Args:
        backend: the store.
        reader: the content cache (the base and the head are read through it).
        status: the mount's status file (merges are counted).
    """

    def __init__(self, backend: Backend, reader: ContentReader, status: MountStatus) -> None:
        self._backend = backend
        self._reader = reader
        self._status = status

    async def merge(
        self, store_id: str, memory_id: str, base_sha256: str | None, ours: bytes, *, path: str
    ) -> Merged | None:
        """Merges ``ours`` (a save made on content of digest ``base_sha256``) with the
        head of memory ``memory_id`` and commits the merge as one version (SPEC §4).

        Args:
            path: the file, for the log and ``memfs status``.

        Returns:
            The merge, or None when it can't be made or committed: the caller keeps
            both. Never raises a store error (the caller's fallback reports them).
        """
        if base_sha256 is None:
            return None
        base = await self._reader.content_by_digest(base_sha256)
        if base is None:
            log.info("%s changed elsewhere; the content it was opened with is no longer "
                     "at hand, so it can't be merged", path)
            return None
        for _ in range(MERGE_ATTEMPTS):
            try:
                head = await self._backend.get_memory(store_id, memory_id)
                theirs = await self._reader.read_memory(head)
            except MemfsError as exc:
                log.info("%s changed elsewhere; its head can't be read to merge: %s", path, exc)
                return None
            merged = merge_bytes(base, ours, theirs)
            if merged is None:
                log.info("%s changed elsewhere and the edits overlap (base %s, head %s): "
                         "both are kept", path, base_sha256[:12], head.content_sha256[:12])
                return None
            if merged == theirs:
                memory = head  # the head already holds this save's changes
            else:
                try:
                    memory = await self._backend.update_memory(
                        store_id,
                        memory_id,
                        MemoryChange(
                            content=content_from_bytes(merged),
                            expected_sha256=head.content_sha256,
                        ),
                    )
                except PreconditionFailed:
                    continue  # the head moved again: merge with the newer one
                except MemfsError as exc:
                    log.info("the merge of %s was refused (%s); both are kept", path, exc)
                    return None
                self._reader.remember(memory.blob_key, merged)
            log.info("merged %s with a change made elsewhere after this save's base was "
                     "read (%d bytes, version %s)", path, len(merged), memory.memory_version_id)
            self._status.record_merge(path, memory.memory_version_id)
            return Merged(memory, merged)
        log.info("%s kept changing elsewhere while it was merged; both are kept", path)
        return None

    @staticmethod
    def rebase(sent: bytes, merged: Merged, current: bytes) -> bytes | None:
        """The writes that reached the file while its merge was committed (``current``,
        made on the bytes ``sent``), carried over onto the merge: a merge of ``sent``
        → ``current`` with ``sent`` → the merge.

        Returns:
            The content the file holds now (pending for its next close), or None when
            those writes overlap the other writer's change.
        """
        if current == sent:
            return merged.data
        return merge_bytes(sent, current, merged.data)
