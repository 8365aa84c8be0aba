"""The request handlers of a memfs mount: SPEC §4 mapping and errno tables.

Owns :class:`Operations`, the pyfuse3 handlers, and nothing below them. Every handler
has one shape (S3QL's): log, guard (read-only, kinds, names), resolve (inode table), at
most one call into the layer below, balance lookup counts, return attributes. Lower
layers raise typed exceptions; the :func:`memfs.fuse.errno_table.handler` decorator
turns them into ``FUSEError`` through the one table in :mod:`memfs.fuse.errno_table`,
so handlers never pick an errno themselves. State changes belong to the layers below:
a node's content to its working copy (:mod:`memfs.fuse.content`), its place in the
namespace to its placement (:mod:`memfs.fuse.namespace`).

The layers below, one concern each, are listed in :mod:`memfs.fuse`.

Content model (SPEC §4 semantics): a file's content lives in its node's working copy
while open, shared by every handle (close-to-open consistency). ``flush`` (every
``close``) and ``fsync`` of a writable handle commit changed content as exactly one
version; ``release`` only frees. A write is refused early, in SPEC §4's order of
refusals: read-only (EROFS), then a byte that can never be in text content (EILSEQ,
:func:`memfs.core.rules.check_content_fragment`), then beyond 102,400 bytes (EFBIG). A
refused write or truncate changes nothing and fails its whole save (SPEC §4 "a save is
all or nothing"): the close commits nothing of it and reports the refusal. Content the
store refuses as a whole at close (invalid UTF-8) is kept under ``rejected/`` and the
close reports the errno.

Kernel caches are invalidated by :meth:`Operations.deliver_notices` (a thread of its
own: invalidating from inside a handler could deadlock on the inode being handled).

Limitations: a hard link is a copy of the content at link time (SPEC §4: the
no-clobber rename and backup links work); no symlinks or special files (EPERM); no
``RENAME_EXCHANGE``
(EINVAL); a flat layout has no whiteouts, so removing a file of the default store shows
a read-only store's file of the same path again, if there is one.
"""

from __future__ import annotations

import bisect
import logging
import os
import time
from collections.abc import Sequence
from typing import Any

import pyfuse3
import trio

from memfs.backend import Backend
from memfs.core.errors import (
    InvalidInput,
    MemfsError,
)
from memfs.core.rules import (
    is_scratch_name,
    validate_directory_path,
    validate_path,
    validate_segment,
)
from memfs.fuse.attributes import ATTR_TIMEOUT_S, ENTRY_TIMEOUT_S, Attributes
from memfs.fuse.cache import BlobCacheStatistics
from memfs.fuse.capabilities import KERNEL_CACHE, directory_reply, file_reply
from memfs.fuse.commits import Committer
from memfs.fuse.errno_table import handler
from memfs.fuse.errors import (
    DirectoryNotEmpty,
    EntryExists,
    FilesystemError,
    IsADirectory,
    NoSuchEntry,
    NotADirectory,
    NotSupported,
    RefusedWrite,
)
from memfs.fuse.feed import CHANGE_WAIT_S, ChangeFollower
from memfs.fuse.handles import Handles
from memfs.fuse.inodes import Attachment, InodeTable, Node, Notice
from memfs.fuse.names import check_fragment, check_size, decode_name, join_path
from memfs.fuse.notices import KernelNotices
from memfs.fuse.reading import ContentReader
from memfs.fuse.renames import Renamer
from memfs.fuse.room import RoomCheck
from memfs.fuse.sandbox import MountAccess
from memfs.fuse.status import MountStatus
from memfs.fuse.xattrs import Xattrs

__all__ = [
    "ATTR_TIMEOUT_S",
    "CHANGE_WAIT_S",
    "ENTRY_TIMEOUT_S",
    "Operations",
]

log = logging.getLogger(__name__)

