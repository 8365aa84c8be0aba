"""The request handlers of a memfs mount: SPEC §4 mapping and errno tables.

Every handler has one shape: guard (read-only, kinds, names), resolve (inode table),
at most one call into the store through the :class:`~memfs.fuse.backend.Backend`,
balance lookup counts, return attributes. Lower layers raise typed exceptions; the
:func:`_handler` decorator turns them into ``FUSEError`` through the one table in
:mod:`memfs.fuse.errno_table`, so handlers never pick an errno themselves.

Content model (SPEC §4 semantics):

* A file's content lives in the node's ``buffer`` while open, shared by every handle
  (close-to-open consistency). ``flush`` (every ``close``) and ``fsync`` of a writable
  handle commit a changed buffer as exactly one version, with a precondition on the
  digest the file was opened with; unchanged content writes nothing. ``release`` only
  frees.
* A write is refused early: beyond 102,400 bytes (EFBIG) or with a byte that can never
  be in text content (EILSEQ). The close that follows a refused write does not commit
  the partial content: it keeps it under ``rejected/`` and reports the same errno.
  Content that only fails as a whole (invalid UTF-8) is refused at close, kept the
  same way.
* Scratch names (:func:`memfs.rules.is_scratch_name`) never reach the store; renaming
  one to a real name commits its content as one version of the target (atomic save).
  Renaming a stored file to a scratch name *parks* it: the store keeps it until the
  name is reused (vim's ``file`` → ``file~``, new ``file``: one ``modified`` version),
  the scratch file is removed (a delete), or it is renamed back.
* If another writer changed the memory since it was opened, both contents are kept:
  the head keeps theirs, this one is created beside it as
  ``<name>.conflict-<UTC timestamp>-<session>.<ext>``.

Changes made elsewhere reach the tree through :meth:`Operations.follow_changes` (the
change feed, one task per store), and the kernel's caches are invalidated by
:meth:`Operations.deliver_notices` (a separate task: invalidating from inside a handler
could deadlock on the inode being handled).

Limitations: no hard links, symlinks or special files (EPERM); no ``RENAME_EXCHANGE``
(EINVAL); a flat layout has no whiteouts, so removing a file of the default store shows
a read-only store's file of the same path again, if there is one.
"""

from __future__ import annotations

import bisect
import errno
import functools
import hashlib
import itertools
import logging
import math
import os
import re
import stat
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, NoReturn, TypeVar, cast

import pyfuse3
import trio

from memfs.config import (
    MAX_CONTENT_BYTES,
    MAX_METADATA_KEY_CHARS,
    MAX_METADATA_KEYS,
    MAX_METADATA_VALUE_CHARS,
    MAX_SEGMENT_BYTES,
)
from memfs.errors import (
    ContentTooLarge,
    InvalidContent,
    InvalidInput,
    InvalidPath,
    MemfsError,
    NotFound,
    PathConflict,
    PathTooLong,
    PreconditionFailed,
    StoreFull,
)
from memfs.fuse.backend import Backend, BackendUnavailable
from memfs.fuse.cache import BlobCache, BlobCacheStatistics
from memfs.fuse.capabilities import KERNEL_CACHE, directory_reply, file_reply
from memfs.fuse.errno_table import errno_for
from memfs.fuse.errors import (
    AttributeTooLarge,
    CrossStore,
    DirectoryNotEmpty,
    EntryExists,
    FilesystemError,
    IsADirectory,
    NoSuchAttribute,
    NotADirectory,
    NotSupported,
    ReadOnly,
    ReadOnlyAttribute,
    RefusedWrite,
    TooManyAttributes,
    UnknownAttribute,
)
from memfs.fuse.inodes import Attachment, InodeTable, Layout, Node, Notice
from memfs.fuse.status import MountStatus, conflict_name, save_rejected
from memfs.model import Change, ChangeKind, Memory, format_timestamp, utcnow
from memfs.rules import is_scratch_name, validate_content_bytes, validate_path, validate_segment

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
# How long one read of the change feed waits for a change: a long poll on a remote
# backend, engine polling on an embedded one (SPEC §4: changes elsewhere appear within
# about one second; a change ends the wait at once). Below the server's 30 s cap.
CHANGE_WAIT_S = 25.0
# A store known to have more than ROOM_MARGIN free memories is not asked again at
# each create for ROOM_CACHE_S (one engine round trip fewer per new file: cp -r). The
# estimate goes down by one per create; near the limit every create asks. Another
# writer filling the store inside that window is still refused at close (ENOSPC).
ROOM_MARGIN = 64
ROOM_CACHE_S = 1.0
# Pause after a failed read of the feed, doubling while failures last.
CHANGE_RETRY_MIN_S = 0.1
CHANGE_RETRY_MAX_S = 1.0
# Read-ahead on a content cache miss (Operations._read_ahead): at most this many files
# and bytes per store round trip.
READ_AHEAD_FILES = 32
READ_AHEAD_BYTES = 1024 * 1024
READ_AHEAD_SCAN = 4 * READ_AHEAD_FILES  # names looked at per miss
BLOCK_SIZE_BYTES = 4096
STAT_BLOCK_BYTES = 512  # st_blocks counts 512-byte units (stat(2))
# Scratch files are not memories, but they live in the daemon's memory: bound them.
MAX_SCRATCH_BYTES = 16 * 1024 * 1024

