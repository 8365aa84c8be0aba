"""Turning a file's working copy into a version: commit, keep-both, reject.

Owns :class:`Committer`, the one place where pending content meets the store (SPEC §4
semantics):

* **commit**: the working copy becomes exactly one version, with the digest the file
  was opened with as the precondition; unchanged content writes nothing. A new file is
  created; a name a parked memory holds reuses that memory (vim's save); a read-only
  store's file in a flat layout is copied up to the default store.
* **merge**: the precondition failed (another writer changed the memory since it was
  opened): the two are merged three-way and the merge committed as one version
  (:mod:`memfs.fuse.merging`) when the edits do not overlap;
* **keep both**: they overlap (or can't be merged): the head keeps theirs, this content
  is created beside it as ``<name>.conflict-<UTC timestamp>-<session>.<ext>``, and the
  file shows the head.
* **reject**: the store refused the content: its bytes are kept under ``rejected/``
  (never silently dropped), the file shows its head, and the close reports the errno.

The caller holds the mount's mutation lock for every method here.
"""

from __future__ import annotations

import collections
import contextlib
import errno
import logging
import time
from typing import NoReturn

from memfs.backend import Backend, MemoryChange, conflict_name
from memfs.core.config import FOLD_WINDOW_S
from memfs.core.content import Content
from memfs.core.errors import (
    BackendUnavailable,
    MemfsError,
    NotFound,
    PathConflict,
    PreconditionFailed,
)
from memfs.core.model import Memory, format_timestamp, utcnow
from memfs.core.rules import content_from_bytes
from memfs.fuse.errno_table import errno_for
from memfs.fuse.errors import ReadOnly, RefusedWrite
from memfs.fuse.inodes import Attachment, InodeTable, Node, Notice
from memfs.fuse.merging import Merger
from memfs.fuse.names import is_local_scratch, join_path, sha256_hex
from memfs.fuse.reading import ContentReader
from memfs.fuse.status import MountStatus, save_rejected

__all__ = ["Committer"]

log = logging.getLogger(__name__)

# How many of this mount's newest versions it remembers as its own (see wrote_version).
WRITTEN_VERSIONS_KEPT = 4096
# How many of its newest deletes it remembers for "same name, same memory" (SPEC §4).
DEPARTURES_KEPT = 4096


