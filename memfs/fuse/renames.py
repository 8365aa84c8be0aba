"""rename(2) on a mount: files, directories, scratch names and the atomic save.

Owns :class:`Renamer` (SPEC §4 mapping and atomic save):

* a stored file renamed to a real name: the memory is renamed (one version, id kept;
  rename(2) replaces the target in the same transaction);
* a directory: every memory below it moves in one transaction;
* a file renamed to a scratch name (:func:`memfs.rules.is_scratch_name`) is *parked*:
  its memory stays at its path until the name is reused (vim's ``file`` → ``file~``,
  new ``file``: one ``modified`` version), the scratch file is removed (a delete), or
  it is renamed back;
* a file that exists only in the mount (a scratch or new temporary file) renamed over a
  target commits its content as one version of the target (the atomic save), with the
  content this mount last handed out as the precondition; a change made elsewhere
  since then keeps both (a conflict copy).

The caller holds the mount's mutation lock and has checked the names.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

from memfs.backend import Backend, MemoryChange
from memfs.errors import PreconditionFailed
from memfs.fuse.commits import Committer
from memfs.fuse.errors import ReadOnly
from memfs.fuse.inodes import Attachment, InodeTable, Node, Notice
from memfs.fuse.reading import ContentReader
from memfs.model import Memory
from memfs.rules import is_scratch_name, validate_content_bytes

__all__ = ["Move", "Renamer"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Move:
    """One rename, checked by the handler.

    Attributes:
        node: what is renamed.
        new_parent, new_name: where to.
        new_path: the store path of the new name.
        existing: the entry the rename replaces, if any.
        target: the store of ``new_parent`` (the same as ``node``'s).
    """

    node: Node
    new_parent: Node
    new_name: str
    new_path: str
    existing: Node | None
    target: Attachment


class Renamer:
    """The store side of a rename.

    Args:
        backend, table, reader, committer: the mount's.
        has_writer: whether a node has a writable handle open.
    """

    def __init__(
        self,
        backend: Backend,
        table: InodeTable,
        reader: ContentReader,
        committer: Committer,
        has_writer: Callable[[Node], bool],
    ) -> None:
        self._backend = backend
        self._table = table
        self._reader = reader
        self._committer = committer
        self._has_writer = has_writer

    async def rename_file(self, move: Move) -> None:
        """Renames a file. Raises the store's errors and RefusedWrite."""
        node, new_parent, new_name = move.node, move.new_parent, move.new_name
        existing, target = move.existing, move.target
        if is_scratch_name(new_name):
            # The store does not see scratch names: a stored file is parked (kept at its
            # path until the name is reused); local content stays local.
            await self._discard(existing, target, store_replaced=False)
            self._table.move(node, new_parent, new_name)
            if node.memory is not None:
                self._table.park(node)
            return
        # Writes not yet closed stay pending: the close that follows commits them under
        # the new name, with the precondition the file was opened with. Without a
        # writable handle left to close, they are committed with the rename.
        keep_pending = (
            node.memory is not None
            and not node.parked
            and node.working.dirty
            and self._has_writer(node)
        )
        if node.memory is not None:
            memory = await self._move_memory(move, keep_pending)
        else:
            saved = await self._atomic_save(move)
            if saved is None:
                return
            memory = saved
        self._table.move(node, new_parent, new_name)
        node.parked = False
        node.working.renamed(memory.content_sha256, keep_pending=keep_pending)
        self._table.set_memory(node, memory)
        for ancestor in self._table.ancestors(node):
            ancestor.held = False
        log.info("renamed to %s (version %s)", move.new_path, memory.memory_version_id)

    async def _move_memory(self, move: Move, keep_pending: bool) -> Memory:
        """A stored or parked file gets a real name: rename the memory (one version, id
        kept; rename(2) replaces the target). A parked file renamed to where its memory
        still is changes nothing in the store."""
        node, target = move.node, move.target
        assert node.memory is not None
        content = None
        if node.working.dirty and not keep_pending:
            content = validate_content_bytes(bytes(await self._reader.ensure_loaded(node)))
        memory = await self._backend.update_memory(
            target.store_id,
            node.memory.id,
            MemoryChange(path=move.new_path, content=content, replace=True),
        )
        await self._discard(move.existing, target, store_replaced=True)
        return memory

    async def _atomic_save(self, move: Move) -> Memory | None:
        """The atomic save: a file held only by the mount renamed over its target (SPEC
        §4). Returns the memory that now holds its content, or None when the target
        changed elsewhere meanwhile and both were kept."""
        node, new_path, existing, target = move.node, move.new_path, move.existing, move.target
        data = bytes(await self._reader.ensure_loaded(node))
        text = validate_content_bytes(data)
        holder = self._table.parked_holder(target, new_path)
        if existing is not None and existing.stored and existing.attachment is target:
            assert existing.memory is not None
            working = existing.working
            try:
                memory = await self._backend.update_memory(
                    target.store_id,
                    existing.memory.id,
                    MemoryChange(
                        content=text,
                        expected_sha256=working.opened_sha256 or working.base_sha256,
                    ),
                )
            except PreconditionFailed:
                # The target changed elsewhere meanwhile: keep both (SPEC §4). The
                # rename succeeds for the kernel, which then points the target name at
                # the temporary file's inode: that entry must be dropped, so the name
                # shows the head again (not the content that lost).
                await self._committer.keep_both(existing, target, new_path, text, data)
                self._table.remove(node)
                self._table.notice(
                    Notice(move.new_parent.inode, move.new_name.encode("utf-8", "surrogateescape"))
                )
                return None
            self._table.remove(existing)
        elif holder is not None:
            memory = await self._committer.take_over_parked(holder, target, text)
            await self._discard(existing, target, store_replaced=True)
        else:
            memory = await self._backend.create_memory(target.store_id, new_path, text)
            await self._discard(existing, target, store_replaced=True)
        self._reader.remember(memory.blob_key, data)
        return memory

    async def _discard(
        self, existing: Node | None, target: Attachment, *, store_replaced: bool
    ) -> None:
        """Removes the entry a rename replaces.

        Args:
            store_replaced: the store call of the rename already soft-deleted any memory
                of ``target`` at that path (``replace=True``).
        """
        if existing is None:
            return
        if existing.memory is not None:
            if existing.attachment is not target:
                # Flat layout: a read-only store's file is covered, not deleted.
                self._table.unlink(existing)
                self._table.shadow(existing)
                return
            if existing.parked or not store_replaced:
                await self._committer.delete_memory(target, existing.memory)
        self._table.remove(existing)

    async def rename_directory(self, move: Move) -> None:
        """SPEC §4: a directory rename moves every memory below it, atomically."""
        node, new_path, target = move.node, move.new_path, move.target
        stored = [f for f in self._table.files_below(node) if f.memory is not None]
        if any(f.attachment is not target for f in stored):
            raise ReadOnly(f"{self._table.display_path(node)} holds files of a read-only store")
        memories: list[Memory] = []
        if stored:
            old_prefix = self._table.memory_path(node) + "/"
            memories = await self._backend.rename_prefix(
                target.store_id, old_prefix, new_path + "/"
            )
        if move.existing is not None:
            self._table.remove(move.existing)
        self._table.move(node, move.new_parent, move.new_name)
        for memory in memories:
            moved = self._table.node_for_memory(target.store_id, memory.id)
            if moved is not None:
                self._table.set_memory(moved, memory)
        log.info("renamed directory to %s (%d memories)", new_path, len(memories))
