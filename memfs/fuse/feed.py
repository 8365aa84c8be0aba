"""Changes made elsewhere reaching a mount: the change-feed follower.

Owns :class:`ChangeFollower`: one task per attached store reads its change feed
(:meth:`memfs.backend.Backend.changes_since`, a long poll) and makes the tree show the
current state of every memory changed elsewhere (SPEC §4: changes elsewhere appear
within about one second; kernel caches are invalidated for exactly the changed
entries). Purged blobs (a redaction or hard delete, SPEC §2) leave the cache and every
working copy derived from them; archived and deleted stores turn read-only.

A memory whose path was erased (a ``memory_deleted`` entry without a path: a redaction
or hard delete, SPEC §2) also has the paths this mount knew for it (its path in the
store and below the mount point, as the tree showed it just before) scrubbed from the
mount's status and log files (:mod:`memfs.fuse.status`), in a worker thread.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence

import trio

from memfs.backend import Backend
from memfs.core.errors import BackendUnavailable, MemfsError, NotFound
from memfs.core.model import Change, ChangeKind, Memory
from memfs.fuse.errors import FilesystemError, StaleEntry
from memfs.fuse.inodes import Attachment, InodeTable, Node, Notice
from memfs.fuse.names import is_local_scratch
from memfs.fuse.reading import ContentReader
from memfs.fuse.status import MountStatus, redaction_marker, scrub_files

__all__ = ["CHANGE_RETRY_MAX_S", "CHANGE_RETRY_MIN_S", "CHANGE_WAIT_S", "ChangeFollower"]

log = logging.getLogger(__name__)

# How long one read of the change feed waits for a change: a long poll on a remote
# backend, the engine's change notification on an embedded one (SPEC §4: changes
# elsewhere appear within about one second; a change ends the wait at once, and an idle
# store is read once per wait: SPEC §4 Sandboxes, an idle mount costs close to
# nothing). Below the server's 30 s cap.
CHANGE_WAIT_S = 25.0
# Pause after a failed read of the feed, doubling while failures last.
CHANGE_RETRY_MIN_S = 0.1
CHANGE_RETRY_MAX_S = 1.0


class ChangeFollower:
    """Applies the change feeds of a mount's stores to its tree.

    Args:
        backend, table, reader, status: the mount's.
        lock: the mount's mutation lock (held while a batch is applied).
        has_writer: whether a node has a writable handle open.
        send_notices: hands the kernel invalidations recorded so far to the notice task.
        wrote_version: whether this mount wrote a version (its change needs no fetch).
        notices_delivered: waits until the notices sent so far reached the kernel
            (:meth:`memfs.fuse.notices.KernelNotices.delivered`); None: not waited for.
    """

    def __init__(
        self,
        backend: Backend,
        table: InodeTable,
        reader: ContentReader,
        status: MountStatus,
        lock: trio.Lock,
        has_writer: Callable[[Node], bool],
        send_notices: Callable[[], None],
        wrote_version: Callable[[str], bool] = lambda _version_id: False,
        notices_delivered: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        self._backend = backend
        self._table = table
        self._reader = reader
        self._status = status
        self._lock = lock
        self._has_writer = has_writer
        self._send_notices = send_notices
        self._notices_delivered = notices_delivered
        self._wrote_version = wrote_version
        self.fetches = 0  # memories fetched to apply a change (memfs status)

    async def follow(self, attachment: Attachment, *, wait_s: float = CHANGE_WAIT_S) -> None:
        """Applies one store's change feed until the store is deleted (a named task per
        attached store, so one store's long poll never delays another's).

        Each round waits up to ``wait_s`` for the next change. Failures are logged and
        recorded, never fatal: the next round retries from the last applied seq after a
        pause that doubles from :data:`CHANGE_RETRY_MIN_S` to :data:`CHANGE_RETRY_MAX_S`
        while they last.
        """
        retry_s = CHANGE_RETRY_MIN_S
        failing = False
        while not attachment.deleted:
            try:
                await self.apply(attachment, wait_s=wait_s)
            except BackendUnavailable as exc:
                # The backend logs and counts unreachability itself (memfs status).
                if not failing:
                    log.info("change feed of %r paused: %s", attachment.name, exc)
                failing = True
            except MemfsError as exc:
                if not failing:
                    log.warning("reading the change feed of %r failed: %s", attachment.name, exc)
                self._status.record_error(f"change feed of {attachment.name}: {exc}")
                failing = True
            except Exception as exc:
                log.exception("applying the change feed of %r failed", attachment.name)
                self._status.record_error(f"change feed: {type(exc).__name__}: {exc}")
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

    async def apply(self, attachment: Attachment, *, wait_s: float = 0.0) -> int:
        """One batch of a store's change feed, waiting up to ``wait_s`` for the first
        change (a backlog arrives over several calls).

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
        if attachment.as_of is not None:
            return await self._apply_erasures(attachment, changes)
        purges = [c for c in changes if c.kind is ChangeKind.BLOB_PURGED and c.blob_key]
        # A deleted store's blobs are purged too, but that is no redaction: unsaved
        # changes of its open files are kept and refused at close (EROFS), not dropped.
        redacted = bool(purges) and not await self._store_gone(attachment, changes)
        applied = 0
        async with self._lock:
            erased = self._erased_paths(attachment, changes)
            # Purged bytes leave the cache before any other entry of the batch is applied
            # (applying one may wait on the store, and a read could run meanwhile).
            for change in purges:
                assert change.blob_key is not None
                self.purge(change.blob_key, change.content_sha256 if redacted else None)
            fetched: set[str] = set()
            for change in changes:
                if change.seq <= attachment.seq:
                    continue
                if change.kind is not ChangeKind.BLOB_PURGED:  # purged above
                    await self._apply_change(attachment, change, fetched)
                attachment.seq = change.seq
                applied += 1
        self._send_notices()
        if erased:
            await self._scrub(erased)
        return applied

    async def _apply_erasures(self, attachment: Attachment, changes: list[Change]) -> int:
        """The feed of an as-of attachment (SPEC §10: its state is fixed at the point;
        SPEC §2: erased content never shows, in any view of the past): only erasures
        and the store's deletion change it. A file whose content was purged (its
        version redacted, or hard-deleted) leaves the tree and the cache, so it is no
        longer listed, as an as-of listing no longer lists it. Blobs are shared (another
        store, a fork), so an erasure of a memory this view shows (a ``version_redacted``
        entry, or a ``memory_deleted`` one without a path: redacted or hard-deleted) may
        purge nothing: the view is then resolved again (one as-of listing) and each
        such file whose version that listing no longer has leaves the tree, its bytes
        held for open descriptors dropped. Every other entry is passed over without a
        read.

        Raises:
            The backend's errors (BackendUnavailable, NotFound, …): nothing is applied,
            and the next round reads the batch again.
        """
        purged = {c.blob_key for c in changes if c.kind is ChangeKind.BLOB_PURGED and c.blob_key}
        kept = await self._versions_kept(attachment, changes)
        applied = 0
        erased: list[Node] = []
        async with self._lock:
            for blob_key in purged:
                self._reader.purge(blob_key)
            for node in self._table.store_nodes(attachment):
                memory = node.memory
                if memory is None:
                    continue
                if memory.blob_key in purged or (
                    kept is not None
                    and memory.id in kept
                    and kept[memory.id] != memory.memory_version_id
                ):
                    # An open descriptor reads nothing more: the bytes may live on in
                    # the store under another memory, but not in this view.
                    self._table.set_memory(node, None)
                    node.working.purge(None)
                    self._table.notice(Notice(node.inode))
                    erased.append(node)
        self._send_notices()
        if erased and self._notices_delivered is not None:
            # The kernel drops the files' pages before their names leave the listing
            # (an as-of file's pages are kept across opens): once a listing no longer
            # shows one, a descriptor still open on it reads nothing cached.
            await self._notices_delivered()
        async with self._lock:
            for node in erased:
                parent = node.parent
                if parent is not None:
                    self._table.remove(node)
                    self._table.prune(parent)
            for change in changes:
                if change.seq <= attachment.seq:
                    continue
                if change.kind is ChangeKind.STORE_DELETED:
                    await self._apply_change(attachment, change, set())
                attachment.seq = change.seq
                applied += 1
        self._send_notices()
        return applied

    async def _versions_kept(
        self, attachment: Attachment, changes: list[Change]
    ) -> dict[str, str | None] | None:
        """For an as-of attachment: the memories this view shows that ``changes`` (not
        yet applied) erase something of, each mapped to the version the view at its
        point has for it now (None: none, the memory is gone from the view). None when
        the batch erases nothing of what the view shows (no listing is read)."""
        erased = {
            c.memory_id
            for c in changes
            if c.seq > attachment.seq
            and c.memory_id is not None
            and (
                c.kind is ChangeKind.VERSION_REDACTED
                or (c.kind is ChangeKind.MEMORY_DELETED and c.path is None)
            )
            and self._table.node_for_memory(attachment.store_id, c.memory_id) is not None
        }
        if not erased:
            return None
        assert attachment.as_of is not None
        now_at_point = {
            memory.id: memory.memory_version_id
            for memory in await self._backend.list_memories_at(attachment.as_of)
            if memory.id in erased
        }
        return {memory_id: now_at_point.get(memory_id) for memory_id in erased}

    def _erased_paths(self, attachment: Attachment, changes: list[Change]) -> dict[str, str]:
        """The paths this mount shows for memories whose path ``changes`` erase (not yet
        applied), longest first, each mapped to its marker."""
        erased: dict[str, str] = {}
        for change in changes:
            if (
                change.seq <= attachment.seq
                or change.kind is not ChangeKind.MEMORY_DELETED
                or change.path is not None
                or change.memory_id is None
            ):
                continue
            node = self._table.node_for_memory(attachment.store_id, change.memory_id)
            if node is None:
                continue
            marker = redaction_marker(change.memory_id)
            erased[self._table.display_path(node)] = marker
            if node.memory is not None:
                erased[node.memory.path] = marker
        return dict(sorted(erased.items(), key=lambda item: -len(item[0])))

    async def _scrub(self, erased: dict[str, str]) -> None:
        """Scrubs erased paths from the status file and, in a worker thread, from the
        log file (SPEC §2). A failure is logged (without the paths), never fatal."""
        markers = ", ".join(sorted(set(erased.values())))
        try:
            self._status.scrub(erased)
            await trio.to_thread.run_sync(scrub_files, self._status.mountpoint, erased)
        except OSError as exc:
            log.error("could not scrub erased paths from the mount's files (%s): %s",
                      markers, exc.strerror)
            return
        log.info("scrubbed erased paths from the mount's files: now %s", markers)

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
                and (
                    node.memory.memory_version_id == change.memory_version_id
                    or self._wrote_version(change.memory_version_id)
                )
            ):
                return  # this mount's own write, or already seen: nothing to fetch
            fetched.add(change.memory_id)  # the current state covers later entries too
            self.fetches += 1
            try:
                memory: Memory | None = await self._backend.get_memory(
                    attachment.store_id, change.memory_id
                )
            except NotFound:
                memory = None
            self.show(attachment, change.memory_id, memory)
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

    async def revalidate(self, node: Node, *, local_only: bool = False) -> None:
        """SPEC §4 close-to-open for a request on ``node`` (an open, a change by inode, or
        the directory of a change by name): what other writers committed to its stores
        is applied first (``local_only``: only where that needs no worker thread).

        Raises:
            StaleEntry: a change elsewhere deleted or moved the file, or removed the
                directory, since the kernel resolved the path (now, or in the feed task
                before this request): ``ESTALE``, and the kernel resolves it again.
        """
        table = self._table
        attachments = (
            table.attachments_below(node) if node.is_dir
            else [node.attachment] if node.attachment is not None else []
        )
        if not self._unchanged(attachments):
            await self.catch_up(attachments, local_only=local_only)
        removed_directory = node.is_dir and node is not table.root and node.parent is None
        if node.placement.stale_path or removed_directory:
            raise StaleEntry(
                f"{node!r} was deleted or moved elsewhere; the kernel looks it up again"
            )

    def _unchanged(self, attachments: Sequence[Attachment]) -> bool:
        """Whether every one of ``attachments`` is known, on this thread and without
        waiting, to have nothing committed past what this mount applied (the usual
        answer at an open or an opendir: :meth:`catch_up` would find the same, with
        three awaits more). False: catch up."""
        backend = self._backend
        for attachment in attachments:
            if attachment.deleted or attachment.as_of is not None:
                continue
            newest = backend.known_change_counter(attachment.store_id)
            if newest is None or newest > attachment.seq:
                return False
        return True

    async def catch_up(self, attachments: Sequence[Attachment], *, local_only: bool = False) -> int:
        """Applies what other writers committed to ``attachments`` before this request
        goes on (SPEC §4: an open checks the database's change counter and catches up
        before it returns). Costs one cheap backend read per store when nothing changed;
        nothing on a backend without a cheap counter (remote: the feed delivers).
        Failures only leave the change to the feed task (logged).

        Args:
            local_only: only when the counter is read without a worker thread
                (``Backend.change_counter``): an opendir's check, cheap or nothing.

        Returns:
            How many feed entries this call applied (0: the tree is as it was).
        """
        if self._unchanged(attachments):
            return 0
        applied = 0
        for attachment in attachments:
            if attachment.deleted or attachment.as_of is not None:
                continue  # an as-of view never changes (erasures come with the feed)
            try:
                try:
                    newest = await self._backend.change_counter(
                        attachment.store_id, local_only=local_only
                    )
                except NotFound:
                    newest = attachment.seq + 1  # deleted: its feed's last entry says so
                while newest is not None and newest > attachment.seq:
                    batch = await self.apply(attachment)
                    if not batch:
                        break  # the feed task applied them meanwhile
                    applied += batch
            except (MemfsError, FilesystemError) as exc:
                log.info("catching up with %r failed: %s", attachment.name, exc)
        return applied

    async def _store_gone(self, attachment: Attachment, changes: list[Change]) -> bool:
        """Whether ``attachment``'s store is deleted (its last entry, or no such store)."""
        if any(c.kind is ChangeKind.STORE_DELETED for c in changes):
            return True
        try:
            await self._backend.get_store(attachment.store_id)
        except NotFound:
            return True
        return False

    def purge(self, blob_key: str, sha256: str | None = None) -> None:
        """Drops purged content from the cache (and keeps fetches in flight from putting
        it back), and from every working copy derived from it, even while open for
        writing: unsaved changes made on top of redacted content are discarded, and the
        next close of such a file reports it (ENOENT) instead of writing the bytes back
        (SPEC §2 redaction)."""
        self._reader.purge(blob_key)
        if sha256 is None:
            return
        for node in self._table.all_nodes():
            memory = node.memory
            head_sha256 = memory.content_sha256 if memory is not None else None
            if node.is_dir or not node.working.derives_from(sha256, head_sha256=head_sha256):
                continue
            reason = NotFound(
                f"{self._table.display_path(node)}: the content it was opened with was "
                "redacted elsewhere; its unsaved changes were discarded with it"
            )
            if node.working.dirty:
                log.warning("%s", reason)
            node.working.purge(reason)
            self._table.notice(Notice(node.inode))

    def _notice_modes(self, attachment: Attachment) -> None:
        """The kernel's cached modes of a store's entries are stale (now read-only)."""
        for node in self._table.store_nodes(attachment):
            self._table.notice(Notice(node.inode, attr_only=True))
        root = self._table.store_root(attachment)
        self._table.notice(Notice(root.inode, attr_only=True))

    def show(self, attachment: Attachment, memory_id: str, memory: Memory | None) -> None:
        """Makes the tree show the current state of one memory changed elsewhere
        (``memory`` None: deleted)."""
        node = self._table.node_for_memory(attachment.store_id, memory_id)
        if memory is None:
            if node is not None:
                self._show_deleted(node)
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
        if content_changed and not node.working.dirty and not self._has_writer(node):
            node.working.reset_to_head(memory.content_sha256)
            self._table.notice(Notice(node.inode))
        else:
            self._table.notice(Notice(node.inode, attr_only=True))
        if node.placement.parked:
            return
        if node.parent is not None and self._table.memory_path(node) == memory.path:
            return
        node.placement.went_stale()  # the kernel may still reach it by its old name
        old_parent = node.parent
        self._table.unlink(node)
        self._table.place(node)
        self._table.prune(old_parent)
        self._table.retry_shadowed()

    def last_close(self, node: Node) -> None:
        """The last handle of ``node`` closed with nothing to settle: a file deleted
        elsewhere while open for writing, with nothing written through it (see
        :meth:`_show_deleted`), leaves the tree now, as its name did elsewhere."""
        if (
            node.memory is None
            and not node.placement.parked
            and node.parent is not None
            and not is_local_scratch(node)
        ):
            parent = node.parent
            node.placement.went_stale()
            self._table.remove(node)
            self._table.prune(parent)

    def _show_deleted(self, node: Node) -> None:
        if node.placement.parked or (node.working.dirty and node.open_count > 0):
            # A scratch copy, or a file being written: keep the bytes in the mount; the
            # next close creates the file again.
            self._table.set_memory(node, None)
            node.working.detached()
            return
        if node.open_count > 0 and self._has_writer(node):
            # Open for writing with nothing written yet: it stays, stored nowhere, until
            # its last close. A write through it then creates the file again (nothing
            # written is lost); without one, the last release removes it (Operations).
            self._table.set_memory(node, None)
            return
        parent = node.parent
        node.placement.went_stale()  # the kernel may still reach it by its name
        # A descriptor still open reads the deleted head from the store again (as an
        # unlinked file stays readable), never bytes held here: a redaction purges them,
        # and the read then fails.
        node.working.head_deleted()
        self._table.remove(node)
        self._table.prune(parent)
        self._table.retry_shadowed()
