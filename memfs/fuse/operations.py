"""The request handlers of a memfs mount: SPEC §4 mapping and errno tables.

Owns :class:`Operations`, the pyfuse3 handlers, and nothing below them. Every handler
has one shape (S3QL's): log, guard (read-only, kinds, names), resolve (inode table), at
most one call into the layer below, balance lookup counts, return attributes. Lower
layers raise typed exceptions; the :func:`_handler` decorator turns them into
``FUSEError`` through the one table in :mod:`memfs.fuse.errno_table`, so handlers never
pick an errno themselves.

The layers below, one concern each:

==========================  ====================================================
``content``                 a file's working copy and its named transitions
``reading``                 content cache, read-ahead, purge marks
``commits``                 commit / keep-both / reject (SPEC §4 semantics)
``renames``                 rename(2), parking, the atomic save
``xattrs``                  ``user.meta.*`` and ``user.memfs.*``
``feed``                    changes made elsewhere (the change-feed follower)
==========================  ====================================================

Content model (SPEC §4 semantics): a file's content lives in its node's working copy
while open, shared by every handle (close-to-open consistency). ``flush`` (every
``close``) and ``fsync`` of a writable handle commit changed content as exactly one
version; ``release`` only frees. A write is refused early: beyond 102,400 bytes (EFBIG)
or with a byte that can never be in text content (EILSEQ, :func:`memfs.rules.
check_content_fragment`). The close that follows a refused write does not commit the
partial content: it keeps it under ``rejected/`` and reports the same errno.

Kernel caches are invalidated by :meth:`Operations.deliver_notices` (a separate task:
invalidating from inside a handler could deadlock on the inode being handled).

Limitations: no hard links, symlinks or special files (EPERM); no ``RENAME_EXCHANGE``
(EINVAL); a flat layout has no whiteouts, so removing a file of the default store shows
a read-only store's file of the same path again, if there is one.
"""

from __future__ import annotations

import bisect
import errno
import functools
import itertools
import logging
import math
import os
import stat
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar, cast

import pyfuse3
import trio

from memfs.backend import Backend
from memfs.config import MAX_CONTENT_BYTES, MAX_SEGMENT_BYTES
from memfs.errors import (
    ContentTooLarge,
    InvalidInput,
    InvalidPath,
    MemfsError,
    PathTooLong,
    StoreFull,
)
from memfs.fuse.cache import BlobCacheStatistics
from memfs.fuse.capabilities import KERNEL_CACHE, directory_reply, file_reply
from memfs.fuse.commits import Committer, is_local_scratch, join_path
from memfs.fuse.errno_table import errno_for
from memfs.fuse.errors import (
    CrossStore,
    DirectoryNotEmpty,
    EntryExists,
    FilesystemError,
    IsADirectory,
    NotADirectory,
    NotSupported,
    ReadOnly,
)
from memfs.fuse.feed import CHANGE_WAIT_S, ChangeFollower
from memfs.fuse.inodes import Attachment, InodeTable, Layout, Node, Notice
from memfs.fuse.reading import ContentReader
from memfs.fuse.renames import Move, Renamer
from memfs.fuse.status import MountStatus, save_rejected
from memfs.fuse.xattrs import Xattrs
from memfs.model import format_timestamp, utcnow
from memfs.rules import (
    check_content_fragment,
    check_content_size,
    is_scratch_name,
    validate_path,
    validate_segment,
)

__all__ = [
    "ATTR_TIMEOUT_S",
    "CHANGE_WAIT_S",
    "ENTRY_TIMEOUT_S",
    "Operations",
]

log = logging.getLogger(__name__)

