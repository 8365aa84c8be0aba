"""rename(2) on a mount: files, directories, scratch names and the atomic save.

Owns :class:`Renamer` (SPEC §4 mapping and atomic save):

* a stored file renamed to a real name: the memory is renamed (one version, id kept;
  rename(2) replaces the target in the same transaction);
* a directory: every memory below it moves in one transaction;
* a file renamed to a scratch name (:func:`memfs.core.rules.is_scratch_name`) is *parked*:
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
from memfs.core.content import Content
from memfs.core.errors import PreconditionFailed
from memfs.core.model import Memory
from memfs.core.rules import (
    content_from_bytes,
    is_scratch_name,
    validate_directory_path,
    validate_path,
    validate_segment,
)
from memfs.fuse.commits import Committer
from memfs.fuse.errors import (
    CrossStore,
    DirectoryNotEmpty,
    EntryExists,
    IsADirectory,
    NotADirectory,
    ReadOnly,
)
from memfs.fuse.inodes import Attachment, InodeTable, Layout, Node, Notice
from memfs.fuse.names import join_path
from memfs.fuse.reading import ContentReader

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

    def plan(self, node: Node, new_parent: Node, new_name: str, *, no_replace: bool) -> Move | None:
        """Checks the rename of ``node`` to ``new_parent``/``new_name`` (rename(2) and
        SPEC §4 rules). Returns None when it changes nothing (the same entry).

        Raises:
            CrossStore (another store, per-store layout), ReadOnly, InvalidPath,
            PathTooLong, EntryExists (``RENAME_NOREPLACE``), IsADirectory,
            NotADirectory, DirectoryNotEmpty.
        """
        table = self._table
        target = table.write_target(new_parent)
        source = node.attachment if not node.is_dir or node.attachment else target
        if source is not target:
            if table.layout is Layout.PER_STORE:
                raise CrossStore(f"{table.display_path(node)} can't be renamed into another store")
            raise ReadOnly(f"{table.display_path(node)} belongs to a read-only store")
        table.check_writable(node)
        validate_segment(new_name)
        new_path = validate_path(join_path(table.memory_path(new_parent), new_name))
        if node.is_dir:
            validate_directory_path(new_path)  # as mkdir: a file must still fit in it
        existing = new_parent.children.get(new_name)
        if existing is node:
            return None
        if existing is not None:
            if no_replace:
                raise EntryExists(f"{new_name!r} exists")
            if existing.is_dir and not node.is_dir:
                raise IsADirectory(f"{table.display_path(existing)} is a directory")
            if node.is_dir and not existing.is_dir:
                raise NotADirectory(f"{table.display_path(existing)} is a file")
            if existing.is_dir and existing.children:
                raise DirectoryNotEmpty(f"{table.display_path(existing)} is not empty")
        return Move(node, new_parent, new_name, new_path, existing, target)

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
        saves_over = node.memory is None or self._saves_over(move)
        keep_pending = (
            not saves_over
            and not node.placement.parked
            and node.working.dirty
            and self._has_writer(node)
        )
        if not saves_over:
            memory = await self._move_memory(move, keep_pending)
        else:
            saved = await self._atomic_save(move)
            if saved is None:
                return
            memory = saved
        self._table.move(node, new_parent, new_name)
        node.placement.unpark()
        node.working.renamed(memory.content_sha256, keep_pending=keep_pending)
        self._table.set_memory(node, memory)
        self._table.filled_below(node)
        log.info("renamed to %s (version %s)", move.new_path, memory.memory_version_id)

    @staticmethod
    def _saves_over(move: Move) -> bool:
        """Whether renaming stored file ``move.node`` is the last step of an atomic save
        (SPEC §4, any temp name): a file this mount created, renamed over another
        stored file of the same store, whose memory then keeps its id and metadata."""
        existing = move.existing
        return (
            move.node.placement.created_here
            and not move.node.placement.parked
            and existing is not None
            and existing.stored
            and existing.attachment is move.target
        )

    async def _move_memory(self, move: Move, keep_pending: bool) -> Memory:
        """A stored or parked file gets a real name: rename the memory (one version, id
        kept; rename(2) replaces the target). A parked file renamed to where its memory
        still is changes nothing in the store."""
        node, target = move.node, move.target
        assert node.memory is not None
        content = None
        if node.working.dirty and not keep_pending:
            content = content_from_bytes(bytes(await self._reader.ensure_loaded(node)))
        if node.placement.created_here and not node.placement.parked and not keep_pending:
            # SPEC §4 one save, one version: a file this mount created moments ago,
            # renamed to a new name, has one version there (its temporary name none).
            memory = await self._backend.fold_temporary(
                target.store_id, node.memory.id, target_id=None, path=move.new_path,
                content=content, expected_sha256=None,
            )
        else:
            memory = await self._backend.update_memory(
                target.store_id,
                node.memory.id,
                MemoryChange(path=move.new_path, content=content, replace=True),
            )
        await self._discard(move.existing, target, store_replaced=True)
        return memory

    async def _atomic_save(self, move: Move) -> Memory | None:
        """The atomic save: a temporary file renamed over its target (SPEC §4): one
        version of the target (its id and metadata kept), with the content this mount
        last handed out as the precondition. The temporary file is a file held only by
        the mount, or one this mount created (then its memory is deleted). Returns the
        memory the name shows now: the one holding this content, or the target's head
        when it changed elsewhere meanwhile and both were kept (None when the target
        is gone)."""
        node, new_path, existing, target = move.node, move.new_path, move.existing, move.target
        data = bytes(await self._reader.ensure_loaded(node))
        text = content_from_bytes(data)
        holder = self._table.parked_holder(target, new_path)
        # It shows the target's memory from now on (created here if the target's was).
        node.placement.saved_over(
            target_created_here=existing is not None and existing.placement.created_here
        )
        if existing is not None and existing.stored and existing.attachment is target:
            assert existing.memory is not None
            try:
                memory, data = await self._save_over(node, existing, target, text, data)
            except PreconditionFailed:
                # The target changed elsewhere meanwhile: keep both (SPEC §4). The
                # rename succeeds for the kernel, which then points the target name at
                # the temporary file's inode: that entry must be dropped, so the name
                # shows the head again (not the content that lost).
                await self._committer.keep_both(existing, target, new_path, text, data)
                await self._drop_temporary(node, target)
                head = existing.memory if existing.parent is not None else None
                if head is None:  # the target is gone too: nothing to show at its name
                    self._table.remove(node)
                    self._table.notice(Notice(
                        move.new_parent.inode, move.new_name.encode("utf-8", "surrogateescape")
                    ))
                    return None
                # The kernel points the target name at this inode now: it shows the
                # head (their content), the target's node goes.
                self._table.remove(existing)
                node.working.reset_to_head(head.content_sha256)
                self._table.notice(Notice(node.inode))
                return head
            self._table.remove(existing)
        elif holder is not None:
            memory = await self._committer.take_over_parked(holder, target, text)
            await self._discard(existing, target, store_replaced=True)
        else:
            memory = await self._backend.create_memory(target.store_id, new_path, text)
            node.placement.created()
            await self._discard(existing, target, store_replaced=True)
        self._reader.remember(memory.blob_key, data)
        return memory

    async def _save_over(
        self, node: Node, existing: Node, target: Attachment, text: Content, data: bytes
    ) -> tuple[Memory, bytes]:
        """The store call of an atomic save over stored file ``existing``: its memory gets
        ``data``, with the content this mount last handed out as the precondition; a
        change made elsewhere meanwhile is merged with it (SPEC §4 concurrent writers,
        :mod:`memfs.fuse.merging`), and temporary file ``node`` then holds the merge.

        Returns:
            The memory and the bytes it holds.

        Raises:
            PreconditionFailed: the target changed elsewhere and the edits overlap.
        """
        assert existing.memory is not None
        base_sha256 = existing.working.opened_sha256 or existing.working.base_sha256
        try:
            if node.memory is not None:
                # SPEC §4 one save, one version: one transaction writes the target's
                # version and takes the temporary memory away (erased: it leaves no
                # memory and no version, when it is this mount's own and recent).
                memory = await self._backend.fold_temporary(
                    target.store_id, node.memory.id, target_id=existing.memory.id,
                    path=self._table.memory_path(existing), content=text,
                    expected_sha256=base_sha256,
                )
                self._table.set_memory(node, None)
            else:
                memory = await self._backend.update_memory(
                    target.store_id,
                    existing.memory.id,
                    MemoryChange(content=text, expected_sha256=base_sha256),
                )
        except PreconditionFailed:
            path = self._table.memory_path(existing)
            merged = await self._committer.merger.merge(
                target.store_id, existing.memory.id, base_sha256, data, path=path
            )
            if merged is None:
                raise
            await self._drop_temporary(node, target)  # its content is in the merge
            node.working.merged(merged.memory.content_sha256, merged.data)
            self._table.notice(Notice(node.inode))  # its pages hold the unmerged save
            return merged.memory, merged.data
        return memory, data

    async def _drop_temporary(self, node: Node, target: Attachment) -> None:
        """The temporary file of an atomic save whose content was kept as a conflict
        copy leaves the store (erased when this mount's own and recent, else a soft
        delete): its content lives on in the copy."""
        if node.memory is not None:
            await self._committer.erase_temporary(target, node.memory)
            self._table.set_memory(node, None)

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
            if existing.placement.parked or not store_replaced:
                await self._committer.delete_memory(target, existing.memory)
        self._table.remove(existing)

    async def link(self, node: Node, new_parent: Node, new_name: str) -> Node:
        """link(2) as memfs honours it (SPEC §4 "One save, one version"; README): the new
        name is a new file holding a *copy* of ``node``'s content at link time (its own
        memory, one ``created`` version, the same metadata; or this mount's own memory
        deleted at that name moments ago, revived). Later writes to either name do not
        show in the other. What tools use hard links for works: the no-clobber rename
        (``link(temp, new)`` then ``unlink(temp)``: the temporary leaves nothing, see
        :meth:`memfs.fuse.commits.Committer.erase_temporary`) and a backup link of a
        file about to be replaced (``gawk -i inplace -v inplace::suffix=.old``).

        Returns:
            The new file's node.

        Raises:
            EntryExists (the name is taken), CrossStore (another store, per-store
            layout: EXDEV), ReadOnly, InvalidPath, PathTooLong, InvalidContent (the
            content held can't be stored), and the store's errors.
        """
        table = self._table
        target = table.write_target(new_parent)
        if node.attachment is not target and table.layout is Layout.PER_STORE:
            raise CrossStore(f"{table.display_path(node)} can't be linked into another store")
        validate_segment(new_name)
        if new_name in new_parent.children:
            raise EntryExists(f"{new_name!r} exists")
        new_path = validate_path(join_path(table.memory_path(new_parent), new_name))
        data = bytes(await self._reader.ensure_loaded(node))
        copy = table.new_file(new_parent, new_name, target)
        if is_scratch_name(new_name):
            copy.working.start_empty(dirty=True)  # scratch content stays in the mount
            copy.working.write(0, data)
            return copy
        text = content_from_bytes(data)
        try:
            memory = await self._committer.revive(target, new_path, text)
            created = memory is None
            if memory is None:
                metadata = dict(node.memory.metadata) if node.memory is not None else None
                memory = await self._backend.create_memory(
                    target.store_id, new_path, text, metadata=metadata or None
                )
        except BaseException:
            table.remove(copy)
            raise
        self._committer.linked(copy, memory, data, created=created)
        node.placement.linked()
        log.info("linked %s as a copy (version %s)", new_path, memory.memory_version_id)
        return copy

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
