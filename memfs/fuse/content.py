"""The working copy of one file: the bytes a mount holds for it, and their state.

Owns :class:`WorkingCopy`, the content state of a file node: one object with named
transitions, its only writers, rather than fields of ``Node`` written from many
places (its namespace state is :class:`memfs.fuse.namespace.Placement`). It is
pure state: no store call, no kernel call, no I/O; the layers above decide *when* a
transition happens (:mod:`memfs.fuse.commits` on a close, :mod:`memfs.fuse.feed` on a
change made elsewhere, :mod:`memfs.fuse.operations` on a write).

States (SPEC §4 semantics)::

    unloaded ──load──▶ clean ──write/truncate──▶ dirty ──committed──▶ clean
       ▲                 │                         │
       └──── release ────┘                         ├──purge──▶ lost (the next close reports)
       ▲                                           │
       └──────── reset_to_head ────────────────────┘   (keep-both, reject, change elsewhere)
                                                   dirty ──merged──▶ clean (or dirty)

* **unloaded** (``buffer`` is None): the file shows its head; the first read loads it.
* **clean**: ``buffer`` holds exactly what ``base_sha256`` names.
* **dirty**: ``buffer`` has changes no version holds yet; the next close commits them
  with ``base_sha256`` as the precondition (SPEC §4 concurrent writers).
* **merged**: the pending content was merged with a change made elsewhere and the merge
  committed (SPEC §4 concurrent writers): the file holds the merge (plus writes that
  arrived meanwhile, carried over onto it and still pending).
* **lost**: pending changes were discarded (the content they were made on was redacted
  elsewhere); the next close reports ``lost`` instead of committing.

A refused write or truncate changes nothing by itself, and it fails the whole save
(SPEC §4 "Order of refusals": a save is all or nothing): :meth:`WorkingCopy.refuse`
records the refusal, and the pending content it belongs to is never committed; the close
reports the refusal and the file goes back to its head (:meth:`reset_to_head`).

An ``O_EXCL`` create leaves a *claim* (``claimed``): an empty memory that holds the name
for this mount until the first content commit; a save that fails takes it back.

"Drop pending content and show the head" is :meth:`WorkingCopy.reset_to_head`, and
only there.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["WorkingCopy"]


@dataclass(eq=False, slots=True)
class WorkingCopy:
    """The content state of one file node (see the module docstring for the states).

    Attributes:
        buffer: the content while open or changed, shared by every handle of the node
            (like the page cache of a local filesystem); None when not loaded.
        dirty: ``buffer`` has changes no version holds yet.
        base_sha256: the digest the content had when opened or last committed: the
            precondition of the next commit (SPEC §4 concurrent writers). A change made
            elsewhere moves it only while the file is closed and clean.
        kernel_sha256: the digest of the content the kernel may hold in its page cache
            (``keep_cache`` is given only when the head still has this digest).
        opened_sha256: the content this mount last handed out for this file (an open,
            or its own commit). An editor's save (a temporary file renamed over this
            one) is committed with it as the precondition.
        cut_from_sha256: the digest of the buffer while :attr:`opened_sha256` names
            only its first bytes (a read the kernel cut at the size it held; see
            :meth:`handed_out_cut`), else None.
        refused: a write or truncate was refused since the content was loaded (or the
            file created); nothing of it is in ``buffer``.
        refusal: the first refusal of the pending save (a write or ``ftruncate`` through
            a descriptor): the pending content must never be committed, and the close
            reports it (SPEC §4 "a save is all or nothing"); None otherwise.
        claimed: the memory is the empty claim of this mount's ``O_EXCL`` create (SPEC §4)
            and has had no content commit yet; a failed save takes it back.
        lost: why pending changes were discarded; the next close reports it.
        fresh: the pending content was written after a truncation to empty, so none of
            the content it was opened with is in it (a redaction of that content leaves
            it alone).
        pending_metadata: ``user.meta.*`` set on a file that has no memory yet; applied
            by its first commit.
    """

    buffer: bytearray | None = None
    dirty: bool = False
    base_sha256: str | None = None
    kernel_sha256: str | None = None
    opened_sha256: str | None = None
    refused: bool = False
    refusal: Exception | None = None
    claimed: bool = False
    lost: Exception | None = None
    fresh: bool = False
    cut_from_sha256: str | None = None
    pending_metadata: dict[str, str] = field(default_factory=dict)

    @property
    def loaded(self) -> bool:
        return self.buffer is not None

    @property
    def served_sha256(self) -> str | None:
        """The digest an open serves: the base while clean, None while dirty."""
        return self.base_sha256 if not self.dirty else None

    def pending(self) -> bytes | None:
        """The bytes a close would commit, or None when nothing is pending."""
        if not self.dirty or self.buffer is None:
            return None
        return bytes(self.buffer)

    def derives_from(self, sha256: str, *, head_sha256: str | None) -> bool:
        """True when the bytes held derive from content of digest ``sha256`` (a purge of
        it must drop them): loaded, based on it or on a head of that digest, and not
        rewritten after a truncation."""
        based = self.base_sha256 == sha256 or head_sha256 == sha256
        return self.buffer is not None and based and not (self.dirty and self.fresh)

    # ---------------------------------------------------------------- transitions

    def load(self, data: bytes, sha256: str | None = None) -> bytearray:
        """unloaded → clean: the head's bytes are now held. ``sha256``: their digest,
        when they are loaded to be read: that content is then what this mount last
        handed out (:attr:`opened_sha256`; a change made elsewhere after an open
        reaches its reads, and an editor's save is made on what it read)."""
        self.buffer = bytearray(data)
        self.cut_from_sha256 = None
        if sha256 is not None:
            self.opened_sha256 = sha256
        self.refused = False
        self.refusal = None
        return self.buffer

    def start_empty(self, *, dirty: bool) -> None:
        """A file with no head content: empty, pending (``dirty``) for a new file, whose
        first close makes it a memory."""
        self.buffer = bytearray()
        self.dirty = self.dirty or dirty
        self.refused = False
        self.refusal = None

    def truncate(self, size_bytes: int) -> bool:
        """Cuts or zero-extends the loaded content to ``size_bytes`` (truncate(2)).

        Returns:
            True when the content changed (it is dirty then).
        """
        assert self.buffer is not None
        if size_bytes == 0:
            self.fresh = True  # nothing of the old content is left
        if size_bytes == len(self.buffer):
            return False
        if size_bytes < len(self.buffer):
            del self.buffer[size_bytes:]
        else:
            self.buffer.extend(bytes(size_bytes - len(self.buffer)))
        self.dirty = True
        return True

    def truncate_unloaded(self, *, head_size_bytes: int) -> bool:
        """``O_TRUNC`` of an unloaded file: the old content is not needed (and not
        fetched: a remote mount can do this with its server away); the precondition
        stays the head's digest. Returns True when content was dropped (dirty then)."""
        self.buffer = bytearray()
        self.fresh = True
        if head_size_bytes > 0:
            self.dirty = True
            return True
        return False

    def write(self, offset: int, data: bytes) -> None:
        """Puts ``data`` at ``offset`` (zero-filling a gap); the content is dirty."""
        assert self.buffer is not None
        if offset > len(self.buffer):
            self.buffer.extend(bytes(offset - len(self.buffer)))
        self.buffer[offset : offset + len(data)] = data
        self.dirty = True

    def refuse(self, refusal: Exception | None = None) -> None:
        """A write or truncate was refused: nothing changed (SPEC §4). ``refusal``: the
        error, when the call came through a descriptor; it fails the pending save (kept
        from the first refusal on, until the save is aborted)."""
        self.refused = True
        if refusal is not None and self.refusal is None:
            self.refusal = refusal

    def claim(self, sha256: str) -> None:
        """unloaded → clean: this mount's ``O_EXCL`` create committed an empty memory of
        digest ``sha256``, a claim on the name that its first content commit turns into
        the memory's content (SPEC §4)."""
        self.buffer = bytearray()
        self.dirty = False
        self.refused = False
        self.refusal = None
        self.base_sha256 = self.kernel_sha256 = self.opened_sha256 = sha256
        self.claimed = True

    def claim_revived(self, sha256: str, *, size_bytes: int) -> None:
        """unloaded → new: this mount's ``O_EXCL`` create took back its own delete of the
        name moments ago (SPEC §4 same name, same memory): the file is new and empty to
        its writer, pending unless the memory's head (digest ``sha256``, the
        precondition of its commit) is empty too; a failed save deletes it again."""
        self.buffer = bytearray()
        self.dirty = size_bytes > 0
        self.fresh = True
        self.refused = False
        self.refusal = None
        self.base_sha256 = self.opened_sha256 = sha256
        self.kernel_sha256 = None
        self.claimed = True

    def claim_taken_back(self) -> None:
        """The empty memory of this mount's ``O_EXCL`` claim was erased (a failed save,
        or a create whose every write was refused): nothing claims the name now."""
        self.claimed = False

    def set_pending_metadata(self, metadata: dict[str, str]) -> None:
        """``user.meta.*`` set on a file that has no memory yet: its first commit applies
        ``metadata``."""
        self.pending_metadata = metadata

    @property
    def only_refused(self) -> bool:
        """Every write since the content was started was refused: nothing was accepted."""
        return self.refused and not self.buffer

    def committed(self, sha256: str, data: bytes) -> None:
        """A version with digest ``sha256`` now holds ``data``. Writes that arrived while
        the store call ran stay pending for the next close."""
        self.dirty = self.buffer is not None and bytes(self.buffer) != data
        self.base_sha256 = sha256
        self.kernel_sha256 = sha256
        self.opened_sha256 = sha256
        self.pending_metadata = {}
        self.fresh = False  # what is pending now builds on this version
        self.claimed = False
        self.refusal = None

    def merged(self, sha256: str, data: bytes, *, holding: bytes | None = None) -> None:
        """A merge of the pending content with a change made elsewhere was committed as
        a version of digest ``sha256`` holding ``data`` (SPEC §4 concurrent writers):
        the file holds the merge now. ``holding``: what the file holds instead, when
        writes arrived while the store call ran (carried over onto ``data``; they stay
        pending for the next close, with ``sha256`` as their precondition). The
        kernel's pages hold this writer's content, not the merge: they are stale."""
        content = data if holding is None else holding
        self.buffer = bytearray(content)
        self.dirty = content != data
        self.base_sha256 = sha256
        self.opened_sha256 = sha256
        self.kernel_sha256 = None
        self.pending_metadata = {}
        self.fresh = False
        self.claimed = False
        self.refusal = None

    def renamed(self, sha256: str, *, keep_pending: bool) -> None:
        """A rename committed the content of digest ``sha256`` (or only moved the file,
        keeping its pending writes for the close that follows: ``keep_pending``)."""
        self.dirty = keep_pending
        if not keep_pending:
            self.base_sha256 = sha256
            self.opened_sha256 = sha256
        self.kernel_sha256 = None

    def unchanged(self) -> None:
        """A close found nothing to write (SPEC §4: no version when unchanged)."""
        self.dirty = False

    def detached(self) -> None:
        """The content lost its store copy (its memory was deleted elsewhere, or its
        memory was given to another file): the bytes held are all there is now."""
        if self.buffer is not None:
            self.dirty = True

    def reset_to_head(self, head_sha256: str | None = None) -> None:
        """Drops pending content, refusals and pages: the file shows its head again
        (keep-both, reject, a change made elsewhere). ``head_sha256``: the head's
        digest, the next precondition (None keeps the current one)."""
        self.buffer = None
        self.dirty = False
        self.refused = False
        self.refusal = None
        self.lost = None
        self.fresh = False
        self.kernel_sha256 = None
        self.cut_from_sha256 = None
        if head_sha256 is not None:
            self.base_sha256 = head_sha256

    def purge(self, reason: Exception | None) -> None:
        """The content it derives from was erased (SPEC §2 redaction): drop it like
        :meth:`reset_to_head`; pending changes made on top are discarded, and
        ``reason`` (when they were) is what the next close reports."""
        had_pending = self.dirty
        self.reset_to_head()
        if had_pending:
            self.lost = reason

    def head_deleted(self) -> None:
        """The memory was deleted elsewhere and nothing is pending: the bytes held go (a
        descriptor still open reads the deleted head from the store again, never bytes
        held here: a redaction purges them). A loss not yet reported stays."""
        self.buffer = None
        self.dirty = False
        self.fresh = False
        self.kernel_sha256 = None

    def release(self, head_sha256: str) -> None:
        """clean → unloaded for a closed file whose head the store holds: frees the
        bytes (they stay in the content cache); the kernel's pages stay valid."""
        self.buffer = None
        self.base_sha256 = head_sha256

    def follow_head(self, head_sha256: str, *, is_open: bool) -> None:
        """The file shows a new head: a closed, clean file takes its digest as the next
        precondition; an open one keeps the digest it was opened with."""
        if not self.dirty and not is_open:
            self.base_sha256 = head_sha256

    def handed_out_cut(self, seen_sha256: str, whole_sha256: str) -> None:
        """A read handed out only the first bytes of the buffer (of digest
        ``whole_sha256``): the kernel cut it at the size it held. Those bytes, of digest
        ``seen_sha256``, are what this open saw (:attr:`opened_sha256`) until a later
        read hands out the rest (:meth:`handed_out_whole`)."""
        self.opened_sha256 = seen_sha256
        self.cut_from_sha256 = whole_sha256

    def handed_out_whole(self) -> None:
        """After a cut read, a read handed out the rest of the buffer (the kernel
        learnt its size): the open has seen all of it."""
        if self.cut_from_sha256 is not None:
            self.opened_sha256 = self.cut_from_sha256
            self.cut_from_sha256 = None

    def closed(self) -> None:
        """The last handle closed: a loss concerned that open only."""
        self.lost = None

    def opened(self) -> tuple[bool, bool]:
        """An open hands out :attr:`served_sha256` to the kernel.

        Returns:
            ``(keep_cache, kernel_stale)``: whether the kernel's pages hold exactly what
            this open serves, and whether the kernel was last told of other content
            (its cached size is stale then too).
        """
        served = self.served_sha256
        keep_cache = served is not None and self.kernel_sha256 == served
        kernel_stale = self.kernel_sha256 is not None and self.kernel_sha256 != served
        self.kernel_sha256 = served
        if served is not None:
            self.opened_sha256 = served
            self.cut_from_sha256 = None
        return keep_cache, kernel_stale