# Kernel cache timeouts. Freshness comes from precise invalidation, not from expiry:
# every change the mount learns of (its own commits included, see
# InodeTable.notice_if_stale; the change feed for the rest) invalidates exactly the
# entries and attributes it changed (SPEC §4: "kernel caches are invalidated for
# exactly the changed entries"). The timeouts only bound how long a missed
# invalidation could show stale metadata, and let `ls -lR`, `find` and `cat` over a
# warm tree be answered by the kernel without a round trip (issue 5). With cached
# listings (the patched pyfuse3, memfs.fuse.capabilities) they are long: a listing the
# kernel keeps carries no attributes, so once they expired `ls -lR` would send one
# LOOKUP per entry (issue 17); a directory's listing is dropped by invalidation too.
ENTRY_TIMEOUT_S = 3600.0 if KERNEL_CACHE.cached_listings else 10.0
ATTR_TIMEOUT_S = ENTRY_TIMEOUT_S
# A store known to have more than ROOM_MARGIN free memories is not asked again at
# each create for ROOM_CACHE_S (one engine round trip fewer per new file: cp -r). The
# estimate goes down by one per create; near the limit every create asks. Another
# writer filling the store inside that window is still refused at close (ENOSPC).
ROOM_MARGIN = 64
ROOM_CACHE_S = 1.0
BLOCK_SIZE_BYTES = 4096
STAT_BLOCK_BYTES = 512  # st_blocks counts 512-byte units (stat(2))
# Scratch files are not memories, but they live in the daemon's memory: bound them.
MAX_SCRATCH_BYTES = 16 * 1024 * 1024

F = TypeVar("F", bound=Callable[..., Awaitable[Any]])


def _handler(fn: F) -> F:
    """Runs a request handler so that it raises nothing but ``FUSEError``.

    Domain and filesystem errors become their errno (one table, most specific class
    wins); anything else is a bug: logged with its traceback, recorded in the status
    file, reported as EIO.
    """

    @functools.wraps(fn)
    async def wrapper(self: Operations, *args: Any) -> Any:
        try:
            return await fn(self, *args)
        except pyfuse3.FUSEError:
            raise
        except (MemfsError, FilesystemError) as exc:
            code = errno_for(exc)
            log.debug("%s%r: %s (%s)", fn.__name__, args[:3], errno.errorcode[code], exc)
            raise pyfuse3.FUSEError(code) from None
        except Exception as exc:
            log.exception("unexpected error in %s%r", fn.__name__, args[:3])
            self.status.record_error(f"{fn.__name__}: {type(exc).__name__}: {exc}")
            raise pyfuse3.FUSEError(errno.EIO) from None

    return cast(F, wrapper)



def _decode_name(name: bytes) -> str:
    """A file name from the kernel as text (SPEC §1: paths are UTF-8).

    Raises:
        PathTooLong: over 255 bytes (NAME_MAX).
        InvalidPath: not valid UTF-8.
    """
    if len(name) > MAX_SEGMENT_BYTES:
        raise PathTooLong(f"file name is {len(name)} bytes; the limit is {MAX_SEGMENT_BYTES}")
    try:
        return name.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidPath(f"file name {name!r} is not valid UTF-8") from exc



@dataclass(eq=False)
class _Handle:
    """An open file. ``wrote``: data was written (or truncated) through this handle.
    ``append``: opened with ``O_APPEND``: every write goes to the end of the content the
    mount holds, whatever offset the kernel computed from its cached (maybe stale) size
    (write(2): "the file offset is first set to the end of the file").
    Every handle of a node reads the node's one content, as on a local filesystem: the
    kernel's page cache is per inode, so a per-handle snapshot would leak into the pages
    other opens read."""

    node: Node
    writable: bool
    wrote: bool = False
    append: bool = False