class Operations(pyfuse3.Operations):
    """The pyfuse3 handlers of one mount.

    Args:
        backend: the store.
        table: the inode table, built by :meth:`load`.
        session_id: the session writes are attributed to (names rejected-write
            directories and conflict copies).
        status: the mount's status file.
        memory_limit: live memories allowed per store (for ``statfs``).
    """

    supports_dot_lookup = True
    enable_writeback_cache = False  # every write reaches us at once (EFBIG/EILSEQ at write)

    def __init__(
        self,
        backend: Backend,
        table: InodeTable,
        *,
        session_id: str,
        status: MountStatus,
        memory_limit: int,
        access: MountAccess | None = None,
    ) -> None:
        super().__init__()
        self._backend = backend
        self._table = table
        self._session_id = session_id
        self.status = status
        self._handles = Handles()
        # Serializes every change of the store and the tree changes it implies, between
        # handlers and the change feed. Never held while calling into the kernel.
        self._lock = trio.Lock()
        self._notices = KernelNotices(table)
        self._room = RoomCheck(backend, table)
        self.reader = ContentReader(backend)
        self.committer = Committer(backend, table, self.reader, status, session_id)
        self._renamer = Renamer(backend, table, self.reader, self.committer, self._has_writer)
        self._xattrs = Xattrs(backend, table)
        self.follower = ChangeFollower(
            backend, table, self.reader, status, self._lock, self._has_writer,
            self._send_notices, wrote_version=self.committer.wrote_version,
            notices_delivered=self._notices.delivered,
        )
        self._flushes = {"read_only": 0, "writable": 0}  # FLUSH requests (memfs status)
        # Owner and modes every inode shows (SPEC §4 Sandboxes: --uid/--gid/--umask).
        self._attributes = Attributes(table, access or MountAccess(), memory_limit)

    # ------------------------------------------------------------ start, stop

    async def load(self) -> None:
        """Loads every attached store's tree (metadata only, one query per store).

        The change-feed position is read first, so nothing written meanwhile is missed
        (replaying a change is harmless).
        """
        for attachment in sorted(self._table.attachments, key=lambda a: a.priority):
            attachment.seq = await self._backend.last_change_seq(attachment.store_id)
            if attachment.as_of is not None:  # SPEC §10: the store as it was, read once
                memories = await self._backend.list_memories_at(attachment.as_of)
            else:
                memories = await self._backend.list_memories(attachment.store_id)
            for memory in memories:
                self._table.add_memory(attachment, memory)
        self._table.take_notices()  # the kernel knows nothing yet

    def init(self) -> None:
        log.debug("FUSE session initialised")

    async def commit_pending(self) -> None:
        """Commits content still pending in open files (daemon shutdown: ``memfs umount``
        flushes pending writes). Failures are kept under ``rejected/`` and logged."""
        async with self._lock:
            for handle in self._handles.files():
                node = handle.node
                if handle.writable and node.working.dirty:
                    try:
                        await self.committer.commit(node)
                    except (MemfsError, FilesystemError) as exc:
                        log.warning("pending write to %s not committed: %s",
                                    self._table.display_path(node), exc)

    def save_scratch(self) -> list[dict[str, str]]:
        """Keeps every scratch file's bytes (daemon shutdown): see
        :meth:`memfs.fuse.commits.Committer.save_scratch`."""
        return self.committer.save_scratch()

    def _has_writer(self, node: Node) -> bool:
        """Whether ``node`` has a writable handle open."""
        return self._handles.has_writer(node)

    def cache_statistics(self) -> BlobCacheStatistics:
        """The in-memory content cache of this mount (``memfs status``)."""
        return self.reader.statistics()

    def kernel_cache_status(self) -> dict[str, Any]:
        """What this mount lets the kernel cache (:mod:`memfs.fuse.capabilities`), the
        FLUSH requests it got,
        by kind of handle (``memfs status``; a read-only open sends none when
        ``noflush`` is on), and how many memories it fetched from the store to apply
        changes of the feed (``change_fetches``: changes made elsewhere; its own
        writes need none)."""
        return {
            "noflush": KERNEL_CACHE.noflush,
            "cached_listings": KERNEL_CACHE.cached_listings,
            "entry_timeout_s": ENTRY_TIMEOUT_S,
            "attr_timeout_s": ATTR_TIMEOUT_S,
            "flushes": dict(self._flushes),
            "change_fetches": self.follower.fetches,
        }

    # ---------------------------------------------------------------- attributes

    def _remember(self, node: Node) -> pyfuse3.EntryAttributes:
        """Attributes of ``node`` handed to the kernel by name (its lookup count goes up
        by one: :meth:`memfs.fuse.inodes.InodeTable.handed_out`)."""
        self._table.handed_out(node)
        return self._attributes.of(node)

    def _directory(self, inode: int) -> Node:
        node = self._table.get(inode)
        if not node.is_dir:
            raise NotADirectory(f"{self._table.display_path(node)} is not a directory")
        return node

    def _new_entry_name(self, parent: Node, raw_name: bytes) -> tuple[str, str]:
        """A valid new name in ``parent`` and its store path (SPEC §1 path rules).

        Raises:
            PathTooLong: name > 255 bytes or path > 1,024 bytes (ENAMETOOLONG).
            InvalidPath: a name the path rules refuse (EINVAL).
            EntryExists: the name is taken.
        """
        name = decode_name(raw_name)
        validate_segment(name)
        if name in parent.children:
            raise EntryExists(f"{name!r} exists")
        path = join_path(self._table.memory_path(parent), name)
        validate_path(path)
        return name, path

    # ------------------------------------------------------------------ lookups

    @handler
    async def lookup(
        self, parent_inode: int, name: bytes, ctx: pyfuse3.RequestContext
    ) -> pyfuse3.EntryAttributes:
        parent = self._directory(parent_inode)
        if name == b".":
            node = parent
        elif name == b"..":
            node = parent.parent or self._table.root
        else:
            text = decode_name(name)
            # A known name may be gone or moved elsewhere (O_EXCL after a delete there
            # revalidates it): catch up where it costs no worker thread.
            await self.follower.catch_up(self._table.attachments_below(parent), local_only=True)
            try:
                node = self._table.child(parent, text)
            except NoSuchEntry:
                # SPEC §4 close-to-open: a file just created by another embedded mount
                # is found by the first lookup, not a feed poll later.
                # (The feed task may have applied it while this looked: ask again.)
                await self.follower.catch_up(self._table.attachments_below(parent))
                node = self._table.child(parent, text)
        return self._remember(node)

    async def forget(self, inode_list: Sequence[tuple[int, int]]) -> None:
        try:
            for inode, count in inode_list:
                self._table.forget(inode, count)
        except Exception:  # forget must not raise (pyfuse3 contract)
            log.exception("forget(%r) failed", inode_list)

    @handler
    async def getattr(self, inode: int, ctx: pyfuse3.RequestContext) -> pyfuse3.EntryAttributes:
        return self._attributes.of(self._table.get(inode))

    @handler
    async def setattr(
        self,
        inode: int,
        attr: pyfuse3.EntryAttributes,
        fields: pyfuse3.SetattrFields,
        fh: int | None,
        ctx: pyfuse3.RequestContext,
    ) -> pyfuse3.EntryAttributes:
        node = self._table.get(inode)
        if fh is None:  # by path (truncate(2), chmod(2), …): the path may be stale
            await self.follower.revalidate(node)
        if fields.update_size:
            if node.is_dir:
                raise IsADirectory(f"{self._table.display_path(node)} is a directory")
            self._table.content_target(node)
            try:
                check_size(self._table, node, attr.st_size)
            except MemfsError as exc:
                self._handles.refuse_truncate(node, fh, exc)
                raise
            await self.reader.ensure_loaded(node)
            if node.working.truncate(attr.st_size):
                node.mtime_ns = time.time_ns()
                handle = self._handles.get(fh)
                if handle is not None:
                    handle.wrote = True  # ftruncate(2): commit at close
            if not self._has_writer(node):
                # truncate(2) of a file no one has open for writing: one version now.
                async with self._lock:
                    await self.committer.commit(node)
                    self.committer.release_clean(node)
                self._table.notice_if_stale(node)
                self._send_notices()
        if (
            fields.update_mode or fields.update_uid or fields.update_gid
            or fields.update_atime or fields.update_mtime
        ):
            # SPEC §4: chmod, chown, utimens are accepted and ignored (cp -p, rsync -a),
            # except on what is read-only.
            if node.is_dir:
                self._table.write_target(node)
            else:
                self._table.content_target(node)
        return self._attributes.of(node)

    @handler
    async def statfs(self, ctx: pyfuse3.RequestContext) -> pyfuse3.StatvfsData:
        return self._attributes.statfs()

    # ------------------------------------------------------ things memfs refuses

    @handler
    async def mknod(
        self, parent_inode: int, name: bytes, mode: int, rdev: int, ctx: pyfuse3.RequestContext
    ) -> pyfuse3.EntryAttributes:
        raise NotSupported("special files can't be stored in memfs")

    @handler
    async def symlink(
        self, parent_inode: int, name: bytes, target: bytes, ctx: pyfuse3.RequestContext
    ) -> pyfuse3.EntryAttributes:
        raise NotSupported("symbolic links can't be stored in memfs")

    @handler
    async def link(
        self, inode: int, new_parent_inode: int, new_name: bytes, ctx: pyfuse3.RequestContext
    ) -> pyfuse3.EntryAttributes:
        # SPEC §4: the new name is a copy of the content at link time (the no-clobber
        # rename and backup links work); see Renamer.link.
        node = self._table.get(inode)
        if node.is_dir:
            raise NotSupported("directories can't be hard-linked")
        await self.follower.revalidate(self._directory(new_parent_inode))
        async with self._lock:
            new_parent = self._directory(new_parent_inode)
            copy = await self._renamer.link(node, new_parent, decode_name(new_name))
            attributes = self._remember(copy)
        self._send_notices()
        return attributes

    # -------------------------------------------------------------- directories

    @handler
    async def mkdir(
        self, parent_inode: int, name: bytes, mode: int, ctx: pyfuse3.RequestContext
    ) -> pyfuse3.EntryAttributes:
        async with self._lock:
            parent = self._directory(parent_inode)
            self._table.write_target(parent)
            text_name, path = self._new_entry_name(parent, name)
            validate_directory_path(path)  # one a file could still go in (ENAMETOOLONG)
            # SPEC §4: a directory is held by the mount until a file is created in it.
            node = self._table.new_directory(parent, text_name, held=True)
            attributes = self._remember(node)
        self._send_notices()
        return attributes

    @handler
    async def rmdir(self, parent_inode: int, name: bytes, ctx: pyfuse3.RequestContext) -> None:
        await self.follower.revalidate(self._directory(parent_inode))  # the name as it is now
        async with self._lock:
            parent = self._directory(parent_inode)
            node = self._table.child(parent, decode_name(name))
            if not node.is_dir:
                raise NotADirectory(f"{self._table.display_path(node)} is not a directory")
            self._table.check_writable(node)
            if node.children:
                raise DirectoryNotEmpty(f"{self._table.display_path(node)} is not empty")
            self._table.remove(node)
            self._table.hold_if_empty(parent)
        self._send_notices()

    @handler
    async def opendir(self, inode: int, ctx: pyfuse3.RequestContext) -> int | pyfuse3.FileInfo:
        directory = self._directory(inode)
        # SPEC §4 close-to-open for listings too, where the store's counter is read on
        # this thread (a SQLite file): changes committed elsewhere are applied first,
        # and a listing the kernel may keep (cached listings: memfs.fuse.capabilities)
        # is dropped at this open when the children changed since it was handed out;
        # otherwise the feed's invalidation refreshes it (tens of ms later).
        await self.follower.revalidate(directory, local_only=True)
        fresh = directory.listed_mtime_ns == directory.mtime_ns
        return directory_reply(self._handles.open_listing(directory), keep_cache=fresh)

    @handler
    async def readdir(self, fh: int, start_id: int, token: pyfuse3.ReaddirToken) -> None:
        listing = self._handles.listing(fh)
        directory = listing.directory
        if start_id == 0 or listing.entries is None:
            # One sorted snapshot per listing (rewinddir(3) takes a new one), so a big
            # directory costs O(n log n) once, not at each of the kernel's pages.
            # next_id is the child's inode: inodes only grow, so the cursor is stable.
            directory.listed_mtime_ns = directory.mtime_ns
            listing.entries = sorted(directory.children.values(), key=lambda node: node.inode)
            listing.inodes = [child.inode for child in listing.entries]
        assert listing.inodes is not None
        for child in listing.entries[bisect.bisect_right(listing.inodes, start_id):]:
            if child.parent is not directory or directory.children.get(child.name) is not child:
                continue  # removed or renamed since the snapshot
            name = child.name.encode("utf-8")
            if not pyfuse3.readdir_reply(token, name, self._attributes.of(child), child.inode):
                break
            self._table.handed_out(child)

    @handler
    async def releasedir(self, fh: int) -> None:
        self._handles.close_listing(fh)

    @handler
    async def fsyncdir(self, fh: int, datasync: bool) -> None:
        return None  # directories hold nothing of their own to make durable

    # -------------------------------------------------------------------- files

    @handler
    async def create(
        self, parent_inode: int, name: bytes, mode: int, flags: int, ctx: pyfuse3.RequestContext
    ) -> tuple[pyfuse3.FileInfo, pyfuse3.EntryAttributes]:
        async with self._lock:
            parent = self._directory(parent_inode)
            attachment = self._table.write_target(parent)
            text_name, path = self._new_entry_name(parent, name)
            await self._room.check(attachment, text_name, path)
            exclusive = (
                bool(flags & os.O_EXCL)
                and not is_scratch_name(text_name)
                and self._table.parked_holder(attachment, path) is None
            )
            # SPEC §4: O_EXCL is exclusive across every mount of the store: the create
            # commits a claim at once (an empty memory, or this mount's own delete of the
            # name moments ago taken back: same name, same memory); a second creator
            # elsewhere meets PathConflict (EEXIST).
            revived = await self.committer.revive(attachment, path, None) if exclusive else None
            memory = (
                await self._backend.create_memory(attachment.store_id, path, "")
                if exclusive and revived is None else None
            )
            node = self._table.new_file(parent, text_name, attachment)
            if revived is not None:
                self.committer.revived(node, revived)
            elif memory is not None:
                self.committer.created(node, memory)
            else:
                node.working.start_empty(dirty=True)  # a memory at its first close
            fh = self._handles.open_file(
                node, writable=True, append=bool(flags & os.O_APPEND), pid=ctx.pid
            )
            attributes = self._remember(node)
        self._send_notices()
        return pyfuse3.FileInfo(fh=fh, keep_cache=False), attributes

    @handler
    async def open(self, inode: int, flags: int, ctx: pyfuse3.RequestContext) -> pyfuse3.FileInfo:
        node = self._table.get(inode)
        if node.is_dir:
            raise IsADirectory(f"{self._table.display_path(node)} is a directory")
        await self.follower.revalidate(node)
        writable = (flags & os.O_ACCMODE) != os.O_RDONLY
        truncate = bool(flags & os.O_TRUNC)
        if writable or truncate:
            self._table.content_target(node)
        await self.reader.open_content(node, writable=writable, truncate=truncate)
        fh = self._handles.open_file(
            node, writable=writable, append=bool(flags & os.O_APPEND), pid=ctx.pid
        )
        if (
            not writable
            and node.memory is not None
            and node.attachment is not None
            and not node.attachment.immutable  # reading the past is no access today
        ):
            # SPEC §6: an open for reading is a read of a record (last_accessed).
            self._backend.note_access(node.attachment.store_id, [node.memory.id])
        # keep_cache only when the kernel's pages hold exactly what this open serves.
        keep_cache, kernel_stale = node.working.opened()
        if kernel_stale:
            # The kernel was last told of other content: its cached size is stale too.
            # Invalidated by the notice task, never from inside this handler.
            self._table.notice(Notice(node.inode, attr_only=True))
            self._send_notices()
        # The kernel clamps cached reads to the size it holds: if that may still be the
        # old size (a change from elsewhere whose invalidation is on its way), this open
        # reads around the page cache, or it could see the new content cut or padded.
        known = node.kernel_attributes
        direct = known is not None and known[0] != node.size_bytes
        if node.attachment is not None and node.attachment.immutable:
            # SPEC §10: an as-of file's content never changes; pages the kernel holds
            # of it stay good (an erasure removes the file and invalidates it).
            keep_cache, direct = True, False
        self._handles.file(fh).direct_io = direct
        # A read-only open has nothing to commit at close: its FLUSH is skipped
        # (noflush: memfs.fuse.capabilities).
        return file_reply(
            fh, keep_cache=keep_cache and not direct, direct_io=direct, read_only=not writable
        )

    @handler
    async def read(self, fh: int, off: int, size: int) -> bytes:
        handle = self._handles.file(fh)
        node = handle.node
        buffer = await self.reader.ensure_loaded(node)
        known = node.kernel_attributes
        if known is not None and not handle.direct_io and not node.working.dirty:
            if known[0] < len(buffer) and off + size > known[0]:
                # The kernel cuts this read at the size it holds: a change made
                # elsewhere reached the file after this open, and its invalidation is
                # still on its way. The reader gets the new content's first bytes only:
                # that, not the head, is what a save made from it was made on.
                self.reader.handed_out_prefix(node, known[0])
            elif node.working.cut_from_sha256 is not None and off + size >= len(buffer):
                # The kernel learnt the size since (its next read past the cut asked):
                # this read hands out the rest, the open has seen all of it.
                node.working.handed_out_whole()
        return bytes(buffer[off : off + size])

    @handler
    async def write(self, fh: int, off: int, buf: bytes) -> int:
        handle = self._handles.file(fh)
        node = handle.node
        self._table.content_target(node)
        if handle.append:
            end_of_content = len(await self.reader.ensure_loaded(node))
            if off != end_of_content:
                # The kernel's size was stale: so is the size it will cache after this.
                self._table.notice(Notice(node.inode, attr_only=True))
                self._send_notices()
            off = end_of_content
        try:  # SPEC §4 order of refusals: EROFS (above), then EILSEQ, then EFBIG
            check_fragment(node, buf, off)
            check_size(self._table, node, off + len(buf))
        except MemfsError as exc:
            self._handles.refuse_write(handle, exc)  # the whole save fails (SPEC §4)
            raise
        await self.reader.ensure_loaded(node)
        node.working.write(off, buf)
        node.mtime_ns = time.time_ns()
        node.kernel_attributes = None  # the kernel drops its size and times at a write
        handle.wrote = True
        return len(buf)

    @handler
    async def flush(self, fh: int) -> None:
        # close(2) of any descriptor of the handle. A handle that only truncated (O_TRUNC,
        # create) and wrote nothing is committed here too (SPEC §4 close-to-open), unless
        # its process still holds another descriptor of the file: the shell's `echo x > f`
        # opens, dup2()s onto stdout and closes the original descriptor before writing,
        # and that close must not make an empty version. The later close commits.
        handle = self._handles.file(fh)
        self._flushes["writable" if handle.writable else "read_only"] += 1
        if not handle.writable:
            return
        node = handle.node
        refusal = handle.refusal or node.working.refusal
        if refusal is not None:
            async with self._lock:
                try:
                    await self.committer.abort(node, refusal)
                finally:
                    self._table.notice_if_stale(node)
                    self._send_notices()
        if (
            handle.wrote
            or node.working.lost is not None
            or (node.working.dirty and not await self._handles.holds_descriptor(
                handle.pid, node, self.status.mountpoint
            ))
        ):
            await self._close_commit(node)

    @handler
    async def fsync(self, fh: int, datasync: bool) -> None:
        handle = self._handles.file(fh)
        refusal = handle.refusal or handle.node.working.refusal
        if refusal is not None:
            # The save failed (SPEC §4): nothing of it can become durable; the close
            # aborts it and reports the same.
            raise RefusedWrite(str(refusal), cause=refusal)
        if handle.writable:
            await self._close_commit(handle.node)

    async def _close_commit(self, node: Node) -> None:
        try:
            async with self._lock:
                if node.working.lost is not None:
                    self.committer.report_lost(node)
                elif node.working.dirty:
                    await self.committer.commit(node)
        finally:
            self._table.notice_if_stale(node)
            self._send_notices()

    @handler
    async def release(self, fh: int) -> None:
        handle = self._handles.close_file(fh)
        if handle is None:
            return
        node = handle.node
        try:
            refusal = handle.refusal or node.working.refusal
            if node.open_count == 0 and self.committer.settles_at_last_close(node, refusal):
                # flush could not settle the save (see flush): settled now, and a
                # refusal only logged and kept (release has no caller).
                async with self._lock:
                    await self.committer.last_close(node, refusal)
            elif node.open_count == 0:
                self.follower.last_close(node)
        finally:
            if node.open_count == 0:
                node.working.closed()
                self.committer.release_clean(node)
                self._table.release_if_unused(node)
            self._table.notice_if_stale(node)
            self._send_notices()

    # ------------------------------------------------------------ unlink, rename

    @handler
    async def unlink(self, parent_inode: int, name: bytes, ctx: pyfuse3.RequestContext) -> None:
        # SPEC §4: the name as it is now, not as the kernel last saw it: a file moved
        # elsewhere is not deleted by its old name, and one deleted and made again
        # elsewhere is the one removed.
        await self.follower.revalidate(self._directory(parent_inode))
        async with self._lock:
            parent = self._directory(parent_inode)
            node = self._table.child(parent, decode_name(name))
            if node.is_dir:
                raise IsADirectory(f"{self._table.display_path(node)} is a directory")
            if node.memory is not None:
                attachment = self._table.check_writable(node)
                if (
                    node.placement.linked_away
                    and node.placement.created_here
                    and not node.working.dirty
                ):
                    # link(temp, new) + unlink(temp): a no-clobber rename (SPEC §4); the
                    # content lives on at the new name.
                    await self.committer.erase_temporary(attachment, node.memory)
                else:
                    await self.committer.delete_memory(attachment, node.memory)
            self._table.remove(node)
            self._table.hold_if_empty(parent)
            self._table.retry_shadowed()
        self._send_notices()

    @handler
    async def rename(
        self,
        parent_inode_old: int,
        name_old: bytes,
        parent_inode_new: int,
        name_new: bytes,
        flags: int,
        ctx: pyfuse3.RequestContext,
    ) -> None:
        if flags & pyfuse3.RENAME_EXCHANGE:
            # rename(2): EINVAL "RENAME_EXCHANGE ... not supported by the filesystem".
            raise InvalidInput("rename with RENAME_EXCHANGE is not supported")
        # The names as they are now (SPEC §4 close-to-open):
        await self.follower.revalidate(self._directory(parent_inode_old))
        if parent_inode_new != parent_inode_old:
            await self.follower.revalidate(self._directory(parent_inode_new))
        async with self._lock:
            old_parent = self._directory(parent_inode_old)
            new_parent = self._directory(parent_inode_new)
            node = self._table.child(old_parent, decode_name(name_old))
            move = self._renamer.plan(
                node, new_parent, decode_name(name_new),
                no_replace=bool(flags & pyfuse3.RENAME_NOREPLACE),
            )
            if move is None:
                return
            if node.is_dir:
                await self._renamer.rename_directory(move)
            else:
                await self._renamer.rename_file(move)
            self._table.hold_if_empty(old_parent)
            self._table.retry_shadowed()
        self._send_notices()


    # ------------------------------------------------------------------- xattrs

    @handler
    async def getxattr(self, inode: int, name: bytes, ctx: pyfuse3.RequestContext) -> bytes:
        return await self._xattrs.get(self._table.get(inode), name)

    @handler
    async def listxattr(self, inode: int, ctx: pyfuse3.RequestContext) -> list[bytes]:
        return self._xattrs.names(self._table.get(inode))

    @handler
    async def setxattr(
        self, inode: int, name: bytes, value: bytes, ctx: pyfuse3.RequestContext
    ) -> None:
        node = self._table.get(inode)
        await self.follower.revalidate(node)  # by path: it may be stale
        async with self._lock:
            await self._xattrs.set(node, name, value)
        self._send_notices()

    @handler
    async def removexattr(self, inode: int, name: bytes, ctx: pyfuse3.RequestContext) -> None:
        node = self._table.get(inode)
        await self.follower.revalidate(node)  # by path: it may be stale
        async with self._lock:
            await self._xattrs.remove(node, name)
        self._send_notices()

    # -------------------------------------------------------------- change feed

    async def follow_changes(
        self, attachment: Attachment, *, wait_s: float = CHANGE_WAIT_S
    ) -> None:
        """Applies one store's change feed until the store is deleted (a named task per
        attached store): see :meth:`memfs.fuse.feed.ChangeFollower.follow`."""
        await self.follower.follow(attachment, wait_s=wait_s)

    async def apply_changes(self, attachment: Attachment, *, wait_s: float = 0.0) -> int:
        """One batch of a store's change feed: :meth:`ChangeFollower.apply`."""
        return await self.follower.apply(attachment, wait_s=wait_s)

    # ------------------------------------------------------------ kernel notices

    def _send_notices(self) -> None:
        self._notices.send()

    async def deliver_notices(self) -> None:
        """Invalidates kernel caches for changed entries until cancelled (a named task
        whose work runs in a thread of its own): see
        :class:`memfs.fuse.notices.KernelNotices`."""
        await self._notices.deliver()

    async def invalidation_stuck_s(self, grace_s: float) -> float | None:
        """How long the kernel invalidation in progress has waited (s) once it had
        ``grace_s`` more to end, or None when none is in progress."""
        return await trio.to_thread.run_sync(
            self._notices.wait_idle, grace_s, abandon_on_cancel=True
        )