# Bytes that can never be part of text content (SPEC §1 content rules): C0 controls other
# than \t \n \r, DEL, and bytes that occur in no UTF-8 sequence (0xC0, 0xC1, 0xF5-0xFF).
# None of them can be half of a character split across two writes, so a write holding
# one is refused at once (SPEC §4: EILSEQ "at write").
_FORBIDDEN_BYTES_RE = re.compile(rb"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\xc0\xc1\xf5-\xff]")

XATTR_USER_PREFIX = "user."
XATTR_MEMFS_PREFIX = "user.memfs."
XATTR_META_PREFIX = "user.meta."
_XATTR_MEMFS_FIELDS = {
    "user.memfs.id": "id",
    "user.memfs.version_id": "memory_version_id",
    "user.memfs.sha256": "content_sha256",
}

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


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _join(directory_path: str, name: str) -> str:
    return ("" if directory_path == "/" else directory_path) + "/" + name


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


def _is_local_scratch(node: Node) -> bool:
    """A file whose content never reaches the store in place (SPEC §4 atomic save)."""
    return (node.memory is None or node.parked) and is_scratch_name(node.name)


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
        self._cache = BlobCache()
        self._handles: dict[int, _Handle] = {}
        self._listings: dict[int, _Listing] = {}  # open directory handles
        self._next_fh = itertools.count(1)
        # Serializes every change of the store and the tree changes it implies, between
        # handlers and the change feed. Never held while calling into the kernel.
        self._lock = trio.Lock()
        self._notices_send, self._notices_receive = trio.open_memory_channel[Notice](math.inf)
        self._room: dict[str, tuple[float, int]] = {}  # store_id -> (monotonic s, room)
        # Purge marks (see _purge): blob key -> the purge sequence number that dropped it.
        self._purge_seq = 0
        self._purged: dict[str, int] = {}
        self._fetches = 0  # content fetches in flight
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
                if handle.writable and node.dirty:
                    try:
                        await self._commit(node)
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
            if not _is_local_scratch(node) or not node.buffer:
                continue
            if node.parked and not node.dirty:
                continue  # its content is still in the store at the memory's path
            display = self._table.display_path(node)
            try:
                kept = save_rejected(self._session_id, node.name, bytes(node.buffer))
            except OSError as exc:
                log.error("scratch file %s (%d bytes) could not be saved: %s",
                          display, len(node.buffer), exc)
                continue
            log.warning("scratch file %s was never saved to memory (scratch names stay in "
                        "the mount); its %d bytes are kept in %s",
                        display, len(node.buffer), kept)
            saved.append({"at": format_timestamp(utcnow()), "path": display,
                          "saved_to": str(kept)})
        return saved

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
        path = _join(self._table.memory_path(parent), name)
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
            buffer = await self._ensure_buffer(node)
            if attr.st_size == 0:
                node.fresh = True  # nothing of the old content is left
            if attr.st_size != len(buffer):
                if attr.st_size < len(buffer):
                    del buffer[attr.st_size:]
                else:
                    buffer.extend(bytes(attr.st_size - len(buffer)))
                node.dirty = True
                node.mtime_ns = time.time_ns()
                if fh is not None and fh in self._handles:
                    self._handles[fh].wrote = True  # ftruncate(2): commit at close
            if not any(h.writable and h.node is node for h in self._handles.values()):
                # truncate(2) of a file no one has open for writing: one version now.
                async with self._lock:
                    await self._commit(node)
                    self._drop_clean_buffer(node)
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
            node.buffer = bytearray()
            node.dirty = True  # a new file becomes a memory at its first close
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
        if flags & os.O_TRUNC and node.buffer is None:
            # The old content is not needed (and not fetched: a remote mount can do this
            # with its server away); the precondition stays the head's digest.
            if node.memory is not None and node.memory.content_size_bytes > 0:
                node.dirty = True
                node.mtime_ns = time.time_ns()
            node.buffer = bytearray()
            node.fresh = True
        elif writable or flags & os.O_TRUNC:
            buffer = await self._ensure_buffer(node)
            if flags & os.O_TRUNC:
                node.fresh = True
                if buffer:
                    buffer.clear()
                    node.dirty = True
                    node.mtime_ns = time.time_ns()
        # A read-only open loads nothing: the first read does (Operations.read). With
        # keep_cache the kernel's pages answer the reads, so a warm `cat` or `grep -r`
        # never copies the content out of the cache or the store.
        fh = self._open_handle(node, writable=writable, append=bool(flags & os.O_APPEND))
        # keep_cache only when the kernel's pages hold exactly what this open serves.
        served = node.base_sha256 if not node.dirty else None
        keep_cache = served is not None and node.kernel_sha256 == served
        if node.kernel_sha256 is not None and node.kernel_sha256 != served:
            # The kernel was last told of other content: its cached size is stale too.
            # Invalidated by the notice task, never from inside this handler.
            self._table.notice(Notice(node.inode, attr_only=True))
            self._send_notices()
        node.kernel_sha256 = served
        if served is not None:
            node.opened_sha256 = served
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
        buffer = await self._ensure_buffer(self._handle(fh).node)
        return bytes(buffer[off : off + size])

    @_handler
    async def write(self, fh: int, off: int, buf: bytes) -> int:
        handle = self._handle(fh)
        node = handle.node
        self._table.content_target(node)
        if handle.append:
            end_of_content = len(await self._ensure_buffer(node))
            if off != end_of_content:
                # The kernel's size was stale: so is the size it will cache after this.
                self._table.notice(Notice(node.inode, attr_only=True))
                self._send_notices()
            off = end_of_content
        end = off + len(buf)
        try:
            self._check_size(node, end)
            if not _is_local_scratch(node):
                match = _FORBIDDEN_BYTES_RE.search(buf)
                if match is not None:
                    raise InvalidContent(
                        f"byte 0x{match.group()[0]:02x} at offset {off + match.start()} "
                        "can't be part of UTF-8 text content (only \\t, \\n, \\r controls)"
                    )
        except MemfsError as exc:
            node.refusal = exc
            raise
        buffer = await self._ensure_buffer(node)
        if off > len(buffer):
            buffer.extend(bytes(off - len(buffer)))
        buffer[off:end] = buf
        node.dirty = True
        node.mtime_ns = time.time_ns()
        node.kernel_attributes = None  # the kernel drops its size and times at a write
        handle.wrote = True
        return len(buf)

    def _check_size(self, node: Node, size_bytes: int) -> None:
        limit = MAX_SCRATCH_BYTES if _is_local_scratch(node) else MAX_CONTENT_BYTES
        if size_bytes > limit:
            raise ContentTooLarge(
                f"{self._table.display_path(node)} would be {size_bytes} bytes; "
                f"the limit is {limit} bytes"
            )

    @_handler
    async def flush(self, fh: int) -> None:
        # close(2) of any descriptor of the handle. A handle that only truncated (O_TRUNC,
        # create) and wrote nothing is not committed here but at release: the shell's
        # `echo x > f` opens, dup2()s onto stdout and closes the original descriptor
        # before writing, and that close must not make an empty version.
        handle = self._handle(fh)
        self._flushes["writable" if handle.writable else "read_only"] += 1
        if handle.writable and (handle.wrote or handle.node.refusal is not None):
            await self._close_commit(handle.node)

    @_handler
    async def fsync(self, fh: int, datasync: bool) -> None:
        handle = self._handle(fh)
        if handle.writable:
            await self._close_commit(handle.node)

    async def _close_commit(self, node: Node) -> None:
        try:
            async with self._lock:
                if node.refusal is not None:
                    self._drop_refused(node)
                elif node.dirty:
                    await self._commit(node)
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
            if node.open_count == 0 and node.dirty:
                # Truncated or created and closed without a write (see flush): commit
                # now. A refusal can only be logged and kept (release has no caller).
                async with self._lock:
                    await self._commit(node)
        finally:
            if node.open_count == 0:
                node.refusal = None
                self._drop_clean_buffer(node)
                self._table.release_if_unused(node)
            self._table.notice_if_stale(node)
            self._send_notices()

    def _drop_clean_buffer(self, node: Node) -> None:
        """Frees the content of a closed file the store holds (it stays in the cache);
        the next open starts from the head."""
        if node.open_count == 0 and not node.dirty and node.memory is not None:
            node.buffer = None
            node.base_sha256 = node.memory.content_sha256

    async def _ensure_buffer(self, node: Node) -> bytearray:
        """The content of ``node``: its buffer, else its head from the cache or the store."""
        while node.buffer is None:
            memory = node.memory
            if memory is None:
                node.buffer = bytearray()
                break
            data = self._cache.get(memory.blob_key)
            if data is None:
                data = await self._read_ahead(node, memory)
            if node.buffer is None and node.memory is memory:
                node.buffer = bytearray(data)
        return node.buffer

    async def _read_ahead(self, node: Node, memory: Memory) -> bytes:
        """The head content of ``node`` (a cache miss), fetched together with the
        uncached contents of the files after it in its directory (by name, wrapping),
        up to :data:`READ_AHEAD_FILES` files and :data:`READ_AHEAD_BYTES`: `cat *` and
        `grep -r` on a cold mount then cost one store round trip per batch, not per
        file. Everything fetched goes to the content cache.

        Raises:
            NotFound, BackendUnavailable: as :meth:`Backend.read_content`.
        """
        batch = [memory]
        directory = node.parent
        if directory is not None and len(directory.children) > 1:
            budget = READ_AHEAD_BYTES - memory.content_size_bytes
            # Entries are mostly in name order already (loaded sorted, then appended),
            # which makes this sort close to linear.
            names = sorted(directory.children)
            start = bisect.bisect_right(names, node.name)
            # At most READ_AHEAD_SCAN names are looked at: a miss in a big directory
            # whose files are mostly cached costs a bounded scan, not the directory.
            for name in itertools.islice(
                itertools.chain(names[start:], names[:start]), READ_AHEAD_SCAN
            ):
                if len(batch) >= READ_AHEAD_FILES or budget <= 0:
                    break
                child = directory.children.get(name)
                sibling = child.memory if child is not None else None
                if (
                    sibling is None
                    or sibling is memory
                    or sibling.content_size_bytes > budget
                    or sibling.blob_key in self._cache
                ):
                    continue
                batch.append(sibling)
                budget -= sibling.content_size_bytes
        self._fetches += 1
        try:
            since = self._purge_seq
            found = await self._backend.read_contents(batch) if len(batch) > 1 else {}
            for blob_key, content in found.items():
                self._cache_fetched(blob_key, content, since)
            data = found.get(memory.blob_key)
            if data is None:
                since = self._purge_seq
                data = await self._backend.read_content(memory)
                self._cache_fetched(memory.blob_key, data, since)
            if self._purged.get(memory.blob_key, 0) > since:
                raise NotFound(f"the content of {memory.path} was erased while it was read")
            return data
        finally:
            self._fetches -= 1
            if not self._fetches:
                self._purged.clear()  # no fetch left that began before those purges

    # ----------------------------------------------------------------- commits

    async def _commit(self, node: Node) -> None:
        """Writes ``node``'s buffer as one version (SPEC §4). The caller holds the lock.

        Raises:
            RefusedWrite: the store refused the content, or is read-only now; its bytes
                are kept under ``rejected/`` and the errno is the refusal's (EILSEQ,
                EFBIG, ENOSPC, EROFS, …).
        """
        if not node.dirty or node.buffer is None:
            node.dirty = False
            return
        if node.parent is None:
            node.dirty = False  # unlinked while open: the content went with its last name
            return
        if _is_local_scratch(node):
            return  # scratch content lives only in the mount (SPEC §4 atomic save)
        data = bytes(node.buffer)
        if node.stored and _sha256(data) == node.base_sha256:
            node.dirty = False  # SPEC §4: none when unchanged
            return
        path = self._table.memory_path(node)
        try:
            target = self._table.content_target(node)
            text = validate_content_bytes(data)
            memory = await self._write_content(node, target, path, text)
        except NotFound as exc:
            if node.memory is None:
                self._reject(node, data, exc)  # the store itself is gone
            # Deleted elsewhere while open: create it again, nothing is lost.
            log.warning("%s was deleted elsewhere while open; creating it again", path)
            self._table.set_memory(node, None)
            try:
                memory = await self._backend.create_memory(target.store_id, path, text)
            except (PathConflict, PreconditionFailed):
                await self._keep_both(node, target, path, text, data, follow_buffer=True)
                return
            except MemfsError as exc:
                self._reject(node, data, exc)
        except (PathConflict, PreconditionFailed):
            await self._keep_both(node, target, path, text, data, follow_buffer=True)
            return
        except (MemfsError, ReadOnly) as exc:
            self._reject(node, data, exc)
        # A write that arrived while the store call ran stays pending for the next close.
        node.dirty = node.buffer is not None and bytes(node.buffer) != data
        self._table.set_memory(node, memory)
        node.base_sha256 = memory.content_sha256
        node.kernel_sha256 = memory.content_sha256
        node.opened_sha256 = memory.content_sha256
        node.pending_metadata = {}
        node.fresh = False  # what is pending now builds on this version
        self._cache.put(memory.blob_key, data)
        for ancestor in self._table.ancestors(node):
            ancestor.held = False
        log.info("committed %s (%d bytes, version %s)", self._table.display_path(node),
                 len(data), memory.memory_version_id)

    async def _write_content(self, node: Node, target: Attachment, path: str, text: str) -> Memory:
        """The one store call of a commit: create, copy-up, reuse a parked memory, or
        update with the opened digest as precondition."""
        if node.memory is None:
            holder = self._table.parked_holder(target, path)
            if holder is None:
                return await self._backend.create_memory(
                    target.store_id, path, text, metadata=node.pending_metadata or None
                )
            # vim's save: `file` was renamed to `file~`, a new `file` written. The memory
            # still at `path` gets the new content: one version, id kept.
            assert holder.memory is not None
            await self._ensure_buffer(holder)
            memory = await self._backend.update_memory(
                target.store_id, holder.memory.id, content=text,
                expected_sha256=holder.opened_sha256 or holder.memory.content_sha256,
            )
            self._table.set_memory(holder, None)
            holder.dirty = True  # its bytes now exist only in the mount
            return memory
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
        return await self._backend.update_memory(
            target.store_id, node.memory.id, content=text, expected_sha256=node.base_sha256
        )

    async def _keep_both(
        self,
        node: Node,
        target: Attachment,
        path: str,
        text: str,
        data: bytes,
        *,
        follow_buffer: bool = False,
    ) -> None:
        """SPEC §4 concurrent writers: the head keeps the other content, this one is
        created beside it as a conflict copy; the node shows the head again.

        Args:
            follow_buffer: ``data`` was taken from ``node``'s buffer (a close). Writes
                that other handles of the node made meanwhile (while this called the
                store) go into the conflict copy too before the node is reset, so
                they are not lost with the buffer.
        """
        directory, _, name = path.rpartition("/")
        copy_path = _join(directory or "/", conflict_name(name, utcnow(), self._session_id))
        try:
            copy = await self._backend.create_memory(target.store_id, copy_path, text)
        except MemfsError as exc:
            self._reject(node, data, exc)
        copy_node = self._table.add_memory(target, copy)
        self._cache.put(copy.blob_key, data)
        log.warning("conflict: %s was changed by another writer since it was opened; "
                    "the head keeps their content, this writer's is saved as %s",
                    path, copy_path)
        self.status.record_conflict(path, copy_path)
        head: Memory | None = None
        if node.memory is not None:
            try:
                head = await self._backend.get_memory(target.store_id, node.memory.id)
            except NotFound:
                head = None
        sent = data
        while follow_buffer and node.buffer is not None and bytes(node.buffer) != sent:
            latest = bytes(node.buffer)
            try:
                copy = await self._backend.update_memory(
                    target.store_id, copy.id, content=validate_content_bytes(latest)
                )
            except (MemfsError, BackendUnavailable) as exc:
                self._reject(node, latest, exc)
            self._table.set_memory(copy_node, copy)
            self._cache.put(copy.blob_key, latest)
            sent = latest
        self._reset_to_head(node, head)

    def _reset_to_head(self, node: Node, head: Memory | None = None) -> None:
        """Forgets pending content: ``node`` shows its head (``head`` if given) again, or
        disappears if it never was stored."""
        node.dirty = False
        node.refusal = None
        node.buffer = None
        node.fresh = False
        node.kernel_sha256 = None
        if head is not None:
            self._table.set_memory(node, head)
        if node.memory is not None:
            node.base_sha256 = node.memory.content_sha256
            self._table.notice(Notice(node.inode))
        else:
            parent = node.parent
            self._table.remove(node)
            self._table.prune(parent)
            self._table.retry_shadowed()

    def _reject(self, node: Node, data: bytes, exc: Exception) -> NoReturn:
        """Keeps refused content under ``rejected/``, logs where, resets the node and
        raises RefusedWrite (SPEC §4: never silently dropped)."""
        saved = save_rejected(self._session_id, node.name, data)
        path = self._table.display_path(node)
        code = errno.errorcode[errno_for(exc)]
        log.warning("write to %s refused (%s: %s); its content is kept in %s",
                    path, code, exc, saved)
        self.status.record_rejected(path, code, str(saved), str(exc))
        self._reset_to_head(node)
        raise RefusedWrite(str(exc), cause=exc) from exc

    def _drop_refused(self, node: Node) -> None:
        """The close after a refused write: partial content is not committed."""
        refusal = node.refusal
        assert refusal is not None
        if node.dirty and node.buffer and not _is_local_scratch(node):
            assert isinstance(refusal, Exception)
            self._reject(node, bytes(node.buffer), refusal)
        self._reset_to_head(node)
        raise RefusedWrite(str(refusal), cause=refusal)

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
                await self._delete_memory(attachment, node.memory)
            self._table.remove(node)
            self._hold_if_empty(parent)
            self._table.retry_shadowed()
        self._send_notices()

    async def _delete_memory(self, attachment: Attachment, memory: Memory) -> None:
        """SPEC §4 ``rm``: a soft delete; already gone elsewhere counts as done."""
        try:
            await self._backend.delete_memory(attachment.store_id, memory.id)
        except NotFound:
            log.info("%s was already deleted elsewhere", memory.path)

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
            new_path = _join(self._table.memory_path(new_parent), new_name)
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
            if node.is_dir:
                await self._rename_directory(node, new_parent, new_name, new_path, existing, target)
            else:
                await self._rename_file(node, new_parent, new_name, new_path, existing, target)
            self._hold_if_empty(old_parent)
            self._table.retry_shadowed()
        self._send_notices()

    async def _rename_file(
        self,
        node: Node,
        new_parent: Node,
        new_name: str,
        new_path: str,
        existing: Node | None,
        target: Attachment,
    ) -> None:
        to_scratch = is_scratch_name(new_name)
        if to_scratch:
            # The store does not see scratch names: a stored file is parked (kept at its
            # path until the name is reused); local content stays local.
            await self._discard(existing, target, store_replaced=False)
            self._table.move(node, new_parent, new_name)
            if node.memory is not None:
                self._table.park(node)
            return
        memory: Memory
        # Writes not yet closed stay pending: the close that follows commits them under
        # the new name, with the precondition the file was opened with. Without a
        # writable handle left to close, they are committed with the rename.
        keep_pending = (
            node.memory is not None
            and not node.parked
            and node.dirty
            and any(h.writable and h.node is node for h in self._handles.values())
        )
        if node.memory is not None:
            # A stored or parked file gets a real name: rename the memory (one version,
            # id kept; rename(2) replaces the target). A parked file renamed to where
            # its memory still is changes nothing in the store.
            content = None
            if node.dirty and not keep_pending:
                content = validate_content_bytes(bytes(await self._ensure_buffer(node)))
            memory = await self._backend.update_memory(
                target.store_id, node.memory.id, path=new_path, content=content, replace=True
            )
            await self._discard(existing, target, store_replaced=True)
        else:
            # The atomic save: a temporary file renamed over its target (SPEC §4).
            data = bytes(await self._ensure_buffer(node))
            text = validate_content_bytes(data)
            holder = self._table.parked_holder(target, new_path)
            if existing is not None and existing.stored and existing.attachment is target:
                assert existing.memory is not None
                try:
                    memory = await self._backend.update_memory(
                        target.store_id, existing.memory.id, content=text,
                        expected_sha256=existing.opened_sha256 or existing.base_sha256,
                    )
                except PreconditionFailed:
                    # The target changed elsewhere meanwhile: keep both (SPEC §4). The
                    # rename succeeds for the kernel, which then points the target name
                    # at the temporary file's inode: that entry must be dropped, so the
                    # name shows the head again (not the content that lost).
                    await self._keep_both(existing, target, new_path, text, data)
                    self._table.remove(node)
                    self._table.notice(
                        Notice(new_parent.inode, new_name.encode("utf-8", "surrogateescape"))
                    )
                    return
                self._table.remove(existing)
            elif holder is not None:
                assert holder.memory is not None
                await self._ensure_buffer(holder)
                memory = await self._backend.update_memory(
                    target.store_id, holder.memory.id, content=text,
                    expected_sha256=holder.opened_sha256 or holder.memory.content_sha256,
                )
                self._table.set_memory(holder, None)
                holder.dirty = True
                await self._discard(existing, target, store_replaced=True)
            else:
                memory = await self._backend.create_memory(target.store_id, new_path, text)
                await self._discard(existing, target, store_replaced=True)
            self._cache.put(memory.blob_key, data)
        self._table.move(node, new_parent, new_name)
        node.dirty = keep_pending
        node.parked = False
        self._table.set_memory(node, memory)
        if not keep_pending:
            node.base_sha256 = memory.content_sha256
            node.opened_sha256 = memory.content_sha256
        node.kernel_sha256 = None
        for ancestor in self._table.ancestors(node):
            ancestor.held = False
        log.info("renamed to %s (version %s)", new_path, memory.memory_version_id)

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
                await self._delete_memory(target, existing.memory)
        self._table.remove(existing)

    async def _rename_directory(
        self,
        node: Node,
        new_parent: Node,
        new_name: str,
        new_path: str,
        existing: Node | None,
        target: Attachment,
    ) -> None:
        """SPEC §4: a directory rename moves every memory below it, atomically."""
        stored = [f for f in self._table.files_below(node) if f.memory is not None]
        if any(f.attachment is not target for f in stored):
            raise ReadOnly(f"{self._table.display_path(node)} holds files of a read-only store")
        memories: list[Memory] = []
        if stored:
            old_prefix = self._table.memory_path(node) + "/"
            memories = await self._backend.rename_prefix(
                target.store_id, old_prefix, new_path + "/"
            )
        if existing is not None:
            self._table.remove(existing)
        self._table.move(node, new_parent, new_name)
        for memory in memories:
            moved = self._table.node_for_memory(target.store_id, memory.id)
            if moved is not None:
                self._table.set_memory(moved, memory)
        log.info("renamed directory to %s (%d memories)", new_path, len(memories))

    # ------------------------------------------------------------------- xattrs

    @_handler
    async def getxattr(self, inode: int, name: bytes, ctx: pyfuse3.RequestContext) -> bytes:
        node = self._table.get(inode)
        text = name.decode("utf-8", "replace")
        if not text.startswith(XATTR_USER_PREFIX):
            # No security labels, no POSIX ACLs: ENOTSUP, as the kernel answers for a
            # namespace a local filesystem has no handler for. ls -l then remembers the
            # filesystem lacks both and stops asking (coreutils caches ENOTSUP per
            # device): two round trips per mount instead of two per file (issue 5).
            raise UnknownAttribute(f"{text}: memfs serves only user.* attributes")
        memory = node.memory if node.stored else None
        if text in _XATTR_MEMFS_FIELDS and memory is not None:
            return str(getattr(memory, _XATTR_MEMFS_FIELDS[text])).encode()
        if text.startswith(XATTR_META_PREFIX) and not node.is_dir:
            value = self._metadata(node).get(text[len(XATTR_META_PREFIX):])
            if value is not None:
                return value.encode()
        raise NoSuchAttribute(f"{text} is not set on {self._table.display_path(node)}")

    @_handler
    async def listxattr(self, inode: int, ctx: pyfuse3.RequestContext) -> list[bytes]:
        # Only user.meta.*: the read-only user.memfs.* are answered by getxattr but not
        # listed, so tools that copy every listed xattr (cp -a, mv across stores, rsync
        # -X) don't try to set them and print EPERM complaints.
        node = self._table.get(inode)
        if node.is_dir:
            return []
        return [(XATTR_META_PREFIX + key).encode() for key in sorted(self._metadata(node))]

    @_handler
    async def setxattr(
        self, inode: int, name: bytes, value: bytes, ctx: pyfuse3.RequestContext
    ) -> None:
        async with self._lock:
            node = self._table.get(inode)
            key = self._meta_key(node, name)
            if len(value.decode("utf-8", "replace")) > MAX_METADATA_VALUE_CHARS:
                raise AttributeTooLarge(
                    f"a user.meta value is at most {MAX_METADATA_VALUE_CHARS} characters"
                )
            try:
                text = value.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise InvalidContent("a user.meta value must be UTF-8 text") from exc
            metadata = dict(self._metadata(node))
            if key not in metadata and len(metadata) >= MAX_METADATA_KEYS:
                raise TooManyAttributes(f"a memory has at most {MAX_METADATA_KEYS} metadata keys")
            metadata[key] = text
            await self._set_metadata(node, metadata)
        self._send_notices()

    @_handler
    async def removexattr(self, inode: int, name: bytes, ctx: pyfuse3.RequestContext) -> None:
        async with self._lock:
            node = self._table.get(inode)
            key = self._meta_key(node, name)
            metadata = dict(self._metadata(node))
            if key not in metadata:
                raise NoSuchAttribute(f"user.meta.{key} is not set")
            del metadata[key]
            await self._set_metadata(node, metadata)
        self._send_notices()

    def _metadata(self, node: Node) -> dict[str, str]:
        if node.stored:
            assert node.memory is not None
            return node.memory.metadata
        return node.pending_metadata

    def _meta_key(self, node: Node, raw_name: bytes) -> str:
        """The metadata key of a settable xattr name. Raises the xattr errors."""
        name = raw_name.decode("utf-8", "replace")
        if name.startswith(XATTR_MEMFS_PREFIX):
            raise ReadOnlyAttribute(f"{name} is maintained by memfs and can't be changed")
        if not name.startswith(XATTR_META_PREFIX) or node.is_dir:
            raise UnknownAttribute(f"{name} is not supported: only user.meta.<key> on files")
        if node.stored:
            self._table.check_writable(node)
        else:
            self._table.content_target(node)
        key = name[len(XATTR_META_PREFIX):]
        if len(key) > MAX_METADATA_KEY_CHARS:
            raise AttributeTooLarge(
                f"a user.meta key is at most {MAX_METADATA_KEY_CHARS} characters"
            )
        if not key:
            raise InvalidInput("user.meta. needs a key")
        return key

    async def _set_metadata(self, node: Node, metadata: dict[str, str]) -> None:
        if not node.stored:
            node.pending_metadata = metadata  # applied when the file is first committed
            return
        assert node.memory is not None and node.attachment is not None
        memory = await self._backend.update_memory(
            node.attachment.store_id, node.memory.id, metadata=metadata
        )
        self._table.set_memory(node, memory)

    # -------------------------------------------------------------- change feed

    async def follow_changes(
        self, attachment: Attachment, *, wait_s: float = CHANGE_WAIT_S
    ) -> None:
        """Applies one store's change feed to the tree until the store is deleted (a named
        task per attached store, so one store's long poll never delays another's).

        Each round waits up to ``wait_s`` for the next change (a long poll on a remote
        backend). Failures are logged and recorded, never fatal: the next round retries
        from the last applied seq after a pause that doubles from
        :data:`CHANGE_RETRY_MIN_S` to :data:`CHANGE_RETRY_MAX_S` while they last.
        """
        retry_s = CHANGE_RETRY_MIN_S
        failing = False
        while not attachment.deleted:
            try:
                await self.apply_changes(attachment, wait_s=wait_s)
            except BackendUnavailable as exc:
                # The backend logs and counts unreachability itself (memfs status).
                if not failing:
                    log.info("change feed of %r paused: %s", attachment.name, exc)
                failing = True
            except MemfsError as exc:
                if not failing:
                    log.warning("reading the change feed of %r failed: %s", attachment.name, exc)
                self.status.record_error(f"change feed of {attachment.name}: {exc}")
                failing = True
            except Exception as exc:
                log.exception("applying the change feed of %r failed", attachment.name)
                self.status.record_error(f"change feed: {type(exc).__name__}: {exc}")
                failing = True
            else:
                if failing:
                    log.info("change feed of %r resumed at seq %d", attachment.name,
                             attachment.seq)
                failing = False
                retry_s = CHANGE_RETRY_MIN_S
                continue
            await trio.sleep(retry_s)
            retry_s = min(2 * retry_s, CHANGE_RETRY_MAX_S)

    async def apply_changes(self, attachment: Attachment, *, wait_s: float = 0.0) -> int:
        """One batch of a store's change feed, waiting up to ``wait_s`` for the first
        change (a backlog arrives over several calls; a long poll returns at once while
        there is one).

        Returns:
            How many entries were applied.

        Raises:
            The backend's errors (BackendUnavailable, NotFound, …).
        """
        if attachment.deleted:
            return 0
        changes = await self._backend.changes_since(
            attachment.store_id, attachment.seq, timeout_s=wait_s
        )
        applied = 0
        async with self._lock:
            # Purged bytes leave the cache before any other entry of the batch is applied
            # (applying one may wait on the store, and a read could run meanwhile).
            for change in changes:
                if change.kind is ChangeKind.BLOB_PURGED and change.blob_key:
                    self._purge(change.blob_key, change.content_sha256)
            fetched: set[str] = set()
            for change in changes:
                if change.seq <= attachment.seq:
                    continue
                await self._apply_change(attachment, change, fetched)
                attachment.seq = change.seq
                applied += 1
        self._send_notices()
        return applied

    async def _apply_change(
        self, attachment: Attachment, change: Change, fetched: set[str]
    ) -> None:
        if change.kind in (ChangeKind.MEMORY_WRITTEN, ChangeKind.MEMORY_DELETED):
            if change.memory_id is None or change.memory_id in fetched:
                return
            node = self._table.node_for_memory(attachment.store_id, change.memory_id)
            if (
                change.kind is ChangeKind.MEMORY_WRITTEN
                and change.memory_version_id is not None
                and node is not None
                and node.memory is not None
                and node.memory.memory_version_id == change.memory_version_id
            ):
                return  # this mount's own write, or already seen: nothing to fetch
            fetched.add(change.memory_id)  # the current state covers later entries too
            try:
                memory: Memory | None = await self._backend.get_memory(
                    attachment.store_id, change.memory_id
                )
            except NotFound:
                memory = None
            self._apply_memory(attachment, change.memory_id, memory)
        elif change.kind is ChangeKind.BLOB_PURGED:
            # Redaction or hard delete erased these bytes: purge them here too (SPEC §2).
            if change.blob_key:
                self._purge(change.blob_key, change.content_sha256)
        elif change.kind is ChangeKind.STORE_ARCHIVED:
            log.info("store %r was archived; its files are read-only now", attachment.name)
            attachment.archived = True
            self._notice_modes(attachment)
        elif change.kind is ChangeKind.STORE_DELETED:
            log.warning("store %r was deleted; its directory is empty now", attachment.name)
            attachment.deleted = True
            for node in self._table.store_nodes(attachment):
                parent = node.parent
                self._table.remove(node)
                self._table.prune(parent)
            self._notice_modes(attachment)

    def _purge(self, blob_key: str, sha256: str | None = None) -> None:
        """Drops purged content from the cache, and marks it so that a fetch already in
        flight (read-ahead, a read) does not put it back (SPEC §2 redaction).

        Files whose content (or whose unsaved changes) derive from the purged bytes
        drop them too, even while open for writing: unsaved changes made on top of
        redacted content are discarded, and the next close of such a file reports it
        (ENOENT) instead of writing the bytes back.
        """
        self._cache.discard(blob_key)
        self._purge_seq += 1
        self._purged[blob_key] = self._purge_seq
        if sha256 is None:
            return
        for node in self._table.all_nodes():
            memory = node.memory
            derived = node.base_sha256 == sha256 or (
                memory is not None and memory.content_sha256 == sha256
            )
            if node.is_dir or node.buffer is None or not derived:
                continue
            if node.dirty and node.fresh:
                continue  # truncated since: none of the redacted bytes are in it
            if node.dirty:
                node.refusal = NotFound(
                    f"{self._table.display_path(node)}: the content it was opened with was "
                    "redacted elsewhere; its unsaved changes were discarded with it"
                )
                log.warning("%s", node.refusal)
            node.buffer = None
            node.dirty = False
            node.kernel_sha256 = None
            self._table.notice(Notice(node.inode))

    def _cache_fetched(self, blob_key: str, data: bytes, since: int) -> None:
        """Caches content fetched by a store call that began at purge mark ``since``,
        unless it was purged meanwhile."""
        if self._purged.get(blob_key, 0) <= since:
            self._cache.put(blob_key, data)

    def _notice_modes(self, attachment: Attachment) -> None:
        """The kernel's cached modes of a store's entries are stale (now read-only)."""
        for node in self._table.store_nodes(attachment):
            self._table.notice(Notice(node.inode, attr_only=True))
        root = self._table.store_root(attachment)
        self._table.notice(Notice(root.inode, attr_only=True))

    def cache_statistics(self) -> BlobCacheStatistics:
        """The in-memory content cache of this mount (``memfs status``)."""
        return self._cache.statistics()

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

    def _apply_memory(self, attachment: Attachment, memory_id: str, memory: Memory | None) -> None:
        """Makes the tree show the current state of one memory changed elsewhere."""
        node = self._table.node_for_memory(attachment.store_id, memory_id)
        if memory is None:
            if node is None:
                return
            if node.parked or (node.dirty and node.open_count > 0):
                # A scratch copy, or a file being written: keep the bytes in the mount;
                # the next close creates the file again.
                self._table.set_memory(node, None)
                node.dirty = node.dirty or not node.parked
                return
            parent = node.parent
            # A descriptor still open reads the deleted head from the store again (as an
            # unlinked file stays readable), never bytes held here: a redaction purges
            # them, and the read then fails.
            node.buffer = None
            node.kernel_sha256 = None
            self._table.remove(node)
            self._table.prune(parent)
            self._table.retry_shadowed()
            return
        if node is None:
            self._table.add_memory(attachment, memory)
            return
        old = node.memory
        if (
            old is not None
            and old.memory_version_id == memory.memory_version_id
            and old.path == memory.path
            and old.metadata == memory.metadata
        ):
            return
        content_changed = old is None or old.content_sha256 != memory.content_sha256
        self._table.set_memory(node, memory)
        # A file open for writing keeps showing what it was opened with; its next commit
        # meets the new head through its precondition. Otherwise every handle, open or
        # new, reads the new head (as on a local filesystem; SPEC §4 close-to-open), and
        # the kernel drops the pages of the old one.
        handles = [h for h in self._handles.values() if h.node is node]
        if content_changed and not node.dirty and not any(h.writable for h in handles):
            node.buffer = None
            node.base_sha256 = memory.content_sha256
            node.kernel_sha256 = None
            self._table.notice(Notice(node.inode))
        else:
            self._table.notice(Notice(node.inode, attr_only=True))
        if node.parked:
            return
        if node.parent is not None and self._table.memory_path(node) == memory.path:
            return
        old_parent = node.parent
        self._table.unlink(node)
        self._table.place(node)
        self._table.prune(old_parent)
        self._table.retry_shadowed()

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