@dataclass
class _Listing:
    """An open directory. ``entries``: its children by inode, snapshotted at the first
    ``readdir`` of a pass; ``inodes``: their inode numbers (the readdir cursors)."""

    directory: Node
    entries: list[Node] | None = None
    inodes: list[int] | None = None


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
    ) -> None:
        super().__init__()
        self._backend = backend
        self._table = table
        self._session_id = session_id
        self.status = status
        self._memory_limit = memory_limit
        self._handles: dict[int, _Handle] = {}
        self._listings: dict[int, _Listing] = {}  # open directory handles
        self._next_fh = itertools.count(1)
        # Serializes every change of the store and the tree changes it implies, between
        # handlers and the change feed. Never held while calling into the kernel.
        self._lock = trio.Lock()
        self._notices_send, self._notices_receive = trio.open_memory_channel[Notice](math.inf)
        self._room: dict[str, tuple[float, int]] = {}  # store_id -> (monotonic s, room)
        self.reader = ContentReader(backend)
        self.committer = Committer(backend, table, self.reader, status, session_id)
        self._renamer = Renamer(backend, table, self.reader, self.committer, self._has_writer)
        self._xattrs = Xattrs(backend, table)
        self.follower = ChangeFollower(
            backend, table, self.reader, status, self._lock, self._has_writer, self._send_notices
        )
        self._flushes = {"read_only": 0, "writable": 0}  # FLUSH requests (memfs status)
        self._uid = os.getuid()
        self._gid = os.getgid()

    # ------------------------------------------------------------ start, stop

    async def load(self) -> None:
        """Loads every attached store's tree (metadata only, one query per store).

        The change-feed position is read first, so nothing written meanwhile is missed
        (replaying a change is harmless).
        """
        for attachment in sorted(self._table.attachments, key=lambda a: a.priority):
            attachment.seq = await self._backend.last_change_seq(attachment.store_id)
            for memory in await self._backend.list_memories(attachment.store_id):
                self._table.add_memory(attachment, memory)
        self._table.take_notices()  # the kernel knows nothing yet

    def init(self) -> None:
        log.debug("FUSE session initialised")

    async def commit_pending(self) -> None:
        """Commits content still pending in open files (daemon shutdown: ``memfs umount``
        flushes pending writes). Failures are kept under ``rejected/`` and logged."""
        async with self._lock:
            for handle in list(self._handles.values()):
                node = handle.node
                if handle.writable and node.working.dirty:
                    try:
                        await self.committer.commit(node)
                    except (MemfsError, FilesystemError) as exc:
                        log.warning("pending write to %s not committed: %s",
                                    self._table.display_path(node), exc)

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
            if node.parked and not node.working.dirty:
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

    def _has_writer(self, node: Node) -> bool:
        """Whether ``node`` has a writable handle open."""
        return any(h.writable and h.node is node for h in self._handles.values())

    def cache_statistics(self) -> BlobCacheStatistics:
        """The in-memory content cache of this mount (``memfs status``)."""
        return self.reader.statistics()

    def kernel_cache_status(self) -> dict[str, Any]:
        """What this mount lets the kernel cache (issue 17) and the FLUSH requests it
        got, by kind of handle (``memfs status``; a read-only open sends none when
        ``noflush`` is on)."""
        return {
            "noflush": KERNEL_CACHE.noflush,
            "cached_listings": KERNEL_CACHE.cached_listings,
            "entry_timeout_s": ENTRY_TIMEOUT_S,
            "attr_timeout_s": ATTR_TIMEOUT_S,
            "flushes": dict(self._flushes),
        }

    # ---------------------------------------------------------------- attributes

    def _attributes(self, node: Node) -> pyfuse3.EntryAttributes:
        entry = pyfuse3.EntryAttributes()
        entry.st_ino = node.inode
        entry.generation = 0
        entry.entry_timeout = ENTRY_TIMEOUT_S
        entry.attr_timeout = ATTR_TIMEOUT_S
        writable = self._table.is_writable(node)
        if node.is_dir:
            entry.st_mode = stat.S_IFDIR | (0o755 if writable else 0o555)
            entry.st_nlink = 2 + self._table.subdirectory_count(node)
            entry.st_size = 0
        else:
            entry.st_mode = stat.S_IFREG | (0o644 if writable else 0o444)
            entry.st_nlink = 1 if node.parent is not None else 0
            entry.st_size = node.size_bytes
        entry.st_uid = self._uid
        entry.st_gid = self._gid
        entry.st_rdev = 0
        entry.st_blksize = BLOCK_SIZE_BYTES
        entry.st_blocks = -(-entry.st_size // STAT_BLOCK_BYTES)
        entry.st_atime_ns = node.mtime_ns
        entry.st_mtime_ns = node.mtime_ns
        entry.st_ctime_ns = node.mtime_ns
        node.kernel_attributes = (entry.st_size, node.mtime_ns)
        return entry

    def _remember(self, node: Node) -> pyfuse3.EntryAttributes:
        """Attributes of ``node`` handed to the kernel: its lookup count goes up by one."""
        node.lookup_count += 1
        return self._attributes(node)

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
        name = _decode_name(raw_name)
        validate_segment(name)
        if name in parent.children:
            raise EntryExists(f"{name!r} exists")
        path = join_path(self._table.memory_path(parent), name)
        validate_path(path)
        return name, path

    # ------------------------------------------------------------------ lookups

    @_handler
    async def lookup(
        self, parent_inode: int, name: bytes, ctx: pyfuse3.RequestContext
    ) -> pyfuse3.EntryAttributes:
        parent = self._directory(parent_inode)
        if name == b".":
            node = parent
        elif name == b"..":
            node = parent.parent or self._table.root
        else:
            node = self._table.child(parent, _decode_name(name))
        return self._remember(node)

    async def forget(self, inode_list: Sequence[tuple[int, int]]) -> None:
        try:
            for inode, count in inode_list:
                self._table.forget(inode, count)
        except Exception:  # forget must not raise (pyfuse3 contract)
            log.exception("forget(%r) failed", inode_list)

    @_handler
    async def getattr(self, inode: int, ctx: pyfuse3.RequestContext) -> pyfuse3.EntryAttributes:
        return self._attributes(self._table.get(inode))

    @_handler
    async def setattr(
        self,
        inode: int,
        attr: pyfuse3.EntryAttributes,
        fields: pyfuse3.SetattrFields,
        fh: int | None,
        ctx: pyfuse3.RequestContext,
    ) -> pyfuse3.EntryAttributes:
        node = self._table.get(inode)
        if fields.update_size:
            if node.is_dir:
                raise IsADirectory(f"{self._table.display_path(node)} is a directory")
            self._table.content_target(node)
            self._check_size(node, attr.st_size)
            await self.reader.ensure_loaded(node)
            if node.working.truncate(attr.st_size):
                node.mtime_ns = time.time_ns()
                if fh is not None and fh in self._handles:
                    self._handles[fh].wrote = True  # ftruncate(2): commit at close
            if not self._has_writer(node):
                # truncate(2) of a file no one has open for writing: one version now.
                async with self._lock:
                    await self.committer.commit(node)
                    self._release_clean(node)
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
        return self._attributes(node)

    @_handler
    async def statfs(self, ctx: pyfuse3.RequestContext) -> pyfuse3.StatvfsData:
        stored = sum(1 for _ in self._table.store_memory_nodes())
        used_bytes = sum(node.size_bytes for node in self._table.store_memory_nodes())
        capacity_files = self._memory_limit * max(1, len(self._table.attachments))
        capacity_blocks = capacity_files * MAX_CONTENT_BYTES // BLOCK_SIZE_BYTES
        data = pyfuse3.StatvfsData()
        data.f_bsize = BLOCK_SIZE_BYTES
        data.f_frsize = BLOCK_SIZE_BYTES
        data.f_blocks = capacity_blocks
        data.f_bfree = max(0, capacity_blocks - used_bytes // BLOCK_SIZE_BYTES)
        data.f_bavail = data.f_bfree
        data.f_files = capacity_files
        data.f_ffree = max(0, capacity_files - stored)
        data.f_favail = data.f_ffree
        data.f_namemax = MAX_SEGMENT_BYTES
        return data

    # ------------------------------------------------------ things memfs refuses

    @_handler
    async def mknod(
        self, parent_inode: int, name: bytes, mode: int, rdev: int, ctx: pyfuse3.RequestContext
    ) -> pyfuse3.EntryAttributes:
        raise NotSupported("special files can't be stored in memfs")

    @_handler
    async def symlink(
        self, parent_inode: int, name: bytes, target: bytes, ctx: pyfuse3.RequestContext
    ) -> pyfuse3.EntryAttributes:
        raise NotSupported("symbolic links can't be stored in memfs")

    @_handler
    async def link(
        self, inode: int, new_parent_inode: int, new_name: bytes, ctx: pyfuse3.RequestContext
    ) -> pyfuse3.EntryAttributes:
        raise NotSupported("hard links can't be stored in memfs")

    # -------------------------------------------------------------- directories

    @_handler
    async def mkdir(
        self, parent_inode: int, name: bytes, mode: int, ctx: pyfuse3.RequestContext
    ) -> pyfuse3.EntryAttributes:
        async with self._lock:
            parent = self._directory(parent_inode)
            self._table.write_target(parent)
            text_name, _ = self._new_entry_name(parent, name)
            # SPEC §4: a directory is held by the mount until a file is created in it.
            node = self._table.new_directory(parent, text_name, held=True)
            attributes = self._remember(node)
        self._send_notices()
        return attributes

    @_handler
    async def rmdir(self, parent_inode: int, name: bytes, ctx: pyfuse3.RequestContext) -> None:
        async with self._lock:
            parent = self._directory(parent_inode)
            node = self._table.child(parent, _decode_name(name))
            if not node.is_dir:
                raise NotADirectory(f"{self._table.display_path(node)} is not a directory")
            self._table.check_writable(node)
            if node.children:
                raise DirectoryNotEmpty(f"{self._table.display_path(node)} is not empty")
            self._table.remove(node)
            self._hold_if_empty(parent)
        self._send_notices()

    @_handler
    async def opendir(self, inode: int, ctx: pyfuse3.RequestContext) -> int | pyfuse3.FileInfo:
        directory = self._directory(inode)
        fh = next(self._next_fh)
        self._listings[fh] = _Listing(directory)
        return directory_reply(fh)  # the kernel may keep the listing (issue 17)

    @_handler
    async def readdir(self, fh: int, start_id: int, token: pyfuse3.ReaddirToken) -> None:
        listing = self._listings.get(fh)
        if listing is None:
            raise InvalidInput(f"directory handle {fh} is not open")
        directory = listing.directory
        if start_id == 0 or listing.entries is None:
            # One sorted snapshot per listing (rewinddir(3) takes a new one), so a big
            # directory costs O(n log n) once, not at each of the kernel's pages.
            # next_id is the child's inode: inodes only grow, so the cursor is stable.
            listing.entries = sorted(directory.children.values(), key=lambda node: node.inode)
            listing.inodes = [child.inode for child in listing.entries]
        assert listing.inodes is not None
        for child in listing.entries[bisect.bisect_right(listing.inodes, start_id):]:
            if child.parent is not directory or directory.children.get(child.name) is not child:
                continue  # removed or renamed since the snapshot
            name = child.name.encode("utf-8")
            if not pyfuse3.readdir_reply(token, name, self._attributes(child), child.inode):
                break
            child.lookup_count += 1

    @_handler
    async def releasedir(self, fh: int) -> None:
        self._listings.pop(fh, None)

    @_handler
    async def fsyncdir(self, fh: int, datasync: bool) -> None:
        return None  # directories hold nothing of their own to make durable

    def _hold_if_empty(self, directory: Node) -> None:
        """A directory emptied through the mount stays until rmdir (``rm -r`` removes
        the files, then the directory)."""
        if not directory.children and not directory.store_root:
            directory.held = True

    # -------------------------------------------------------------------- files

    @_handler
    async def create(
        self, parent_inode: int, name: bytes, mode: int, flags: int, ctx: pyfuse3.RequestContext
    ) -> tuple[pyfuse3.FileInfo, pyfuse3.EntryAttributes]:
        async with self._lock:
            parent = self._directory(parent_inode)
            attachment = self._table.write_target(parent)
            text_name, path = self._new_entry_name(parent, name)
            await self._check_room(attachment, text_name, path)
            node = self._table.new_file(parent, text_name, attachment)
            node.working.start_empty(dirty=True)  # a memory at its first close
            fh = self._open_handle(node, writable=True, append=bool(flags & os.O_APPEND))
            attributes = self._remember(node)
        self._send_notices()
        return pyfuse3.FileInfo(fh=fh, keep_cache=False), attributes

    @_handler
    async def open(self, inode: int, flags: int, ctx: pyfuse3.RequestContext) -> pyfuse3.FileInfo:
        node = self._table.get(inode)
        if node.is_dir:
            raise IsADirectory(f"{self._table.display_path(node)} is a directory")
        writable = (flags & os.O_ACCMODE) != os.O_RDONLY
        if writable or flags & os.O_TRUNC:
            self._table.content_target(node)
        working = node.working
        if flags & os.O_TRUNC and not working.loaded:
            head_size = node.memory.content_size_bytes if node.memory is not None else 0
            if working.truncate_unloaded(head_size_bytes=head_size):
                node.mtime_ns = time.time_ns()
        elif writable or flags & os.O_TRUNC:
            await self.reader.ensure_loaded(node)
            if flags & os.O_TRUNC and working.truncate(0):
                node.mtime_ns = time.time_ns()
        # A read-only open loads nothing: the first read does (Operations.read). With
        # keep_cache the kernel's pages answer the reads, so a warm `cat` or `grep -r`
        # never copies the content out of the cache or the store.
        fh = self._open_handle(node, writable=writable, append=bool(flags & os.O_APPEND))
        # keep_cache only when the kernel's pages hold exactly what this open serves.
        keep_cache, kernel_stale = working.opened()
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
        # A read-only open has nothing to commit at close: its FLUSH is skipped (issue 17).
        return file_reply(
            fh, keep_cache=keep_cache and not direct, direct_io=direct, read_only=not writable
        )

    async def _check_room(self, attachment: Attachment, name: str, path: str) -> None:
        """Refuses a new file in a full store at create (SPEC §4 errno table: ENOSPC,
        "fail early"): bash ignores errors of close(2), so a refusal only at close would
        look like a save. Scratch names never reach the store and stay allowed; a name a
        parked memory holds reuses that memory. A backend that can't tell (None) leaves
        the refusal to the commit. Far from the limit the room is remembered for
        :data:`ROOM_CACHE_S` (see :data:`ROOM_MARGIN`).

        Raises:
            StoreFull: the store holds as many live memories as it may.
        """
        if is_scratch_name(name) or self._table.parked_holder(attachment, path) is not None:
            return
        now = time.monotonic()
        known = self._room.get(attachment.store_id)
        if known is not None and now - known[0] < ROOM_CACHE_S and known[1] > ROOM_MARGIN:
            self._room[attachment.store_id] = (known[0], known[1] - 1)
            return
        room = await self._backend.memory_room(attachment.store_id)
        if room is not None:
            self._room[attachment.store_id] = (now, room - 1)
        if room is not None and room <= 0:
            raise StoreFull(f"memory store {attachment.name!r} is full: delete a memory first")

    def _open_handle(self, node: Node, *, writable: bool, append: bool = False) -> int:
        fh = next(self._next_fh)
        self._handles[fh] = _Handle(node, writable, append=append)
        node.open_count += 1
        return fh

    def _handle(self, fh: int) -> _Handle:
        handle = self._handles.get(fh)
        if handle is None:
            raise InvalidInput(f"file handle {fh} is not open")
        return handle

    @_handler
    async def read(self, fh: int, off: int, size: int) -> bytes:
        buffer = await self.reader.ensure_loaded(self._handle(fh).node)
        return bytes(buffer[off : off + size])

    @_handler
    async def write(self, fh: int, off: int, buf: bytes) -> int:
        handle = self._handle(fh)
        node = handle.node
        self._table.content_target(node)
        if handle.append:
            end_of_content = len(await self.reader.ensure_loaded(node))
            if off != end_of_content:
                # The kernel's size was stale: so is the size it will cache after this.
                self._table.notice(Notice(node.inode, attr_only=True))
                self._send_notices()
            off = end_of_content
        try:
            self._check_size(node, off + len(buf))
            if not is_local_scratch(node):
                check_content_fragment(buf, off)
        except MemfsError as exc:
            node.working.refuse(exc)
            raise
        await self.reader.ensure_loaded(node)
        node.working.write(off, buf)
        node.mtime_ns = time.time_ns()
        node.kernel_attributes = None  # the kernel drops its size and times at a write
        handle.wrote = True
        return len(buf)

    def _check_size(self, node: Node, size_bytes: int) -> None:
        """Raises ContentTooLarge (EFBIG): content beyond SPEC §1's limit, or a scratch
        file beyond :data:`MAX_SCRATCH_BYTES`."""
        if not is_local_scratch(node):
            check_content_size(size_bytes)
        elif size_bytes > MAX_SCRATCH_BYTES:
            raise ContentTooLarge(
                f"{self._table.display_path(node)} would be {size_bytes} bytes; "
                f"the limit for a scratch file is {MAX_SCRATCH_BYTES} bytes"
            )

    @_handler
    async def flush(self, fh: int) -> None:
        # close(2) of any descriptor of the handle. A handle that only truncated (O_TRUNC,
        # create) and wrote nothing is not committed here but at release: the shell's
        # `echo x > f` opens, dup2()s onto stdout and closes the original descriptor
        # before writing, and that close must not make an empty version.
        handle = self._handle(fh)
        self._flushes["writable" if handle.writable else "read_only"] += 1
        if handle.writable and (handle.wrote or handle.node.working.refusal is not None):
            await self._close_commit(handle.node)

    @_handler
    async def fsync(self, fh: int, datasync: bool) -> None:
        handle = self._handle(fh)
        if handle.writable:
            await self._close_commit(handle.node)

    async def _close_commit(self, node: Node) -> None:
        try:
            async with self._lock:
                if node.working.refusal is not None:
                    self.committer.drop_refused(node)
                elif node.working.dirty:
                    await self.committer.commit(node)
        finally:
            self._table.notice_if_stale(node)
            self._send_notices()

    @_handler
    async def release(self, fh: int) -> None:
        handle = self._handles.pop(fh, None)
        if handle is None:
            return
        node = handle.node
        node.open_count -= 1
        try:
            if node.open_count == 0 and node.working.dirty:
                # Truncated or created and closed without a write (see flush): commit
                # now. A refusal can only be logged and kept (release has no caller).
                async with self._lock:
                    await self.committer.commit(node)
        finally:
            if node.open_count == 0:
                node.working.closed()
                self._release_clean(node)
                self._table.release_if_unused(node)
            self._table.notice_if_stale(node)
            self._send_notices()

    def _release_clean(self, node: Node) -> None:
        """Frees the content of a closed, clean file the store holds (it stays in the
        cache); the next open starts from the head."""
        if node.open_count == 0 and not node.working.dirty and node.memory is not None:
            node.working.release(node.memory.content_sha256)

    # ------------------------------------------------------------ unlink, rename

    @_handler
    async def unlink(self, parent_inode: int, name: bytes, ctx: pyfuse3.RequestContext) -> None:
        async with self._lock:
            parent = self._directory(parent_inode)
            node = self._table.child(parent, _decode_name(name))
            if node.is_dir:
                raise IsADirectory(f"{self._table.display_path(node)} is a directory")
            if node.memory is not None:
                attachment = self._table.check_writable(node)
                await self.committer.delete_memory(attachment, node.memory)
            self._table.remove(node)
            self._hold_if_empty(parent)
            self._table.retry_shadowed()
        self._send_notices()

    @_handler
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
        async with self._lock:
            old_parent = self._directory(parent_inode_old)
            new_parent = self._directory(parent_inode_new)
            node = self._table.child(old_parent, _decode_name(name_old))
            target = self._table.write_target(new_parent)
            source = node.attachment if not node.is_dir or node.attachment else target
            if source is not target:
                if self._table.layout is Layout.PER_STORE:
                    raise CrossStore(
                        f"{self._table.display_path(node)} can't be renamed into another store"
                    )
                raise ReadOnly(f"{self._table.display_path(node)} belongs to a read-only store")
            self._table.check_writable(node)
            new_name = _decode_name(name_new)
            validate_segment(new_name)
            new_path = join_path(self._table.memory_path(new_parent), new_name)
            validate_path(new_path)
            existing = new_parent.children.get(new_name)
            if existing is node:
                return
            if existing is not None:
                if flags & pyfuse3.RENAME_NOREPLACE:
                    raise EntryExists(f"{new_name!r} exists")
                if existing.is_dir and not node.is_dir:
                    raise IsADirectory(f"{self._table.display_path(existing)} is a directory")
                if node.is_dir and not existing.is_dir:
                    raise NotADirectory(f"{self._table.display_path(existing)} is a file")
                if existing.is_dir and existing.children:
                    raise DirectoryNotEmpty(f"{self._table.display_path(existing)} is not empty")
            move = Move(node, new_parent, new_name, new_path, existing, target)
            if node.is_dir:
                await self._renamer.rename_directory(move)
            else:
                await self._renamer.rename_file(move)
            self._hold_if_empty(old_parent)
            self._table.retry_shadowed()
        self._send_notices()


    # ------------------------------------------------------------------- xattrs

    @_handler
    async def getxattr(self, inode: int, name: bytes, ctx: pyfuse3.RequestContext) -> bytes:
        return self._xattrs.get(self._table.get(inode), name)

    @_handler
    async def listxattr(self, inode: int, ctx: pyfuse3.RequestContext) -> list[bytes]:
        return self._xattrs.names(self._table.get(inode))

    @_handler
    async def setxattr(
        self, inode: int, name: bytes, value: bytes, ctx: pyfuse3.RequestContext
    ) -> None:
        async with self._lock:
            await self._xattrs.set(self._table.get(inode), name, value)
        self._send_notices()

    @_handler
    async def removexattr(self, inode: int, name: bytes, ctx: pyfuse3.RequestContext) -> None:
        async with self._lock:
            await self._xattrs.remove(self._table.get(inode), name)
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
        for notice in self._table.take_notices():
            self._notices_send.send_nowait(notice)

    async def deliver_notices(self) -> None:
        """Invalidates kernel caches for changed entries, forever (a named task).

        Runs the (possibly blocking) ``pyfuse3.invalidate_*`` calls in a worker thread,
        outside every request handler and without holding the mutation lock.
        """
        async for first in self._notices_receive:
            batch = [first]
            while True:
                try:
                    batch.append(self._notices_receive.receive_nowait())
                except trio.WouldBlock:
                    break
            unique = list(dict.fromkeys(batch))
            await trio.to_thread.run_sync(_invalidate, unique)


def _invalidate(notices: list[Notice]) -> None:
    for notice in notices:
        try:
            if notice.name is not None:
                pyfuse3.invalidate_entry(notice.inode, notice.name)
            else:
                pyfuse3.invalidate_inode(notice.inode, attr_only=notice.attr_only)
        except OSError as exc:
            # ENOENT: the kernel does not know that entry or inode (nothing to drop).
            if exc.errno not in (errno.ENOENT, errno.ENOTCONN, errno.EBADF):
                log.warning("invalidating %r failed: %s", notice, exc)