class Committer:
    """Commits, conflict copies and refusals of one mount.

    Args:
        backend: the store.
        table: the inode table.
        reader: the content cache (commits put what they wrote there).
        status: the mount's status file (conflicts and refusals are recorded).
        session_id: names rejected-write directories and conflict copies.
    """

    def __init__(
        self,
        backend: Backend,
        table: InodeTable,
        reader: ContentReader,
        status: MountStatus,
        session_id: str,
    ) -> None:
        self._backend = backend
        self._table = table
        self._reader = reader
        self._status = status
        self._session_id = session_id
        self._written: collections.OrderedDict[str, None] = collections.OrderedDict()
        # (store id, path) → (memory id, time.monotonic()) of this mount's recent deletes.
        self._departed: collections.OrderedDict[tuple[str, str], tuple[str, float]] = (
            collections.OrderedDict()
        )
        self.merger = Merger(backend, reader, status)

    def wrote_version(self, version_id: str) -> bool:
        """Whether this mount wrote version ``version_id`` (one of its newest
        :data:`WRITTEN_VERSIONS_KEPT`): its change in the feed tells the mount nothing
        new (``cp``'s exclusive create, SPEC §4 ``O_EXCL``, is followed by the content
        commit, so the feed's entry for the empty version is older than the node, not
        foreign)."""
        return version_id in self._written

    def _wrote(self, memory: Memory) -> None:
        self._written[memory.memory_version_id] = None
        if len(self._written) > WRITTEN_VERSIONS_KEPT:
            self._written.popitem(last=False)

    async def commit(self, node: Node) -> None:
        """Writes ``node``'s pending content as one version (SPEC §4).

        Raises:
            RefusedWrite: the store refused the content, or is read-only now; its bytes
                are kept under ``rejected/`` and the errno is the refusal's (EILSEQ,
                EFBIG, ENOSPC, EROFS, …).
        """
        live = self._replaced_by(node)
        if live is not None:
            await self._commit_replaced(node, live)
            return
        data = self._to_commit(node)
        if data is None:
            return
        path = self._table.memory_path(node)
        try:
            target = self._table.content_target(node)
            text = content_from_bytes(data)  # checked, encoded and hashed once
            memory = await self._write_content(node, target, path, text)
        except NotFound as exc:
            if node.memory is None:
                self.reject(node, data, exc)  # the store itself is gone
            # Deleted elsewhere while open: create it again, nothing is lost.
            log.warning("%s was deleted elsewhere while open; creating it again", path)
            self._table.set_memory(node, None)
            try:
                memory = await self._backend.create_memory(target.store_id, path, text)
            except (PathConflict, PreconditionFailed):
                await self.keep_both(node, target, path, text, data, follow_buffer=True)
                return
            except MemfsError as exc:
                self.reject(node, data, exc)
        except PreconditionFailed:
            if not await self._merge(node, target, path, data):
                await self.keep_both(node, target, path, text, data, follow_buffer=True)
            return
        except PathConflict:
            await self.keep_both(node, target, path, text, data, follow_buffer=True)
            return
        except (MemfsError, ReadOnly) as exc:
            self.reject(node, data, exc)
        self._table.set_memory(node, memory)
        self._wrote(memory)
        node.working.committed(memory.content_sha256, data)
        self._reader.remember(memory.blob_key, data, memory.content_sha256)
        self._follow_move(node, memory)
        self._table.filled_below(node)
        log.info("committed %s (%d bytes, version %s)", self._table.display_path(node),
                 len(data), memory.memory_version_id)

    def _replaced_by(self, node: Node) -> Node | None:
        """The file that took over ``node``'s memory when an atomic save on this mount
        replaced ``node`` (a temporary renamed over it: the memory keeps its id, shown by
        the temporary's node now), while ``node``, still open, has pending writes; else
        None (a file unlinked while open, or replaced by a rename that deleted its
        memory, keeps the local-filesystem rule: what it holds goes with its name)."""
        memory, attachment = node.memory, node.attachment
        if node.parent is not None or not node.working.dirty or memory is None:
            return None
        if attachment is None or node.working.refusal is not None:
            return None
        live = self._table.node_for_memory(attachment.store_id, memory.id)
        if live is None or live is node or live.parent is None or live.memory is None:
            return None
        return live

    async def _commit_replaced(self, node: Node, live: Node) -> None:
        """Writes made through a descriptor still open on ``node`` after an atomic save
        on this mount replaced it (``echo … >> log`` while ``sed -i`` runs on ``log``):
        they are merged with the save, as with a save made elsewhere (SPEC §4 concurrent
        writers, :mod:`memfs.fuse.merging`), and ``live``, the file now at the name,
        shows the merge; where they overlap they are kept as a conflict copy. Nothing
        written is dropped (on a local filesystem these writes go to a file without a
        name).

        Raises:
            RefusedWrite: the store refused the content (kept under ``rejected/``).
        """
        data = node.working.pending()
        memory, target = node.memory, node.attachment
        assert data is not None
        assert memory is not None
        assert target is not None
        path = self._table.memory_path(live)
        try:
            text = content_from_bytes(data)
        except MemfsError as exc:
            self.reject(node, data, exc)
        merged = await self.merger.merge(
            target.store_id, memory.id, node.working.base_sha256, data, path=path
        )
        if merged is None:
            await self._conflict_copy(
                node, target, path, text, data,
                why="was replaced on this mount while open for writing; what was written "
                    "to it since",
            )
            node.working.unchanged()
            return
        self._wrote(merged.memory)
        node.working.merged(merged.memory.content_sha256, merged.data)
        if live.memory is not None and live.memory.id == memory.id:
            self._table.set_memory(live, merged.memory)
            if not live.working.dirty:
                live.working.reset_to_head(merged.memory.content_sha256)
            self._table.notice(Notice(live.inode))
        log.info("merged what was written to %s while it was replaced on this mount "
                 "(version %s)", path, merged.memory.memory_version_id)

    def _follow_move(self, node: Node, memory: Memory) -> None:
        """After a commit by id: a memory moved elsewhere while ``node`` was open was
        written at its new path, so the tree shows it there (its feed entry is this
        mount's own and changes nothing), and the old name is stale for the kernel."""
        if (
            node.parent is None
            or node.placement.parked
            or self._table.memory_path(node) == memory.path
        ):
            return
        node.placement.went_stale()
        old_parent = node.parent
        self._table.unlink(node)
        self._table.place(node)
        self._table.prune(old_parent)
        self._table.retry_shadowed()

    async def drop_refused_create(self, node: Node) -> None:
        """The last close of a file whose ``O_EXCL`` claim never got content and whose
        every write was refused (or whose process failed on another file: see
        :meth:`memfs.fuse.handles.Handles.refuse_write`): the claim is taken back, as a new
        file in that situation leaves nothing (SPEC §4; ``cp`` of a binary file)."""
        if node.working.claimed and node.working.only_refused and not node.placement.parked:
            await self._take_back_claim(node)

    async def _take_back_claim(self, node: Node) -> None:
        """Erases the empty memory of ``node``'s ``O_EXCL`` claim (``Backend.discard_created``:
        erased on an embedded mount, soft-deleted on a remote one) and forgets the node."""
        memory = node.memory
        if memory is not None and node.attachment is not None:
            try:
                await self._backend.discard_created(node.attachment.store_id, memory.id)
            except NotFound:
                log.info("%s was already deleted elsewhere", memory.path)
            except MemfsError as exc:  # the claim stays; fsck and the user see an empty file
                log.warning("the claim on %s could not be taken back: %s", memory.path, exc)
        node.working.claim_taken_back()
        self._table.set_memory(node, None)
        self.reset_to_head(node)

    @staticmethod
    def settles_at_last_close(node: Node, refusal: Exception | None) -> bool:
        """Whether the last close of ``node`` (a release) has a save to settle: one that
        failed (``refusal``), pending content, or a create whose every write was
        refused (see :meth:`last_close`)."""
        return refusal is not None or node.working.dirty or node.working.only_refused

    async def last_close(self, node: Node, refusal: Exception | None) -> None:
        """The last handle of ``node`` closed (release) with a save its flush did not
        settle: a failed save is aborted (SPEC §4; the refusal is only logged, release
        has no caller); content truncated or created and closed without a write, when
        flush could not tell the last descriptor, is committed; a create whose every
        write was refused is taken back (:meth:`drop_refused_create`).

        Raises:
            RefusedWrite: the commit was refused (its bytes are kept).
        """
        if refusal is not None:
            with contextlib.suppress(RefusedWrite):
                await self.abort(node, refusal)
        elif node.working.dirty:
            await self.commit(node)
        else:
            await self.drop_refused_create(node)

    def release_clean(self, node: Node) -> None:
        """Frees the content of a closed, clean file the store holds (it stays in the
        cache); the next open starts from the head."""
        if node.open_count == 0 and not node.working.dirty and node.memory is not None:
            node.working.release(node.memory.content_sha256)

    async def abort(self, node: Node, refusal: Exception) -> NoReturn:
        """A save that had a write or ``ftruncate`` refused (SPEC §4 "a save is all or
        nothing"): nothing of it is committed. The pending bytes (what was accepted
        before and after the refusal) are kept under ``rejected/`` and counted by
        ``memfs status``; the file shows its head again byte for byte, or disappears
        when this save created it (an ``O_EXCL`` claim is taken back).

        Raises:
            RefusedWrite: always, with ``refusal`` as its cause (the close's errno).
        """
        if node.working.refusal is None and not node.working.dirty:
            # Aborted already (another close of the same descriptor): report only.
            raise RefusedWrite(str(refusal), cause=refusal) from refusal
        pending = node.working.buffer if node.working.dirty else None
        path = self._table.display_path(node)
        code = errno.errorcode[errno_for(refusal)]
        saved = ""
        if pending:
            saved = str(save_rejected(self._session_id, node.name, bytes(pending)))
        if saved:  # something to recover: a warning, as for a write refused at close
            log.warning("save of %s failed (%s: %s); nothing of it was committed, its "
                        "accepted bytes are kept in %s", path, code, refusal, saved)
        else:  # nothing was accepted: the errno told the writer everything
            log.info("save of %s failed (%s: %s); nothing was written", path, code, refusal)
        self._status.record_rejected(path, code, saved, str(refusal))
        if node.working.claimed and not node.placement.parked:
            await self._take_back_claim(node)
        else:
            self.reset_to_head(node)
        raise RefusedWrite(str(refusal), cause=refusal) from refusal

    def created(self, node: Node, memory: Memory) -> None:
        """New file ``node`` was created in the store as ``memory`` (empty) by this
        mount, before any content (an ``O_EXCL`` create's claim, SPEC §4)."""
        node.placement.created()
        self._table.set_memory(node, memory)
        self._wrote(memory)
        node.working.claim(memory.content_sha256)
        self._reader.remember(memory.blob_key, b"", memory.content_sha256)
        self._table.filled_below(node)

    def linked(self, node: Node, memory: Memory, data: bytes, *, created: bool) -> None:
        """New file ``node`` is ``link(2)``'s copy: it shows ``memory``, which holds
        ``data`` (``created``: this mount created it, rather than reviving its own
        recent delete of the name)."""
        if created:
            node.placement.created()
        self._table.set_memory(node, memory)
        self._wrote(memory)
        node.working.release(memory.content_sha256)
        self._reader.remember(memory.blob_key, data)
        self._table.filled_below(node)

    def revived(self, node: Node, memory: Memory) -> None:
        """New file ``node`` took back this mount's own recent delete of its name
        (``O_EXCL`` create, SPEC §4 same name, same memory): it shows ``memory`` and
        holds the name as a claim, empty to its writer."""
        self._table.set_memory(node, memory)
        node.working.claim_revived(memory.content_sha256, size_bytes=memory.content_size_bytes)
        self._table.filled_below(node)

    def _to_commit(self, node: Node) -> bytes | None:
        """The bytes a commit of ``node`` writes, or None when it writes nothing (then
        the working copy says so). Raises RefusedWrite (the store was deleted)."""
        working = node.working
        data = working.pending()
        if data is None:
            working.unchanged()
            return None
        if node.parent is None:
            if node.attachment is not None and node.attachment.deleted:
                # The store was deleted while this was pending: refused like the
                # content of a new file, and kept (SPEC §4: never silently dropped).
                self.reject(node, data, ReadOnly(f"store {node.attachment.name!r} was deleted"))
            working.unchanged()  # unlinked while open: the content went with its last name
            return None
        if is_local_scratch(node):
            return None  # scratch content lives only in the mount (SPEC §4 atomic save)
        if node.memory is None and working.only_refused:
            # A new file whose every write was refused leaves nothing (SPEC §4: a
            # refused write changes nothing; the refusal was reported at write).
            self.reset_to_head(node)
            return None
        if node.stored and sha256_hex(data) == working.base_sha256:
            working.unchanged()  # SPEC §4: none when unchanged
            return None
        return data

    async def _write_content(
        self, node: Node, target: Attachment, path: str, text: Content
    ) -> Memory:
        """The one store call of a commit: create, copy-up, reuse a parked memory, or
        update with the opened digest as precondition."""
        if node.memory is None:
            holder = self._table.parked_holder(target, path)
            if holder is None:
                revived = await self.revive(target, path, text)
                if revived is not None:
                    return revived  # SPEC §4 same name, same memory (tar -x, unzip -o)
                node.placement.created()
                return await self._backend.create_memory(
                    target.store_id, path, text, metadata=node.working.pending_metadata or None
                )
            # vim's save: `file` was renamed to `file~`, a new `file` written. The memory
            # still at `path` gets the new content: one version, id kept.
            return await self.take_over_parked(holder, target, text)
        if target is not node.attachment:
            # Flat layout copy-up: the file of a read-only store is written to the
            # default store; the read-only one stays, shadowed by the copy.
            shadowed_attachment, shadowed_memory = node.attachment, node.memory
            memory = await self._backend.create_memory(
                target.store_id, path, text, metadata=dict(node.memory.metadata) or None
            )
            self._table.set_memory(node, memory)
            assert shadowed_attachment is not None
            self._table.add_memory(shadowed_attachment, shadowed_memory)
            return memory
        if node.working.claimed:
            # SPEC §4: the claim becomes the memory's first version, holding this content.
            filled = await self._backend.fill_claim(
                target.store_id, node.memory.id, text,
                metadata=node.working.pending_metadata or None,
            )
            if filled is not None:
                return filled
        return await self._backend.update_memory(
            target.store_id,
            node.memory.id,
            MemoryChange(content=text, expected_sha256=node.working.base_sha256),
        )

    async def revive(
        self, target: Attachment, path: str, text: Content | None
    ) -> Memory | None:
        """SPEC §4 "same name, same memory": the memory this mount deleted at ``path``
        moments ago (:data:`FOLD_WINDOW_S`) comes back, with ``text`` (when given) as one
        ``modified`` version, none when unchanged: ``tar -x``, ``unzip -o`` and ``git
        checkout`` unlink a file and create it again. None when there is none to revive
        (or the backend can't: a new memory is created then)."""
        departed = self._departed.pop((target.store_id, path), None)
        if departed is None or time.monotonic() - departed[1] > FOLD_WINDOW_S:
            return None
        try:
            memory = await self._backend.revive(target.store_id, departed[0], text)
        except NotFound:
            return None
        if memory is not None:
            log.info("%s was created again by this mount moments after its delete: the "
                     "memory %s keeps its id", path, memory.id)
        return memory
    async def _merge(self, node: Node, target: Attachment, path: str, data: bytes) -> bool:
        """The update of ``node`` with ``data`` failed its precondition: merges it with
        the change made elsewhere (:mod:`memfs.fuse.merging`, SPEC §4 concurrent
        writers). Returns False when both must be kept instead."""
        memory = node.memory
        if memory is None or target is not node.attachment:
            return False
        merged = await self.merger.merge(
            target.store_id, memory.id, node.working.base_sha256, data, path=path
        )
        if merged is None:
            return False
        current = bytes(node.working.buffer) if node.working.buffer is not None else data
        holding = self.merger.rebase(data, merged, current)
        self._table.set_memory(node, merged.memory)
        self._wrote(merged.memory)
        if holding is None:
            # Writes made while the merge was committed overlap the other writer's
            # change: they are kept beside it, the file shows the merge.
            node.working.merged(merged.memory.content_sha256, merged.data)
            await self.keep_both(node, target, path, content_from_bytes(current), current)
            return True
        node.working.merged(merged.memory.content_sha256, merged.data, holding=holding)
        self._table.notice(Notice(node.inode))  # the kernel's pages hold this save
        self._follow_move(node, merged.memory)
        return True

    async def take_over_parked(
        self, holder: Node, target: Attachment, text: str | Content
    ) -> Memory:
        """Gives the memory that parked file ``holder`` keeps at its old path the new
        content ``text`` (one version, id kept); ``holder``'s bytes then exist only in
        the mount."""
        assert holder.memory is not None
        await self._reader.ensure_loaded(holder)
        memory = await self._backend.update_memory(
            target.store_id,
            holder.memory.id,
            MemoryChange(
                content=text,
                expected_sha256=holder.working.opened_sha256 or holder.memory.content_sha256,
            ),
        )
        self._table.set_memory(holder, None)
        holder.working.detached()
        return memory

    async def keep_both(
        self,
        node: Node,
        target: Attachment,
        path: str,
        text: str | Content,
        data: bytes,
        *,
        follow_buffer: bool = False,
    ) -> None:
        """SPEC §4 concurrent writers: the head keeps the other content, this one is
        created beside it as a conflict copy; the node shows the head again.

        Args:
            follow_buffer: ``data`` was taken from ``node``'s working copy (a close).
                Writes that other handles of the node made meanwhile (while this called
                the store) go into the conflict copy too before the node is reset, so
                they are not lost with the buffer.
        """
        copy, copy_node = await self._conflict_copy(
            node, target, path, text, data,
            why="was changed by another writer after this writer read it (an open, or the "
                "source of an atomic save); the head keeps their content, this writer's",
        )
        head: Memory | None = None
        if node.memory is not None:
            try:
                head = await self._backend.get_memory(target.store_id, node.memory.id)
            except NotFound:
                head = None
        sent = data
        buffer = node.working.buffer
        while follow_buffer and buffer is not None and bytes(buffer) != sent:
            latest = bytes(buffer)
            try:
                copy = await self._backend.update_memory(
                    target.store_id, copy.id, MemoryChange(content=content_from_bytes(latest))
                )
            except (MemfsError, BackendUnavailable) as exc:
                self.reject(node, latest, exc)
            self._table.set_memory(copy_node, copy)
            self._reader.remember(copy.blob_key, latest)
            sent = latest
            buffer = node.working.buffer
        self.reset_to_head(node, head)

    async def _conflict_copy(
        self, node: Node, target: Attachment, path: str, text: str | Content, data: bytes,
        *, why: str,
    ) -> tuple[Memory, Node]:
        """Creates ``<name>.conflict-<UTC timestamp>-<session>.<ext>`` beside ``path``
        holding ``text`` (``data``, the same as bytes), logged as ``conflict: <path>
        <why> is saved as <copy>`` and counted by ``memfs status`` (SPEC §4 concurrent
        writers).

        Returns:
            The copy's memory and node.

        Raises:
            RefusedWrite: the store refused the copy (``data`` is kept under
                ``rejected/``).
        """
        directory, _, name = path.rpartition("/")
        copy_path = join_path(directory or "/", conflict_name(name, utcnow(), self._session_id))
        try:
            copy = await self._backend.create_memory(target.store_id, copy_path, text)
        except MemfsError as exc:
            self.reject(node, data, exc)
        copy_node = self._table.add_memory(target, copy)
        self._reader.remember(copy.blob_key, data)
        log.warning("conflict: %s %s is saved as %s", path, why, copy_path)
        self._status.record_conflict(path, copy_path)
        return copy, copy_node

    def reset_to_head(self, node: Node, head: Memory | None = None) -> None:
        """Forgets pending content: ``node`` shows its head (``head`` if given) again, or
        disappears if it never was stored."""
        if head is not None:
            self._table.set_memory(node, head)
        if node.memory is not None:
            node.working.reset_to_head(node.memory.content_sha256)
            self._table.notice(Notice(node.inode))
        else:
            node.working.reset_to_head()
            parent = node.parent
            self._table.remove(node)
            self._table.prune(parent)
            self._table.retry_shadowed()

    def reject(self, node: Node, data: bytes, exc: Exception) -> NoReturn:
        """Keeps refused content under ``rejected/``, logs where, resets the node and
        raises RefusedWrite (SPEC §4: never silently dropped)."""
        saved = save_rejected(self._session_id, node.name, data)
        path = self._table.display_path(node)
        code = errno.errorcode[errno_for(exc)]
        log.warning("write to %s refused (%s: %s); its content is kept in %s",
                    path, code, exc, saved)
        self._status.record_rejected(path, code, str(saved), str(exc))
        self.reset_to_head(node)
        if node.working.claimed:
            # The first content of an O_EXCL create, refused at its close (a bad record
            # header, zeros left by an extending truncate): nothing was accepted, so the
            # last release takes the claim back, as for writes refused at write(2).
            node.working.refuse()
        raise RefusedWrite(str(exc), cause=exc) from exc

    def report_lost(self, node: Node) -> NoReturn:
        """The close after pending changes were discarded (their base was redacted
        elsewhere): the file shows its head; the close reports why."""
        lost = node.working.lost
        assert lost is not None
        self.reset_to_head(node)
        raise RefusedWrite(str(lost), cause=lost)

    def save_scratch(self) -> list[dict[str, str]]:
        """Keeps the bytes of every scratch file still in the tree under ``rejected/``
        (daemon shutdown): scratch names never reach the store (SPEC §4 atomic save),
        but nothing a user wrote is silently lost. Each one is logged as a WARNING.

        Returns:
            ``{"at", "path", "saved_to"}`` per saved file (for ``memfs status``).
        """
        saved: list[dict[str, str]] = []
        for node in list(self._table.files_below(self._table.root)):
            buffer = node.working.buffer
            if not is_local_scratch(node) or not buffer:
                continue
            if node.placement.parked and not node.working.dirty:
                continue  # its content is still in the store at the memory's path
            display = self._table.display_path(node)
            try:
                kept = save_rejected(self._session_id, node.name, bytes(buffer))
            except OSError as exc:
                log.error("scratch file %s (%d bytes) could not be saved: %s",
                          display, len(buffer), exc)
                continue
            log.warning("scratch file %s was never saved to memory (scratch names stay in "
                        "the mount); its %d bytes are kept in %s",
                        display, len(buffer), kept)
            saved.append({"at": format_timestamp(utcnow()), "path": display,
                          "saved_to": str(kept)})
        return saved

    async def delete_memory(self, attachment: Attachment, memory: Memory) -> None:
        """SPEC §4 ``rm``: a soft delete; already gone elsewhere counts as done. The
        delete is remembered for :data:`FOLD_WINDOW_S`: a file created again at the same
        path by this mount keeps the memory (:meth:`revive`)."""
        try:
            await self._backend.delete_memory(attachment.store_id, memory.id)
        except NotFound:
            log.info("%s was already deleted elsewhere", memory.path)
            return
        self._departed_now(attachment, memory)

    def _departed_now(self, attachment: Attachment, memory: Memory) -> None:
        """Remembers this mount's soft delete of ``memory`` (see :meth:`revive`)."""
        key = (attachment.store_id, memory.path)
        self._departed[key] = (memory.id, time.monotonic())
        self._departed.move_to_end(key)
        if len(self._departed) > DEPARTURES_KEPT:
            self._departed.popitem(last=False)

    async def erase_temporary(self, attachment: Attachment, memory: Memory) -> None:
        """``rm`` of a temporary file this mount created whose content now lives at
        another name: the second half of a no-clobber rename (``link(temp, new)`` then
        ``unlink(temp)``, SPEC §4). It leaves nothing when every version of it is this
        mount's own and recent (:data:`FOLD_WINDOW_S`) and no snapshot or fork needs
        them; otherwise it is soft-deleted as ``rm`` would."""
        try:
            erased = await self._backend.erase_temporary(attachment.store_id, memory.id)
        except NotFound:
            log.info("%s was already deleted elsewhere", memory.path)
            return
        if not erased:
            self._departed_now(attachment, memory)
